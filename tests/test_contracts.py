"""Records are frozen, serialise to plain JSON and back, and hash stably."""

from __future__ import annotations

import dataclasses
import json

import pytest

from recallbench.contracts import (
    Chunk,
    IngestRecord,
    Memory,
    MetricRow,
    Observation,
    Question,
    Session,
    Turn,
    Verdict,
    canonical_json,
    ingest_from_dict,
    metric_row_from_dict,
    observation_from_dict,
    sha256_text,
    to_json_dict,
    verdict_from_dict,
)

TURN = Turn(turn_id="t1", session_id="s1", speaker="user", text="Café ☕ at 9", date="2025-01-01")
TURN2 = Turn(turn_id="t2", session_id="s1", speaker="assistant", text="Noted.", image="img/1.png")
CHUNK = Chunk(chunk_id="c1", session_id="s1", date="2025-01-01", turns=(TURN, TURN2))
SESSION = Session(session_id="s1", date="2025-01-01", turns=(TURN, TURN2), chunks=(CHUNK,))
QUESTION = Question(
    id="q1",
    dataset="toy",
    group="all",
    text="Where was coffee?",
    gold="Café",
    alternates=("cafe",),
    evidence_turns=("t1",),
    evidence_sessions=("s1",),
    axis="fact",
    extra={"stale_answer": "home"},
)
OBS = Observation(
    run_id="r",
    dataset="toy",
    dataset_version="toy@1",
    group="all",
    question_id="q1",
    system="bm25",
    k=10,
    attempt=1,
    observed_at="2025-01-01T00:00:00+00:00",
    latency_ms=3.25,
    memories=(
        Memory(id="m1", text="user: Café ☕ at 9", source_turns=("t1", "t2"), score=1.5),
        Memory(id="m2", text="summary", source_turns=None),
        Memory(id="m3", text="", source_turns=()),
    ),
    chars_returned=24,
    outcome="usable",
    query_sha256=sha256_text("Where was coffee?"),
)
VERDICT = Verdict(
    run_id="r",
    dataset="toy",
    dataset_version="toy@1",
    system="bm25",
    question_id="q1",
    slice="fact",
    outcome="usable",
    outcome_reason=None,
    n_returned=3,
    chars_returned=24,
    metrics={"evidence_hit@1": 1.0, "mrr@1": None},
    null_reasons={"mrr@1": "no_source_turns: x"},
)
ROW = MetricRow(
    run_id="r",
    dataset="toy",
    dataset_version="toy@1",
    dataset_sha256="0" * 64,
    system="bm25",
    slice="all",
    metric="evidence_hit",
    k=1,
    value=0.5,
    denominator_name="questions_scored",
    denominator=2,
    n_excluded=1,
    exclusion_rule="no_evidence (1)",
)
INGEST = IngestRecord(
    run_id="r",
    dataset="toy",
    group="all",
    system="bm25",
    sessions=1,
    chunks=1,
    turns=2,
    ingest_ms=1.0,
    outcome="usable",
)
RECORDS = [TURN, CHUNK, SESSION, QUESTION, OBS.memories[0], OBS, VERDICT, ROW, INGEST]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_records_are_frozen(record: object) -> None:
    name = dataclasses.fields(record)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, name, "changed")
    with pytest.raises((AttributeError, TypeError)):
        record.not_a_field = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_records_serialise_to_plain_json(record: object) -> None:
    d = to_json_dict(record)
    assert json.loads(json.dumps(d)) == d


def test_observation_round_trip() -> None:
    d = json.loads(canonical_json(to_json_dict(OBS)))
    back = observation_from_dict(d)
    assert back == OBS
    assert back.memories[1].source_turns is None
    assert back.memories[2].source_turns == ()
    # unknown fields from a newer writer are ignored
    assert observation_from_dict({**d, "future_field": 1}) == OBS


def test_other_round_trips() -> None:
    assert verdict_from_dict(json.loads(canonical_json(to_json_dict(VERDICT)))) == VERDICT
    assert metric_row_from_dict(json.loads(canonical_json(to_json_dict(ROW)))) == ROW
    assert ingest_from_dict(json.loads(canonical_json(to_json_dict(INGEST)))) == INGEST


def test_chunk_text_and_ids() -> None:
    assert CHUNK.turn_ids == ("t1", "t2")
    assert CHUNK.text == "user: Café ☕ at 9\nassistant: Noted."
    assert CHUNK.images == ("img/1.png",)


def test_canonical_json_is_deterministic() -> None:
    a = {"b": [1, 2, {"z": 1, "a": None}], "a": "é", "c": 1.5}
    b = {"c": 1.5, "a": "é", "b": [1, 2, {"a": None, "z": 1}]}
    assert canonical_json(a) == canonical_json(b)
    assert canonical_json(a) == '{"a":"é","b":[1,2,{"a":null,"z":1}],"c":1.5}'
    assert canonical_json(to_json_dict(OBS)) == canonical_json(to_json_dict(OBS))


def test_question_content_hash_is_stable() -> None:
    same = dataclasses.replace(QUESTION, extra=dict(QUESTION.extra))
    assert QUESTION.content_hash == same.content_hash
    assert len(QUESTION.content_hash) == 16
    assert QUESTION.content_hash == sha256_text(canonical_json(to_json_dict(QUESTION)))[:16]
    assert dataclasses.replace(QUESTION, text="Where was tea?").content_hash != (
        QUESTION.content_hash
    )
    assert dataclasses.replace(QUESTION, evidence_turns=("t2",)).content_hash != (
        QUESTION.content_hash
    )
    # pinned value: a change means every recorded sample hash changes
    pinned = Question(id="q", dataset="d", group="g", text="t", gold="a")
    assert (
        pinned.content_hash
        == sha256_text(
            '{"alternates":[],"axis":"","dataset":"d","evidence_sessions":[],"evidence_turns":[],'
            '"evidence_unknown_reason":null,"expect":"answer","extra":{},"gold":"a","group":"g",'
            '"id":"q","lang":"en","text":"t","weight":1.0}'
        )[:16]
    )
