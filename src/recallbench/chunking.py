"""Ingest units chosen by the harness, never by the system.

- ``turn``: one chunk per message.
- ``pair`` (default): a user message plus the reply that follows it; any message not part of
  such a pair (an assistant opening, two user messages in a row) is a chunk of its own.
- ``session``: the whole session as one chunk.

A chunk's id is its first turn's id (``session`` chunks use the session id).
"""

from __future__ import annotations

from recallbench.contracts import Chunk, Session, Turn
from recallbench.errors import OptionError

CHUNKINGS: tuple[str, ...] = ("turn", "pair", "session")
USER_SPEAKERS = frozenset({"user", "human"})


def _chunk(session: Session, turns: list[Turn], chunk_id: str | None = None) -> Chunk:
    return Chunk(
        chunk_id=chunk_id or turns[0].turn_id,
        session_id=session.session_id,
        date=turns[0].date or session.date,
        turns=tuple(turns),
    )


def make_chunks(session: Session, mode: str) -> tuple[Chunk, ...]:
    turns = list(session.turns)
    if not turns:
        return ()
    if mode == "turn":
        return tuple(_chunk(session, [t]) for t in turns)
    if mode == "session":
        return (_chunk(session, turns, chunk_id=session.session_id),)
    if mode != "pair":
        raise OptionError(f"unknown chunking {mode!r}; choose one of {', '.join(CHUNKINGS)}")
    chunks: list[Chunk] = []
    i = 0
    while i < len(turns):
        t = turns[i]
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        if (
            t.speaker.lower() in USER_SPEAKERS
            and nxt is not None
            and nxt.speaker.lower() not in USER_SPEAKERS
        ):
            chunks.append(_chunk(session, [t, nxt]))
            i += 2
        else:
            chunks.append(_chunk(session, [t]))
            i += 1
    return tuple(chunks)


def with_chunks(session: Session, mode: str) -> Session:
    return Session(
        session_id=session.session_id,
        date=session.date,
        turns=session.turns,
        chunks=make_chunks(session, mode),
    )
