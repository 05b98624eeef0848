"""A deterministic OpenAI-compatible chat endpoint on loopback, for tests, timing scripts and
``--reader mock`` / ``--judge mock-judge``: no network, no model, the same reply to the same
prompt every time.

:class:`MockLLMServer` is a real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, a free
port) answering ``POST /v1/chat/completions`` and ``GET /v1/models``. What it replies depends
on the requested model (:data:`MOCK_MODELS`):

``mock`` (a reader)
    Reads the memories out of the prompt (the last user message) and concatenates them,
    space-separated, as its answer; "I don't know." when the prompt carries none. Memory lines
    are: the lines of a ``CONTEXT:`` ... ``QUESTION:`` block (BEAM's RAG prompt); otherwise
    lines starting ``- `` (Glasshouse's memories; ``(none)`` and ``(nothing returned)`` are
    not memories), LoCoMo's ``speaker said, "..."`` lines, LongMemEval's JSON history lines
    (the ``content`` of each turn, or the ``session_summary`` of a note) and its ``user:`` /
    ``assistant:`` lines (history format ``nl``).
``mock-judge`` (a strict judge)
    Finds the gold answer and the response being judged in each known judge prompt shape and
    replies in the format that prompt asks for, with the correct verdict when the normalised
    gold (lower case, punctuation removed, spaces collapsed) is contained, as whole words, in
    the normalised response (Glasshouse: also any accepted alternative); on abstention prompts
    when the response says it does not know (:data:`DONT_KNOW`). Shapes: Glasshouse's memory,
    answer and abstention judges (FULL / PARTIAL / WRONG; PARTIAL for "I don't know" on the
    UPDATE, STALE and CONTRADICT axes; CORRECT / WRONG for the abstention prompt, CORRECT when
    nothing was returned or the memories say they do not know), LongMemEval's
    ``get_anscheck_prompt`` templates (``yes`` / ``no``; the abstention template is an
    abstention prompt), mem0's ``ACCURACY_PROMPT`` (``{"label": "CORRECT"}``), BEAM's
    ``unified_llm_judge_base_prompt`` (``{"score": 1.0, "reason": ...}``; the rubric item's
    text after its first ``": "`` is the gold; a rubric saying there is no information makes
    it an abstention prompt), BEAM's snippet-equivalence check (``YES`` / ``NO``: one snippet
    contained in the other), and recallbench prompts v1 (a ``Gold answer: <text>`` line and a
    block from ``Response:`` to ``End of response.``; ``CORRECT`` / ``WRONG``).
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
_DONT_KNOW_PARTIAL_AXES = frozenset({"UPDATE", "STALE", "CONTRADICT"})
_ABSTAIN_AXES = frozenset({"ABSTAIN", "FALSE_MEMORY"})
_NOT_MEMORIES = frozenset({"(none)", "(nothing returned)", "(no answer)", ""})


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


def memory_lines(prompt: str) -> list[str]:
    """The memories a reader prompt carries (see the module doc for the shapes)."""
    block = re.search(r"CONTEXT:\n(.*?)\n\s*QUESTION:", prompt, re.DOTALL)
    if block:
        lines = [ln.strip().removeprefix("- ") for ln in block.group(1).splitlines()]
        return [ln for ln in lines if ln.strip() and ln.strip() not in _NOT_MEMORIES]
    found: list[str] = []
    for raw in prompt.splitlines():
        line = raw.strip()
        if line.startswith(("[", "{")):
            with contextlib.suppress(json.JSONDecodeError):
                found.extend(c.strip() for c in _json_contents(json.loads(line)))
            continue
        if ' said, "' in line:
            found.append(line)
        elif line.startswith("- "):
            found.append(line[2:].strip())
        elif line.startswith(("user: ", "assistant: ")):
            found.append(line.split(": ", 1)[1].strip())
    return [m for m in found if m not in _NOT_MEMORIES]


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


def _after(text: str, start: str, end: str, *, last_end: bool = True) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    j = text.rfind(end) if last_end else text.find(end, i)
    if j < i:
        return None
    return text[i:j]


def _glasshouse(prompt: str) -> JudgeView | None:
    gold_head = "Model answer (what a correct answer looks like):\n"
    axis = re.search(r"How to score this question type \(([^)]*)\):", prompt)
    if gold_head not in prompt or axis is None:
        return None
    if "Memories the system returned:\n" in prompt:
        response = _after(prompt, "Memories the system returned:\n", "\n\nHow to score")
        shape = "glasshouse-memory"
    elif "The assistant's answer:\n" in prompt:
        response = _after(prompt, "The assistant's answer:\n", "\n\nHow to score")
        shape = "glasshouse-answer"
    else:
        return None
    gold_block = _after(prompt, gold_head, "\n\nInformation the ", last_end=False) or ""
    gold_lines = gold_block.splitlines()
    golds = [gold_lines[0]] if gold_lines else []
    golds += [ln[2:] for ln in gold_lines[1:] if ln.startswith("- ")]
    name = axis.group(1).strip()
    return JudgeView(
        shape,
        tuple(g for g in golds if g and g != "(none)"),
        response or "",
        "FULL",
        "WRONG",
        abstention=name in _ABSTAIN_AXES,
        partial="PARTIAL" if name in _DONT_KNOW_PARTIAL_AXES else None,
    )


def _glasshouse_abstain(prompt: str) -> JudgeView | None:
    response = _after(prompt, "What the system returned:\n", "\n\nDecide only this")
    if response is None:
        return None
    empty = response.strip() in _NOT_MEMORIES
    return JudgeView(
        "glasshouse-abstain",
        (),
        DONT_KNOW_REPLY if empty else response,
        "CORRECT",
        "WRONG",
        abstention=True,
    )


def _longmemeval(prompt: str) -> JudgeView | None:
    end = max(
        prompt.rfind("\n\nIs the model response correct?"),
        prompt.rfind("\n\nDoes the model correctly identify"),
    )
    start = prompt.find("\n\nModel Response: ")
    if end < 0 or start < 0:
        return None
    response = prompt[start + len("\n\nModel Response: ") : end]
    for head, abstention in (
        ("\n\nCorrect Answer: ", False),
        ("\n\nRubric: ", False),
        ("\n\nExplanation: ", True),
    ):
        i = prompt.find(head)
        if 0 <= i < start:
            gold = prompt[i + len(head) : start]
            return JudgeView("longmemeval", (gold,), response, "yes", "no", abstention)
    return None


def _mem0(prompt: str) -> JudgeView | None:
    end = prompt.rfind("\n\nFirst, provide")
    gen = prompt.rfind("\nGenerated answer: ", 0, end if end >= 0 else len(prompt))
    gold = prompt.rfind("\nGold answer: ", 0, gen if gen >= 0 else 0)
    if end < 0 or gen < 0 or gold < 0:
        return None
    return JudgeView(
        "mem0",
        (prompt[gold + len("\nGold answer: ") : gen],),
        prompt[gen + len("\nGenerated answer: ") : end],
        json.dumps({"label": "CORRECT"}),
        json.dumps({"label": "WRONG"}),
    )


def _beam_rubric(prompt: str) -> JudgeView | None:
    rubric_head = "- RUBRIC CRITERION (what to check): "
    response_head = "\n- RESPONSE TO EVALUATE: "
    i, j = prompt.find(rubric_head), prompt.find(response_head)
    end = prompt.rfind("\n\n## EVALUATION RUBRIC")
    if i < 0 or j < i or end < j:
        return None
    rubric = prompt[i + len(rubric_head) : j]
    gold = rubric.split(": ", 1)[1] if ": " in rubric else rubric
    reason = "mock judge: rubric text {} in the response"
    return JudgeView(
        "beam-rubric",
        (gold,),
        prompt[j + len(response_head) : end],
        json.dumps({"score": 1.0, "reason": reason.format("found")}),
        json.dumps({"score": 0.0, "reason": reason.format("not found")}),
        abstention="no information" in normalise(rubric),
    )


def _beam_equivalence(prompt: str) -> JudgeView | None:
    m = re.search(r"First snippet: (.*?)\s*\n\s*Second snippet: (.*)", prompt, re.DOTALL)
    if m is None:
        return None
    first, second = m.group(1).strip(), m.group(2).strip()
    golds = (first,) if len(normalise(first)) <= len(normalise(second)) else (second,)
    response = second if golds == (first,) else first
    return JudgeView("beam-equivalence", golds, response, "YES", "NO")


def _recallbench_v1(prompt: str) -> JudgeView | None:
    gold = re.search(r"^Gold answer: (.*)$", prompt, re.MULTILINE)
    response = _after(prompt, "Response:\n", "\nEnd of response.")
    if gold is None or response is None:
        return None
    abstention = says_dont_know(gold.group(1))
    return JudgeView("recallbench-v1", (gold.group(1),), response, "CORRECT", "WRONG", abstention)


JUDGE_SHAPES: tuple[Callable[[str], JudgeView | None], ...] = (
    _glasshouse,
    _glasshouse_abstain,
    _longmemeval,
    _mem0,
    _beam_rubric,
    _beam_equivalence,
    _recallbench_v1,
)
"""Tried in order on the judge prompt (the last user message, with any system message
before it for BEAM's equivalence check); the first that recognises it decides."""


def read_judge_prompt(prompt: str) -> JudgeView | None:
    for shape in JUDGE_SHAPES:
        view = shape(prompt)
        if view is not None:
            return view
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
        try:
            self._post()
        finally:
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
