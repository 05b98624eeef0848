"""Ingest units chosen by the harness, never by the system.

- ``turn``: one chunk per message.
- ``pair`` (default): a user message plus the reply that follows it; any message not part of
  such a pair (an assistant opening, two user messages in a row) is a chunk of its own.
- ``session``: the whole session as one chunk.

A chunk's id is its first turn's id (``session`` chunks use the session id).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

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


def private_copy(sessions: Sequence[Session]) -> list[Session]:
    """Sessions with turn objects of their own (chunks share them as in the original), so a
    system that mutates what it is handed cannot change what other systems, or the scorer, see.
    """
    out = []
    for s in sessions:
        fresh = {id(t): copy.copy(t) for t in s.turns}

        def own(t: Turn, fresh: dict[int, Turn] = fresh) -> Turn:
            got = fresh.get(id(t))
            return got if got is not None else copy.copy(t)

        chunks = tuple(
            Chunk(c.chunk_id, c.session_id, c.date, tuple(own(t) for t in c.turns))
            for c in s.chunks
        )
        out.append(dataclasses.replace(s, turns=tuple(own(t) for t in s.turns), chunks=chunks))
    return out
