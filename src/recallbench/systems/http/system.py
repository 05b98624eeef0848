"""``http``: any hosted memory API, driven by a config file (no Python to write).

Each haystack group is stored under its own namespace: the instance names its groups
``rb-<8 random hex digits>-<n>`` (``{{group}}``; ``n`` counts resets, so a reset always moves
to a fresh namespace and two instances never share one) and renders the config's
``namespace`` template from it. ``reset()`` sends the ``reset`` request for the current
namespace when something was added to it (and the config has one), then moves on;
``close()`` does the same, best effort.

``add(session)`` sends one ``add`` request per harness ingest unit (``add_unit = "unit"``) or
one per session (``"session"``); ``search(query, k)`` sends one ``search`` request and reads
the memories from the response (at most ``k``, in the order the API gave them);
``finish_ingest()`` (a declared hook) sends the ``finish_ingest`` request, if configured, and
repeats it every ``interval_s`` until ``done_path`` reads ``done_value`` (at most
``wait_timeout_s``). Every request goes through
:func:`recallbench.llm.retry.run_with_retries` with the config's retry policy (jitter seeded by
the run seed): 429, 500/502/503/504, refused or reset connections and timeouts are retried,
honouring ``Retry-After``; any other status is final. A request that still fails raises
:class:`HttpCallError` (so the runner records the ``add`` and marks the ingest ``partial``,
or records the search as an error). Every try is kept: :meth:`HttpSystem.last_attempts`
returns, for the calling thread, the tries of every request made by its last call.

Limits (``[limits]``): ``max_concurrency`` and ``requests_per_second`` are enforced here,
across every instance in the process that talks to the same ``base_url``, and are also
declared as :attr:`HttpSystem.limits` for the runner.

Memory ids are issued by the server (``server_issued_ids = True``), so the conformance kit's
determinism check compares texts and source turns, not ids.

Connections: each worker thread keeps one persistent (HTTP/1.1 keep-alive) connection per
scheme, host and port and sends every request of that thread on it; a request that fails in
transport closes it (the next try opens a new one, and that try counts). When the
environment's proxy settings apply to the host (never for loopback), requests go through
``urllib`` with a new connection each. :meth:`HttpSystem.warm_up` sends ``warmup_searches``
searches of neutral text (:data:`WARMUP_QUERY`, never a benchmark question) on the calling
thread's connection, once per thread; the runner calls it on every search worker, untimed and
unrecorded, before a group's timed searches. :meth:`HttpSystem.last_call_info` gives, for the
calling thread's last call, the bytes of the last reply body read (``response_bytes``) and the
``queued`` flags (Glasshouse's N8: a try saw HTTP 429 or a ``Retry-After`` header, or a
request overlapped another request of this process to the same host and port).
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from recallbench.contracts import Chunk, Memory, Session
from recallbench.llm.retry import (
    TRANSPORT_ERRORS,
    HttpReply,
    RetryPolicy,
    classify_http,
    http_request,
    run_with_retries,
)
from recallbench.llm.types import Attempt
from recallbench.systems.base import Capabilities, Limits, SystemContext
from recallbench.systems.http.config import (
    HTTP_OPTIONS,
    HttpConfig,
    Operation,
    env_references,
    load_config,
    render,
    resolve_env,
    text_id,
)
from recallbench.systems.http.paths import PathLookupError

__all__ = ["WARMUP_QUERY", "HttpCallError", "HttpSystem"]

WARMUP_QUERY = "recallbench connection warm-up"
"""The neutral text of the unrecorded warm-up searches (never a benchmark question)."""


class HttpCallError(RuntimeError):
    """A request that failed after every try (or whose response could not be read). Its
    message names the operation, the last error and the number of tries; secrets are shown
    as their ``${NAME}`` references."""


class _Gate:
    """At most ``max_concurrency`` requests at once, and starts spaced 1/rps apart."""

    def __init__(self, limits: Limits) -> None:
        self._sem = (
            threading.BoundedSemaphore(limits.max_concurrency) if limits.max_concurrency else None
        )
        self._interval = 1.0 / limits.requests_per_second if limits.requests_per_second else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    @contextmanager
    def slot(self) -> Iterator[None]:
        if self._sem is not None:
            self._sem.acquire()
        try:
            if self._interval:
                with self._lock:
                    now = time.monotonic()
                    start = max(now, self._next)
                    self._next = start + self._interval
                if start > now:
                    time.sleep(start - now)
            yield
        finally:
            if self._sem is not None:
                self._sem.release()


_GATES: dict[tuple[str, Limits], _Gate] = {}
_GATES_LOCK = threading.Lock()


def _gate_for(base_url: str, limits: Limits) -> _Gate:
    with _GATES_LOCK:
        return _GATES.setdefault((base_url, limits), _Gate(limits))


class _HostTraffic:
    """Requests of this process in flight to one host and port, to tell whether a request
    overlapped another (``queued`` flag, N8)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._starts = 0

    def begin(self) -> tuple[bool, int]:
        with self._lock:
            busy = self._in_flight > 0
            self._in_flight += 1
            self._starts += 1
            return busy, self._starts

    def end(self, token: tuple[bool, int]) -> bool:
        """Whether the request that began with ``token`` overlapped another one."""
        with self._lock:
            self._in_flight -= 1
            return token[0] or self._starts > token[1]


_TRAFFIC: dict[str, _HostTraffic] = {}


def _traffic_for(netloc: str) -> _HostTraffic:
    with _GATES_LOCK:
        return _TRAFFIC.setdefault(netloc, _HostTraffic())


def _uses_proxy(parts: urllib.parse.SplitResult) -> bool:
    host = parts.hostname or ""
    if host in ("localhost", "::1") or host.startswith("127."):
        return False
    proxies = urllib.request.getproxies()
    return parts.scheme in proxies and not urllib.request.proxy_bypass(host)


def _turns(turns: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {
            "turn_id": t.turn_id,
            "session_id": t.session_id,
            "speaker": t.speaker,
            "text": t.text,
            "date": t.date,
        }
        for t in turns
    ]


def _unit_values(session: Session, unit: Chunk | None) -> dict[str, Any]:
    turns = unit.turns if unit is not None else session.turns
    return {
        "unit_id": unit.chunk_id if unit is not None else session.session_id,
        "session_id": session.session_id,
        "date": (unit.date if unit is not None else None) or session.date,
        "text": "\n".join(f"{t.speaker}: {t.text}" for t in turns),
        "turns": _turns(turns),
        "turn_ids": [t.turn_id for t in turns],
    }


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` (a template) with ``fn`` applied to every string in it."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value


class HttpSystem:
    """A hosted memory API as a recallbench system (see the module doc and docs/hosted.md)."""

    name = "http"
    options = HTTP_OPTIONS
    hooks = frozenset({"finish_ingest"})
    server_issued_ids = True
    """Memory ids come from the server and may differ between runs (conformance compares texts
    and source turns instead)."""

    @classmethod
    def declare_capabilities(cls, config: Mapping[str, Any]) -> Capabilities:
        """Not in process; source turns only when the config says where they are. Parsing
        checks the whole config (a bad key, a literal secret, an unset ``${NAME}``)."""
        cfg = load_config(config)
        return Capabilities(
            returns_source_turns=cfg.response.source_turns is not None, in_process=False
        )

    def __init__(self, context: SystemContext | None = None) -> None:
        ctx = context or SystemContext()
        self._cfg: HttpConfig = load_config(ctx.config)
        self.capabilities = self.declare_capabilities(ctx.config)
        self.limits: Limits = self._cfg.limits
        """The ``[limits]`` of the config (None fields: no limit)."""
        self.settings: dict[str, Any] = json.loads(json.dumps(dict(self._cfg.raw), default=str))
        """The configuration as written (``${NAME}`` references, never their values)."""
        self._env_names = sorted(env_references(self._cfg.raw))
        self._gate = _gate_for(self._cfg.base_url, self._cfg.limits)
        retry = self._cfg.retry
        self._policy = RetryPolicy(
            tries=int(retry["tries"]),
            backoff_base_s=retry["backoff_base_s"],
            backoff_max_s=retry["backoff_max_s"],
            retry_after_max_s=retry["retry_after_max_s"],
            rng=random.Random(ctx.seed),
        )
        self._token = uuid.uuid4().hex[:8]
        self._generation = 0
        self._dirty = False
        self._local = threading.local()
        self._conns_lock = threading.Lock()
        self._every_conn: list[Any] = []

    # ------------------------------------------------------------------ namespace and secrets

    @property
    def group(self) -> str:
        """The harness's name for the current haystack group (``{{group}}``)."""
        return f"rb-{self._token}-{self._generation}"

    @property
    def namespace(self) -> str:
        """The rendered ``namespace`` template of the current group."""
        return str(render(self._cfg.namespace, {"group": self.group}, url=False))

    def _values(self, **more: Any) -> dict[str, Any]:
        return {"group": self.group, "namespace": self.namespace, **more}

    def _redact(self, text: str | None) -> str | None:
        """``text`` with every resolved secret shown as its ``${NAME}`` reference."""
        if text is None:
            return None
        for name in self._env_names:
            value = os.environ.get(name)
            if value:
                text = text.replace(value, "${" + name + "}")
        return text

    # ------------------------------------------------------------------ attempts

    def last_attempts(self) -> tuple[Attempt, ...]:
        """The tries of every request the calling thread's last call (``add``, ``search``,
        ``reset``, ``finish_ingest``) made, in order; ``attempt`` restarts at 1 for each
        request of a multi-request call. Call it on the thread that made the call."""
        return tuple(getattr(self._local, "attempts", ()))

    def _begin(self) -> None:
        self._local.attempts = []
        self._local.response_bytes = None
        self._local.queued = []

    def last_call_info(self) -> dict[str, Any]:
        """For the calling thread's last call: ``response_bytes`` (bytes of the last reply
        body read, None when no reply came) and ``queued`` (the ``queued: ...`` flags, in the
        order first seen, each once: Glasshouse's N8)."""
        return {
            "response_bytes": getattr(self._local, "response_bytes", None),
            "queued": tuple(dict.fromkeys(getattr(self._local, "queued", ()))),
        }

    def _queued(self, flag: str) -> None:
        if not hasattr(self._local, "queued"):
            self._local.queued = []
        self._local.queued.append(flag)

    @property
    def endpoint(self) -> tuple[str, int]:
        """``(host, port)`` of ``base_url`` (a network file for it is subtracted in a run)."""
        parts = urllib.parse.urlsplit(self._cfg.base_url)
        return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)

    # ------------------------------------------------------------------ connections

    def _connection(self, parts: urllib.parse.SplitResult, timeout_s: float) -> Any:
        """The calling thread's connection to ``parts``'s scheme, host and port (new if none)."""
        conns: dict[tuple[str, str], Any] = getattr(self._local, "connections", None) or {}
        self._local.connections = conns
        key = (parts.scheme, parts.netloc)
        conn = conns.get(key)
        if conn is None:
            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(parts.hostname or "", parts.port, timeout=timeout_s)
            conns[key] = conn
            with self._conns_lock:
                self._every_conn.append(conn)
        conn.timeout = timeout_s
        if conn.sock is not None:
            conn.sock.settimeout(timeout_s)
        return conn

    def _drop(self, parts: urllib.parse.SplitResult) -> None:
        conns = getattr(self._local, "connections", None) or {}
        conn = conns.pop((parts.scheme, parts.netloc), None)
        if conn is not None:
            conn.close()

    def _send(
        self,
        url: str,
        data: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        method: str,
    ) -> HttpReply:
        """One request on the calling thread's kept-alive connection (module doc); transport
        failures raise as ``http.client`` and ``socket`` raise them, after closing it."""
        parts = urllib.parse.urlsplit(url)
        if _uses_proxy(parts):
            return http_request(url, data, headers, timeout_s, method)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        traffic = _traffic_for(parts.netloc)
        token = traffic.begin()
        try:
            conn = self._connection(parts, timeout_s)
            conn.request(method, target, body=data, headers=dict(headers))
            response = conn.getresponse()
            body = response.read()
            if response.will_close:
                self._drop(parts)
            return HttpReply(
                int(response.status), {k.lower(): v for k, v in response.getheaders()}, body
            )
        except OSError as exc:
            self._drop(parts)
            if isinstance(exc, TRANSPORT_ERRORS):
                raise
            raise urllib.error.URLError(exc) from exc  # as urllib reports it: retried
        except BaseException:
            self._drop(parts)
            raise
        finally:
            if traffic.end(token):
                self._queued(f"queued: overlapped another call to {parts.netloc}")

    def warm_up(self) -> None:
        """Send ``warmup_searches`` searches of :data:`WARMUP_QUERY` on the calling thread's
        connection, once per thread (later calls do nothing); failures are ignored. Nothing
        about them is kept: ``last_attempts()`` and ``last_call_info()`` are cleared after."""
        if getattr(self._local, "warmed", False):
            return
        self._local.warmed = True
        for _ in range(self._cfg.warmup_searches):
            with suppress(HttpCallError):
                self.search(WARMUP_QUERY, 1)
        self._begin()

    def _close_connections(self) -> None:
        """Close every connection any thread of this instance opened."""
        with self._conns_lock:
            conns, self._every_conn = self._every_conn, []
        for conn in conns:
            with suppress(OSError):
                conn.close()
        self._local.connections = {}

    # ------------------------------------------------------------------ requests

    def _prepare(
        self,
        op: Operation,
        values: Mapping[str, Any],
        header_templates: Mapping[str, str],
        resolve: bool,
    ) -> tuple[str, dict[str, str], bytes | None]:
        """The URL, headers and body of one try. ``${NAME}`` references are resolved in the
        templates (when ``resolve``) *before* placeholders are filled, so a dataset's text or
        a question that happens to contain ``${HOME}`` is sent as written."""

        def env(template: Any) -> Any:
            return _map_strings(template, resolve_env) if resolve else template

        url = env(self._cfg.base_url) + render(env(op.path), values, url=True)
        if op.query:
            params = render(env(dict(op.query)), values)
            pairs = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in params.items()]
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(pairs)
        templates = {**self._cfg.headers, **op.headers, **header_templates}
        headers = {k: str(render(env(v), values)) for k, v in templates.items()}
        data: bytes | None = None
        if op.body is not None:
            body = render(env(op.body), values)
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            if not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
        headers.setdefault("Accept", "application/json")
        return url, headers, data

    def _request(
        self,
        op: Operation,
        values: Mapping[str, Any],
        header_templates: Mapping[str, str] | None = None,
    ) -> Any:
        """Send ``op`` with retries; the parsed JSON reply (None for an empty body)."""
        extra = dict(header_templates or {})

        def once(attempt: int) -> HttpReply:
            url, headers, data = self._prepare(op, values, extra, resolve=True)
            with self._gate.slot():
                reply = self._send(url, data, headers, op.timeout_s, op.method)
            if reply.status == 429:
                self._queued("queued: saw HTTP 429")
            elif "retry-after" in reply.headers:
                self._queued("queued: saw Retry-After")
            return reply

        result = run_with_retries(once, self._policy, lambda r: classify_http(r, self._policy))
        attempts = [dataclasses.replace(a, error=self._redact(a.error)) for a in result.attempts]
        self._local.attempts = [*getattr(self._local, "attempts", []), *attempts]
        if result.value is not None:
            self._local.response_bytes = len(result.value.body)
        if not result.ok or result.value is None:
            raise HttpCallError(
                f"{op.name} {op.method} {op.path}: {self._redact(result.error)} "
                f"(after {len(attempts)} tr{'y' if len(attempts) == 1 else 'ies'})"
            )
        raw = result.value.body
        if not raw.strip():
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise HttpCallError(
                f"{op.name} {op.method} {op.path}: reply is not JSON ({exc})"
            ) from None

    # ------------------------------------------------------------------ the protocol

    def add(self, session: Session) -> None:
        self._begin()
        units: list[Chunk | None]
        if self._cfg.add_unit == "session" or not session.chunks:
            units = [None]
        else:
            units = list(session.chunks)
        for unit in units:
            values = self._values(**_unit_values(session, unit))
            extra = {}
            if self._cfg.idempotency_key is not None:
                extra[self._cfg.idempotency_header] = self._cfg.idempotency_key
            self._dirty = True
            self._request(self._cfg.add, values, extra)

    def search(self, query: str, k: int) -> list[Memory]:
        self._begin()
        reply = self._request(self._cfg.search, self._values(query=query, k=k))
        shape = self._cfg.response
        try:
            items = shape.memories.find(reply)
            if not shape.memories.many and len(items) == 1 and isinstance(items[0], list):
                items = items[0]
            memories = [self._memory(item) for item in items]
        except (PathLookupError, TypeError, ValueError) as exc:
            raise HttpCallError(f"search response: {exc}") from None
        return memories[: max(k, 0)]

    def _memory(self, item: Any) -> Memory:
        shape = self._cfg.response
        text = shape.text.one(item)
        if not isinstance(text, str):
            raise TypeError(f"{shape.text.text} must be a string, got {type(text).__name__}")
        mid: Any = text_id(text) if shape.id is None else shape.id.one(item)
        if isinstance(mid, bool) or not isinstance(mid, str | int):
            raise TypeError(f"{shape.id.text if shape.id else 'id'} must be a string or integer")
        turns: tuple[str, ...] | None = None
        if shape.source_turns is not None:
            value = shape.source_turns.one(item)
            if value is None:
                turns = None
            elif isinstance(value, str):
                turns = (value,)
            elif isinstance(value, list) and all(isinstance(v, str | int) for v in value):
                turns = tuple(str(v) for v in value)
            else:
                raise TypeError(f"{shape.source_turns.text} must be a list of turn ids")
        score: float | None = None
        if shape.score is not None:
            value = shape.score.one(item)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise TypeError(f"{shape.score.text} must be a number")
            score = None if value is None else float(value)
        return Memory(id=str(mid), text=text, source_turns=turns, score=score)

    def finish_ingest(self) -> None:
        self._begin()
        op = self._cfg.finish_ingest
        if op is None:
            return
        deadline = time.monotonic() + self._cfg.wait_timeout_s
        while True:
            reply = self._request(op, self._values())
            if self._cfg.done_path is None:
                return
            try:
                value = self._cfg.done_path.one(reply)
            except PathLookupError as exc:
                raise HttpCallError(f"finish_ingest response: {exc}") from None
            if value == self._cfg.done_value:
                return
            if time.monotonic() + self._cfg.interval_s > deadline:
                raise HttpCallError(
                    f"finish_ingest: indexing not done after {self._cfg.wait_timeout_s:g} s "
                    f"({self._cfg.done_path.text} is {value!r}, waiting for "
                    f"{self._cfg.done_value!r})"
                )
            time.sleep(self._cfg.interval_s)

    def reset(self) -> None:
        self._begin()
        values = self._values()
        dirty, self._dirty = self._dirty, False
        self._generation += 1  # a fresh namespace even when the reset request fails
        if dirty and self._cfg.reset is not None:
            self._request(self._cfg.reset, values)

    def close(self) -> None:
        """Forget the last namespace on the server (best effort: a failure is ignored)."""
        with suppress(HttpCallError):
            self.reset()
        self._close_connections()
