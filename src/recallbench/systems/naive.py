"""``naive``: full context without retrieval.

Ignores ``k`` and returns every stored chunk, newest first, until the next chunk would overflow
a character budget standing for a reader's context window (default 120,000 characters, about a
32k-token window at ~4 characters per token; set ``char_budget`` in the system's config). Its
``chars_returned`` shows what full context costs.
"""

from __future__ import annotations

from recallbench.contracts import Chunk, Memory, Session
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory
from recallbench.systems.options import Option

DEFAULT_CHAR_BUDGET = 120_000


class NaiveSystem:
    name = "naive"
    capabilities = Capabilities(returns_source_turns=True, ignores_k=True)
    options = (
        Option(
            "char_budget",
            (int,),
            DEFAULT_CHAR_BUDGET,
            min=1,
            help="characters returned, newest first",
        ),
    )

    def __init__(self, context: SystemContext | None = None) -> None:
        config = (context or SystemContext()).config
        self.char_budget = int(config.get("char_budget", DEFAULT_CHAR_BUDGET))
        self.settings = {"char_budget": self.char_budget}
        """The options this instance runs with, recorded in run.json."""
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        self._chunks.extend(session.chunks)

    def search(self, query: str, k: int) -> list[Memory]:
        out: list[Memory] = []
        used = 0
        for chunk in reversed(self._chunks):
            text = chunk.text
            if used + len(text) > self.char_budget:
                break
            used += len(text)
            out.append(chunk_memory(chunk))
        return out

    def reset(self) -> None:
        self._chunks = []
