"""The memory-system protocol every adapter implements, and the capabilities it declares.

A system sees only what the benchmark hands it: sessions of neutral turns (grouped by the
harness into ingest chunks) and query text. It must forget everything on ``reset()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from recallbench.contracts import Chunk, Memory, Session


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a system declares about itself; recorded in every run and shown in the card.

    ``ignores_k``: the system returns what it returns whatever ``k`` asks (the full-context
    baseline): its ``@k`` figures measure nothing and are null (rule ``ignores_k``).
    For speed (:mod:`recallbench.score.speed`, decided before measuring): ``in_process`` is N7
    (nothing crosses a network); ``retrieval_alone`` False is N4 (retrieval cannot be called on
    its own), ``per_call_timing`` False N5 (no per-call timing), ``batch_only`` N6.
    """

    returns_source_turns: bool = True
    accepts_images: bool = False
    summarizes: bool = False
    llm_inside: str | None = None
    in_process: bool = True
    ignores_k: bool = False
    retrieval_alone: bool = True
    per_call_timing: bool = True
    batch_only: bool = False


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-system request limits a system declares (``limits`` attribute; None: no limit).

    ``max_concurrency``: at most this many calls to the system at once, across every instance;
    ``requests_per_second``: at most this many calls started per second. The ``http`` system
    reads them from its config's ``[limits]`` table; other systems declare none
    (``getattr(instance, "limits", None)`` is None).
    """

    max_concurrency: int | None = None
    requests_per_second: float | None = None


HOOKS: tuple[str, ...] = ("finish_ingest",)
"""Optional methods a system may declare in its ``hooks`` class attribute (a frozenset of names).

``finish_ingest()``: called once after the last ``add`` of a haystack group, inside the timed
ingest (its time is recorded as ``finish_ms`` and counted in ``ingest_ms``): build an index,
wait for a hosted service to finish indexing. A system without it behaves as before: the
harness never calls a method that was not declared.
"""


@dataclass(frozen=True, slots=True)
class SystemContext:
    """What the harness gives a system when it is built.

    ``work_dir`` is a private folder for the system's on-disk state (inside the run folder);
    ``cache_dir`` is shared across runs (for example an embedding cache); ``seed`` is the run
    seed; ``config`` the user's options for this system (from ``--config``).
    """

    seed: int = 0
    work_dir: Path | None = None
    cache_dir: Path | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemorySystem(Protocol):
    """Three methods and a declaration. ``name`` is the registry name."""

    name: str
    capabilities: Capabilities
    # Optional: ``hooks`` (see HOOKS), ``settings`` (a mapping of the options the instance runs
    # with, recorded in run.json), ``close()`` (called when the harness is done with it).

    def add(self, session: Session) -> None:
        """Store one session (called in chronological order within a haystack group)."""

    def search(self, query: str, k: int) -> list[Memory]:
        """Return up to ``k`` memories, best first (``naive`` may ignore ``k``)."""

    def reset(self) -> None:
        """Forget everything added so far."""


def declared_hooks(system: object) -> frozenset[str]:
    """The optional hooks a system declares; an unknown name or a missing method is an error
    (so a misspelt hook fails loudly instead of silently never running)."""
    hooks = getattr(type(system), "hooks", frozenset())
    if isinstance(hooks, str) or not all(isinstance(h, str) for h in hooks):
        raise TypeError(f"{type(system).__name__}.hooks must be a set of hook names, got {hooks!r}")
    unknown = sorted(set(hooks) - set(HOOKS))
    if unknown:
        raise TypeError(
            f"{type(system).__name__}.hooks names unknown hook(s) {', '.join(unknown)}; "
            f"known: {', '.join(HOOKS)}"
        )
    for name in hooks:
        if not callable(getattr(system, name, None)):
            raise TypeError(f"{type(system).__name__} declares hook {name!r} but has no method")
    return frozenset(hooks)


def chunk_memory(chunk: Chunk, score: float | None = None) -> Memory:
    """The memory a chunk-storing system returns for one of its chunks (its text, its turns)."""
    return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=chunk.turn_ids, score=score)


def close_system(system: MemorySystem) -> None:
    """Release resources if the system has a ``close()`` method (optional)."""
    close = getattr(system, "close", None)
    if callable(close):
        close()
