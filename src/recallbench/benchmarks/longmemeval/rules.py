"""The LongMemEval rule set: the benchmark's own retrieval metrics and its judge label.

Per question (stable names, also the keys of ``recallbench score FILE --out`` lines), for each K
of the run's k (``recallbench score`` defaults to 1, 3, 5, 10, 30, 50):

* ``turn:recall_any@K``, ``turn:recall_all@K``, ``turn:ndcg_any@K``: the ranked user turns (the
  memories' source turns, best memory first, assistant turns dropped) against the user turns
  marked ``has_answer`` in the answer sessions;
* ``session:recall_any@K`` and so on: the same ranking mapped to (pseudo-)sessions, k growing
  until K distinct sessions are covered, as LongMemEval's ``evaluate_retrieval_turn2session``
  computes them on this ranking (see ``metrics.session_evaluation``);
* ``session:ranking_exhausted@K``: 1.0 when that grown k ran past the end of the ranking while
  corpus turns were left unranked (``metrics.SessionCutoff.exhausted``), else 0.0; a raised
  flag has its reason (rule ``ranking_exhausted``) in the verdict's ``null_reasons`` under the
  flag's key. The session values at K are then the official function's on the ranking the
  system gave; the official evaluation ranks the whole corpus, so its cut would have read
  further turns;
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
    SessionCutoff,
    session_evaluation,
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
RANKING_EXHAUSTED = "session:ranking_exhausted"
LABEL = "label"
LABEL_ABSTENTION = "label:abstention"

RULE_ABSTENTION = "abstention"
RULE_NO_EVIDENCE_TURN = "no_evidence_turn"
RULE_RANKING_EXHAUSTED = "ranking_exhausted"

ABSTENTION_REASON = (
    f"{RULE_ABSTENTION}: abstention question (id ends in _abs); LongMemEval leaves it out of "
    "retrieval metrics"
)
NO_ANSWER_REASON = f"{RULE_NO_ANSWER}: no answer generated; the judge grades an answer"
NO_JUDGE_REASON = (
    f"{RULE_NO_JUDGE}: LongMemEval QA accuracy needs an LLM judge, and none is configured yet"
)


def retrieval_keys(ks: Sequence[int]) -> list[str]:
    """The turn and session metric keys at each k (not the flags: :func:`flag_keys`)."""
    return [f"{g}:{m}@{k}" for g in GRANULARITIES for m in MEASURES for k in ks]


def flag_keys(ks: Sequence[int]) -> list[str]:
    """``session:ranking_exhausted@K`` at each k."""
    return [f"{RANKING_EXHAUSTED}@{k}" for k in ks]


def ranking_exhausted_reason(cut: SessionCutoff) -> str:
    """The reason recorded with a raised ``session:ranking_exhausted@K`` flag."""
    return (
        f"{RULE_RANKING_EXHAUSTED}: LongMemEval grows k={cut.k} until the top turns cover "
        f"{cut.k} distinct sessions, but the ranking ends first (ranked user turns "
        f"{cut.ranked_turns}, distinct (pseudo-)sessions {cut.ranked_sessions}; corpus user "
        f"turns {cut.corpus_turns}, unranked {cut.corpus_turns - cut.ranked_turns}; effective_k "
        f"{cut.effective_k}). The session values are the official function's on this ranking; "
        "the official evaluation assumes a ranking of the whole corpus"
    )


def retrieval_for(
    question: Question, observation: Observation, ks: Sequence[int]
) -> tuple[dict[str, float | None], str | None, dict[str, str]]:
    """LongMemEval's turn and session metrics and flags for one observation, or nulls and the
    reason; and the reason of each raised flag."""
    keys = retrieval_keys(ks) + flag_keys(ks)
    extra = question.extra
    if extra.get("is_abstention"):
        return dict.fromkeys(keys), ABSTENTION_REASON, {}
    gold = tuple(extra.get("has_answer_turns") or ())
    if not gold:
        why = question.evidence_unknown_reason or "no user turn is marked has_answer"
        return dict.fromkeys(keys), f"{RULE_NO_EVIDENCE_TURN}: {why}", {}
    missing = source_turns_missing(observation)
    if missing:
        return dict.fromkeys(keys), missing, {}
    ranked = ranked_source_turns(observation)
    user_turns = frozenset(extra.get("user_turns") or ())
    out: dict[str, float | None] = {}
    out.update(turn_metrics(ranked, gold, user_turns, ks))
    session, cuts = session_evaluation(
        ranked,
        strip_turn_suffix,
        tuple(extra.get("answer_session_ids") or ()),
        gold,
        user_turns,
        ks,
    )
    out.update(session)
    flags: dict[str, str] = {}
    for k, cut in cuts.items():
        key = f"{RANKING_EXHAUSTED}@{k}"
        out[key] = float(cut.exhausted)
        if cut.exhausted:
            flags[key] = ranking_exhausted_reason(cut)
    return out, None, flags


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
        metrics, reason, flags = retrieval_for(question, observation, ks)
        reasons = {k: reason for k, v in metrics.items() if v is None and reason}
        reasons.update(flags)
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
                k: verdict.null_reasons.get(k, "")
                for k in keys
                if verdict.metrics[k] is None or k in verdict.null_reasons
            },
        }
