"""The scorer: failed searches are misses, nulls carry a named rule, output is deterministic."""

from __future__ import annotations

import random

import pytest

from recallbench.contracts import (
    Memory,
    Observation,
    Question,
    Session,
    Turn,
    canonical_json,
    to_json_dict,
)
from recallbench.datasets.dataset import HaystackGroup, LoadedDataset
from recallbench.errors import DuplicateObservationError
from recallbench.score.aggregate import DENOM_WITH_FAILURES, aggregate
from recallbench.score.retrieval import METRICS, metric_key
from recallbench.score.rules import (
    RULE_EVIDENCE_UNKNOWN,
    RULE_NO_EVIDENCE,
    RULE_NO_SOURCE_TURNS,
    RuleSet,
)
from recallbench.score.scorer import score_dataset

RETRIEVAL = RuleSet()

KS = (1, 5)
RETRIEVAL_KEYS = [metric_key(m, k) for m in METRICS for k in KS]
RUN = "20250101T000000Z-test"


def _dataset(questions: list[Question]) -> LoadedDataset:
    turns = tuple(
        Turn(turn_id=f"t{i}", session_id="s1", speaker="user", text=f"turn {i}") for i in range(6)
    )
    session = Session(session_id="s1", date="2025-01-01", turns=turns)
    return LoadedDataset(
        name="toy",
        variant="",
        version="1",
        haystack="global",
        files=(),
        groups=(HaystackGroup("all", (session,), tuple(q.id for q in questions)),),
        questions=tuple(questions),
    )


def _q(qid: str, evidence: tuple[str, ...] | None = ("t1",), **kw: object) -> Question:
    return Question(
        id=qid,
        dataset="toy",
        group="all",
        text=f"question {qid}?",
        gold="x",
        evidence_turns=evidence,
        **kw,  # type: ignore[arg-type]
    )


def _obs(
    qid: str,
    memories: tuple[Memory, ...] = (),
    outcome: str = "usable",
    system: str = "sys",
    **kw: object,
) -> Observation:
    fields: dict[str, object] = dict(
        run_id=RUN,
        dataset="toy",
        dataset_version="toy@1",
        group="all",
        question_id=qid,
        system=system,
        k=max(KS),
        attempt=1,
        observed_at="2025-01-01T00:00:00+00:00",
        latency_ms=1.5 if outcome == "usable" else None,
        memories=memories,
        chars_returned=sum(len(m.text) for m in memories),
        outcome=outcome,
    )
    fields.update(kw)
    return Observation(**fields)  # type: ignore[arg-type]


def _mem(*turns: str) -> Memory:
    return Memory(id="m-" + "-".join(turns), text=" ".join(turns), source_turns=turns)


def _one(question: Question, obs: Observation):  # type: ignore[no-untyped-def]
    verdicts, missing = score_dataset(_dataset([question]), [obs], KS, ["sys"], RETRIEVAL)
    assert missing == {}
    assert len(verdicts) == 1
    return verdicts[0]


def test_hit_is_scored() -> None:
    v = _one(_q("q1"), _obs("q1", (_mem("t0"), _mem("t1"))))
    assert v.metrics["evidence_hit@1"] == 0.0
    assert v.metrics["evidence_hit@5"] == 1.0
    assert v.metrics["mrr@5"] == 0.5
    assert v.null_reasons == {}
    assert v.n_returned == 2
    assert v.slice == "all"


def test_error_is_a_miss_in_the_denominator() -> None:
    v = _one(_q("q1"), _obs("q1", outcome="error", outcome_reason="timeout after 60 s"))
    assert v.outcome == "error"
    assert v.outcome_reason == "timeout after 60 s"
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] == 0.0, key
    assert v.null_reasons == {}


def test_empty_result_is_a_miss() -> None:
    v = _one(_q("q1"), _obs("q1", outcome="unusable", outcome_reason="empty result"))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] == 0.0, key


def test_usable_answer_with_nothing_retrieved_is_a_miss() -> None:
    # e.g. a predictions file with an answer and "retrieved_turns": []: reported, empty -> 0
    v = _one(_q("q1"), _obs("q1", (), outcome="usable", answer="Paris"))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] == 0.0, key
    assert v.null_reasons == {}


def test_memories_without_source_turns_are_null_with_reason() -> None:
    mems = (Memory(id="a", text="t1 text"), Memory(id="b", text="t0 text"))
    v = _one(_q("q1"), _obs("q1", mems))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] is None, key
        assert v.null_reasons[key].startswith(RULE_NO_SOURCE_TURNS), key
    assert RULE_NO_SOURCE_TURNS == "no_source_turns"


def test_unreported_retrieval_is_null_not_zero() -> None:
    v = _one(_q("q1"), _obs("q1", outcome="unusable", retrieval_reported=False))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] is None
        assert v.null_reasons[key].startswith("no_source_turns")


def test_no_evidence_by_design_is_excluded() -> None:
    v = _one(_q("q1", (), expect="no_memory"), _obs("q1", (_mem("t1"),)))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] is None
        assert v.null_reasons[key].startswith(RULE_NO_EVIDENCE)
    assert RULE_NO_EVIDENCE == "no_evidence"


def test_unknown_evidence_is_null_with_its_reason() -> None:
    q = _q("q1", None, evidence_unknown_reason="the benchmark lists no evidence for this one")
    v = _one(q, _obs("q1", (_mem("t1"),)))
    for key in RETRIEVAL_KEYS:
        assert v.metrics[key] is None
        assert v.null_reasons[key].startswith(RULE_EVIDENCE_UNKNOWN)
        assert "the benchmark lists no evidence" in v.null_reasons[key]
    assert RULE_EVIDENCE_UNKNOWN == "evidence_unknown"
    # without a stated reason the rule is still named
    v2 = _one(_q("q2", None), _obs("q2", (_mem("t1"),)))
    assert all(v2.null_reasons[k].startswith("evidence_unknown") for k in RETRIEVAL_KEYS)


def test_duplicate_observation_is_an_error() -> None:
    ds = _dataset([_q("q1")])
    with pytest.raises(DuplicateObservationError):
        score_dataset(ds, [_obs("q1"), _obs("q1", (_mem("t1"),))], KS, ["sys"], RETRIEVAL)
    # the same question for two systems is not a duplicate
    both = [_obs("q1"), _obs("q1", system="other")]
    verdicts, _ = score_dataset(ds, both, KS, ["sys", "other"], RETRIEVAL)
    assert [v.system for v in verdicts] == ["sys", "other"]


def test_missing_observation_is_counted_and_other_datasets_ignored() -> None:
    ds = _dataset([_q("q1"), _q("q2")])
    foreign = _obs("q2", (_mem("t1"),), dataset="elsewhere")
    verdicts, missing = score_dataset(ds, [_obs("q1"), foreign], KS, ["sys"], RETRIEVAL)
    assert [v.question_id for v in verdicts] == ["q1"]
    assert missing == {"sys": 1}


def _mixed() -> tuple[LoadedDataset, list[Observation]]:
    questions = [
        _q("q1", ("t1",), axis="fact"),
        _q("q2", ("t2", "t3"), axis="fact"),
        _q("q3", (), expect="no_memory", axis="abstain"),
        _q("q4", ("t4",), axis="temporal"),
        _q("q5", ("t5",), axis="temporal"),
    ]
    obs = []
    for system in ("a", "b"):
        obs += [
            _obs("q1", (_mem("t1"), _mem("t0")), system=system),
            _obs("q2", (_mem("t0"), _mem("t2", "t3")), system=system),
            _obs("q3", (_mem("t0"),), system=system),
            _obs("q4", outcome="error", outcome_reason="boom", system=system),
            _obs("q5", outcome="unusable", outcome_reason="empty result", system=system),
        ]
    return _dataset(questions), obs


def test_failures_stay_in_the_denominator_and_exclusions_are_counted() -> None:
    ds, obs = _mixed()
    verdicts, _ = score_dataset(ds, obs, KS, ["a", "b"], RETRIEVAL)
    rows = aggregate(ds, verdicts, obs, [], ["a", "b"], RUN)
    row = next(
        r
        for r in rows
        if r.system == "a" and r.slice == "all" and r.metric == "evidence_hit" and r.k == 5
    )
    # q1 and q2 hit, q4 (error) and q5 (empty) are misses, q3 (no evidence) is excluded
    assert row.value == pytest.approx(2 / 4)
    assert row.denominator == 4
    assert row.denominator_name == DENOM_WITH_FAILURES
    assert row.n_excluded == 1
    assert row.exclusion_rule is not None and "no_evidence (1)" in row.exclusion_rule
    # the abstain slice has nothing to measure: null with the rule, never 0
    abstain = next(
        r
        for r in rows
        if r.system == "a" and r.slice == "abstain" and r.metric == "evidence_hit" and r.k == 5
    )
    assert abstain.value is None
    assert abstain.denominator == 0
    assert abstain.n_excluded == 1
    assert abstain.null_reason is not None and abstain.null_reason.startswith("no_evidence")
    # failed searches have no latency: timing excludes them and says how many
    p50 = next(r for r in rows if r.system == "a" and r.metric == "latency_ms_p50")
    assert p50.denominator == 3
    assert p50.n_excluded == 2
    err = next(r for r in rows if r.system == "a" and r.slice == "all" and r.metric == "error_rate")
    assert err.value == pytest.approx(1 / 5) and err.denominator == 5


def _dump(records: object) -> str:
    return "\n".join(canonical_json(to_json_dict(r)) for r in records)  # type: ignore[attr-defined]


def test_scoring_is_deterministic_and_independent_of_observation_order() -> None:
    ds, obs = _mixed()
    first, _ = score_dataset(ds, obs, KS, ["a", "b"], RETRIEVAL)
    again, _ = score_dataset(ds, list(obs), KS, ["a", "b"], RETRIEVAL)
    assert _dump(first) == _dump(again)
    rng = random.Random(7)
    for _ in range(5):
        shuffled = list(obs)
        rng.shuffle(shuffled)
        verdicts, _ = score_dataset(ds, shuffled, KS, ["a", "b"], RETRIEVAL)
        assert _dump(verdicts) == _dump(first)
        rows = aggregate(ds, verdicts, shuffled, [], ["a", "b"], RUN)
        assert _dump(rows) == _dump(aggregate(ds, first, obs, [], ["a", "b"], RUN))
    # verdicts follow system order, then question order
    assert [(v.system, v.question_id) for v in first] == [
        (s, q) for s in ("a", "b") for q in ("q1", "q2", "q3", "q4", "q5")
    ]
