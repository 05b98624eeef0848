"""A small corpus of one user/assistant pair per session, for the vector-store system tests."""

from __future__ import annotations

from recallbench.contracts import Chunk, Session, Turn

PAIRS = [
    ("I just signed a lease on a quarter acre plot.", "A quarter acre is a nice size."),
    ("My dog is called Biscuit and he loves the beach.", "Biscuit is a great name."),
    ("The plot has water but no electricity.", "You could bring a generator."),
    ("My sister Ana moved to Lisbon last spring.", "Lisbon is lovely in spring."),
]


def corpus() -> list[Session]:
    """Session s<i> holds turns t<2i>, t<2i+1> as one chunk c<i>."""
    sessions = []
    for i, (user, assistant) in enumerate(PAIRS):
        sid = f"s{i}"
        turns = (
            Turn(f"t{2 * i}", sid, "user", user, "2026-03-02"),
            Turn(f"t{2 * i + 1}", sid, "assistant", assistant, "2026-03-02"),
        )
        sessions.append(Session(sid, "2026-03-02", turns, (Chunk(f"c{i}", sid, None, turns),)))
    return sessions
