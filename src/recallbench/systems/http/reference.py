"""The reference memory server: the built-in BM25 system behind a small JSON HTTP API.

It exists so that the ``http`` system, the retry policy and hosted-API runs can be checked
against a server whose answers are known (the in-process ``bm25`` system's). One BM25 index
per namespace; memory ids are issued by the server (``m-`` and 12 random hex digits).

Endpoints (JSON bodies; every response carries ``X-Processing-Ms``, the server's own time for
the request in milliseconds, the fixed delay included):

``POST /v1/memories``
    ``{namespace, unit_id, session_id, date, turns: [{turn_id, speaker, text, date}]}`` stores
    the turns as one memory (indexed as the harness renders a chunk, ``speaker: text`` per
    line) and answers ``{"id": ...}``. An ``Idempotency-Key`` header seen before in the
    namespace returns the first id and stores nothing.
``POST /v1/search``
    ``{namespace, query, k}`` answers ``{"results": [{id, memory, turn_ids, score}]}``, best
    first (exactly what the ``bm25`` system returns for the same adds).
``POST /v1/reset``
    ``{namespace}`` forgets the namespace; ``{"ok": true}``.
``GET /v1/status?namespace=NS``
    ``{"status": "indexing"}`` while the namespace's index is being built (the first status
    request after an add starts the build) and ``{"status": "done"}`` once it is.
``GET /v1/ping``
    ``{"ok": true}`` at once: no delay and never a scheduled failure (the no-op request
    ``recallbench network --method http`` times).

Connections are kept alive (HTTP/1.1, replies sent without Nagle's delay), so a client may
send every request of a worker on one connection. ``processing_ms`` lists, per ``POST
/v1/search`` answered, the ``X-Processing-Ms`` it sent (for timing scripts).

``delay_ms`` sleeps that long in every request (a fixed processing time). ``failures`` (a
:class:`FailureSchedule`) fails a seeded share of requests before they are processed: ``429``
with ``Retry-After``, ``503``, or ``reset`` (the connection is closed without a reply); the
same request (method, path and body) never fails more than ``max_in_row`` times in a row, so
a client that retries more often than that always gets through. The server binds 127.0.0.1
unless told otherwise; :meth:`ReferenceServer.config_text` is the ``http`` system config for
it.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from recallbench.contracts import Chunk, Session, Turn
from recallbench.systems.bm25 import BM25System

__all__ = ["FailureSchedule", "ReferenceServer"]

FAILURE_KINDS: tuple[str, ...] = ("429", "503", "reset")


@dataclass(frozen=True, slots=True)
class FailureSchedule:
    """A seeded share ``rate`` of requests fail as one of ``kinds`` (drawn from the same seeded
    source); never more than ``max_in_row`` failures in a row for one request; a 429 carries
    ``Retry-After: retry_after_s``."""

    rate: float = 0.3
    seed: int = 0
    max_in_row: int = 2
    retry_after_s: float = 0.05
    kinds: tuple[str, ...] = ("429", "503")

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"FailureSchedule.rate must be in [0, 1], got {self.rate}")
        if self.max_in_row < 0:
            raise ValueError("FailureSchedule.max_in_row must not be negative")
        unknown = [k for k in self.kinds if k not in FAILURE_KINDS]
        if unknown or not self.kinds:
            raise ValueError(f"FailureSchedule.kinds must be among {', '.join(FAILURE_KINDS)}")


class _Namespace:
    def __init__(self) -> None:
        self.system = BM25System()
        self.lock = threading.Lock()
        self.keys: dict[str, str] = {}
        self.dirty = False
        self.building = False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ReferenceServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "recallbench-reference/1"
    protocol_version = "HTTP/1.1"  # keep-alive: one connection serves many requests
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base signature
        return  # quiet: tests and the CLI print what they need

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        self._handle()

    def _handle(self) -> None:
        owner = self.server.owner
        with owner._lock:
            owner._in_flight += 1
            owner._counts["max_in_flight"] = max(owner._counts["max_in_flight"], owner._in_flight)
        self._counted = True
        try:
            self._serve()
        finally:
            self._leave()

    def _leave(self) -> None:
        """The request is no longer in flight (called before its reply is sent, so the next
        request of a client that waits for the reply never overlaps it)."""
        if getattr(self, "_counted", False):
            self._counted = False
            owner = self.server.owner
            with owner._lock:
                owner._in_flight -= 1

    def _serve(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        owner = self.server.owner
        url = urllib.parse.urlsplit(self.path)
        if self.command == "GET" and url.path == "/v1/ping":
            self._reply(200, {"ok": True}, started, {})
            return
        if owner.record_header is not None and owner.record_header in self.headers:
            with owner._lock:
                owner.header_values.add(str(self.headers[owner.record_header]))
        failure = owner._draw_failure(self.command, self.path, raw)
        if owner.delay_ms > 0:
            time.sleep(owner.delay_ms / 1000.0)
        if failure == "reset":
            self._leave()
            self.close_connection = True
            self.connection.close()
            return
        if failure is not None:
            headers = {}
            if failure == "429" and owner.failures is not None:
                headers["Retry-After"] = f"{owner.failures.retry_after_s:g}"
            self._reply(int(failure), {"error": "scheduled failure"}, started, headers)
            return
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
            status, payload = owner._dispatch(
                self.command,
                url.path,
                body,
                dict(urllib.parse.parse_qsl(url.query)),
                self.headers.get("Idempotency-Key"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            status, payload = 400, {"error": f"{type(exc).__name__}: {exc}"}
        self._reply(status, payload, started, {})

    def _reply(self, status: int, payload: Any, started: float, headers: dict[str, str]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        processing = (time.perf_counter() - started) * 1000.0
        self.send_header("X-Processing-Ms", f"{processing:.3f}")
        if self.command == "POST" and self.path.startswith("/v1/search"):
            with self.server.owner._lock:
                self.server.owner.processing_ms.append(round(processing, 3))
        self._leave()
        self.end_headers()
        self.wfile.write(data)


class ReferenceServer:
    """The reference server (see the module doc); a context manager that starts and stops it.

    ``port=0`` picks a free port (read :attr:`base_url` after :meth:`start`).
    ``record_header``: keep the values of that request header in :attr:`header_values`. ``counters``
    counts requests by endpoint (``add``, ``search``, ``reset``, ``status``, ``other``), in
    total (``requests``), failures by kind (``failed``, ``failed_429``, ...) and the most
    requests ever in flight at once (``max_in_flight``).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        delay_ms: float = 0.0,
        failures: FailureSchedule | None = None,
        record_header: str | None = None,
    ) -> None:
        if delay_ms < 0:
            raise ValueError(f"delay_ms must not be negative, got {delay_ms}")
        self.host = host
        self.port = port
        self.delay_ms = float(delay_ms)
        self.failures = failures
        self.processing_ms: list[float] = []
        """The ``X-Processing-Ms`` of every ``POST /v1/search`` answered, in order."""
        self._rng = random.Random(failures.seed if failures is not None else 0)
        self._in_row: dict[str, int] = {}
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._in_flight = 0
        self.record_header = record_header
        self.header_values: set[str] = set()
        """The values of header ``record_header`` seen so far (tests check a key was sent)."""
        self._namespaces: dict[str, _Namespace] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ReferenceServer:
        """Bind and serve on a background thread; returns self."""
        if self._server is not None:
            return self
        server = _Server((self.host, self.port), _Handler)
        server.owner = self
        self._server = server
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted (``recallbench serve-memory``)."""
        server = _Server((self.host, self.port), _Handler)
        server.owner = self
        self._server = server
        self.port = int(server.server_address[1])
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
            self._server = None

    def __enter__(self) -> ReferenceServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` (the bound port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def counters(self) -> dict[str, int]:
        """A copy of the request counters."""
        with self._lock:
            return dict(self._counts)

    # ------------------------------------------------------------------ failures

    def _draw_failure(self, method: str, path: str, body: bytes) -> str | None:
        kind = "other"
        if path.startswith("/v1/memories"):
            kind = "add"
        elif path.startswith("/v1/search"):
            kind = "search"
        elif path.startswith("/v1/reset"):
            kind = "reset"
        elif path.startswith("/v1/status"):
            kind = "status"
        with self._lock:
            self._counts["requests"] += 1
            self._counts[kind] += 1
            schedule = self.failures
            if schedule is None or schedule.rate <= 0:
                return None
            key = hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()
            fail = self._rng.random() < schedule.rate
            failure = self._rng.choice(schedule.kinds) if fail else None
            if failure is not None and self._in_row.get(key, 0) >= schedule.max_in_row:
                failure = None
            if failure is None:
                self._in_row.pop(key, None)
                return None
            self._in_row[key] = self._in_row.get(key, 0) + 1
            self._counts["failed"] += 1
            self._counts[f"failed_{failure}"] += 1
            return failure

    # ------------------------------------------------------------------ the API

    def _namespace(self, name: Any) -> _Namespace:
        if not isinstance(name, str) or not name:
            raise ValueError("namespace must be a non-empty string")
        with self._lock:
            return self._namespaces.setdefault(name, _Namespace())

    def _dispatch(
        self,
        method: str,
        path: str,
        body: Any,
        query: dict[str, str],
        idempotency_key: str | None,
    ) -> tuple[int, Any]:
        if method == "POST" and path == "/v1/memories":
            return 200, self._add(body, idempotency_key)
        if method == "POST" and path == "/v1/search":
            ns = self._namespace(body["namespace"])
            k = int(body.get("k", 10))
            memories = ns.system.search(str(body.get("query", "")), k)
            results = [
                {
                    "id": m.id,
                    "memory": m.text,
                    "turn_ids": list(m.source_turns or ()),
                    "score": m.score,
                }
                for m in memories
            ]
            return 200, {"results": results}
        if method == "POST" and path == "/v1/reset":
            name = body["namespace"]
            with self._lock:
                self._namespaces.pop(str(name), None)
            return 200, {"ok": True}
        if method == "GET" and path == "/v1/status":
            ns = self._namespace(query.get("namespace"))
            return 200, {"status": self._status(ns)}
        return 404, {"error": f"no endpoint {method} {path}"}

    def _add(self, body: Any, idempotency_key: str | None) -> dict[str, Any]:
        ns = self._namespace(body["namespace"])
        session_id = str(body["session_id"])
        date = body.get("date")
        turns = tuple(
            Turn(
                turn_id=str(t["turn_id"]),
                session_id=str(t.get("session_id", session_id)),
                speaker=str(t["speaker"]),
                text=str(t["text"]),
                date=t.get("date"),
            )
            for t in body["turns"]
        )
        with ns.lock:
            if idempotency_key is not None and idempotency_key in ns.keys:
                return {"id": ns.keys[idempotency_key]}
            memory_id = f"m-{uuid.uuid4().hex[:12]}"
            chunk = Chunk(chunk_id=memory_id, session_id=session_id, date=date, turns=turns)
            ns.system.add(Session(session_id=session_id, date=date, turns=turns, chunks=(chunk,)))
            ns.dirty = True
            if idempotency_key is not None:
                ns.keys[idempotency_key] = memory_id
        return {"id": memory_id}

    def _status(self, ns: _Namespace) -> str:
        with ns.lock:
            if ns.building:
                return "indexing"
            if not ns.dirty:
                return "done"
            ns.building = True
            ns.dirty = False

        def build() -> None:
            try:
                ns.system.finish_ingest()
            finally:
                with ns.lock:
                    ns.building = False

        threading.Thread(target=build, daemon=True).start()
        return "indexing"

    # ------------------------------------------------------------------ the client config

    def config_text(self, tries: int | None = None) -> str:
        """The TOML of an ``http`` system config for this server (an ``[http]`` section, for
        ``recallbench run --systems http --config FILE``). ``tries`` defaults to two more than
        the failure schedule's ``max_in_row`` (at least 4)."""
        if tries is None:
            in_row = self.failures.max_in_row if self.failures is not None else 0
            tries = max(4, in_row + 2)
        return CONFIG_TEMPLATE.format(base_url=self.base_url, tries=tries)


CONFIG_TEMPLATE = """\
# recallbench `http` system config for the reference memory server (recallbench serve-memory).
# Run: recallbench run --systems http --config THIS_FILE
[http]
base_url = "{base_url}"
namespace = "{{{{group}}}}"
add_unit = "unit"
timeout_s = 10

[http.headers]
# A hosted API's key comes from the environment, never written here:
# Authorization = "Bearer ${{MEM_API_KEY}}"

[http.add]
method = "POST"
path = "/v1/memories"
idempotency_key = "{{{{namespace}}}}:{{{{unit_id}}}}"

[http.add.body]
namespace = "{{{{namespace}}}}"
unit_id = "{{{{unit_id}}}}"
session_id = "{{{{session_id}}}}"
date = "{{{{date}}}}"
turns = "{{{{turns}}}}"

[http.search]
method = "POST"
path = "/v1/search"

[http.search.body]
namespace = "{{{{namespace}}}}"
query = "{{{{query}}}}"
k = "{{{{k}}}}"

[http.search.response]
memories = "$.results[*]"
id = "$.id"
text = "$.memory"
source_turns = "$.turn_ids"
score = "$.score"

[http.reset]
method = "POST"
path = "/v1/reset"

[http.reset.body]
namespace = "{{{{namespace}}}}"

[http.finish_ingest]
method = "GET"
path = "/v1/status"
query = {{ namespace = "{{{{namespace}}}}" }}
done_path = "$.status"
done_value = "done"
interval_s = 0.01
wait_timeout_s = 60

[http.retry]
tries = {tries}
backoff_base_s = 0.05
backoff_max_s = 0.5
retry_after_max_s = 5
"""
