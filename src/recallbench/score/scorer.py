"""Observations + gold labels -> one verdict per question. The one scorer for every system.

Deterministic: no clocks, no randomness, output sorted by (system order, question order).
A failed search (error, timeout, empty result) is a miss: every retrieval metric is 0 and the
question stays in the denominator. Null means "could not be measured" and carries a reason.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from recallbench.contracts import ALL, Observation, Question, Verdict
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


def score_dataset(
    dataset: LoadedDataset,
    observations: Iterable[Observation],
    ks: Sequence[int],
    systems: Sequence[str],
    rules: RuleSet,
    context: ScoringContext = RUN,
    ignores_k: Collection[str] = (),
) -> tuple[list[Verdict], dict[str, int]]:
    """Verdicts for one dataset under its benchmark's ``rules``, and the number of questions
    without an observation per system.

    ``ignores_k``: systems that declared they return what they return whatever k asks (the
    full-context baseline): every ``@k`` metric of theirs is null with the rule ``ignores_k``;
    figures over everything returned stay."""
    by_key: dict[tuple[str, str], Observation] = {}
    for o in observations:
        if o.dataset != dataset.key:
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
            extra, extra_reasons = rules.question_metrics(q, obs, ks, context)
            metrics.update(extra)
            reasons.update(extra_reasons)
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
                    flags=obs.flags,
                )
            )
    return verdicts, missing
