"""The bundled sample: loads, has the promised shape, matches its pins, carries a card, and hands
systems neutral fields only."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

from recallbench.benchmarks import dataset_specs, load_dataset
from recallbench.contracts import Turn, to_json_dict
from recallbench.datasets import sample
from recallbench.datasets.fetch import sha256_file

NEUTRAL_TURN_FIELDS = {"turn_id", "session_id", "speaker", "text", "date", "image"}
KINDS = {"fact", "paraphrase", "temporal", "multi_session", "update", "abstain"}


def _load(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_dataset("sample", tmp_path / "data")


def test_sample_loads_with_the_promised_shape(tmp_path: Path) -> None:
    ds = _load(tmp_path)
    assert ds.key == "sample"
    assert ds.haystack == "global"
    assert ds.pinned
    (group,) = ds.groups
    assert len(group.sessions) == 30
    assert 40 <= len(ds.questions) <= 60
    assert group.question_ids == tuple(q.id for q in ds.questions)
    assert len({q.id for q in ds.questions}) == len(ds.questions)
    dates = [s.date for s in group.sessions]
    assert all(dates) and dates == sorted(dates)
    turns = [t for s in group.sessions for t in s.turns]
    assert 200 <= len(turns) <= 500
    assert len({t.turn_id for t in turns}) == len(turns)


def test_every_evidence_turn_exists(tmp_path: Path) -> None:
    ds = _load(tmp_path)
    turns = {t.turn_id: t for s in ds.groups[0].sessions for t in s.turns}
    for q in ds.questions:
        assert q.evidence_turns is not None, q.id
        for e in q.evidence_turns:
            assert e in turns, (q.id, e)
        assert set(q.evidence_sessions) == {turns[e].session_id for e in q.evidence_turns}, q.id


def test_question_kinds(tmp_path: Path) -> None:
    ds = _load(tmp_path)
    kinds = Counter(q.axis for q in ds.questions)
    assert set(kinds) == KINDS
    for q in ds.questions:
        assert q.gold, q.id
        if q.axis == "abstain":
            assert q.expect == "no_memory", q.id
            assert q.evidence_turns == (), q.id
        else:
            assert q.expect == "answer", q.id
            assert q.evidence_turns, q.id
        if q.axis == "multi_session":
            assert len(set(q.evidence_sessions)) >= 2, q.id
        if q.axis == "update":
            assert q.extra.get("stale_answer"), q.id
            assert q.extra["stale_answer"] != q.gold, q.id


def test_sha256_pins_match(tmp_path: Path) -> None:
    ds = _load(tmp_path)
    pins = {f.name: f.sha256 for f in sample.FILES}
    assert set(pins) == {"turns.jsonl", "questions.jsonl"}
    for name, pinned in pins.items():
        assert sha256_file(sample.SAMPLE_DIR / name) == pinned, name
    assert {f.name: f.sha256 for f in ds.files} == pins
    assert all(f.pinned for f in ds.files)


def test_dataset_card_exists() -> None:
    card = sample.SAMPLE_DIR / "CARD.md"
    assert card.is_file()
    text = card.read_text(encoding="utf-8")
    assert "Apache-2.0" in text
    assert "abstain" in text
    spec = dataset_specs()["sample"]
    assert spec.license == "Apache-2.0"


def test_turns_have_neutral_fields_only() -> None:
    assert {f.name for f in dataclasses.fields(Turn)} == NEUTRAL_TURN_FIELDS


def test_loader_drops_fields_that_mark_evidence(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    turns = [
        {
            "turn_id": "t1",
            "session_id": "s1",
            "speaker": "user",
            "text": "My dog is Rex.",
            "date": "2025-01-01",
            "is_evidence": True,
            "role": "story",
            "has_answer": True,
        },
        {
            "turn_id": "t2",
            "session_id": "s1",
            "speaker": "assistant",
            "text": "Nice!",
            "date": "2025-01-01",
            "filler": True,
        },
    ]
    questions = [{"id": "q1", "question": "Dog?", "answer": "Rex", "evidence_turns": ["t1"]}]
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    ds = load_dataset(f"recallbench@{folder}", tmp_path / "data")
    for session in ds.groups[0].sessions:
        assert set(to_json_dict(session)) <= {"session_id", "date", "turns", "chunks"}
        for turn in session.turns:
            assert set(to_json_dict(turn)) == NEUTRAL_TURN_FIELDS
            assert not hasattr(turn, "is_evidence")
    # and the bundled sample itself holds no such field
    for line in (sample.SAMPLE_DIR / "turns.jsonl").read_text(encoding="utf-8").splitlines():
        assert set(json.loads(line)) <= NEUTRAL_TURN_FIELDS
