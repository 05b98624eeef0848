"""Observations + gold labels -> one verdict per question. The one scorer for every system.

Deterministic: no clocks, no randomness, output sorted by (system order, question order).
A failed search (error, timeout, empty result) is a miss: every retrieval metric is 0 and the
question stays in the denominator. Null means "could not be measured" and carries a reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from recallbench.contracts import Observation, Question, Verdict
from recallbench.datasets.spec import LoadedDataset
from recallbench.score.retrieval import null_metrics, retrieval_metrics
from recallbench.score.rulesets import get_ruleset

RULE_NO_EVIDENCE = "no_evidence"
RULE_EVIDENCE_UNKNOWN = "evidence_unknown"
RULE_NO_SOURCE_TURNS = "no_source_turns"


class DuplicateObservationError(ValueError):
    pass


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


def ranked_source_turns(obs: Observation) -> list[tuple[str, ...]]:
    """The turn ids each returned memory covers, in rank order; a failed search ranks nothing."""
    if obs.outcome != "usable":
        return []
    return [m.source_turns or () for m in obs.memories]


def retrieval_for(
    question: Question, obs: Observation, ks: Sequence[int]
) -> tuple[dict[str, float | None], str | None]:
    """Retrieval metrics for one question, or nulls with a reason (``rule: explanation``)."""
    if question.evidence_turns is None:
        why = question.evidence_unknown_reason or "the dataset gives no evidence turns"
        return dict(null_metrics(ks)), f"{RULE_EVIDENCE_UNKNOWN}: {why}"
    if not question.evidence_turns:
        return dict(null_metrics(ks)), (
            f"{RULE_NO_EVIDENCE}: the question has no evidence by design (expect="
            f"{question.expect}); excluded from retrieval metrics"
        )
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
) -> tuple[list[Verdict], dict[str, int]]:
    """Verdicts for one dataset, and the number of questions without an observation per system."""
    ruleset = get_ruleset(dataset.scoring)
    by_key: dict[tuple[str, str], Observation] = {}
    for o in observations:
        if o.dataset != dataset.key:
            continue
        key = (o.system, o.question_id)
        if key in by_key:
            raise DuplicateObservationError(
                f"two observations for question {o.question_id!r} of system {o.system!r}"
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
            extra, extra_reasons = ruleset.question_metrics(q, obs, ks, dataset.options)
            metrics.update(extra)
            reasons.update(extra_reasons)
            verdicts.append(
                Verdict(
                    run_id=obs.run_id,
                    dataset=dataset.key,
                    dataset_version=dataset.version_label,
                    system=system,
                    question_id=q.id,
                    slice=q.axis or "all",
                    outcome=obs.outcome,
                    outcome_reason=obs.outcome_reason,
                    n_returned=len(obs.memories),
                    chars_returned=obs.chars_returned,
                    metrics=metrics,
                    null_reasons=reasons,
                )
            )
    return verdicts, missing
