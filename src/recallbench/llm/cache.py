"""The response cache: successful chat completions in one SQLite file per cache folder,
``<cache_dir>/llm/responses.sqlite3`` (WAL, safe for many threads and processes at once).

A reply is stored under :func:`cache_key`: the SHA-256 of the canonical JSON of the endpoint's
base URL, the model, every generation setting of the request body, the full messages and the
sample index (the repeat number, so repeats get fresh samples). Never the prompt text alone:
another model, another setting, another endpoint or another sample is another key. Only
successful completions are stored; a failed call is asked again next time. Writes are
``INSERT OR IGNORE``: two processes that made the same call both succeed and one reply is
kept (the first written).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path

from recallbench.contracts import canonical_json, sha256_text
from recallbench.llm.types import ChatRequest, Completion, Endpoint
from recallbench.sqlite_store import open_database, retry_locked, write_transaction

logger = logging.getLogger(__name__)

CACHE_SUBDIR = "llm"
CACHE_FILENAME = "responses.sqlite3"
_STORED = (
    "text",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "provider",
    "response_model",
)


def key_material(endpoint: Endpoint, request: ChatRequest, sample: int) -> dict[str, object]:
    """What the cache key is a hash of (``purpose`` is not part of it: it is never sent)."""
    return {
        "base_url": endpoint.base_url.rstrip("/"),
        "model": endpoint.model,
        "settings": dict(request.settings),
        "messages": [dict(m) for m in request.messages],
        "sample": int(sample),
    }


def cache_key(endpoint: Endpoint, request: ChatRequest, sample: int = 0) -> str:
    """SHA-256 (hex) of the canonical JSON of :func:`key_material`."""
    return sha256_text(canonical_json(key_material(endpoint, request, sample)))


class ResponseCache:
    """Successful completions by :func:`cache_key`, in ``<directory>/responses.sqlite3``.

    :meth:`get` returns the stored completion marked ``cached=True`` with no attempts and no
    charge (``billed_usd`` is left to the caller); :meth:`put` stores a completion only when it
    succeeded (``Completion.ok``). One handle serves every thread of a process.
    """

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / CACHE_FILENAME
        self._lock = threading.Lock()
        self._conn = open_database(
            self.path,
            (
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, model TEXT NOT NULL, prompt_sha256 TEXT NOT NULL,"
                " reply TEXT NOT NULL) WITHOUT ROWID",
            ),
        )

    @classmethod
    def for_cache_dir(cls, cache_dir: Path) -> ResponseCache:
        """The cache of a recallbench cache folder: ``<cache_dir>/llm/responses.sqlite3``."""
        return cls(Path(cache_dir) / CACHE_SUBDIR)

    def get(self, key: str, purpose: str = "") -> Completion | None:
        """The stored completion for ``key`` (``cached=True``, ``attempts=()``, ``purpose`` as
        given, ``latency_ms`` None: the caller times its own lookup), or None."""
        with self._lock:
            row = retry_locked(
                lambda: self._conn.execute(
                    "SELECT model, prompt_sha256, reply FROM responses WHERE key=?", (key,)
                ).fetchone()
            )
        if row is None:
            return None
        model, prompt_sha256, reply = row
        stored = json.loads(reply)
        return Completion(
            text=stored["text"],
            model=model,
            cache_key=key,
            prompt_sha256=prompt_sha256,
            purpose=purpose,
            finish_reason=stored.get("finish_reason"),
            prompt_tokens=stored.get("prompt_tokens"),
            completion_tokens=stored.get("completion_tokens"),
            provider=stored.get("provider"),
            response_model=stored.get("response_model"),
            cached=True,
            attempts=(),
        )

    def put(self, completion: Completion) -> bool:
        """Store a successful completion under its ``cache_key``; False (nothing stored) when
        it failed. A key already present keeps its first reply."""
        if not completion.ok:
            return False
        reply = canonical_json({name: getattr(completion, name) for name in _STORED})
        row = (completion.cache_key, completion.model, completion.prompt_sha256, reply)
        with self._lock:
            write_transaction(
                self._conn,
                "INSERT OR IGNORE INTO responses (key, model, prompt_sha256, reply)"
                " VALUES (?, ?, ?, ?)",
                [row],
            )
        return True

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_CACHES: dict[Path, ResponseCache] = {}
_CACHES_LOCK = threading.Lock()


def shared_response_cache(cache_dir: Path) -> ResponseCache | None:
    """The process's one handle on ``<cache_dir>/llm/responses.sqlite3`` (None, with a
    warning, when the file cannot be opened: the run then calls the model every time)."""
    directory = (Path(cache_dir) / CACHE_SUBDIR).resolve()
    with _CACHES_LOCK:
        cache = _CACHES.get(directory)
        if cache is None:
            try:
                cache = ResponseCache(directory)
            except (OSError, sqlite3.Error) as exc:
                logger.warning("response cache %s unusable, running without: %s", directory, exc)
                return None
            _CACHES[directory] = cache
    return cache


def close_shared_response_caches() -> None:
    with _CACHES_LOCK:
        for cache in _CACHES.values():
            cache.close()
        _CACHES.clear()
