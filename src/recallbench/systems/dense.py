"""``dense``: one sentence embedding per ingest chunk, nearest neighbours by cosine similarity.

The chunk text (``speaker: text`` lines) is embedded at ingest, so ingest time measures the
embedding cost (minus what the shared on-disk cache already holds: see
:mod:`recallbench.systems.embeddings`). Vectors are unit length; search embeds the query and
ranks every stored chunk by dot product with NumPy (exact). Past ``ann_threshold`` stored
vectors (default 200,000) it switches to an approximate HNSW index from FAISS or usearch when
one of them is installed, and stays exact otherwise.

Config keys: those of :func:`recallbench.systems.embeddings.build_encoder` (``model``,
``query_prefix``, ``passage_prefix``, ``batch_size``, ``cache_queries``) plus

``ann_threshold``
    Stored vectors from which search is approximate (default 200000).
``ann_backend``
    ``auto`` (FAISS, then usearch, else exact), ``faiss``, ``usearch`` or ``exact`` (never
    approximate).
``ann_ef_search``
    HNSW search breadth (default 128; raised to ``k`` when ``k`` is larger).
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

import numpy as np

from recallbench.contracts import Chunk, Memory, Session
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory
from recallbench.systems.embeddings import (
    ENCODER_OPTIONS,
    Encoder,
    EncoderStats,
    build_encoder,
    require_sentence_transformers,
)
from recallbench.systems.options import Option

require_sentence_transformers()  # let the registry name the missing extra

logger = logging.getLogger(__name__)

CARD_NOTE = (
    "The default embedding model, all-MiniLM-L6-v2, was trained on English only: on a "
    "multilingual or cross-lingual benchmark its scores measure language coverage, not memory. "
    "Compare languages with a multilingual model (for example intfloat/multilingual-e5-small, "
    "config model=...)."
)

DEFAULT_ANN_THRESHOLD = 200_000
DEFAULT_EF_SEARCH = 128
HNSW_M = 32
INDEX_OPTIONS: tuple[Option, ...] = (
    Option(
        "ann_threshold",
        (int,),
        DEFAULT_ANN_THRESHOLD,
        min=0,
        help="stored vectors from which search is approximate",
    ),
    Option(
        "ann_backend",
        (str,),
        "auto",
        choices=("auto", "faiss", "usearch", "exact"),
        help="approximate-search library",
    ),
    Option("ann_ef_search", (int,), DEFAULT_EF_SEARCH, min=1, help="HNSW search breadth"),
)
"""The options :func:`index_from_config` reads (``dense`` and ``hybrid``)."""


def available_ann_backend(preferred: str = "auto") -> str | None:
    """The approximate-search library to use, or None when none is installed or wanted."""
    if preferred == "exact":
        return None
    order = ("faiss", "usearch") if preferred == "auto" else (preferred,)
    for name in order:
        module = "usearch.index" if name == "usearch" else name
        try:
            if importlib.util.find_spec(module) is not None:
                return name
        except ModuleNotFoundError:
            continue
    return None


class VectorIndex:
    """Unit vectors with exact dot-product search, approximate above a size threshold.

    Rows are kept in insertion order; ``top`` returns ``(row, score)`` pairs, best first, ties
    broken by the earlier row.
    """

    def __init__(
        self,
        dim: int,
        *,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
        ann_backend: str = "auto",
        ef_search: int = DEFAULT_EF_SEARCH,
        seed: int = 0,
    ) -> None:
        self.dim = dim
        self.ann_threshold = int(ann_threshold)
        self.ann_backend_wanted = ann_backend
        self.ef_search = int(ef_search)
        self.seed = seed
        self._blocks: list[np.ndarray] = []
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._n = 0
        self._ann: Any = None
        self._ann_kind: str | None = None
        self._ann_count = 0
        self._warned = False

    def __len__(self) -> int:
        return self._n

    @property
    def approximate(self) -> bool:
        """Whether the next search goes through the approximate index."""
        return self._n >= self.ann_threshold and self._backend() is not None

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if vectors.shape[0]:
            self._blocks.append(vectors)
            self._n += vectors.shape[0]

    def clear(self) -> None:
        self._blocks = []
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)
        self._n = 0
        self._ann = None
        self._ann_kind = None
        self._ann_count = 0

    def build(self) -> None:
        """Bring the matrix (and the approximate index, above the threshold) up to date."""
        matrix = self._consolidate()
        if self.approximate:
            self._ann_sync(matrix)

    def _consolidate(self) -> np.ndarray:
        if self._blocks:
            self._matrix = np.concatenate([self._matrix, *self._blocks], axis=0)
            self._blocks = []
        return self._matrix

    def top(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if k <= 0 or self._n == 0:
            return []
        matrix = self._consolidate()
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        if self.approximate:
            return self._ann_top(matrix, q, k)
        return exact_top(matrix, q, k)

    # -- approximate search

    def _backend(self) -> str | None:
        kind = available_ann_backend(self.ann_backend_wanted)
        if kind is None and self.ann_backend_wanted != "exact" and not self._warned:
            self._warned = True
            if self._n >= self.ann_threshold:
                logger.warning(
                    "%d vectors exceed ann_threshold=%d but neither faiss nor usearch is "
                    "installed: searching exactly",
                    self._n,
                    self.ann_threshold,
                )
        return kind

    def _ann_sync(self, matrix: np.ndarray) -> str | None:
        kind = self._backend()
        if self._ann is None or self._ann_kind != kind:
            self._ann = _new_ann(kind, self.dim, self.seed)
            self._ann_kind = kind
            self._ann_count = 0
        if self._ann_count < matrix.shape[0]:
            new = matrix[self._ann_count :]
            if kind == "faiss":
                self._ann.add(new)
            else:
                keys = np.arange(self._ann_count, matrix.shape[0], dtype=np.uint64)
                self._ann.add(keys, new)
            self._ann_count = matrix.shape[0]
        return kind

    def _ann_top(self, matrix: np.ndarray, q: np.ndarray, k: int) -> list[tuple[int, float]]:
        kind = self._ann_sync(matrix)
        k = min(k, matrix.shape[0])
        ef = max(self.ef_search, k)
        if kind == "faiss":
            self._ann.hnsw.efSearch = ef
            _scores, ids = self._ann.search(q.reshape(1, -1), k)
            rows = [int(i) for i in ids[0] if i >= 0]
        else:
            self._ann.expansion_search = ef
            matches = self._ann.search(q, k)
            rows = [int(i) for i in matches.keys]
        # Score the candidates exactly so scores are comparable with exact search.
        scored = [(r, float(matrix[r] @ q)) for r in rows]
        scored.sort(key=lambda rs: (-rs[1], rs[0]))
        return scored


def _new_ann(kind: str | None, dim: int, seed: int) -> Any:
    if kind == "faiss":
        import faiss

        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 128
        return index
    if kind == "usearch":
        from usearch.index import Index

        return Index(ndim=dim, metric="ip", dtype="f32", connectivity=HNSW_M)
    raise RuntimeError("no approximate-search backend installed")


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Exact top-``k`` rows of ``matrix`` by dot product with ``q``; ties by the earlier row."""
    scores = matrix @ q
    n = scores.shape[0]
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # Include every row tied with the k-th score so the tie-break is by row, not by chance.
        cutoff = scores[part].min()
        cand = np.flatnonzero(scores >= cutoff)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))[:k]
    return [(int(cand[i]), float(scores[cand[i]])) for i in order]


def index_from_config(encoder: Encoder, context: SystemContext) -> VectorIndex:
    config = context.config
    return VectorIndex(
        encoder.dim,
        ann_threshold=int(config.get("ann_threshold", DEFAULT_ANN_THRESHOLD)),
        ann_backend=str(config.get("ann_backend", "auto")),
        ef_search=int(config.get("ann_ef_search", DEFAULT_EF_SEARCH)),
        seed=context.seed,
    )


class DenseSystem(EncoderStats):
    name = "dense"
    options = ENCODER_OPTIONS + INDEX_OPTIONS
    hooks = frozenset({"finish_ingest"})
    capabilities = Capabilities(
        returns_source_turns=True, accepts_images=False, llm_inside=None, in_process=True
    )

    def __init__(self, context: SystemContext | None = None) -> None:
        context = context or SystemContext()
        self.encoder = build_encoder(context)  # loads the model now, not inside the first ingest
        self._index = index_from_config(self.encoder, context)
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        chunks = list(session.chunks)
        if not chunks:
            return
        vectors = self.encoder.encode_passages([c.text for c in chunks])
        self._index.add(vectors)
        self._chunks.extend(chunks)

    def search(self, query: str, k: int) -> list[Memory]:
        if k <= 0 or not self._chunks:
            return []
        q = self.encoder.encode_query(query)
        return [chunk_memory(self._chunks[i], s) for i, s in self._index.top(q, k)]

    def finish_ingest(self) -> None:
        self._index.build()

    def reset(self) -> None:
        self._chunks = []
        self._index.clear()
