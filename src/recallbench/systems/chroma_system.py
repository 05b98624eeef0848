"""``chroma``: the embedded ``chromadb`` vector database, in process, one collection per group.

One Chroma record per ingest chunk, embedded by the same local model as ``dense`` through the
recallbench encoder and cache: vectors are computed by us and passed as ``embeddings=``, and
queries as ``query_embeddings=``, so Chroma's own default embedding function (which would try
to download an ONNX model) is never used. Every collection still gets an explicit embedding
function (:class:`RecallbenchEmbeddingFunction`) wrapping the same encoder. Search is
Chroma's HNSW index with cosine distance; a memory's score is ``1 - distance``.

Storage is a ``PersistentClient`` under ``<work_dir>/chroma`` (an ``EphemeralClient`` when
there is no ``work_dir`` or with ``persistent: false``), with anonymized telemetry off.
``reset()`` deletes the group's collection; the next ``add`` creates a new one.

Config keys: those of ``dense``'s encoder (``model``, ``query_prefix``, ``passage_prefix``,
``batch_size``, ``cache_queries``), plus ``persistent`` (default true when there is a
``work_dir``) and ``hnsw`` (extra HNSW settings, e.g. ``{"ef_search": 200}``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import chromadb
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from recallbench.contracts import Memory, Session
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.embeddings import (
    ENCODER_OPTIONS,
    Encoder,
    EncoderStats,
    build_encoder,
    load_model,
    require_sentence_transformers,
)
from recallbench.systems.options import Option

require_sentence_transformers()  # let the registry name the missing extra

META_CHUNK = "chunk_id"
META_TURNS = "source_turns"  # JSON list: Chroma metadata values are scalars
META_SESSION = "session_id"
META_DATE = "date"


@register_embedding_function
class RecallbenchEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function over a recallbench :class:`Encoder` (shared model + cache)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.encoder.encode_passages([str(t) for t in input]))

    def embed_query(self, input: Documents) -> Embeddings:
        return list(self.encoder.encode_queries([str(t) for t in input]))

    @staticmethod
    def name() -> str:
        return "recallbench"

    def default_space(self) -> Any:
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {
            "model": self.encoder.model_id,
            "query_prefix": self.encoder.query_prefix,
            "passage_prefix": self.encoder.passage_prefix,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> RecallbenchEmbeddingFunction:
        encoder = Encoder(
            load_model(config.get("model")),
            query_prefix=str(config.get("query_prefix", "")),
            passage_prefix=str(config.get("passage_prefix", "")),
        )
        return RecallbenchEmbeddingFunction(encoder)


class ChromaSystem(EncoderStats):
    name = "chroma"
    options = ENCODER_OPTIONS + (
        Option("hnsw", (dict, type(None)), None, help="Chroma HNSW configuration"),
        Option("persistent", (bool,), True, help="store on disk in the run's work folder"),
    )
    capabilities = Capabilities(
        returns_source_turns=True, accepts_images=False, llm_inside=None, in_process=True
    )

    def __init__(self, context: SystemContext | None = None) -> None:
        context = context or SystemContext()
        config = context.config
        self.encoder = build_encoder(context)
        self._ef = RecallbenchEmbeddingFunction(self.encoder)
        self._hnsw = {"space": "cosine", **dict(config.get("hnsw") or {})}
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        persistent = bool(config.get("persistent", context.work_dir is not None))
        if persistent and context.work_dir is not None:
            path = Path(context.work_dir) / "chroma"
            path.mkdir(parents=True, exist_ok=True)
            self._client: Any = chromadb.PersistentClient(path=str(path), settings=settings)
            self._ephemeral = False
        else:
            self._client = chromadb.EphemeralClient(settings=settings)
            self._ephemeral = True
        self._max_batch = max(1, int(self._client.get_max_batch_size()))
        self._collection: Any = None
        self._collection_name: str | None = None
        self._count = 0

    def _ensure_collection(self) -> Any:
        if self._collection is None:
            # Unique: ephemeral clients of one process share a single in-memory database.
            self._collection_name = f"recallbench-{uuid.uuid4().hex}"
            self._collection = self._client.create_collection(
                name=self._collection_name,
                embedding_function=self._ef,
                configuration={"hnsw": self._hnsw},
            )
        return self._collection

    def add(self, session: Session) -> None:
        chunks = list(session.chunks)
        if not chunks:
            return
        vectors = self.encoder.encode_passages([c.text for c in chunks])
        collection = self._ensure_collection()
        for start in range(0, len(chunks), self._max_batch):
            part = chunks[start : start + self._max_batch]
            collection.add(
                ids=[str(self._count + start + i) for i in range(len(part))],
                embeddings=vectors[start : start + len(part)],
                documents=[c.text for c in part],
                metadatas=[
                    {
                        META_CHUNK: c.chunk_id,
                        META_TURNS: json.dumps(list(c.turn_ids)),
                        META_SESSION: c.session_id,
                        META_DATE: c.date or session.date or "",
                    }
                    for c in part
                ],
            )
        self._count += len(chunks)

    def search(self, query: str, k: int) -> list[Memory]:
        if k <= 0 or self._collection is None or self._count == 0:
            return []
        q = self.encoder.encode_query(query)
        res = self._collection.query(
            query_embeddings=[q],
            n_results=min(k, self._count),
            include=["documents", "metadatas", "distances"],
        )
        ids = res["ids"][0]
        docs = (res.get("documents") or [[]])[0] or [""] * len(ids)
        metas = (res.get("metadatas") or [[]])[0] or [{}] * len(ids)
        dists = (res.get("distances") or [[]])[0] or [None] * len(ids)
        out: list[Memory] = []
        for rid, doc, meta, dist in zip(ids, docs, metas, dists, strict=True):
            meta = meta or {}
            turns = meta.get(META_TURNS)
            out.append(
                Memory(
                    id=str(meta.get(META_CHUNK, rid)),
                    text=str(doc or ""),
                    source_turns=tuple(json.loads(turns)) if isinstance(turns, str) else None,
                    score=None if dist is None else 1.0 - float(dist),
                )
            )
        return out

    def reset(self) -> None:
        """Delete this group's collection (the next ``add`` starts a new one)."""
        if self._collection_name is not None:
            self._client.delete_collection(self._collection_name)
        self._collection = None
        self._collection_name = None
        self._count = 0

    def close(self) -> None:
        if self._ephemeral:  # free the shared in-memory database; on disk the run keeps it
            self.reset()
        close = getattr(self._client, "close", None)
        if callable(close):
            close()
