"""LoCoMo in the report: per-category tables of F1 and evidence recall, and the notes."""

from __future__ import annotations

from recallbench.benchmarks.locomo.metrics import CATEGORY_NAMES
from recallbench.benchmarks.locomo.rules import EVIDENCE_RECALL, EXCL_SUFFIX, F1
from recallbench.contracts import ALL
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, cell, exclusion_caption, index_rows
from recallbench.results.scored import ScoredRun


class LocomoReport(BenchmarkReport):
    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return [
            "f1 and evidence_recall follow LoCoMo's own rules. Rows 'all' count category 5 "
            "(adversarial) in the denominator; rows '1-4' leave it out (metrics "
            "f1:excl_cat5, evidence_recall:excl_cat5).",
            "evidence_recall counts every memory returned (not cut at k); f1 is null unless an "
            "answer was generated.",
        ]

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        systems = list(scored.systems)
        idx = index_rows(scored.metrics, dataset.key)
        tables = []
        for metric, label in ((F1, "QA F1"), (EVIDENCE_RECALL, "evidence recall (all returned)")):
            rows: list[tuple[str, ...]] = []
            all_null = all(
                (row := idx.get((s, ALL, metric, None))) is None or row.value is None
                for s in systems
            )
            for number, name in sorted(CATEGORY_NAMES.items()):
                if all_null:  # one row says it: nothing to break down
                    break
                cells = [f"{number} {name}"]
                cells += [cell(idx.get((s, name, metric, None)), "null") for s in systems]
                rows.append(tuple(cells))
            rows.append(
                ("all 1-5 (category 5 in the denominator)",)
                + tuple(cell(idx.get((s, ALL, metric, None)), "null") for s in systems)
            )
            rows.append(
                ("1-4 (category 5 not in the denominator)",)
                + tuple(
                    cell(idx.get((s, ALL, metric + EXCL_SUFFIX, None)), "null") for s in systems
                )
            )
            tables.append(
                Table(
                    f"{dataset.key}: {label} by category",
                    ("category", *systems),
                    tuple(rows),
                    exclusion_caption(
                        idx,
                        systems,
                        metric,
                        None,
                        "n = questions scored; '+m null' = questions excluded with a reason",
                    ),
                )
            )
        return tables
