"""``bm25``: one BM25 document per ingest chunk (``bm25s``, English stemming and stop words).

The index is rebuilt lazily on the first search after new sessions were added. Chunks that share
no term with the query (score 0) are not returned: an honest empty result rather than noise.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import Stemmer

from recallbench.contracts import Chunk, Memory, Session
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory


def _import_bm25s() -> Any:
    """bm25s, imported without SciPy.

    bm25s imports ``scipy.sparse`` whenever SciPy is installed, only to offer a SciPy backend
    for building its score matrix; recallbench always builds with bm25s's NumPy backend
    (``csc_backend="numpy"``, the same matrix), so importing SciPy (0.1-0.3 s, and pulled in by
    the dense extras) would be pure start-up cost. While bm25s imports, ``sys.modules["scipy"]``
    is ``None``, which makes its ``import scipy.sparse`` fail as if SciPy were absent; the entry
    is removed afterwards, so anything else can import SciPy as usual. If SciPy is already
    loaded, bm25s is imported as it is.
    """
    if "bm25s" in sys.modules or "scipy" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import bm25s
    finally:
        if sys.modules.get("scipy", 0) is None:
            del sys.modules["scipy"]
    return bm25s


bm25s = _import_bm25s()


class BM25Index:
    """A BM25 index over texts, with lazy rebuild. Shared by ``bm25`` and ``hybrid``."""

    def __init__(self, language: str = "english", stopwords: str | None = "en") -> None:
        self._stemmer = Stemmer.Stemmer(language)
        self._stopwords = stopwords
        self._texts: list[str] = []
        self._retriever: Any = None
        self._dirty = False
        self._lock = threading.Lock()  # searches may run concurrently (--concurrency)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BM25Index:
        """Options ``stemmer`` (a PyStemmer language) and ``stopwords`` (bm25s's, or null)."""
        return cls(
            language=str(config.get("stemmer", "english")),
            stopwords=config.get("stopwords", "en"),
        )

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, texts: list[str]) -> None:
        self._texts.extend(texts)
        self._dirty = True

    def clear(self) -> None:
        self._texts = []
        self._retriever = None
        self._dirty = False

    def _tokenize(self, texts: list[str]) -> Any:
        return bm25s.tokenize(
            texts, stopwords=self._stopwords, stemmer=self._stemmer, show_progress=False
        )

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(document index, score) pairs with score > 0, best first, at most ``k``."""
        if not self._texts or k <= 0:
            return []
        with self._lock:
            if self._dirty or self._retriever is None:
                retriever = bm25s.BM25(csc_backend="numpy")
                retriever.index(self._tokenize(self._texts), show_progress=False)
                self._retriever = retriever
                self._dirty = False
            retriever = self._retriever
            tokens = self._tokenize([query])  # PyStemmer stemmers are not thread-safe
        if not tokens.ids or not tokens.ids[0]:
            return []
        # Map query tokens into the index vocabulary; unknown tokens cannot score.
        inv = {i: w for w, i in tokens.vocab.items()}
        vocab = retriever.vocab_dict
        words = [inv[i] for i in tokens.ids[0] if inv[i] in vocab]
        if not words:
            return []
        scores = retriever.get_scores(words)
        n = min(k, len(self._texts))
        idx = np.argsort(-scores, kind="stable")[:n]
        return [(int(i), float(scores[i])) for i in idx if scores[i] > 0]


class BM25System:
    name = "bm25"
    capabilities = Capabilities(returns_source_turns=True)

    def __init__(self, context: SystemContext | None = None) -> None:
        config = (context or SystemContext()).config
        self._index = BM25Index.from_config(config)
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        self._chunks.extend(session.chunks)
        self._index.add([c.text for c in session.chunks])

    def search(self, query: str, k: int) -> list[Memory]:
        return [chunk_memory(self._chunks[i], score) for i, score in self._index.top(query, k)]

    def reset(self) -> None:
        self._chunks = []
        self._index.clear()
