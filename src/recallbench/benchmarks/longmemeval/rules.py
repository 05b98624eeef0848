"""The LongMemEval rule set: the benchmark's own retrieval metrics and its judge label.

Per question (stable names, also the keys of ``recallbench score FILE --out`` lines), for each K
of the run's k (``recallbench score`` defaults to 1, 3, 5, 10, 30, 50):

* ``turn:recall_any@K``, ``turn:recall_all@K``, ``turn:ndcg_any@K``: the ranked user turns (the
  memories' source turns, best memory first, assistant turns dropped) against the user turns
  marked ``has_answer`` in the answer sessions;
* ``session:recall_any@K`` and so on: the same ranking mapped to (pseudo-)sessions, k growing
  until K distinct sessions are covered (see ``longmemeval_rules.session_metrics``);
* ``label``: the LLM judge's yes/no verdict (1/0). No judge exists yet, so it is null with the
  reason; ``label:abstention`` carries the same value for abstention questions only, so that
  abstention accuracy is a figure of its own.

Abstention questions (``_abs``) and questions with no user evidence turn are left out of the
retrieval metrics, each with its rule (``abstention``, ``no_evidence_turn``), so reports count
every exclusion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from recallbench.benchmarks.longmemeval.metrics import (
    session_metrics,
    strip_turn_suffix,
    turn_metrics,
)
from recallbench.contracts import Observation, Question, Verdict
from recallbench.score.rules import (
    RULE_NO_ANSWER,
    RULE_NO_JUDGE,
    RUN,
    AnswerFigure,
    RuleSet,
    ScoringContext,
    source_turns_missing,
)
from recallbench.score.scorer import ranked_source_turns

MEASURES: tuple[str, ...] = ("recall_any", "recall_all", "ndcg_any")
GRANULARITIES: tuple[str, ...] = ("turn", "session")
LABEL = "label"
LABEL_ABSTENTION = "label:abstention"

RULE_ABSTENTION = "abstention"
RULE_NO_EVIDENCE_TURN = "no_evidence_turn"

ABSTENTION_REASON = (
    f"{RULE_ABSTENTION}: abstention question (id ends in _abs); LongMemEval leaves it out of "
    "retrieval metrics"
)
NO_ANSWER_REASON = f"{RULE_NO_ANSWER}: no answer generated; the judge grades an answer"
NO_JUDGE_REASON = (
    f"{RULE_NO_JUDGE}: LongMemEval QA accuracy needs an LLM judge, and none is configured yet"
)


def retrieval_keys(ks: Sequence[int]) -> list[str]:
    return [f"{g}:{m}@{k}" for g in GRANULARITIES for m in MEASURES for k in ks]


def retrieval_for(
    question: Question, observation: Observation, ks: Sequence[int]
) -> tuple[dict[str, float | None], str | None]:
    """LongMemEval's turn and session metrics for one observation, or nulls and the reason."""
    keys = retrieval_keys(ks)
    extra = question.extra
    if extra.get("is_abstention"):
        return dict.fromkeys(keys), ABSTENTION_REASON
    gold = tuple(extra.get("has_answer_turns") or ())
    if not gold:
        why = question.evidence_unknown_reason or "no user turn is marked has_answer"
        return dict.fromkeys(keys), f"{RULE_NO_EVIDENCE_TURN}: {why}"
    missing = source_turns_missing(observation)
    if missing:
        return dict.fromkeys(keys), missing
    ranked = ranked_source_turns(observation)
    user_turns = frozenset(extra.get("user_turns") or ())
    out: dict[str, float | None] = {}
    out.update(turn_metrics(ranked, gold, user_turns, ks))
    out.update(
        session_metrics(
            ranked,
            strip_turn_suffix,
            tuple(extra.get("answer_session_ids") or ()),
            gold,
            user_turns,
            ks,
        )
    )
    return out, None


class LongMemEvalRules(RuleSet):
    name = "longmemeval"
    answer_figures: ClassVar[tuple[AnswerFigure, ...]] = (
        AnswerFigure(LABEL, "QA accuracy (judge label)"),
    )

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        context: ScoringContext = RUN,
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        metrics, reason = retrieval_for(question, observation, ks)
        reasons = {k: reason for k, v in metrics.items() if v is None and reason}
        label_reason = NO_JUDGE_REASON if observation.answer_generated else NO_ANSWER_REASON
        metrics[LABEL] = None
        reasons[LABEL] = label_reason
        if question.extra.get("is_abstention"):
            metrics[LABEL_ABSTENTION] = None
            reasons[LABEL_ABSTENTION] = label_reason
        return metrics, reasons

    def prediction_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        keys = [k for k in verdict.metrics if k.startswith(("turn:", "session:")) or k == LABEL]
        return {
            "id": verdict.question_id,
            "slice": verdict.slice,
            "abstention": bool(question.extra.get("is_abstention")),
            **{k: verdict.metrics[k] for k in keys},
            "null_reasons": {
                k: verdict.null_reasons.get(k, "") for k in keys if verdict.metrics[k] is None
            },
        }
