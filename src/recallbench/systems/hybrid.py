"""``hybrid``: BM25 and dense retrieval over the same chunks, fused by reciprocal rank fusion.

Each side ranks its own candidates (``depth`` of them, default ``max(k, 50)``); a chunk's fused
score is the sum over the sides that returned it of ``1 / (c + rank)``, rank counted from 1
(Cormack, Clarke and Buettcher, SIGIR 2009). The constant ``c`` (config ``rrf_k``, default 60)
damps the weight of the top ranks: with a large ``c`` a chunk found by both sides beats one
found at the top of a single side. Ties are broken by the better single-side rank, then by
ingest order. BM25 only proposes chunks sharing a term with the query (see ``bm25``); dense
proposes its nearest ``depth`` chunks.

Config keys: those of ``dense`` (model, prefixes, cache, ANN) and of ``bm25`` (``stemmer``,
``stopwords``), plus ``rrf_k`` (default 60) and ``depth`` (default 50).
"""

from __future__ import annotations

from recallbench.contracts import Chunk, Memory, Session
from recallbench.errors import SystemConfigError
from recallbench.systems.base import Capabilities, SystemContext, chunk_memory
from recallbench.systems.bm25 import BM25_OPTIONS, BM25Index
from recallbench.systems.dense import INDEX_OPTIONS, index_from_config
from recallbench.systems.embeddings import (
    ENCODER_OPTIONS,
    EncoderStats,
    build_encoder,
    require_sentence_transformers,
)
from recallbench.systems.options import Option

require_sentence_transformers()  # let the registry name the missing extra

DEFAULT_RRF_K = 60.0
DEFAULT_DEPTH = 50

__all__ = ["HybridSystem", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    rankings: list[list[int]], c: float = DEFAULT_RRF_K
) -> list[tuple[int, float]]:
    """Fuse ranked lists of ids: ``(id, sum of 1/(c + rank))``, best first.

    Ties go to the id with the better best rank, then to the smaller id.
    """
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (c + rank)
            best[doc] = min(best.get(doc, rank), rank)
    return sorted(score.items(), key=lambda ds: (-ds[1], best[ds[0]], ds[0]))


class HybridSystem(EncoderStats):
    name = "hybrid"
    options = (
        ENCODER_OPTIONS
        + INDEX_OPTIONS
        + BM25_OPTIONS
        + (
            Option("rrf_k", (float,), DEFAULT_RRF_K, min=0, help="reciprocal rank fusion c"),
            Option("depth", (int,), DEFAULT_DEPTH, min=1, help="candidates from each side"),
        )
    )
    hooks = frozenset({"finish_ingest"})
    capabilities = Capabilities(
        returns_source_turns=True, accepts_images=False, llm_inside=None, in_process=True
    )

    def __init__(self, context: SystemContext | None = None) -> None:
        context = context or SystemContext()
        config = context.config
        self.rrf_k = float(config.get("rrf_k", DEFAULT_RRF_K))
        if self.rrf_k < 0:
            raise SystemConfigError(f"rrf_k must be >= 0, got {self.rrf_k}")
        self.depth = int(config.get("depth", DEFAULT_DEPTH))
        self.encoder = build_encoder(context)
        self._dense = index_from_config(self.encoder, context)
        self._bm25 = BM25Index.from_config(config)
        self._chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        chunks = list(session.chunks)
        if not chunks:
            return
        texts = [c.text for c in chunks]
        self._dense.add(self.encoder.encode_passages(texts))
        self._bm25.add(texts)
        self._chunks.extend(chunks)

    def search(self, query: str, k: int) -> list[Memory]:
        if k <= 0 or not self._chunks:
            return []
        depth = max(k, self.depth)
        lexical = [i for i, _ in self._bm25.top(query, depth)]
        semantic = [i for i, _ in self._dense.top(self.encoder.encode_query(query), depth)]
        fused = reciprocal_rank_fusion([lexical, semantic], self.rrf_k)[:k]
        return [chunk_memory(self._chunks[i], s) for i, s in fused]

    def finish_ingest(self) -> None:
        self._dense.build()
        self._bm25.build()

    def reset(self) -> None:
        self._chunks = []
        self._dense.clear()
        self._bm25.clear()
