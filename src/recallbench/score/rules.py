"""The scoring extension point: a benchmark's own per-question metrics, as a :class:`RuleSet`.

Every dataset gets the generic retrieval metrics; a rule set adds the benchmark's own. A rule set
never sees which system produced an observation. Subclass :class:`RuleSet` and override what the
benchmark needs: every hook has a typed default, so a misspelt override is an unused method that
tests and type checkers can see, never a hook that silently does not run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from recallbench.contracts import AnswerFigure, Observation, Question, Verdict, to_json_dict

RULE_NO_EVIDENCE = "no_evidence"
RULE_EVIDENCE_UNKNOWN = "evidence_unknown"
RULE_NO_SOURCE_TURNS = "no_source_turns"
RULE_NOT_REPORTED = "not_reported"
RULE_NO_ANSWER = "no_answer"
RULE_NO_JUDGE = "no_judge"
RULE_IGNORES_K = "ignores_k"


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """How the observations being scored were made.

    ``predictions``: a predictions file made by anyone (``recallbench score FILE``), not a
    recallbench run; ``mode`` is its answer scoring mode; ``turn_chars`` the corpus turn lengths
    when the benchmark checks a record's character claims against them.
    """

    predictions: bool = False
    mode: str | None = None
    turn_chars: Mapping[str, int] | None = None
    run_mode: str | None = None
    """The run's mode as verdicts state it (None: ``retrieval``)."""


RUN = ScoringContext()


def evidence_null_reason(question: Question, detail: str | None = None) -> str | None:
    """Why a question's retrieval cannot be scored from its gold side, or None.

    Evidence unknown (``evidence_unknown``) or none by design (``no_evidence``, excluded from
    retrieval metrics). ``detail`` replaces the default wording of the by-design case.
    """
    if question.evidence_turns is None:
        why = question.evidence_unknown_reason or "the dataset gives no evidence turns"
        return f"{RULE_EVIDENCE_UNKNOWN}: {why}"
    if not question.evidence_turns:
        return f"{RULE_NO_EVIDENCE}: " + (
            detail
            or f"the question has no evidence by design (expect={question.expect}); excluded "
            "from retrieval metrics"
        )
    return None


def source_turns_missing(obs: Observation) -> str | None:
    """Why retrieval cannot be checked for an observation (null, never 0), or None.

    A failed search, or an answer with nothing retrieved, is a miss, not "cannot be checked".
    """
    if not obs.retrieval_reported:
        return (
            f"{RULE_NO_SOURCE_TURNS}: the record reports no retrieved turn ids, so retrieval "
            "cannot be checked"
        )
    if (
        obs.outcome == "usable"
        and obs.memories
        and all(m.source_turns is None for m in obs.memories)
    ):
        return (
            f"{RULE_NO_SOURCE_TURNS}: the system returns no source turn ids, so retrieval "
            "cannot be checked"
        )
    return None


class RuleSet:
    """Retrieval only: the base of every benchmark's rule set, and the rule set of datasets that
    have no metrics of their own (the sample, recallbench's folder format)."""

    name: ClassVar[str] = "retrieval"
    weighted_metrics: ClassVar[tuple[str, ...]] = ()
    """Metrics also reported weighted by ``Question.weight`` (``<metric>:weighted``)."""
    answer_modes: ClassVar[tuple[str, ...] | None] = None
    """Answer scoring modes a predictions file may ask for (None: the benchmark has no choice)."""
    answer_figures: ClassVar[tuple[AnswerFigure, ...]] = ()
    """The benchmark's answer figures, in the order reports show them: what the do-nothing
    controls (``recallbench controls``, the summary's floor) are read on. Empty: the benchmark
    scores retrieval only, and its floor is that of a system that returns nothing."""

    def check_mode(self, mode: str | None) -> None:
        """Refuse an answer scoring mode the benchmark cannot apply (raise an OptionError)."""

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        context: ScoringContext = RUN,
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        """Extra metrics for one question, and a reason for each null."""
        return {}, {}

    def prediction_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        """One line of ``recallbench score FILE --out``: the verdict's metrics by default."""
        return {
            "id": verdict.question_id,
            "slice": verdict.slice,
            **to_json_dict(verdict.metrics),
            "null_reasons": to_json_dict(verdict.null_reasons),
        }

