"""LoCoMo in the report: per-category tables of F1 and evidence recall, and the notes; with a
third-party errata overlay, one more table setting the errata figures beside the official ones."""

from __future__ import annotations

from recallbench.benchmarks.locomo.errata import (
    ERRATA_KEY,
    KIND,
    LABEL,
    REPOSITORY,
    QuestionErratum,
)
from recallbench.benchmarks.locomo.metrics import ADVERSARIAL, CATEGORY_NAMES
from recallbench.benchmarks.locomo.rules import (
    CEILING_ERRATA,
    EVIDENCE_RECALL,
    EVIDENCE_RECALL_ERRATA,
    EVIDENCE_RECALL_EXCL,
    EXCL_SUFFIX,
    F1,
    F1_ERRATA,
    F1_EXCL,
)
from recallbench.contracts import ALL, MetricRow
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, cell, exclusion_caption, fmt, index_rows
from recallbench.results.scored import ScoredRun


def _errata(dataset: LoadedDataset) -> list[QuestionErratum]:
    """Each question's erratum (empty without the overlay)."""
    marks = [q.extra.get(ERRATA_KEY) for q in dataset.questions]
    return [m for m in marks if isinstance(m, QuestionErratum)]


def ceiling_cell(row: MetricRow | None) -> str:
    """``value (n=N) = 1 - flagged/N = P%`` for an ``answer_key_ceiling:errata`` row (category 5,
    outside the errata's scope, is not counted in N)."""
    if row is None or row.value is None:
        return cell(row, "null")
    flagged = row.denominator - round(row.value * row.denominator)
    return (
        f"{fmt(row.value)} (n={row.denominator}) = 1 - {flagged}/{row.denominator:,} "
        f"= {row.value:.2%}"
    )


class LocomoReport(BenchmarkReport):
    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        notes = [
            "f1 and evidence_recall follow LoCoMo's own rules. Rows 'all' count category 5 "
            "(adversarial) in the denominator; rows '1-4' leave it out (metrics "
            "f1:excl_cat5, evidence_recall:excl_cat5).",
            "evidence_recall counts every memory returned (not cut at k); f1 is null unless an "
            "answer was generated.",
        ]
        if _errata(dataset):
            notes.append(
                f"Overlay of {LABEL}: not part of LoCoMo; the official figures are "
                "unchanged and stay the headline. f1:errata leaves out the questions whose "
                "answer key the errata flag, evidence_recall:errata scores WRONG_CITATION "
                "questions against the audit's correct_evidence, answer_key_ceiling:errata is "
                "the ceiling; all three over categories 1-4."
            )
        return notes

    def errata_table(self, scored: ScoredRun, dataset: LoadedDataset) -> Table:
        """Official 1-4 figures beside the errata ones, and the ceiling, one column per system."""
        systems = list(scored.systems)
        idx = index_rows(scored.metrics, dataset.key)
        marks = _errata(dataset)
        cited = sum(m.wrong_citation for m in marks)
        flagged = sum(m.answer_key_error for m in marks)
        in_scope = sum(1 for q in dataset.questions if q.extra.get("category") != ADVERSARIAL)

        def line(label: str, metric: str) -> tuple[str, ...]:
            return (label, *(cell(idx.get((s, ALL, metric, None)), "null") for s in systems))

        rows = (
            line("QA F1, official", F1_EXCL),
            line(f"QA F1, third-party errata: {flagged} answer-key errors left out", F1_ERRATA),
            line("evidence recall, official", EVIDENCE_RECALL_EXCL),
            line(
                f"evidence recall, third-party errata: {cited} cited-wrong rescored against "
                "correct_evidence",
                EVIDENCE_RECALL_ERRATA,
            ),
            (
                f"answer-key ceiling, third-party errata: 1 - {flagged}/{in_scope:,}",
                *(ceiling_cell(idx.get((s, ALL, CEILING_ERRATA, None))) for s in systems),
            ),
        )
        lead = (
            f"Third-party errata from {REPOSITORY}, not part of LoCoMo: the official rows (the "
            "'1-4' rows of the tables above) stay the headline. Categories 1-4 only; n = "
            "questions scored; '+m null' = questions excluded with a reason (category 5 by "
            "definition). The ceiling is the share of questions whose answer key the errata "
            "leave standing. Left out of QA F1 (errata), per system"
        )
        return Table(
            f"{dataset.key}: official figures beside {KIND} ({marks[0].overlay}), categories 1-4",
            ("figure", *systems),
            rows,
            exclusion_caption(idx, systems, F1_ERRATA, None, lead),
        )

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
        if _errata(dataset):
            tables.append(self.errata_table(scored, dataset))
        return tables
