"""``random``: returns k stored chunks chosen at random, seeded by the run seed and the query.

Seeding by the query (not by call order) keeps results identical under any ``--concurrency``.
"""

from __future__ import annotations

import hashlib
import random

from recallbench.contracts import Chunk, Memory, Session
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory
from recallbench.systems.options import Option


class RandomSystem:
    name = "random"
    capabilities = Capabilities(returns_source_turns=True)
    options: tuple[Option, ...] = ()  # none: any key in its --config section is an error

    def __init__(self, context: SystemContext | None = None) -> None:
        self._seed = (context or SystemContext()).seed
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        self._chunks.extend(session.chunks)

    def search(self, query: str, k: int) -> list[Memory]:
        key = hashlib.sha256(f"{self._seed}\x00{query}".encode()).digest()
        rng = random.Random(int.from_bytes(key[:8], "big"))
        picked = rng.sample(range(len(self._chunks)), min(k, len(self._chunks)))
        return [chunk_memory(self._chunks[i]) for i in picked]

    def reset(self) -> None:
        self._chunks = []
