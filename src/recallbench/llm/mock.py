"""A deterministic OpenAI-compatible chat endpoint on loopback, for tests, timing scripts and
``--reader mock`` / ``--judge mock-judge``: no network, no model, the same reply to the same
prompt every time.

:class:`MockLLMServer` is a real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, a free
port) answering ``POST /v1/chat/completions`` and ``GET /v1/models``. What it replies depends
on the requested model (:data:`MOCK_MODELS`):

``mock`` (a reader)
    Reads the memories out of the prompt (the last user message) and concatenates them,
    space-separated, as its answer; "I don't know." when the prompt carries none. The memories
    are the memory field of a registered reader shape when one matches, else the lines that
    look like data (``- `` lines, JSON history lines, lines ending in a quotation, ``user:`` /
    ``assistant:`` lines); a filler in parentheses (``(none)``) is not a memory.
``mock-judge`` (a strict judge)
    Matches the judge prompt against the registered shapes (:class:`Shape`): each benchmark's
    own template, read from its pinned file at run time by
    :mod:`recallbench.benchmarks.mock_shapes` (installed with :func:`set_shape_provider`), never
    copied here. The matched fields give the gold answer(s) and the response judged; the reply
    is the shape's correct-verdict text when the normalised gold (lower case, punctuation
    removed, spaces collapsed) is contained, as whole words, in the normalised response, or, on
    abstention prompts, when the response says it does not know (:data:`DONT_KNOW`); the
    partial-credit text for "I don't know" where the shape gives it.
``mock-judge-lenient``
    The same shapes, always the correct-verdict reply: it lets plausible wrong answers through
    (what ``judge-check`` must catch).

A prompt of no known shape gets :data:`UNRECOGNISED`. Every reply is cut to the request's
``max_tokens`` whitespace tokens (``finish_reason`` ``length``, else ``stop``); ``usage``
counts whitespace tokens of the messages and of the reply; ``provider`` is ``mock``.

Faults (:class:`Fault`, given to the server): every N-th call, or a seeded fraction of calls
(decided by the call's number, so the same calls fail in every run), answered malformed (not
JSON, or JSON with no ``choices``), with empty content, or ``429`` with ``Retry-After``.
``delay_s`` is slept before every reply. :attr:`MockLLMServer.calls_by_model` and
:attr:`MockLLMServer.calls_by_prompt` (keyed by the SHA-256 that ``ChatRequest.prompt_sha256``
gives) count what was received, faults included; ``GET /v1/mock/stats`` serves them as JSON.
``python -m recallbench.testing.mock_llm --port P --delay S`` serves it from a shell.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from recallbench.contracts import canonical_json, sha256_text

READER = "mock"
JUDGE = "mock-judge"
LENIENT_JUDGE = "mock-judge-lenient"
MOCK_MODELS: tuple[str, ...] = (READER, JUDGE, LENIENT_JUDGE)
UNRECOGNISED = "UNRECOGNISED PROMPT"
DONT_KNOW_REPLY = "I don't know."
DONT_KNOW: tuple[str, ...] = (
    "i dont know",
    "i do not know",
    "dont know",
    "do not know",
    "not known",
    "unknown",
    "no information",
    "not mentioned",
    "never stated",
    "not stated",
    "cannot be determined",
    "unanswerable",
    "nothing returned",
)
"""Normalised phrases that count as "says it does not know"."""
FAULT_KINDS = ("malformed", "no_choices", "empty", "rate_limit")


# --------------------------------------------------------------------------- text rules


def normalise(text: str) -> str:
    """Lower case, every character that is not a letter, digit or space removed, runs of
    whitespace made one space, stripped."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c.isspace())
    return " ".join(kept.split())


def contains(response: str, gold: str) -> bool:
    """True when normalised ``gold`` (non-empty) occurs in normalised ``response`` as whole
    words."""
    g = normalise(gold)
    return bool(g) and f" {g} " in f" {normalise(response)} "


def says_dont_know(response: str) -> bool:
    n = f" {normalise(response)} "
    return any(f" {p} " in n for p in DONT_KNOW)


def tokens(text: str) -> int:
    """The mock's token count: whitespace-separated pieces."""
    return len(text.split())


# --------------------------------------------------------------------------- reader


def _json_contents(value: Any) -> list[str]:
    if isinstance(value, dict):
        for key in ("content", "session_summary"):
            if isinstance(value.get(key), str):
                return [value[key]]
        return []
    if isinstance(value, list):
        return [c for item in value for c in _json_contents(item)]
    return []


def _placeholder(line: str) -> bool:
    """A filler the official code writes where nothing was given (``(none)``, ``(nothing
    returned)``): the whole text in parentheses, or empty."""
    t = line.strip()
    return not t or (t.startswith("(") and t.endswith(")"))


def _lines(block: str) -> list[str]:
    """The memories of a block the reader got: one per line, a leading ``- `` dropped."""
    lines = [ln.strip().removeprefix("- ").strip() for ln in block.splitlines()]
    return [ln for ln in lines if not _placeholder(ln)]


def memory_lines(prompt: str) -> list[str]:
    """The memories a reader prompt carries: the memory field of a registered reader shape
    (the benchmark's own template, read at run time) when one matches, else every line that
    looks like data: ``- `` lines, JSON history lines, and lines ending in a quotation."""
    for shape in shapes():
        if shape.kind == "reader":
            m = shape.pattern.fullmatch(prompt)
            if m is not None:
                return _lines(m.group(shape.response))
    found: list[str] = []
    for raw in prompt.splitlines():
        line = raw.strip()
        if line.startswith(("[", "{")):
            with contextlib.suppress(json.JSONDecodeError):
                found.extend(c.strip() for c in _json_contents(json.loads(line)))
            continue
        if line.endswith('"') and line.count('"') >= 2:
            found.append(line)
        elif line.startswith("- "):
            found.append(line[2:].strip())
        elif line.startswith(("user: ", "assistant: ")):
            found.append(line.split(": ", 1)[1].strip())
    return [m for m in found if not _placeholder(m)]


def reader_reply(prompt: str) -> str:
    lines = memory_lines(prompt)
    return " ".join(lines) if lines else DONT_KNOW_REPLY


# --------------------------------------------------------------------------- judge


@dataclass(frozen=True, slots=True)
class JudgeView:
    """What the mock judge read from a judge prompt: the shape, the gold answers (any one
    suffices), the response judged, and the verdict words of the shape."""

    shape: str
    golds: tuple[str, ...]
    response: str
    correct: str
    wrong: str
    abstention: bool = False
    partial: str | None = None
    """The reply for "I don't know" where the shape gives partial credit for it."""


@dataclass(frozen=True)
class Shape:
    """A prompt the mock recognises: a benchmark's own template turned into a pattern
    (:func:`template_pattern`) at run time, never its text copied here. ``kind`` is ``judge``
    (``read`` turns the matched fields into a :class:`JudgeView`) or ``reader`` (the field
    named ``response`` holds the memories)."""

    name: str
    kind: str
    pattern: re.Pattern[str]
    response: str = ""
    read: Callable[[dict[str, str]], JudgeView] | None = None


def template_pattern(parts: Sequence[tuple[str, str | None]]) -> re.Pattern[str]:
    """A full-match pattern from a template's literal text and field names, in order:
    ``[("Question: ", None), ("", "q"), ...]`` style pairs ``(literal, field)``, each literal
    matched as written and each field as any text (the shortest that fits)."""
    out: list[str] = []
    seen: set[str] = set()
    for literal, field in parts:
        out.append(re.escape(literal))
        if field is not None:
            if field in seen:
                out.append(f"(?P={field})")
            else:
                out.append(f"(?P<{field}>.*?)")
                seen.add(field)
    return re.compile("".join(out), re.DOTALL)


_SHAPES_LOCK = threading.Lock()
_SHAPE_PROVIDER: Callable[[], Sequence[Shape]] | None = None
_SHAPES: tuple[Shape, ...] | None = None


def set_shape_provider(provider: Callable[[], Sequence[Shape]]) -> None:
    """Where the prompt shapes come from (``recallbench.instruments.mock_shapes``, which reads
    the benchmarks' pinned files); read once, on the first prompt that needs them."""
    global _SHAPE_PROVIDER, _SHAPES
    with _SHAPES_LOCK:
        _SHAPE_PROVIDER, _SHAPES = provider, None


def shapes() -> tuple[Shape, ...]:
    global _SHAPES
    with _SHAPES_LOCK:
        if _SHAPES is None:
            _SHAPES = tuple(_SHAPE_PROVIDER()) if _SHAPE_PROVIDER is not None else ()
        return _SHAPES


def read_judge_prompt(prompt: str) -> JudgeView | None:
    for shape in shapes():
        if shape.kind != "judge" or shape.read is None:
            continue
        m = shape.pattern.fullmatch(prompt)
        if m is not None:
            return shape.read({k: v for k, v in m.groupdict().items() if v is not None})
    return None


def judge_reply(prompt: str, lenient: bool = False) -> str:
    """The mock judge's reply to ``prompt`` (see the module doc)."""
    view = read_judge_prompt(prompt)
    if view is None:
        return UNRECOGNISED
    if lenient:
        return view.correct
    if view.abstention:
        return view.correct if says_dont_know(view.response) else view.wrong
    if any(contains(view.response, g) for g in view.golds):
        return view.correct
    if view.partial is not None and says_dont_know(view.response):
        return view.partial
    return view.wrong


def reply_for(model: str, messages: Sequence[dict[str, Any]]) -> str:
    """The reply of mock ``model`` to ``messages`` (before ``max_tokens`` is applied)."""
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    prompt = users[-1] if users else ""
    if model == READER:
        return reader_reply(prompt)
    return judge_reply(prompt, lenient=model == LENIENT_JUDGE)


# --------------------------------------------------------------------------- server


@dataclass(frozen=True, slots=True)
class Fault:
    """Answer some calls badly. ``kind``: ``malformed`` (a body that is not JSON),
    ``no_choices`` (JSON without ``choices``), ``empty`` (content ``""``) or ``rate_limit``
    (429 with ``Retry-After: retry_after_s``). Which calls: every ``every``-th call received
    (1-based count over all models), or, with ``fraction``, the calls whose number hashed with
    ``seed`` falls below it; ``models`` limits the fault to those models (empty: all)."""

    kind: str
    every: int = 0
    fraction: float = 0.0
    seed: int = 0
    retry_after_s: float = 0.0
    models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; known: {', '.join(FAULT_KINDS)}")

    def hits(self, number: int, model: str) -> bool:
        if self.models and model not in self.models:
            return False
        if self.every > 0 and number % self.every == 0:
            return True
        if self.fraction > 0:
            digest = hashlib.sha256(f"{self.seed}:{self.kind}:{number}".encode()).digest()
            return int.from_bytes(digest[:8], "big") / 2**64 < self.fraction
        return False


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self._leave()  # before the reply goes out: the client may send its next call at once
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps({"error": {"message": message}}).encode(), headers)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/") == "/v1/mock/stats":
            self._send(200, json.dumps(self.server.mock.stats()).encode())
            return
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"no such path {self.path}")
            return
        data = [{"id": m, "object": "model", "owned_by": "recallbench"} for m in MOCK_MODELS]
        self._send(200, json.dumps({"object": "list", "data": data}).encode())

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        mock = self.server.mock
        with mock._lock:
            mock.in_flight += 1
            mock.max_in_flight = max(mock.max_in_flight, mock.in_flight)
        self._counted = True
        try:
            self._post()
        finally:
            self._leave()

    def _leave(self) -> None:
        """Count this request out of ``in_flight`` once: when its reply is about to be written
        (a client that has read it may start another call before this handler returns, which
        counted after the write read as one call too many), or when the handler ends."""
        if getattr(self, "_counted", False):
            self._counted = False
            mock = self.server.mock
            with mock._lock:
                mock.in_flight -= 1

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no such path {self.path}")
            return
        try:
            body = json.loads(raw.decode("utf-8"))
            model = str(body["model"])
            messages = list(body["messages"])
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            self._error(400, "the body must be JSON with model and messages")
            return
        mock = self.server.mock
        number = mock._record(body, self.headers.get("Authorization"))
        if mock.delay_s > 0:
            time.sleep(mock.delay_s)
        if mock.api_key is not None and self.headers.get("Authorization") != (
            f"Bearer {mock.api_key}"
        ):
            self._error(401, "invalid API key")
            return
        if model not in MOCK_MODELS:
            self._error(404, f"model {model!r} not found; known: {', '.join(MOCK_MODELS)}")
            return
        fault = next((f for f in mock.faults if f.hits(number, model)), None)
        if fault is not None and fault.kind == "rate_limit":
            self._error(429, "rate limited", {"Retry-After": f"{fault.retry_after_s:g}"})
            return
        if fault is not None and fault.kind == "malformed":
            self._send(200, b"<html>upstream error</html>")
            return
        if fault is not None and fault.kind == "no_choices":
            self._send(200, json.dumps({"id": f"mock-{number}", "object": "error"}).encode())
            return
        text = "" if fault is not None else reply_for(model, messages)
        finish = "stop"
        limit = body.get("max_tokens")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            pieces = text.split()
            if len(pieces) > limit:
                text, finish = " ".join(pieces[:limit]), "length"
        prompt_tokens = sum(tokens(str(m.get("content", ""))) for m in messages)
        reply = {
            "id": f"mock-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "provider": "mock",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": tokens(text),
                "total_tokens": prompt_tokens + tokens(text),
            },
        }
        self._send(200, json.dumps(reply).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    mock: MockLLMServer


class MockLLMServer:
    """The mock endpoint (see the module doc). ``start()`` / ``stop()`` or ``with``;
    :attr:`base_url` ends in ``/v1``. ``api_key``: when set, a call without ``Authorization:
    Bearer <api_key>`` gets 401. ``requests`` keeps the request bodies received, in order
    (the last ``keep_requests`` of them)."""

    def __init__(
        self,
        *,
        delay_s: float = 0.0,
        faults: Sequence[Fault] = (),
        api_key: str | None = None,
        port: int = 0,
        keep_requests: int = 10_000,
    ) -> None:
        self.delay_s = delay_s
        self.keep_requests = keep_requests
        self.faults = tuple(faults)
        self.api_key = api_key
        self._port = port
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.calls = 0
        self.calls_by_model: Counter[str] = Counter()
        self.calls_by_prompt: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.authorization_seen: set[str] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        """The most chat calls the server was handling at once."""

    def __repr__(self) -> str:
        return f"MockLLMServer(base_url={self.base_url if self._server else None!r})"

    def _record(self, body: dict[str, Any], authorization: str | None) -> int:
        key = sha256_text(canonical_json([dict(m) for m in body.get("messages", [])]))
        with self._lock:
            self.calls += 1
            self.calls_by_model[str(body.get("model"))] += 1
            self.calls_by_prompt[key] += 1
            self.requests.append(body)
            if len(self.requests) > self.keep_requests:
                del self.requests[: len(self.requests) - self.keep_requests]
            if authorization:
                self.authorization_seen.add(authorization)
            return self.calls

    def stats(self) -> dict[str, Any]:
        """The counters as JSON-ready data (also served at ``GET /v1/mock/stats``, for a test
        whose client runs in another process)."""
        with self._lock:
            return {
                "calls": self.calls,
                "calls_by_model": dict(sorted(self.calls_by_model.items())),
                "calls_by_prompt": dict(sorted(self.calls_by_prompt.items())),
                "max_in_flight": self.max_in_flight,
            }

    def reset_counters(self) -> None:
        with self._lock:
            self.calls = 0
            self.calls_by_model.clear()
            self.calls_by_prompt.clear()
            self.requests.clear()
            self.authorization_seen.clear()
            self.max_in_flight = self.in_flight

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the mock server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> MockLLMServer:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.mock = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="mock-llm", kwargs={"poll_interval": 0.05}
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SHARED: MockLLMServer | None = None
_SHARED_LOCK = threading.Lock()


def ensure_mock_server() -> MockLLMServer:
    """The process's one shared mock server (no delay, no faults), started on first use on a
    free loopback port and stopped at exit: what ``--reader mock`` and ``--judge mock-judge``
    call."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = MockLLMServer().start()
            atexit.register(_SHARED.stop)
        return _SHARED


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m recallbench.testing.mock_llm [--port P] [--delay S]``: serve until
    interrupted, printing the base URL."""
    import argparse

    parser = argparse.ArgumentParser(description="recallbench's mock OpenAI-compatible server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = MockLLMServer(delay_s=args.delay, port=args.port).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
