"""The report extension point: what a benchmark adds to the console, ``summary.md`` and the
results folder. Subclass :class:`BenchmarkReport`; every hook has a typed default."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recallbench.contracts import MetricRow, Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.tables import Table
from recallbench.results.manifest import RunManifest
from recallbench.results.scored import ScoredRun


class BenchmarkReport:
    """No tables, notes or exports beyond the generic ones."""

    export_formats: tuple[str, ...] = ()
    """Names of the interop formats :meth:`write_exports` writes (``recallbench export RUN
    --format NAME``, ``run --export NAME``); written on request only, never by scoring."""

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        """Tables for one dataset (per axis, per category, ...), after the generic ones."""
        return []

    def cross_dataset_tables(
        self, scored: ScoredRun, datasets: Sequence[LoadedDataset]
    ) -> list[Table]:
        """Tables spanning this benchmark's datasets of the run (a tier view, say)."""
        return []

    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        """Lines for the summary header about how this benchmark's figures are made."""
        return []

    def write_exports(
        self,
        run_dir: Path,
        dataset: LoadedDataset,
        observations: Sequence[Observation],
        verdicts: Sequence[Verdict],
    ) -> None:
        """Interop files (a benchmark's own run-record format) for a scored run, written on
        request (``recallbench export``); ``verdicts`` are this dataset's."""

    def write_submission(
        self,
        run_dir: Path,
        manifest: RunManifest,
        dataset: LoadedDataset,
        verdicts: Sequence[Verdict],
        rows: Sequence[MetricRow],
    ) -> None:
        """The benchmark's own submission manifest, written after scoring from the run's
        records (a derived file: no wall-clock time)."""
