"""One retry policy for every HTTP call recallbench makes: the chat client here and the
hosted-API memory systems (which call :func:`run_with_retries` with their own request).

A call is a function of the attempt number that returns a value or raises; a *classifier* says
what each outcome was (:class:`Outcome`: success, a failure worth retrying, or a final
failure, with the HTTP status and a ``Retry-After`` wait when there is one). Between tries
the policy waits, in order of precedence:

* the benchmark's own waits when its code states them (``explicit_waits_s``, e.g. from
  ``ModelPin.backoff_s``): the i-th wait after the i-th failure (the last value repeats);
* otherwise *full jitter*: a uniform draw in ``[0, min(backoff_max_s, backoff_base_s *
  2 ** (attempt - 1))]`` from the policy's random source (seed it for reproducible tests);

and never less than the server's ``Retry-After`` (seconds or an HTTP date), itself capped at
``retry_after_max_s``. There is no wait after the last try. Every try is recorded as an
:class:`~recallbench.llm.types.Attempt`.

:func:`http_request` and :func:`classify_http` are the HTTP pieces: 429, 500, 502, 503 and 504
(``RETRY_STATUSES``), connection resets, refused or dropped connections and timeouts are
retried; any other 4xx/5xx is final.
"""

from __future__ import annotations

import email.utils
import http.client
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from recallbench.llm.types import Attempt

T = TypeVar("T")

RETRY_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses retried: rate limited, and the server errors that are usually transient."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry (see the module doc for the wait rule).

    ``tries`` counts every try (1: no retry). ``empty_is_failure``: a reply whose body is
    empty counts as a retryable failure (Glasshouse's rule for its reasoning-model judge);
    the chat client applies it, other callers may read it. ``rng`` is the jitter source
    (a fresh unseeded ``random.Random`` by default); ``sleep`` is how waits are taken (tests
    pass a recorder).
    """

    tries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 60.0
    explicit_waits_s: tuple[float, ...] = ()
    empty_is_failure: bool = False
    retry_statuses: frozenset[int] = RETRY_STATUSES
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"RetryPolicy.tries must be at least 1, got {self.tries}")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0 or self.retry_after_max_s < 0:
            raise ValueError("RetryPolicy waits must not be negative")

    @classmethod
    def from_pin(cls, pin: Any, **overrides: Any) -> RetryPolicy:
        """The policy a benchmark's :class:`~recallbench.instruments.protocol.ModelPin`
        states: its ``tries``, ``backoff_s`` (as explicit waits) and ``empty_is_failure``."""
        values: dict[str, Any] = {
            "tries": int(pin.tries),
            "explicit_waits_s": tuple(float(w) for w in pin.backoff_s),
            "empty_is_failure": bool(pin.empty_is_failure),
        }
        values.update(overrides)
        return cls(**values)

    def wait_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """The wait after failed try number ``attempt`` (1-based), before the next one."""
        if self.explicit_waits_s:
            wait = self.explicit_waits_s[min(attempt, len(self.explicit_waits_s)) - 1]
        else:
            ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
            wait = self.rng.uniform(0.0, ceiling)
        if retry_after_s is not None:
            wait = max(wait, min(max(retry_after_s, 0.0), self.retry_after_max_s))
        return wait


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one try came to, as a classifier sees it. ``ok``: done, keep the value;
    otherwise ``retryable`` says whether another try may help; ``error`` says what failed."""

    ok: bool
    retryable: bool = False
    status: int | None = None
    error: str | None = None
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class RetryResult(Generic[T]):
    """After every try: the successful value (None on failure), the last error, every try."""

    value: T | None
    error: str | None
    attempts: tuple[Attempt, ...]

    @property
    def ok(self) -> bool:
        return self.error is None


def run_with_retries(
    fn: Callable[[int], T],
    policy: RetryPolicy,
    classify: Callable[[T | BaseException], Outcome],
) -> RetryResult[T]:
    """Call ``fn(attempt)`` (attempt 1, 2, ...) until ``classify`` calls an outcome ``ok``, a
    failure final, or ``policy.tries`` are spent, waiting between tries as the policy says.

    An exception raised by ``fn`` is handed to ``classify`` like a value (``Exception``
    only: ``KeyboardInterrupt`` and ``SystemExit`` propagate). Never raises for a failed call:
    the result carries the last error and every :class:`Attempt`.
    """
    attempts: list[Attempt] = []
    for attempt in range(1, policy.tries + 1):
        started = time.perf_counter()
        result: T | BaseException
        try:
            result = fn(attempt)
        except Exception as exc:
            result = exc
        latency_ms = (time.perf_counter() - started) * 1000.0
        outcome = classify(result)
        last = attempt == policy.tries
        if outcome.ok or not outcome.retryable or last:
            attempts.append(Attempt(attempt, outcome.status, outcome.error, 0.0, latency_ms))
            if outcome.ok:
                return RetryResult(result, None, tuple(attempts))  # type: ignore[arg-type]
            return RetryResult(None, outcome.error or "failed", tuple(attempts))
        wait = policy.wait_s(attempt, outcome.retry_after_s)
        attempts.append(Attempt(attempt, outcome.status, outcome.error, wait, latency_ms))
        if wait > 0:
            policy.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True, slots=True)
class HttpReply:
    """An HTTP response of any status: status code, headers (lower-case names), raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.lower() in _LOOPBACK or name.startswith("127.")


def http_request(
    url: str,
    body: bytes | None,
    headers: Mapping[str, str],
    timeout_s: float,
    method: str = "POST",
) -> HttpReply:
    """Send one request with the standard library and return the reply whatever its status
    (an HTTP error status is a reply, not an exception). Transport failures (refused, reset,
    dropped connection, timeout) raise as ``urllib`` and ``socket`` raise them. The
    environment's proxy settings apply, except to loopback hosts, which are always called
    directly."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method=method)
    # build_opener() reads the proxy variables now (urlopen's opener keeps the first ones seen)
    opener = _DIRECT if _is_loopback(request.host) else urllib.request.build_opener()
    try:
        with opener.open(request, timeout=timeout_s) as response:
            return HttpReply(
                int(response.status),
                {k.lower(): v for k, v in response.headers.items()},
                response.read(),
            )
    except urllib.error.HTTPError as exc:
        with exc:
            data = exc.read() if exc.fp is not None else b""
            return HttpReply(int(exc.code), {k.lower(): v for k, v in exc.headers.items()}, data)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds, or an HTTP date
    (the time until then, at least 0). None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max((when - current).total_seconds(), 0.0)


TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    urllib.error.URLError,
    ConnectionError,
    http.client.HTTPException,
    TimeoutError,
    socket.timeout,
)
"""Exceptions that mean the request or its reply was lost on the way: always retried."""


def describe_error(exc: BaseException) -> str:
    """A one-line description of a transport failure (type and message, no traceback)."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
        inner = reason if isinstance(reason, BaseException) else None
        if inner is not None:
            return f"{type(inner).__name__}: {inner}"
        return f"URLError: {reason}"
    return f"{type(exc).__name__}: {exc}"


def classify_http(
    result: HttpReply | BaseException, policy: RetryPolicy, snippet_chars: int = 300
) -> Outcome:
    """The standard reading of an HTTP try: a transport failure or a status in
    ``policy.retry_statuses`` is retryable (with the reply's ``Retry-After``); any other
    status of 400 or more is final; 2xx/3xx is ok. Other exceptions are final (a bug in the
    caller's code is not retried). The error text holds at most ``snippet_chars`` of the
    reply body."""
    if isinstance(result, BaseException):
        retryable = isinstance(result, TRANSPORT_ERRORS)
        return Outcome(False, retryable, None, describe_error(result))
    if result.status >= 400:
        text = result.body[:snippet_chars].decode("utf-8", "replace").strip()
        error = f"HTTP {result.status}" + (f": {text}" if text else "")
        return Outcome(
            False,
            result.status in policy.retry_statuses,
            result.status,
            error,
            parse_retry_after(result.headers.get("retry-after")),
        )
    return Outcome(True, status=result.status)
