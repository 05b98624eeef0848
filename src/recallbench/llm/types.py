"""What a chat call is and what came back: plain frozen records, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recallbench.contracts import canonical_json, sha256_text


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One model behind one OpenAI-compatible chat endpoint.

    ``base_url`` ends in ``/v1`` (the client posts to ``{base_url}/chat/completions``);
    ``api_key_env`` names the environment variable holding the key (the key itself is never
    stored); ``max_concurrency`` bounds the calls in flight to this endpoint; ``label`` is how
    records name it (``mock``, ``openrouter``...), never a secret.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_s: float = 90.0
    max_concurrency: int = 8
    label: str = ""

    def describe(self) -> dict[str, Any]:
        """What records say about the endpoint: never the key, only the variable's name."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "label": self.label,
        }


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat completion request, model aside (the endpoint supplies it).

    ``settings`` holds every other field of the request body exactly as sent (``temperature``,
    ``max_tokens``, ``n``, ``response_format``, OpenRouter's ``provider``...). ``purpose`` says
    what the call is for (``reader``, ``reader:notes``, ``judge:memory``...); it is recorded,
    never sent and never part of the cache key.
    """

    messages: tuple[Mapping[str, str], ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    purpose: str = ""

    @property
    def prompt_sha256(self) -> str:
        """SHA-256 of the canonical JSON of the messages (the prompt as sent)."""
        return sha256_text(canonical_json([dict(m) for m in self.messages]))

    @classmethod
    def user(cls, prompt: str, purpose: str = "", **settings: Any) -> ChatRequest:
        """A request with one user message, as every benchmark's official code sends."""
        return cls(({"role": "user", "content": prompt},), dict(settings), purpose)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of a call: HTTP status (None: no response), error text, the wait before the
    next try (0 for the last) and how long the try took."""

    attempt: int
    status: int | None
    error: str | None
    wait_s: float
    latency_ms: float


@dataclass(frozen=True, slots=True)
class Completion:
    """What one call returned, after every retry.

    ``text`` is None when the call failed (``error`` says why: transport failure, HTTP error,
    or an empty body, after the retries); token counts come from the API's ``usage`` fields
    only (None when the API gave none, never estimated); ``cached`` is true when the reply came
    from the response cache (``attempts`` is then empty); ``billed_usd`` is None without a
    price for the model.
    """

    text: str | None
    model: str
    cache_key: str
    prompt_sha256: str
    purpose: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    provider: str | None = None
    response_model: str | None = None
    cached: bool = False
    attempts: tuple[Attempt, ...] = ()
    latency_ms: float | None = None
    error: str | None = None
    billed_usd: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


CallLLM = Callable[[ChatRequest], Completion]
"""Make one chat call (cached, retried, counted): what instruments are handed."""
