"""The records of a results folder as the report reads them: nothing recomputed but what the
records give (no dataset is loaded, no system is called).

``run.json``, ``metrics.jsonl``, ``verdicts.jsonl``, ``observations.jsonl`` (texts restored from
``texts.jsonl``), ``answers.jsonl``, ``judgements.jsonl`` and the results card ``card.md`` when
the folder has one. The answers and judgements are kept as the dicts they were written as: the
report shows their fields, it does not score them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.contracts import (
    AnswerFigure,
    MetricRow,
    Observation,
    Verdict,
    metric_row_from_dict,
    verdict_from_dict,
)
from recallbench.errors import RunFolderError
from recallbench.results.manifest import RunManifest, read_manifest
from recallbench.results.store import (
    ANSWERS,
    JUDGEMENTS,
    METRICS,
    VERDICTS,
    read_jsonl_tolerant,
    read_observations,
)
from recallbench.score.repeats import is_repeat_row

CARD = "card.md"
"""The results card a run folder may hold (written by ``recallbench.report.card``)."""


@dataclass(frozen=True)
class ReportHints:
    """What the report cannot read from a folder and the benchmarks know (handed in by the CLI,
    since the report never imports a benchmark), by dataset name: its rule set's answer figures,
    and its variants in the benchmark's own order (a tier curve runs small to large)."""

    figures: Mapping[str, Sequence[AnswerFigure]] = field(default_factory=dict)
    variants: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecords:
    run_dir: Path
    manifest: RunManifest
    metrics: tuple[MetricRow, ...]
    """The rows the figures draw: repeat 0's (``run --repeats``), as the summary's tables show
    them; the rows of later repeats and over repeats stay in ``metrics.jsonl``."""
    verdicts: tuple[Verdict, ...]
    observations: tuple[Observation, ...]
    answers: tuple[dict[str, Any], ...]
    judgements: tuple[dict[str, Any], ...]
    card: str | None
    """The text of ``card.md``, or None when the folder has none."""

    @property
    def run_id(self) -> str:
        return self.manifest.run_id


def read_run_records(run_dir: Path) -> RunRecords:
    """Every record of one scored results folder.

    Raises :class:`~recallbench.errors.RunFolderError` when the folder is not a run or was
    never scored (no ``metrics.jsonl``: run ``recallbench score`` on it first)."""
    manifest = read_manifest(run_dir)
    if not (run_dir / METRICS).exists() or not (run_dir / VERDICTS).exists():
        raise RunFolderError(
            f"{run_dir}: no {METRICS} or {VERDICTS}: the run was never scored; "
            f"run `recallbench score {run_dir}` first"
        )
    card = run_dir / CARD
    return RunRecords(
        run_dir=run_dir,
        manifest=manifest,
        metrics=tuple(
            row
            for row in map(metric_row_from_dict, read_jsonl_tolerant(run_dir / METRICS))
            if row.repeat == 0 and not is_repeat_row(row)
        ),
        verdicts=tuple(verdict_from_dict(d) for d in read_jsonl_tolerant(run_dir / VERDICTS)),
        observations=tuple(read_observations(run_dir)),
        answers=tuple(read_jsonl_tolerant(run_dir / ANSWERS)),
        judgements=tuple(read_jsonl_tolerant(run_dir / JUDGEMENTS)),
        card=card.read_text(encoding="utf-8") if card.is_file() else None,
    )
