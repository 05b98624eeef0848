"""``bm25``: one BM25 document per ingest chunk (``bm25s``, Lucene BM25, English stemming).

Stop words (option ``stopwords``): by default English *function words* only
(:data:`FUNCTION_WORDS`: articles and demonstratives, personal pronouns, wh-words, the forms of
be/do/have, common prepositions and conjunctions, contraction fragments). They carry no content
and, in conversations, match everything ("I", "my", "you", "when", "did"). Numbers,
negations, quantifiers, ordinals, modals and temporal words are kept, because memory questions
turn on them ("the first time", "how many", "not", "before"). ``"en"`` is bm25s's own English
list (which keeps pronouns and question words but drops "no" and "not"), ``null`` none, or give
a list. The chunk's text is indexed as the harness renders it (``speaker: text`` per turn), so
a speaker's name can match.

The index is built in ``finish_ingest`` (a declared hook: the runner calls it once after the
last ``add`` of a haystack group, so the build counts as ingest time); a search after further
``add`` calls rebuilds it first. Chunks that share no term with the query (score 0) are not
returned: an honest empty result rather than noise.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import Stemmer

from recallbench.contracts import Chunk, Memory, Session
from recallbench.errors import SystemConfigError
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory
from recallbench.systems.options import Option


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


FUNCTION_WORDS: tuple[str, ...] = (
    # articles and demonstratives
    "a", "an", "the", "this", "that", "these", "those",
    # personal pronouns and possessives
    "i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves",
    "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
    "we", "us", "our", "ours", "ourselves", "they", "them", "their", "theirs", "themselves",
    # wh-words
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    # be, do, have
    "be", "am", "is", "are", "was", "were", "been", "being",
    "do", "does", "did", "doing", "have", "has", "had", "having",
    # common prepositions and conjunctions
    "of", "in", "on", "at", "to", "for", "from", "with", "by", "about", "as", "into", "onto",
    "and", "or", "but", "if", "so", "than",
    # fragments of contractions ("it's", "don't", "I'd", "we'll", "I'm", "they're", "I've")
    "s", "t", "d", "ll", "m", "re", "ve",
)  # fmt: skip
"""recallbench's default BM25 stop words: English closed-class function words (see above)."""
STOPWORD_SETS: dict[str, Any] = {"function": list(FUNCTION_WORDS), "en": "en"}
BM25_OPTIONS: tuple[Option, ...] = (
    Option(
        "stemmer",
        (str,),
        "english",
        choices=tuple(sorted(Stemmer.algorithms())),
        help="PyStemmer language",
    ),
    Option(
        "stopwords",
        (str, list, type(None)),
        "function",
        choices=tuple(STOPWORD_SETS),
        items=str,
        help="a named set, null (none) or a list of words",
    ),
)
"""The options :meth:`BM25Index.from_config` reads (``bm25`` and ``hybrid``)."""


def stopwords_option(value: Any) -> Any:
    """The ``stopwords`` option as bm25s takes it: a named set, ``None``, or a list of words."""
    if value is None or isinstance(value, list | tuple):
        return None if value is None else [str(w) for w in value]
    if str(value) in STOPWORD_SETS:
        return STOPWORD_SETS[str(value)]
    raise SystemConfigError(
        f"bm25 stopwords must be one of {', '.join(STOPWORD_SETS)}, null or a list of words; "
        f"got {value!r}"
    )


class BM25Index:
    """A BM25 index over texts, built by :meth:`build` (or before a search that finds it out of
    date). Shared by ``bm25`` and ``hybrid``."""

    def __init__(self, language: str = "english", stopwords: Any = "function") -> None:
        self._stemmer = Stemmer.Stemmer(language)
        self._stopwords = stopwords_option(stopwords)
        self._texts: list[str] = []
        self._retriever: Any = None
        self._dirty = False
        self._lock = threading.Lock()  # searches may run concurrently (--concurrency)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BM25Index:
        """Options ``stemmer`` (a PyStemmer language) and ``stopwords`` (``function``, the
        default; ``en``, bm25s's English list; null; or a list of words)."""
        return cls(
            language=str(config.get("stemmer", "english")),
            stopwords=config.get("stopwords", "function"),
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

    def build(self) -> None:
        """Index every text added so far (a no-op when the index is up to date)."""
        with self._lock:
            self._build_locked()

    def _build_locked(self) -> None:
        if self._texts and (self._dirty or self._retriever is None):
            retriever = bm25s.BM25(csc_backend="numpy")
            retriever.index(self._tokenize(self._texts), show_progress=False)
            self._retriever = retriever
            self._dirty = False

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(document index, score) pairs with score > 0, best first, at most ``k``."""
        if not self._texts or k <= 0:
            return []
        with self._lock:
            self._build_locked()
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
    options = BM25_OPTIONS
    hooks = frozenset({"finish_ingest"})

    def __init__(self, context: SystemContext | None = None) -> None:
        config = (context or SystemContext()).config
        self._index = BM25Index.from_config(config)
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        self._chunks.extend(session.chunks)
        self._index.add([c.text for c in session.chunks])

    def search(self, query: str, k: int) -> list[Memory]:
        return [chunk_memory(self._chunks[i], score) for i, score in self._index.top(query, k)]

    def finish_ingest(self) -> None:
        self._index.build()

    def reset(self) -> None:
        self._chunks = []
        self._index.clear()
