"""The LoCoMo rule set: the benchmark's own per-question metrics, wired onto observations.

Per question (stable names, also the keys of ``recallbench score FILE --out`` lines):

* ``f1``: LoCoMo's answer score (:func:`recallbench.score.locomo_rules.qa_score`): token F1 after
  LoCoMo's normalisation and stemming, with the category rules (category 1 split on commas,
  category 3 gold cut at the first ``;``, category 5 scored 1 for a declining answer). It is
  computed on ``Observation.answer`` when an answer was generated, and is otherwise null with the
  reason "no answer generated": returned memories are never scored as if they were an answer.
* ``evidence_recall``: the fraction of the question's evidence ``dia_id`` values found among the
  source turns of every memory returned (not cut at k).
* ``f1:excl_cat5`` and ``evidence_recall:excl_cat5``: the same values with category 5
  (adversarial) left out by definition (null with the rule ``adversarial``), so that the figure
  over categories 1-4 is a row of ``metrics.jsonl`` too. Reports always say which one they show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recallbench.contracts import Observation, Question, Verdict
from recallbench.report.aggregate import ALL
from recallbench.report.summary import Table, fmt
from recallbench.score.locomo_rules import CATEGORY_NAMES, evidence_recall, qa_score
from recallbench.score.scorer import RULE_EVIDENCE_UNKNOWN, RULE_NO_EVIDENCE, RULE_NO_SOURCE_TURNS

if TYPE_CHECKING:
    from recallbench.contracts import MetricRow
    from recallbench.datasets.spec import LoadedDataset
    from recallbench.score.score_run import ScoredRun

F1 = "f1"
EVIDENCE_RECALL = "evidence_recall"
EXCL_SUFFIX = ":excl_cat5"
F1_EXCL = F1 + EXCL_SUFFIX
EVIDENCE_RECALL_EXCL = EVIDENCE_RECALL + EXCL_SUFFIX
ADVERSARIAL = 5

RULE_NO_ANSWER = "no_answer"
RULE_NO_GOLD = "no_gold"
RULE_ADVERSARIAL = "adversarial"

NO_ANSWER_REASON = (
    f"{RULE_NO_ANSWER}: no answer generated; LoCoMo's F1 scores an answer, never the returned "
    "memories"
)
ADVERSARIAL_REASON = (
    f"{RULE_ADVERSARIAL}: category 5 (adversarial) is left out of this figure by definition"
)


def retrieved_turns(observation: Observation) -> set[str] | None:
    """Union of the source turns of every returned memory; None when no memory names any."""
    if observation.memories and all(m.source_turns is None for m in observation.memories):
        return None
    return {t for m in observation.memories for t in (m.source_turns or ())}


def evidence_recall_for(question: Question, observation: Observation) -> tuple[float | None, str]:
    """LoCoMo retrieval recall of one observation, or None and the reason it cannot be measured."""
    if question.evidence_turns is None:
        why = question.evidence_unknown_reason or "the dataset gives no evidence turns"
        return None, f"{RULE_EVIDENCE_UNKNOWN}: {why}"
    if not question.evidence_turns:
        return None, (
            f"{RULE_NO_EVIDENCE}: the question has no evidence by design (expect="
            f"{question.expect}); excluded from retrieval metrics"
        )
    if not observation.retrieval_reported:
        return None, (
            f"{RULE_NO_SOURCE_TURNS}: the record reports no retrieved turn ids, so retrieval "
            "cannot be checked"
        )
    if observation.outcome != "usable":
        return 0.0, ""
    found = retrieved_turns(observation)
    if found is None:
        return None, (
            f"{RULE_NO_SOURCE_TURNS}: the system returns no source turn ids, so retrieval "
            "cannot be checked"
        )
    return evidence_recall(found, question.evidence_turns), ""


def f1_for(question: Question, observation: Observation) -> tuple[float | None, str]:
    category = int(question.extra["category"])
    if not observation.answer_generated:
        return None, NO_ANSWER_REASON
    if category != ADVERSARIAL and question.gold is None:
        return None, f"{RULE_NO_GOLD}: the question has no gold answer"
    return qa_score(observation.answer, question.gold, category), ""


class LocomoRules:
    name = "locomo"
    weighted_metrics: tuple[str, ...] = ()

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        options: Mapping[str, object],
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        metrics: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        adversarial = int(question.extra["category"]) == ADVERSARIAL
        for key, (value, reason) in (
            (F1, f1_for(question, observation)),
            (EVIDENCE_RECALL, evidence_recall_for(question, observation)),
        ):
            metrics[key] = value
            if value is None:
                reasons[key] = reason
            excl = key + EXCL_SUFFIX
            if adversarial:
                metrics[excl], reasons[excl] = None, ADVERSARIAL_REASON
            else:
                metrics[excl] = value
                if value is None:
                    reasons[excl] = reason
        return metrics, reasons

    # -- optional hooks ---------------------------------------------------------------------
    def external_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        keys = (F1, EVIDENCE_RECALL)
        return {
            "id": verdict.question_id,
            "slice": verdict.slice,
            "category": question.extra.get("category"),
            **{k: verdict.metrics.get(k) for k in keys},
            "null_reasons": {
                k: verdict.null_reasons.get(k, "") for k in keys if verdict.metrics.get(k) is None
            },
        }

    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return [
            "f1 and evidence_recall follow LoCoMo's own rules. Rows 'all' count category 5 "
            "(adversarial) in the denominator; rows '1-4' leave it out (metrics "
            "f1:excl_cat5, evidence_recall:excl_cat5).",
            "evidence_recall counts every memory returned (not cut at k); f1 is null unless an "
            "answer was generated.",
        ]

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        systems = list(scored.manifest["spec"]["systems"])
        idx = {
            (r.system, r.slice, r.metric): r
            for r in scored.metrics
            if r.dataset == dataset.key and r.k is None
        }
        tables = []
        for metric, label in ((F1, "QA F1"), (EVIDENCE_RECALL, "evidence recall (all returned)")):
            rows: list[tuple[str, ...]] = []
            all_null = all(
                (row := idx.get((s, ALL, metric))) is None or row.value is None for s in systems
            )
            for number, name in sorted(CATEGORY_NAMES.items()):
                if all_null:  # one row says it: nothing to break down
                    break
                cells = [f"{number} {name}"]
                cells += [_cell(idx.get((s, name, metric))) for s in systems]
                rows.append(tuple(cells))
            rows.append(
                ("all 1-5 (category 5 in the denominator)",)
                + tuple(_cell(idx.get((s, ALL, metric))) for s in systems)
            )
            rows.append(
                ("1-4 (category 5 not in the denominator)",)
                + tuple(_cell(idx.get((s, ALL, metric + EXCL_SUFFIX))) for s in systems)
            )
            tables.append(
                Table(
                    f"{dataset.key}: {label} by category",
                    ("category", *systems),
                    tuple(rows),
                    _caption(idx, systems, metric),
                )
            )
        return tables


def _cell(row: MetricRow | None) -> str:
    if row is None:
        return "-"
    text = f"{fmt(row.value)} (n={row.denominator})"
    if row.n_excluded:
        text += f" +{row.n_excluded} null"
    return text


def _caption(idx: Mapping[tuple[str, str, str], MetricRow], systems: list[str], metric: str) -> str:
    parts = ["n = questions scored; '+m null' = questions excluded with a reason"]
    for s in systems:
        row = idx.get((s, ALL, metric))
        if row is not None and row.exclusion_rule:
            parts.append(f"{s}: {row.exclusion_rule}")
    return "; ".join(parts) + "."
