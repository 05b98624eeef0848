"""An example recallbench plugin: ``keyword-example``, a keyword-overlap memory system.

It is deliberately simple so the adapter contract stays visible. A real adapter would call
its memory library in ``add`` and ``search`` instead of the few lines of scoring below.

The contract, in short (see ``recallbench.systems.base``):

* The registry calls the entry point's target with a ``SystemContext`` (seed, a private
  ``work_dir``, a shared ``cache_dir`` and the user's ``config`` mapping).
* ``add(session)`` is called once per session, in chronological order. ``session.chunks`` are
  the ingest units the harness chose (for example a user turn plus the assistant's reply);
  ``session.turns`` are the raw messages if you prefer to chunk yourself.
* ``search(query, k)`` returns at most ``k`` ``Memory`` objects, best first. Fill
  ``source_turns`` with the ids of the turns a memory came from: retrieval metrics are computed
  from them (leave it ``None`` if your system cannot tell, and declare
  ``returns_source_turns=False``).
* ``reset()`` must forget everything: it is called between haystack groups, and the
  conformance kit (``recallbench verify``) checks that nothing leaks across it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recallbench.contracts import Memory, Session
from recallbench.systems.base import Capabilities, SystemContext

# Words are runs of Unicode letters/digits, compared case-insensitively, so the system also
# works for Cyrillic, Greek, Korean and other space-separated scripts.
_WORD = re.compile(r"\w+")

# A handful of very common English words that would otherwise match almost everything.
# fmt: off
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "did", "do", "does", "for", "from", "had",
    "has", "have", "i", "in", "is", "it", "me", "my", "of", "on", "or", "so", "that", "the",
    "there", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "with", "you", "your",
})
# fmt: on


def _keywords(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS)


@dataclass(frozen=True)
class _Entry:
    """One stored ingest chunk together with its precomputed keywords."""

    memory_id: str
    text: str
    turn_ids: tuple[str, ...]
    keywords: frozenset[str]


class KeywordExampleSystem:
    """Ranks stored chunks by how many distinct query keywords they share with the query.

    Ties go to the more recent chunk. Chunks sharing no keyword are not returned, so an
    unrelated query honestly gets an empty list.

    Config (``recallbench run --config FILE``, section for this system):
        ``min_overlap`` (int, default 1): keywords a chunk must share to be returned.
    """

    # ``name`` is how the system is shown in results; keep it equal to the entry-point name.
    name = "keyword-example"
    # Declarations recorded with every run. This system returns stored text verbatim
    # (summarizes=False), knows its source turns and calls no LLM.
    capabilities = Capabilities(returns_source_turns=True, summarizes=False, llm_inside=None)

    def __init__(self, context: SystemContext | None = None) -> None:
        context = context or SystemContext()
        self.min_overlap = int(context.config.get("min_overlap", 1))
        # This system keeps everything in memory; a persistent one would put its files under
        # context.work_dir (private to this run) and reusable caches under context.cache_dir.
        self._entries: list[_Entry] = []

    def add(self, session: Session) -> None:
        for chunk in session.chunks:
            self._entries.append(
                _Entry(
                    memory_id=chunk.chunk_id,
                    text=chunk.text,  # "speaker: text" lines, kept unchanged
                    turn_ids=chunk.turn_ids,
                    keywords=_keywords(chunk.text),
                )
            )

    def search(self, query: str, k: int) -> list[Memory]:
        wanted = _keywords(query)
        if not wanted or k <= 0:
            return []  # an empty query must return a list, not raise
        ranked: list[tuple[int, int, _Entry]] = []
        for position, entry in enumerate(self._entries):
            overlap = len(wanted & entry.keywords)
            if overlap >= self.min_overlap:
                ranked.append((overlap, position, entry))
        # Best overlap first, then newest first. Sorting on plain values keeps the output
        # deterministic, which the conformance kit checks.
        ranked.sort(key=lambda item: (-item[0], -item[1]))
        return [
            Memory(
                id=entry.memory_id,
                text=entry.text,
                source_turns=entry.turn_ids,
                score=float(overlap),
            )
            for overlap, _, entry in ranked[:k]
        ]

    def reset(self) -> None:
        # Forget everything, including any index or cache derived from added sessions.
        self._entries = []
