from __future__ import annotations

import pytest

from recallbench.chunking import make_chunks
from recallbench.contracts import Session, Turn


def _session(speakers: str) -> Session:
    turns = tuple(
        Turn(f"t{i}", "s1", "user" if c == "u" else "assistant", f"text {i}", date="2025-01-01")
        for i, c in enumerate(speakers)
    )
    return Session("s1", "2025-01-01", turns)


def test_pair_joins_a_user_message_with_the_reply_that_follows() -> None:
    chunks = make_chunks(_session("uaua"), "pair")
    assert [c.turn_ids for c in chunks] == [("t0", "t1"), ("t2", "t3")]
    assert chunks[0].chunk_id == "t0"
    assert chunks[0].text == "user: text 0\nassistant: text 1"


def test_pair_leaves_unpaired_messages_alone() -> None:
    # assistant opening, two user messages in a row, a trailing user message
    chunks = make_chunks(_session("auuau"), "pair")
    assert [c.turn_ids for c in chunks] == [("t0",), ("t1",), ("t2", "t3"), ("t4",)]


def test_turn_and_session_chunking() -> None:
    s = _session("uaua")
    assert [c.turn_ids for c in make_chunks(s, "turn")] == [("t0",), ("t1",), ("t2",), ("t3",)]
    (whole,) = make_chunks(s, "session")
    assert whole.chunk_id == "s1" and whole.turn_ids == ("t0", "t1", "t2", "t3")


def test_every_turn_lands_in_exactly_one_chunk() -> None:
    s = _session("uauuaaua")
    for mode in ("turn", "pair", "session"):
        ids = [t for c in make_chunks(s, mode) for t in c.turn_ids]
        assert ids == [t.turn_id for t in s.turns]


def test_unknown_chunking_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown chunking"):
        make_chunks(_session("ua"), "paragraph")
