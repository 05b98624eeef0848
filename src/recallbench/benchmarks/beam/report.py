"""BEAM in the report: evidence recall beside the rubric score, by ability, and the notes."""

from __future__ import annotations

from recallbench.benchmarks.beam.metrics import ABILITIES
from recallbench.benchmarks.beam.rules import RUBRIC
from recallbench.contracts import ALL
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, cell, index_rows
from recallbench.results.scored import ScoredRun


class BeamReport(BenchmarkReport):
    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return [
            "rubric (0/0.5/1 per item, averaged) and event_ordering ((tau_b + 1) / 2) need an LLM "
            "judge: null until one is configured. Retrieval figures use source_chat_ids."
        ]

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        systems = list(scored.systems)
        kmax = scored.spec.k_max
        idx = index_rows(scored.metrics, dataset.key)
        present = {q.axis for q in dataset.questions}
        slices = [a for a in ABILITIES if a in present] + sorted(present - set(ABILITIES))
        rows: list[tuple[str, ...]] = []
        for a in [*slices, ALL]:
            cells = [a]
            for s in systems:
                recall = idx.get((s, a, "evidence_recall", kmax))
                rubric = idx.get((s, a, RUBRIC, None))
                cells.append(f"{cell(recall)} | rubric {cell(rubric)}")
            rows.append(tuple(cells))
        return [
            Table(
                f"{dataset.key}: evidence_recall@{kmax} | rubric, by ability",
                ("ability", *systems),
                tuple(rows),
                "n = questions scored; 'excl.' = questions excluded with a reason (abstention "
                "questions have no evidence by design; rubric needs an LLM judge).",
            )
        ]
