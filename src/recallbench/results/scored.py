"""A scored run as the report layer sees it: manifest, datasets, verdicts, metric rows, and the
floor of each dataset (the do-nothing controls, which are never a system)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recallbench.contracts import AnswerFigure, AppliedRules, MetricRow, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.results.failures import Failures
from recallbench.results.manifest import RunManifest
from recallbench.spec import RunSpec


@dataclass(frozen=True)
class Control:
    """One fixed answer given to every question of a dataset, as if an answer model wrote it
    after retrieving nothing, scored by the dataset's rules through the one scorer.

    ``answer`` is None for the retrieval control (no answer at all, nothing returned);
    ``label`` names it in tables (the answer, or a description of the empty one); ``run_id``
    is deterministic (``control-`` and 12 hex digits of the SHA-256 of the dataset checksum and
    the answer); ``metrics`` are the aggregate rows of that scoring, the rows ``recallbench
    score`` gives a predictions file of the same lines (``system`` included). A control is never
    a system of a run: its rows are written to no ``verdicts.jsonl`` or ``metrics.jsonl``.
    """

    answer: str | None
    label: str
    run_id: str
    metrics: tuple[MetricRow, ...]


@dataclass(frozen=True)
class Floor:
    """What saying nothing scores on one dataset: its controls, and the figures to read.

    ``figures`` are the rule set's answer figures; empty when the rule set scores retrieval only,
    and then ``controls`` holds the one control that gives no answer and returns nothing.
    """

    dataset: str
    rules: str
    figures: tuple[AnswerFigure, ...]
    controls: tuple[Control, ...]

    @property
    def scores_answers(self) -> bool:
        """The rule set declares answer figures (else this is a retrieval floor)."""
        return bool(self.figures)

    @property
    def measured(self) -> bool:
        """Some figure of some control has a value: false when every answer figure is null
        (LongMemEval and BEAM, whose answer figures need an LLM judge recallbench lacks)."""
        wanted = {f.metric for f in self.figures}
        return any(
            r.value is not None
            for c in self.controls
            for r in c.metrics
            if not wanted or r.metric in wanted
        )


@dataclass(frozen=True)
class ScoredRun:
    run_dir: Path
    manifest: RunManifest
    datasets: tuple[LoadedDataset, ...]
    verdicts: tuple[Verdict, ...]
    metrics: tuple[MetricRow, ...]
    missing: dict[str, dict[str, int]]
    """``{dataset key: {system: questions without an observation}}`` (an unfinished run)."""
    observations: int = 0
    answers_generated: int = 0
    """Observations whose answer an answer model wrote (0 in a retrieval-only run)."""
    floors: Mapping[str, Floor] = field(default_factory=dict)
    """Each dataset's floor by dataset key, computed at scoring time from its questions."""
    rules: Mapping[str, AppliedRules] = field(default_factory=dict)
    """The rules this scoring applied, by dataset key (handed down by the pipeline)."""
    predictions: Path | None = None
    """The predictions file scored, when this is not a run (``recallbench score FILE``)."""
    failures: tuple[Failures, ...] = ()
    """Each system's failed searches and ingests by cause (:mod:`recallbench.results.failures`),
    judged against the run's ``max_failure_rate``."""

    @property
    def spec(self) -> RunSpec:
        return self.manifest.spec

    @property
    def systems(self) -> tuple[str, ...]:
        """The run's systems, then any rows its verdicts hold beside them (the condition rows
        of memory and answer modes, ``condition:oracle``...)."""
        extra = [v.system for v in self.verdicts if v.system not in self.manifest.spec.systems]
        return (*self.manifest.spec.systems, *dict.fromkeys(extra))
