"""Glasshouse v0.1 rule set: the benchmark's own string-mode (``dry``) scoring, per question.

Per question (beside the generic retrieval metrics):

- ``gh_dry``: Glasshouse's dry-mode value (0, 0.5, 1, or a fraction for GATHER), from
  :func:`recallbench.benchmarks.glasshouse.metrics.grade`; also reported weighted by the axis
  weights (``gh_dry:weighted``). Without an answer model (``answer_generated: false``) the
  "answer" is the returned memories joined, the figure is a development ruler rather than a
  reported score, and abstention questions are ungraded (null with a reason);
- ``gh_evidence``: 1 when any evidence came back (turn ids, or without them the returned text
  containing the gold), 0 when not, null when it cannot be told (unknown evidence, none by
  design, or a record that reports neither turn ids nor memories);
- ``gh_answer_generated``: 1 when an answer model wrote the answer, else 0;
- STALE questions only: ``gh_stale_old`` (the old value given as current) and
  ``gh_stale_reached`` (the new value was among the returned memories, so the question was no
  trap for that system); the report shows the trap count both ways;
- when scoring a predictions file, ``gh_chars_ok``: the record's
  characters checked as Glasshouse's scorer and CI check them: ``chars_returned`` must agree with
  the text of ``memories_returned`` (within max(20, 5%)), and with the corpus present
  (``ScoringContext.turn_chars``) every retrieved turn id must be a turn of the tier and the text
  must not be under half the corpus text of the turns it claims; null when there is nothing to
  check.

A cross-language ``XLING_QUERY`` question asked in English (its recorded query hash is the hash
of ``question_en``) is void: null with that reason, and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from recallbench.benchmarks.glasshouse.metrics import (
    contains,
    evidence_returned,
    grade,
    stale_trap_hit,
)
from recallbench.contracts import Observation, Question, Verdict, sha256_text
from recallbench.errors import OptionError
from recallbench.score.rules import (
    RULE_NOT_REPORTED,
    RUN,
    AnswerFigure,
    RuleSet,
    ScoringContext,
    evidence_null_reason,
)

DRY = "gh_dry"
EVIDENCE = "gh_evidence"
GENERATED = "gh_answer_generated"
STALE_OLD = "gh_stale_old"
STALE_REACHED = "gh_stale_reached"
CHARS_OK = "gh_chars_ok"
RULER = (
    "a development ruler, not a reported score: no answer model ran, so the 'answer' is the "
    "returned memories joined (answer_generated: false)"
)
RULE_UNGRADED = "ungraded"
RULE_VOID = "void_axis"
SCORING_MODES: tuple[str, ...] = ("dry",)


# ------------------------------------------------------------------------------ per question


def memory_texts(obs: Observation) -> list[str]:
    return [m.text for m in obs.memories if m.text]


def answer_of(obs: Observation) -> str:
    """The text graded: the model's answer, else a record's answer slot, else memories joined.

    Glasshouse's own no-reader baselines put the retrieved text in ``answer`` with
    ``answer_generated: false``; a recallbench run without an answer model leaves ``answer``
    empty, and the memories are joined with a space as those baselines do.
    """
    if obs.answer_generated:
        return obs.answer or ""
    if obs.answer is not None:
        return obs.answer
    return " ".join(memory_texts(obs))


def returned_text(obs: Observation) -> str:
    """The text that came back: the memories, or the answer slot of a no-reader record."""
    texts = memory_texts(obs)
    if texts:
        return " ".join(texts)
    return "" if obs.answer_generated else (obs.answer or "")


def retrieved_turn_ids(obs: Observation) -> list[str] | None:
    """Turn ids that came back, in order, or ``None`` when the memories name none."""
    if not obs.memories:
        return []
    if all(m.source_turns is None for m in obs.memories):
        return None
    return list(dict.fromkeys(t for m in obs.memories for t in m.source_turns or ()))


def asked_in_english(q: Question, obs: Observation) -> bool:
    """An XLING_QUERY question whose recorded query is its English text (a void ask)."""
    if q.axis != "XLING_QUERY" or not obs.query_sha256:
        return False
    english = q.extra.get("question_en") if q.extra else None
    if not isinstance(english, str) or english == q.text:
        return False
    return obs.query_sha256 == sha256_text(english)


def chars_check(
    obs: Observation, turn_chars: Mapping[str, int] | None
) -> tuple[float | None, str | None]:
    """Glasshouse's character checks of one record: 1 passes, 0 fails (reason), null can't tell."""
    ids = retrieved_turn_ids(obs) if obs.memories else None
    if turn_chars is not None and ids:
        unknown = [t for t in ids if t not in turn_chars]
        if unknown:
            return 0.0, (
                f"chars_check: retrieved turn id(s) {', '.join(unknown[:3])} are not turns of "
                "this tier (turn ids restart in every tier)"
            )
    text = returned_text(obs)
    if not text:
        return None, (
            "chars_check: no returned text to count (none came back, or its memories were "
            "not one text per retrieved turn and an answer model wrote the answer)"
        )
    actual = len(text)
    said = obs.chars_returned
    if abs(said - actual) > max(20, actual * 0.05):
        return 0.0, f"chars_check: chars_returned says {said}, the memories hold {actual}"
    if turn_chars is not None and ids:
        source = sum(turn_chars[t] for t in ids)
        if source and actual < source * 0.5:
            return 0.0, (
                f"chars_check: {actual} characters returned for turns holding {source} in the "
                "corpus (shortened text under the same turn ids)"
            )
    return 1.0, None


def _evidence(q: Question, obs: Observation) -> tuple[float | None, str | None]:
    why = evidence_null_reason(
        q, f"nothing to retrieve by design (expect={q.expect}, axis {q.axis})"
    )
    if why:
        return None, why
    if not obs.retrieval_reported:
        return None, (
            f"{RULE_NOT_REPORTED}: the record gives neither retrieved_turns nor "
            "memories_returned, so whether evidence came back cannot be told"
        )
    turns = retrieved_turn_ids(obs)
    texts = None if turns is not None else memory_texts(obs)
    hit = evidence_returned(q, turns, texts)
    if hit is None:
        return None, f"{RULE_NOT_REPORTED}: no turn ids and no gold to look for in the text"
    return (1.0 if hit else 0.0), None


class GlasshouseRules(RuleSet):
    name = "glasshouse"
    weighted_metrics: ClassVar[tuple[str, ...]] = (DRY,)
    answer_modes: ClassVar[tuple[str, ...] | None] = SCORING_MODES
    answer_figures: ClassVar[tuple[AnswerFigure, ...]] = (
        AnswerFigure(DRY, "dry plain"),
        AnswerFigure(f"{DRY}:weighted", "dry weighted"),
    )

    def check_mode(self, mode: str | None) -> None:
        """Refuse an answer scoring mode recallbench cannot apply to Glasshouse."""
        if mode is not None and mode not in SCORING_MODES:
            raise OptionError(
                f"glasshouse-v0.1: scoring mode {mode!r} is not available: recallbench scores "
                "Glasshouse in dry mode (string rules) only; the judge modes (memory, answer) "
                "need Glasshouse's own judge.py and a model key"
            )

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        context: ScoringContext = RUN,
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        q, obs = question, observation
        metrics: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        answer = answer_of(obs)
        value: float | None
        if asked_in_english(q, obs):
            value = None
            reasons[DRY] = (
                f"{RULE_VOID}: an XLING_QUERY question was asked in question_en instead of "
                "its `question` (query_lang); the axis measures nothing for this run"
            )
        else:
            value = grade(q, answer, answer_generated=obs.answer_generated)
            if value is None:
                reasons[DRY] = (
                    f"{RULE_UNGRADED}: an abstention question (expect={q.expect}, axis "
                    f"{q.axis}) cannot be graded on returned memories without an answer model"
                )
        metrics[DRY] = value
        metrics[EVIDENCE], why = _evidence(q, obs)
        if why:
            reasons[EVIDENCE] = why
        metrics[GENERATED] = 1.0 if obs.answer_generated else 0.0
        if context.predictions:  # a predictions file made by anyone
            metrics[CHARS_OK], why = chars_check(obs, context.turn_chars)
            if why and metrics[CHARS_OK] is None:
                reasons[CHARS_OK] = why
        if q.axis == "STALE":
            if value is None:
                metrics[STALE_OLD] = None
                metrics[STALE_REACHED] = None
                reasons[STALE_OLD] = reasons[STALE_REACHED] = reasons[DRY]
            else:
                golds = [g for g in (q.gold, *q.alternates) if g]
                text = returned_text(obs)
                reached = any(contains(text, g) for g in golds)
                metrics[STALE_OLD] = 1.0 if stale_trap_hit(q, answer) else 0.0
                metrics[STALE_REACHED] = 1.0 if reached else 0.0
        return metrics, reasons

    def prediction_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        ev = verdict.metrics.get(EVIDENCE)
        return {
            "id": question.id,
            "axis": question.axis,
            "weight": question.weight,
            "value": verdict.metrics.get(DRY),
            "evidence_returned": None if ev is None else bool(ev),
        }
