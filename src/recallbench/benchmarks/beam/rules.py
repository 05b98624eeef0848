"""The BEAM rule set: rubric and event-ordering scores, null with a reason until a judge exists.

Per question (stable names):

* ``rubric``: BEAM's ``llm_judge_score``, the judge's grades of the question's rubric items
  averaged as compute_metrics.py averages them;
* ``event_ordering`` (event-ordering questions only): BEAM's ``tau_norm``, (Kendall tau-b + 1)
  / 2 between the gold event order and the answer's, answer events mapped onto gold events by
  an LLM equivalence call.

Both are judged by BEAM's own instrument (:mod:`recallbench.benchmarks.beam.answering`) in
answer mode. Without a judge (retrieval mode) they are null with the reason (``no_answer`` when
no answer was generated, else ``no_judge``). BEAM publishes no retrieval metric; the generic
retrieval metrics over ``source_chat_ids`` are reported beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from recallbench.benchmarks.beam.metrics import EVENT_ORDERING
from recallbench.contracts import Observation, Question
from recallbench.score.rules import (
    RULE_NO_ANSWER,
    RULE_NO_JUDGE,
    RUN,
    AnswerFigure,
    RuleSet,
    ScoringContext,
)

RUBRIC = "rubric"
EVENT_ORDER = "event_ordering"
NO_ANSWER_REASON = f"{RULE_NO_ANSWER}: no answer generated; BEAM grades answers, not memories"
NO_JUDGE_REASON = (
    f"{RULE_NO_JUDGE}: BEAM's rubric and event-ordering scores need an LLM judge, and none is "
    "configured yet"
)


class BeamRules(RuleSet):
    """BEAM's lines for ``recallbench score FILE --out`` are the default: every metric."""

    name = "beam"
    answer_figures: ClassVar[tuple[AnswerFigure, ...]] = (
        AnswerFigure(RUBRIC, "rubric score"),
        AnswerFigure(EVENT_ORDER, "event ordering", per_slice=False),
    )

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        context: ScoringContext = RUN,
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        reason = NO_JUDGE_REASON if observation.answer_generated else NO_ANSWER_REASON
        metrics: dict[str, float | None] = {RUBRIC: None}
        reasons = {RUBRIC: reason}
        if question.axis == EVENT_ORDERING:
            metrics[EVENT_ORDER] = None
            reasons[EVENT_ORDER] = reason
        return metrics, reasons
