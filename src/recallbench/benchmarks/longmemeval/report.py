"""LongMemEval in the report: retrieval and judge-label tables by question type, and notes.

The QA table reads ``label``, LongMemEval's own judge on the reader's answer (answer mode; null
with a reason otherwise): per type, task-averaged, overall, and over abstention questions only
(from the verdicts of the ``_abs`` questions).
"""

from __future__ import annotations

from collections.abc import Mapping

from recallbench.benchmarks.longmemeval.metrics import QUESTION_TYPES
from recallbench.benchmarks.longmemeval.rules import LABEL, LABEL_ABSTENTION
from recallbench.contracts import ALL, MetricRow
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, cell, exclusion_caption, fmt, index_rows
from recallbench.results.scored import ScoredRun

EXCLUDED = "n = questions scored; 'excl.' = questions excluded, by rule"


class LongMemEvalReport(BenchmarkReport):
    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return [
            "turn:/session: metrics follow LongMemEval's retrieval evaluation (user turns only; "
            "session k grows until k distinct sessions are covered); abstention questions and "
            "questions without a user evidence turn are excluded and counted.",
            "session:ranking_exhausted@k is 1 when that grown k ran past the system's ranking "
            "with corpus turns left unranked: the session values at k are then the official "
            "function's on the ranking given, while the official evaluation ranks the whole "
            "corpus; its mean is the share of questions so flagged.",
            "label (QA accuracy) is LongMemEval's own judge (evaluate_qa.py) on the reader's "
            "answer in answer mode, null otherwise; label:abstention is abstention accuracy "
            "on its own.",
        ]

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        systems = list(scored.systems)
        kmax = scored.spec.k_max
        idx = index_rows(scored.metrics, dataset.key)
        slices = [t for t in QUESTION_TYPES if any(q.axis == t for q in dataset.questions)]
        slices += sorted({q.axis for q in dataset.questions} - set(QUESTION_TYPES) - {""})
        tables: list[Table] = []
        for metric, k, label in (
            ("turn:recall_any", kmax, f"turn recall_any@{kmax}"),
            ("session:recall_any", kmax, f"session recall_any@{kmax}"),
            ("turn:ndcg_any", kmax, f"turn ndcg_any@{kmax}"),
        ):
            rows = [(t, *(cell(idx.get((s, t, metric, k))) for s in systems)) for t in slices]
            rows.append(("all", *(cell(idx.get((s, ALL, metric, k))) for s in systems)))
            tables.append(
                Table(
                    f"{dataset.key}: {label} by question type",
                    ("question type", *systems),
                    tuple(rows),
                    exclusion_caption(idx, systems, metric, k, EXCLUDED),
                )
            )
        label = LABEL
        rows = [(t, *(cell(idx.get((s, t, label, None))) for s in systems)) for t in slices]
        rows.append(
            (
                "task-averaged (mean of type accuracies)",
                *(_task_average(idx, s, slices, label) for s in systems),
            )
        )
        rows.append(("overall", *(cell(idx.get((s, ALL, label, None))) for s in systems)))
        abstention = tuple(cell(idx.get((s, ALL, LABEL_ABSTENTION, None))) for s in systems)
        rows.append(("abstention only", *abstention))
        title = "judge label"
        tables.append(
            Table(
                f"{dataset.key}: QA accuracy ({title}) by question type",
                ("question type", *systems),
                tuple(rows),
                exclusion_caption(idx, systems, label, None, EXCLUDED),
            )
        )
        return tables


def _task_average(
    idx: Mapping[tuple[str, str, str, int | None], MetricRow],
    system: str,
    slices: list[str],
    label: str = LABEL,
) -> str:
    values = [
        r.value
        for t in slices
        if (r := idx.get((system, t, label, None))) is not None and r.value is not None
    ]
    if not values:
        return "null (types=0)"
    return f"{fmt(sum(values) / len(values))} (types={len(values)})"
