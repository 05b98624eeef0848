"""A scored run as the report layer sees it: manifest, datasets, verdicts and metric rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recallbench.contracts import AppliedRules, MetricRow, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.results.manifest import RunManifest
from recallbench.spec import RunSpec


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
    rules: Mapping[str, AppliedRules] = field(default_factory=dict)
    """The rules this scoring applied, by dataset key (handed down by the pipeline)."""
    predictions: Path | None = None
    """The predictions file scored, when this is not a run (``recallbench score FILE``)."""

    @property
    def spec(self) -> RunSpec:
        return self.manifest.spec

    @property
    def systems(self) -> tuple[str, ...]:
        return self.manifest.spec.systems
