"""``mem0``: the open-source Mem0 library (``mem0ai``) run fully offline, in process.

Default mode stores raw memories (``infer=False``: no LLM extraction): one Mem0 memory per
ingest chunk, embedded by the same local sentence-transformers model as ``dense`` (Mem0's
``huggingface`` embedder pointed at the model folder, sharing the process's loaded model and the
recallbench embedding cache) and kept in a local Qdrant store under the system's ``work_dir``.
The chunk's id and turn ids are stored in the memory's metadata, so retrieval can be scored.
Search is Mem0's own (``Memory.search``, its default similarity threshold of 0.1), so results
are what a Mem0 user would get, not a re-ranking of ours.

Offline by construction: ``MEM0_TELEMETRY=False`` is set before Mem0 is imported (and forced
off again afterwards in case something imported it earlier), ``MEM0_DIR`` points inside
``work_dir`` (or a temporary folder) unless already set, and the LLM client that Mem0 builds at
start-up even when it never calls it gets a dummy key and a loopback URL.

Each haystack group gets a fresh Mem0 user id; ``reset()`` drops the whole store (vector
collection and history database) and starts the next user id.

Config keys: those of ``dense``'s encoder (``model``, ``query_prefix``, ``passage_prefix``,
``batch_size``, ``cache_queries``), plus

``llm``
    ``{"base_url": ..., "model": ..., "api_key": ...}``: an OpenAI-compatible endpoint. With it,
    ``infer`` defaults to true: Mem0 extracts and updates facts with the LLM; the capabilities
    then declare ``llm_inside=<model>`` and ``returns_source_turns=False`` (extracted memories
    have no source turns).
``infer``
    Force LLM extraction on or off (on needs ``llm``).
``threshold``
    Mem0's minimum similarity for a search result (default 0.1, Mem0's own default).
``vector_store``
    A Mem0 ``vector_store`` block replacing the default local Qdrant (advanced).
``keyword_search``
    Let Mem0's Qdrant store use ``fastembed`` BM25 when that package is installed (default
    false: it would download its model). Without fastembed (the ``mem0`` extra does not install
    it) Mem0 ranks by vector similarity alone either way.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from recallbench.contracts import Memory, Session
from recallbench.errors import SystemConfigError
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.embeddings import (
    ENCODER_OPTIONS,
    Encoder,
    EncoderStats,
    build_encoder,
    require_sentence_transformers,
)
from recallbench.systems.options import Option

require_sentence_transformers()  # let the registry name the missing extra

if importlib.util.find_spec("mem0") is None:  # let the registry report the missing extra
    raise ImportError("mem0ai is not installed")

DUMMY_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # discard port on loopback: never answers
DUMMY_LLM_KEY = "recallbench-offline"
DEFAULT_THRESHOLD = 0.1
META_CHUNK = "recallbench_chunk_id"
META_TURNS = "recallbench_source_turns"
META_SESSION = "recallbench_session_id"
META_DATE = "recallbench_date"

_construct_lock = threading.Lock()
_user_seq = itertools.count(1)


def _import_mem0(home: Path) -> Any:
    """Import Mem0 with telemetry off and its home folder set; return ``mem0.memory.main``."""
    os.environ["MEM0_TELEMETRY"] = "False"
    if not os.environ.get("MEM0_DIR"):
        home.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_DIR"] = str(home)
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry

    # Imported earlier with telemetry on? Switch it off where Mem0 reads it.
    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False
    _guard_spacy_download()
    quiet = logging.getLogger("mem0")
    if quiet.level == logging.NOTSET:
        # Mem0 warns on every reset and about optional extras (spaCy, fastembed) it runs
        # without; keep errors only unless the user configured the "mem0" logger.
        quiet.setLevel(logging.ERROR)
    return main


def _guard_spacy_download() -> None:
    """Mem0 downloads spaCy's en_core_web_sm when spaCy is installed without it: forbid that.

    Without the model Mem0 falls back to plain text for its keyword scoring, as when spaCy is
    absent.
    """
    if importlib.util.find_spec("spacy") is None:
        return
    if importlib.util.find_spec("en_core_web_sm") is not None:
        return
    try:
        import mem0.utils.spacy_models as spacy_models

        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True
    except (ImportError, AttributeError):  # pragma: no cover - layout changed
        pass


def _disable_fastembed_download(store: Any) -> None:
    """With ``fastembed`` installed, Mem0's Qdrant store fetches the ``Qdrant/bm25`` model from
    the hub on first insert. Mark it as unavailable, as when fastembed is absent (the default
    install): Mem0 then ranks by vector similarity alone. ``keyword_search: true`` keeps it.
    """
    if importlib.util.find_spec("fastembed") is not None and hasattr(store, "_bm25_encoder"):
        store._bm25_encoder = False


def _make_embedder(base: Any, encoder: Encoder) -> Any:
    """A Mem0 ``HuggingFaceEmbedding`` that embeds through our shared encoder and cache."""
    from mem0.embeddings.huggingface import HuggingFaceEmbedding

    class SharedEncoderEmbedding(HuggingFaceEmbedding):
        def __init__(self) -> None:  # no model load: the process already holds it
            self.config = base.config
            self.model = encoder.model.model
            self.encoder = encoder
            self.pending: dict[str, np.ndarray] = {}

        def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
            if memory_action == "search":
                return self.encoder.encode_query(str(text)).tolist()
            vec = self.pending.get(str(text))
            if vec is None:
                vec = self.encoder.encode_passages([str(text)])[0]
            return vec.tolist()

        def embed_batch(self, texts: Any, memory_action: str = "add") -> list[list[float]]:
            items = [str(t) for t in texts]
            if memory_action == "search":
                return self.encoder.encode_queries(items).tolist()
            return self.encoder.encode_passages(items).tolist()

    return SharedEncoderEmbedding()


def _role(speaker: str) -> str:
    s = speaker.lower()
    return s if s in ("user", "assistant") else "user"


class Mem0System(EncoderStats):
    name = "mem0"
    options = ENCODER_OPTIONS + (
        Option("llm", (dict, type(None)), None, help="base_url, model, api_key"),
        Option("infer", (bool,), None, help="extract facts (default: when llm is set)"),
        Option("threshold", (float,), DEFAULT_THRESHOLD, help="mem0 search score threshold"),
        Option("vector_store", (dict, type(None)), None, help="mem0 vector store config"),
        Option("keyword_search", (bool,), False, help="let mem0 load its keyword model"),
    )

    @classmethod
    def declare_capabilities(cls, config: Mapping[str, Any]) -> Capabilities:
        """Raw storage by default; with ``infer`` (an LLM), extracted facts without source turns."""
        llm = config.get("llm")
        infer = bool(config.get("infer", llm is not None))
        if infer and not llm:
            raise SystemConfigError(
                "mem0 with infer=true needs config['llm'] (base_url, model, api_key)"
            )
        return Capabilities(
            returns_source_turns=not infer,
            accepts_images=False,
            summarizes=infer,
            llm_inside=str(llm["model"]) if infer and llm else None,
            in_process=True,
        )

    def __init__(self, context: SystemContext | None = None) -> None:
        context = context or SystemContext()
        config: Mapping[str, Any] = context.config
        self.encoder = build_encoder(context)
        llm = config.get("llm")
        self.capabilities = self.declare_capabilities(config)
        self.infer = self.capabilities.summarizes
        self.threshold = float(config.get("threshold", DEFAULT_THRESHOLD))
        self._own_dir = context.work_dir is None
        root = (
            Path(tempfile.mkdtemp(prefix="recallbench-mem0-"))
            if context.work_dir is None
            else Path(context.work_dir) / "mem0"
        )
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        main = _import_mem0(root / "home")
        mem0_config = {
            "vector_store": config.get("vector_store")
            or {
                "provider": "qdrant",
                "config": {
                    "collection_name": "recallbench",
                    "embedding_model_dims": self.encoder.dim,
                    "path": str(root / "qdrant"),
                    "on_disk": False,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {
                    "model": str(self.encoder.model.path or self.encoder.model_id),
                    "embedding_dims": self.encoder.dim,
                    "model_kwargs": {"device": "cpu"},
                },
            },
            "llm": {
                "provider": "openai",
                "config": {
                    "model": str(llm["model"]) if llm else "none",
                    "api_key": str(llm.get("api_key") or DUMMY_LLM_KEY) if llm else DUMMY_LLM_KEY,
                    "openai_base_url": str(llm["base_url"]) if llm else DUMMY_LLM_BASE_URL,
                },
            },
            "history_db_path": str(root / "history.db"),
        }
        import mem0.embeddings.huggingface as hf

        shared = self.encoder.model.model
        with _construct_lock, mock.patch.object(hf, "SentenceTransformer", lambda *a, **k: shared):
            self._memory = main.Memory.from_config(mem0_config)
        self._embedder = _make_embedder(self._memory.embedding_model, self.encoder)
        self._memory.embedding_model = self._embedder
        if not config.get("keyword_search", False):
            _disable_fastembed_download(self._memory.vector_store)
        self._user_id = self._next_user_id()

    @staticmethod
    def _next_user_id() -> str:
        return f"recallbench-{os.getpid()}-{next(_user_seq)}"

    @property
    def user_id(self) -> str:
        return self._user_id

    def add(self, session: Session) -> None:
        chunks = list(session.chunks)
        if not chunks:
            return
        if not self.infer:
            # Embed the session in one batch (cached); Mem0's per-memory embed call takes these.
            vectors = self.encoder.encode_passages([c.text for c in chunks])
            for chunk, vec in zip(chunks, vectors, strict=True):
                self._embedder.pending[chunk.text] = vec
        try:
            for chunk in chunks:
                metadata = {
                    META_CHUNK: chunk.chunk_id,
                    META_TURNS: list(chunk.turn_ids),
                    META_SESSION: chunk.session_id,
                    META_DATE: chunk.date or session.date or "",
                }
                if self.infer:
                    messages = [{"role": _role(t.speaker), "content": t.text} for t in chunk.turns]
                else:
                    messages = [{"role": "user", "content": chunk.text}]
                self._memory.add(
                    messages, user_id=self._user_id, metadata=metadata, infer=self.infer
                )
        finally:
            self._embedder.pending.clear()

    def search(self, query: str, k: int) -> list[Memory]:
        if k <= 0 or not query.strip():
            return []
        found = self._memory.search(
            query, top_k=k, filters={"user_id": self._user_id}, threshold=self.threshold
        )
        out: list[Memory] = []
        for item in found.get("results", [])[:k]:
            meta = item.get("metadata") or {}
            turns = meta.get(META_TURNS)
            source = None if self.infer or turns is None else tuple(str(t) for t in turns)
            chunk_id = None if self.infer else meta.get(META_CHUNK)
            score = item.get("score")
            out.append(
                Memory(
                    id=str(chunk_id or item.get("id")),
                    text=str(item.get("memory", "")),
                    source_turns=source,
                    score=float(score) if score is not None else None,
                )
            )
        return out

    def reset(self) -> None:
        """Drop every memory: the vector collection and the history database."""
        self._memory.reset()
        self._user_id = self._next_user_id()

    def close(self) -> None:
        memory = getattr(self, "_memory", None)
        if memory is None:
            return
        self._memory = None
        memory.close()
        client = getattr(getattr(memory, "vector_store", None), "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        if self._own_dir:
            shutil.rmtree(self.root, ignore_errors=True)
