"""The LoCoMo rule set: the benchmark's own per-question metrics, wired onto observations.

Per question (stable names, also the keys of ``recallbench score FILE --out`` lines):

* ``f1``: LoCoMo's answer score (:func:`recallbench.benchmarks.locomo.metrics.qa_score`): token
  F1 after LoCoMo's normalisation and stemming, with the category rules (category 1 split on commas,
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

from collections.abc import Sequence
from typing import Any, ClassVar

from recallbench.benchmarks.locomo.metrics import ADVERSARIAL, evidence_recall, qa_score
from recallbench.contracts import Observation, Question, Verdict
from recallbench.score.rules import (
    RULE_NO_ANSWER,
    RUN,
    AnswerFigure,
    RuleSet,
    ScoringContext,
    evidence_null_reason,
    source_turns_missing,
)

F1 = "f1"
EVIDENCE_RECALL = "evidence_recall"
EXCL_SUFFIX = ":excl_cat5"
F1_EXCL = F1 + EXCL_SUFFIX
EVIDENCE_RECALL_EXCL = EVIDENCE_RECALL + EXCL_SUFFIX
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
    why = evidence_null_reason(question)
    if why:
        return None, why
    if not observation.retrieval_reported:
        return None, source_turns_missing(observation) or ""
    if observation.outcome != "usable":
        return 0.0, ""
    found = retrieved_turns(observation)
    if found is None:
        return None, source_turns_missing(observation) or ""
    return evidence_recall(found, question.evidence_turns), ""


def f1_for(question: Question, observation: Observation) -> tuple[float | None, str]:
    category = int(question.extra["category"])
    if not observation.answer_generated:
        return None, NO_ANSWER_REASON
    if category != ADVERSARIAL and question.gold is None:
        return None, f"{RULE_NO_GOLD}: the question has no gold answer"
    return qa_score(observation.answer, question.gold, category), ""


class LocomoRules(RuleSet):
    name = "locomo"
    answer_figures: ClassVar[tuple[AnswerFigure, ...]] = (
        AnswerFigure(F1, "F1"),
        AnswerFigure(F1_EXCL, "F1 over categories 1-4 (5 left out)", per_slice=False),
    )

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        context: ScoringContext = RUN,
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

    def prediction_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
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
