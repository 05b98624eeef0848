"""One system of one scored results folder on one dataset, as ``compare`` and ``diff`` read
it (built by :func:`recallbench.pipeline.read_sides`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recallbench.contracts import Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.results.manifest import RunManifest

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Side:
    """One system of one results folder on one dataset, as ``compare`` and ``diff`` read it.

    ``manifest`` is None for a scored predictions file (its folder holds no ``run.json``), and
    ``observations`` (by question id, repeat 0) empty there: its folder records no memories.
    ``run_date`` is the run's start as ``run.json`` records it (:data:`NOT_RECORDED` for a
    predictions file)."""

    folder: Path
    run_id: str
    system: str
    dataset: LoadedDataset
    verdicts: tuple[Verdict, ...]
    manifest: RunManifest | None = None
    observations: Mapping[str, Observation] = field(default_factory=dict)
    run_date: str = NOT_RECORDED
    answers: Mapping[str, str] = field(default_factory=dict)
    """The answer of each question (by id) the side recorded: the reader's (``answers.jsonl``),
    else the observation's or the predictions line's own."""

    @property
    def name(self) -> str:
        """``system (run id)``, as legends print it."""
        return f"{self.system} ({self.run_id})"

    def values(self, key: str) -> dict[str, float]:
        """``{question id: value}`` of metric ``key`` over the questions that scored it (nulls
        left out, as every aggregate leaves them out); with several repeats of a question, the
        mean of its repeats."""
        got: dict[str, list[float]] = {}
        for v in self.verdicts:
            value = v.metrics.get(key)
            if value is not None:
                got.setdefault(v.question_id, []).append(float(value))
        return {q: sum(xs) / len(xs) for q, xs in got.items()}

    def keys(self) -> list[str]:
        """Every metric key of this side's verdicts, sorted."""
        return sorted({k for v in self.verdicts for k in v.metrics})
