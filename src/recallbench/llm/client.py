"""The chat client: any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server,
OpenRouter, OpenAI) by base URL and model, cached, retried, bounded and costed.

:meth:`ChatClient.complete` posts ``{"model": endpoint.model, "messages": [...],
**request.settings}`` to ``{base_url}/chat/completions`` with the standard library, at most
``endpoint.max_concurrency`` calls in flight per endpoint (callers' threads wait their turn).
The API key is read from ``os.environ[endpoint.api_key_env]`` at each call and sent only as
``Authorization: Bearer ...``; it is never stored on the client, in a
:class:`~recallbench.llm.types.Completion`, an error message, a log line or a ``repr`` (any
error text that echoes it has it replaced by ``[redacted]``).

A transport failure, an HTTP error, a malformed reply (not JSON, no ``choices``) or, when the
policy says so, an empty body is retried as :mod:`recallbench.llm.retry` says; what is left
after the last try is a ``Completion`` with ``text=None`` and ``error`` set: ``complete``
never raises for a failed call. A successful reply is parsed for ``choices[0].message.content``
(kept exactly as returned, not stripped), ``finish_reason``, ``usage.prompt_tokens`` and
``usage.completion_tokens`` (None when the API gave none: never estimated), and the reply's
``provider`` and ``model``; it is stored in the response cache, which answers the same call
next time (``cached=True``, no attempts, ``latency_ms`` the lookup's, ``billed_usd`` 0 when
the model has a price: nothing was billed).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from recallbench.errors import UserError
from recallbench.llm.cache import ResponseCache, cache_key
from recallbench.llm.prices import PriceTable
from recallbench.llm.retry import (
    HttpReply,
    Outcome,
    RetryPolicy,
    classify_http,
    http_request,
    run_with_retries,
)
from recallbench.llm.types import Attempt, CallLLM, ChatRequest, Completion, Endpoint

logger = logging.getLogger(__name__)

RESERVED_SETTINGS = frozenset({"model", "messages", "stream"})
"""Body fields a request's settings may not set (the client owns them; no streaming)."""
REDACTED = "[redacted]"


class MissingApiKeyError(UserError, RuntimeError):
    """An endpoint names an API-key variable that is not set in the environment."""

    def __init__(self, variable: str, endpoint: str) -> None:
        super().__init__(
            f"the API key for {endpoint} is read from ${variable}, which is not set: "
            f"export {variable}=... (the key is never written anywhere)"
        )
        self.variable = variable


@dataclass(frozen=True, slots=True)
class _Parsed:
    text: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    provider: str | None
    response_model: str | None


class _Failure(Exception):
    """A reply that arrived but is not a usable completion (malformed, empty)."""


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_chat_reply(body: bytes) -> _Parsed:
    """Read an OpenAI-style chat completion body; raises ``ValueError`` when it is not one
    (not JSON, no ``choices``, no ``message``)."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"malformed reply: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("malformed reply: not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("malformed reply: no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("malformed reply: choices[0] has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("malformed reply: message content is not text")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    finish = choices[0].get("finish_reason")
    provider = data.get("provider")
    model = data.get("model")
    return _Parsed(
        text=content,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        provider=provider if isinstance(provider, str) else None,
        response_model=model if isinstance(model, str) else None,
    )


class ChatClient:
    """One endpoint's calls (see the module doc). Thread-safe: share one per endpoint
    (:class:`ClientPool`). ``semaphore`` lets several clients of one endpoint share its limit."""

    def __init__(
        self,
        endpoint: Endpoint,
        cache: ResponseCache | None = None,
        policy: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        *,
        semaphore: threading.BoundedSemaphore | None = None,
    ) -> None:
        if endpoint.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1: {endpoint!r}")
        self.endpoint = endpoint
        self.cache = cache
        self.policy = policy or RetryPolicy()
        self.prices = prices
        self.url = endpoint.base_url.rstrip("/") + "/chat/completions"
        self._semaphore = semaphore or threading.BoundedSemaphore(endpoint.max_concurrency)
        self._api_key()  # a named but unset variable is an error before any call

    def __repr__(self) -> str:
        e = self.endpoint
        return (
            f"ChatClient(base_url={e.base_url!r}, model={e.model!r}, "
            f"api_key_env={e.api_key_env!r}, max_concurrency={e.max_concurrency})"
        )

    def _api_key(self) -> str | None:
        variable = self.endpoint.api_key_env
        if not variable:
            return None
        value = os.environ.get(variable)
        if not value:
            raise MissingApiKeyError(variable, self.endpoint.label or self.endpoint.base_url)
        return value

    def as_call(self, sample: int = 0) -> CallLLM:
        """:meth:`complete` with the sample index fixed: what an instrument is handed."""

        def call(request: ChatRequest) -> Completion:
            return self.complete(request, sample)

        return call

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (refuses settings that would override the
        model, the messages or ask for streaming)."""
        clash = sorted(RESERVED_SETTINGS & set(request.settings))
        if clash:
            raise ValueError(f"request settings may not set {', '.join(clash)}")
        return {
            "model": self.endpoint.model,
            "messages": [dict(m) for m in request.messages],
            **dict(request.settings),
        }

    def complete(self, request: ChatRequest, sample: int = 0) -> Completion:
        """Make (or answer from the cache) one call; never raises for a failed call."""
        key = cache_key(self.endpoint, request, sample)
        if self.cache is not None:
            looked_up = time.perf_counter()
            try:
                hit = self.cache.get(key, request.purpose)
            except Exception as exc:  # a broken cache costs calls, never the run
                logger.warning("response cache read failed, calling the model: %s", exc)
                hit = None
            if hit is not None:
                billed = self._billed(hit.model, 0, 0) if hit.ok else None
                lookup_ms = (time.perf_counter() - looked_up) * 1000.0
                return _with(hit, billed_usd=billed, latency_ms=lookup_ms)
        body = json.dumps(self.body(request), ensure_ascii=False).encode("utf-8")
        key_value = self._api_key()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key_value:
            headers["Authorization"] = f"Bearer {key_value}"
        parsed: list[_Parsed] = []  # the reply of the successful try, when there is one

        def attempt(n: int) -> HttpReply:
            return http_request(self.url, body, headers, self.endpoint.timeout_s)

        def classify(result: HttpReply | BaseException) -> Outcome:
            outcome = classify_http(result, self.policy)
            if not outcome.ok or isinstance(result, BaseException):
                return outcome
            try:
                reply = parse_chat_reply(result.body)
            except ValueError as exc:
                return Outcome(False, True, result.status, str(exc))
            if not reply.text and self.policy.empty_is_failure:
                return Outcome(
                    False,
                    True,
                    result.status,
                    f"empty reply (finish_reason={reply.finish_reason})",
                )
            parsed.append(reply)
            return outcome

        started = time.perf_counter()
        with self._semaphore:
            result = run_with_retries(attempt, self.policy, classify)
        latency_ms = (time.perf_counter() - started) * 1000.0
        attempts = tuple(_redact_attempt(a, key_value) for a in result.attempts)
        base = Completion(
            text=None,
            model=self.endpoint.model,
            cache_key=key,
            prompt_sha256=request.prompt_sha256,
            purpose=request.purpose,
            attempts=attempts,
            latency_ms=latency_ms,
        )
        if not result.ok or result.value is None:
            return _with(base, error=_redact(result.error or "failed", key_value))
        reply = parsed[-1]
        completion = _with(
            base,
            text=reply.text if reply.text is not None else "",
            finish_reason=reply.finish_reason,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            provider=reply.provider,
            response_model=reply.response_model,
            billed_usd=self._billed(
                self.endpoint.model, reply.prompt_tokens, reply.completion_tokens
            ),
        )
        if self.cache is not None:
            try:
                self.cache.put(completion)
            except Exception as exc:
                logger.warning("response cache write failed: %s", exc)
        return completion

    def _billed(
        self, model: str, prompt_tokens: int | None, completion_tokens: int | None
    ) -> float | None:
        if self.prices is None:
            return None
        return self.prices.billed_usd(model, prompt_tokens, completion_tokens)


def _with(record: Any, **changes: Any) -> Any:
    return replace(record, **changes)


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, REDACTED) if secret else text


def _redact_attempt(attempt: Attempt, secret: str | None) -> Attempt:
    if not secret or attempt.error is None or secret not in attempt.error:
        return attempt
    return _with(attempt, error=_redact(attempt.error, secret))


class ClientPool:
    """One :class:`ChatClient` per (endpoint, retry policy), and one concurrency limit per
    endpoint however many policies use it, sharing one cache and one price table: what the
    pipeline hands every instrument of a run."""

    def __init__(
        self, cache: ResponseCache | None = None, prices: PriceTable | None = None
    ) -> None:
        self.cache = cache
        self.prices = prices
        self._lock = threading.Lock()
        self._clients: dict[tuple[Endpoint, RetryPolicy], ChatClient] = {}
        self._limits: dict[Endpoint, threading.BoundedSemaphore] = {}

    def client(self, endpoint: Endpoint, policy: RetryPolicy | None = None) -> ChatClient:
        chosen = policy or RetryPolicy()
        with self._lock:
            found = self._clients.get((endpoint, chosen))
            if found is None:
                limit = self._limits.setdefault(
                    endpoint, threading.BoundedSemaphore(endpoint.max_concurrency)
                )
                found = ChatClient(endpoint, self.cache, chosen, self.prices, semaphore=limit)
                self._clients[(endpoint, chosen)] = found
            return found

    def clients(self) -> tuple[ChatClient, ...]:
        with self._lock:
            return tuple(self._clients.values())
