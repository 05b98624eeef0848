"""Observations + gold labels -> one verdict per question. The one scorer for every system.

Deterministic: no clocks, no randomness, output sorted by (system order, question order).
A failed search (error, timeout, empty result) is a miss: every retrieval metric is 0 and the
question stays in the denominator. Null means "could not be measured" and carries a reason.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recallbench.contracts import (
    ALL,
    AnswerRecord,
    JudgementRecord,
    Observation,
    Question,
    Verdict,
)
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import DuplicateObservationError
from recallbench.score.metrics import MetricKey
from recallbench.score.retrieval import null_metrics, retrieval_metrics
from recallbench.score.rules import (
    RULE_IGNORES_K,
    RUN,
    RuleSet,
    ScoringContext,
    evidence_null_reason,
    source_turns_missing,
)


def ignores_k_reason(system: str) -> str:
    return (
        f"{RULE_IGNORES_K}: {system} returns what it returns whatever k asks (full context up "
        "to its budget), so its @k figures measure nothing; see its recall over everything "
        "returned"
    )


def ranked_source_turns(obs: Observation) -> list[tuple[str, ...]]:
    """The turn ids each returned memory covers, in rank order; a failed search ranks nothing."""
    if obs.outcome != "usable":
        return []
    return [m.source_turns or () for m in obs.memories]


def retrieval_for(
    question: Question, obs: Observation, ks: Sequence[int]
) -> tuple[dict[str, float | None], str | None]:
    """Retrieval metrics for one question, or nulls with a reason (``rule: explanation``)."""
    why = evidence_null_reason(question)
    if why:
        return dict(null_metrics(ks)), why
    missing = source_turns_missing(obs)
    if missing:
        return dict(null_metrics(ks)), missing
    ranked = ranked_source_turns(obs)
    return dict(retrieval_metrics(ranked, question.evidence_turns, ks)), None


RULE_READER_ERROR = "reader_error"
RULE_JUDGE_ERROR = "judge_error"
RULE_NOT_JUDGED = "not_judged"
RULE_NOT_ANSWERED = "not_answered"


@dataclass(frozen=True)
class Answering:
    """What the scorer needs of a memory- or answer-mode run for one dataset: the mode, the
    judge whose judgements are scored, the judge metrics, the answers and judgements by key, and
    what the verdicts say about them (instrument, reader, non-standard labels)."""

    mode: str
    judge: str
    metrics: tuple[str, ...]
    answers: Mapping[tuple[str, str], AnswerRecord] = field(default_factory=dict)
    judgements: Mapping[tuple[str, str, str], JudgementRecord] = field(default_factory=dict)
    instrument: str = ""
    reader: str | None = None
    non_standard: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        dataset: str,
        mode: str,
        judge: str,
        metrics: Sequence[str],
        answers: Iterable[AnswerRecord],
        judgements: Iterable[JudgementRecord],
        repeat: int = 0,
        **info: Any,
    ) -> Answering:
        """Index the records of ``dataset`` and ``repeat``; the first record of a key wins (as
        in repair)."""
        by_answer: dict[tuple[str, str], AnswerRecord] = {}
        for a in answers:
            if a.dataset == dataset and a.repeat == repeat:
                by_answer.setdefault((a.system, a.question_id), a)
        by_judgement: dict[tuple[str, str, str], JudgementRecord] = {}
        for j in judgements:
            if j.dataset == dataset and j.judge == judge and j.repeat == repeat:
                by_judgement.setdefault((j.system, j.question_id, j.metric), j)
        return cls(mode, judge, tuple(metrics), by_answer, by_judgement, **info)


def _with_rule(rule: str, text: str) -> str:
    """``text`` as a null reason: kept when it already starts with a rule (``rule: ...``)."""
    return text if re.match(r"^[a-z0-9_]+: ", text) else f"{rule}: {text}"


def _answered(obs: Observation, answering: Answering | None) -> Observation:
    """In answer mode, the observation as the rules score it: the reader's answer in its
    answer slot (``answer_generated``), so a benchmark's answer rules (LoCoMo F1, Glasshouse's
    string rules) read the reader's answer."""
    if answering is None or answering.mode != "answer":
        return obs
    a = answering.answers.get((obs.system, obs.question_id))
    if a is None or a.outcome != "answered":
        return obs
    return dataclasses.replace(obs, answer=a.answer, answer_generated=True)


def _judged(
    system: str,
    q: Question,
    metrics: dict[str, float | None],
    reasons: dict[str, str],
    rule_metrics: Collection[str],
    answering: Answering,
) -> dict[str, Any]:
    """Fill the judge metrics of one verdict (and null the answer figures of a question whose
    answer is missing or failed); a figure the rule set derives from a judged one by a variant
    (LongMemEval's ``label:abstention``, present on abstention questions only) takes the judged
    value. Return the verdict's ``answering`` record."""
    a = answering.answers.get((system, q.id))
    info: dict[str, Any] = {
        "mode": answering.mode,
        "instrument": answering.instrument,
        "judge": answering.judge,
    }
    if answering.mode == "answer":
        info["reader"] = answering.reader
        why = None
        if a is None:
            why = f"{RULE_NOT_ANSWERED}: no answer recorded (resume the run to write it)"
        elif a.outcome == "reader_error":
            why = f"{RULE_READER_ERROR}: {a.error}"
        if why:
            for name in rule_metrics:
                metrics[name] = None
                reasons[name] = why
        if a is not None:
            info.update(
                condition=a.condition,
                answer_outcome=a.outcome,
                reader_prompt_sha256=a.prompt_sha256,
                reader_prompt_tokens=a.prompt_tokens,
                reader_completion_tokens=a.completion_tokens,
                memory_tokens=a.memory_tokens,
                memory_chars=a.memory_chars,
                reader_cached=a.calls > 0 and a.cached_calls == a.calls,
                reader_retries=max(0, a.attempts - (a.calls - a.cached_calls)),
                reader_billed_usd=a.billed_usd,
            )
    judge_info: dict[str, Any] = {}
    for m in answering.metrics:
        j = answering.judgements.get((system, q.id, m))
        if a is not None and a.outcome == "reader_error":
            metrics[m] = None
            reasons[m] = f"{RULE_READER_ERROR}: {a.error}"
            continue
        if j is None:
            metrics[m] = None
            reasons[m] = (
                f"{RULE_NOT_JUDGED}: no judgement by {answering.judge} recorded (resume the "
                "run, or re-judge it with `recallbench score RUN --judge ...`)"
            )
            continue
        if j.outcome in ("judged", "miss"):
            metrics[m] = j.value
            reasons.pop(m, None)  # a rule set's own "waits for a judge" null is filled now
        else:
            metrics[m] = None
            rule = RULE_JUDGE_ERROR if j.outcome == "judge_error" else RULE_NOT_JUDGED
            reasons[m] = _with_rule(rule, j.error or "no reason recorded")
        judge_info[m] = {
            "outcome": j.outcome,
            "unparsed": j.unparsed,
            "prompt_sha256": j.prompt_sha256,
            "prompt_tokens": j.prompt_tokens,
            "completion_tokens": j.completion_tokens,
            "cached": j.calls > 0 and j.cached_calls == j.calls,
            "retries": max(0, j.attempts - (j.calls - j.cached_calls)),
            "billed_usd": j.billed_usd,
        }
    for name in list(metrics):  # a rule set's variant of a judged figure (label:abstention)
        base, _, variant = name.partition(":")
        if variant and base in answering.metrics and name not in answering.metrics:
            metrics[name] = metrics[base]
            if metrics[base] is None:
                reasons[name] = reasons.get(base, reasons.get(name, ""))
            else:
                reasons.pop(name, None)
    info["judgements"] = judge_info
    if answering.non_standard:
        info["non_standard"] = list(answering.non_standard)
    return info


def score_dataset(
    dataset: LoadedDataset,
    observations: Iterable[Observation],
    ks: Sequence[int],
    systems: Sequence[str],
    rules: RuleSet,
    context: ScoringContext = RUN,
    ignores_k: Collection[str] = (),
    answering: Answering | None = None,
    repeat: int = 0,
) -> tuple[list[Verdict], dict[str, int]]:
    """Verdicts for one dataset under its benchmark's ``rules``, and the number of questions
    without an observation per system.

    ``ignores_k``: systems that declared they return what they return whatever k asks (the
    full-context baseline): every ``@k`` metric of theirs is null with the rule ``ignores_k``;
    figures over everything returned stay.

    ``answering`` (memory and answer modes): the rules score the reader's answer, and the judge
    metrics come from the judgements (a judge or reader error is null with its reason, a
    failed search 0); each verdict says the mode and carries its ``answering`` record.

    ``repeat`` (``run --repeats``): only that repeat's observations are scored (the key of an
    observation is its system, question and repeat), and its verdicts carry it."""
    by_key: dict[tuple[str, str], Observation] = {}
    for o in observations:
        if o.dataset != dataset.key or o.repeat != repeat:
            continue
        key = (o.system, o.question_id)
        if key in by_key:
            raise DuplicateObservationError(
                f"two observations for question {o.question_id!r} of system {o.system!r}; "
                "`recallbench repair RUN` keeps the first of each and says how many it dropped"
            )
        by_key[key] = o
    verdicts: list[Verdict] = []
    missing: dict[str, int] = {}
    for system in systems:
        for q in dataset.questions:
            obs = by_key.get((system, q.id))
            if obs is None:
                missing[system] = missing.get(system, 0) + 1
                continue
            metrics, reason = retrieval_for(q, obs, ks)
            reasons = {name: reason for name, v in metrics.items() if v is None and reason}
            extra, extra_reasons = rules.question_metrics(q, _answered(obs, answering), ks,
                                                          context)
            metrics.update(extra)
            reasons.update(extra_reasons)
            info: dict[str, Any] = {}
            if answering is not None:
                info = _judged(system, q, metrics, reasons, extra, answering)
            if system in ignores_k:  # a figure already null keeps its own reason
                for key, value in metrics.items():
                    if value is not None and MetricKey.parse(key).k is not None:
                        metrics[key] = None
                        reasons[key] = ignores_k_reason(system)
            verdicts.append(
                Verdict(
                    run_id=obs.run_id,
                    dataset=dataset.key,
                    dataset_version=dataset.version_label,
                    system=system,
                    question_id=q.id,
                    slice=q.axis or ALL,
                    outcome=obs.outcome,
                    outcome_reason=obs.outcome_reason,
                    n_returned=len(obs.memories),
                    chars_returned=obs.chars_returned,
                    metrics=metrics,
                    null_reasons=reasons,
                    flags=scoring_flags(obs.flags),
                    mode=answering.mode if answering is not None else context_mode(context),
                    answering=info,
                    repeat=repeat,
                )
            )
    return verdicts, missing


QUEUED_PREFIX = "queued: "
"""Flags of the clock (Glasshouse's N8: the call's time includes queueing); they depend on
timing, so they stay on the observation and are not copied to the verdict."""


def scoring_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The observation's flags a verdict carries: all but the ``queued: ...`` ones (timing
    facts, which differ between two runs of the same spec)."""
    return tuple(f for f in flags if not f.startswith(QUEUED_PREFIX))


def context_mode(context: ScoringContext) -> str:
    """The mode a retrieval-or-dry scoring states on its verdicts."""
    return context.run_mode or "retrieval"
