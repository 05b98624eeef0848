"""The shared retry policy: waits (full jitter, explicit, Retry-After), limits, attempts."""

from __future__ import annotations

import random
import urllib.error
from datetime import UTC, datetime

import pytest

from recallbench.instruments.protocol import ModelPin
from recallbench.llm.retry import (
    HttpReply,
    Outcome,
    RetryPolicy,
    classify_http,
    parse_retry_after,
    run_with_retries,
)


def recorder() -> tuple[list[float], RetryPolicy]:
    waits: list[float] = []
    return waits, RetryPolicy(tries=4, rng=random.Random(7), sleep=waits.append)


def test_full_jitter_stays_within_its_bounds_and_is_seeded():
    policy = RetryPolicy(backoff_base_s=0.5, backoff_max_s=3.0, rng=random.Random(1))
    for attempt in range(1, 8):
        ceiling = min(3.0, 0.5 * 2 ** (attempt - 1))
        draws = [policy.wait_s(attempt) for _ in range(200)]
        assert all(0.0 <= w <= ceiling for w in draws)
        assert max(draws) > ceiling * 0.8  # full jitter: the whole range, not a fixed wait
    a = RetryPolicy(rng=random.Random(3))
    b = RetryPolicy(rng=random.Random(3))
    assert [a.wait_s(i) for i in range(1, 6)] == [b.wait_s(i) for i in range(1, 6)]


def test_retry_after_is_honoured_and_capped():
    policy = RetryPolicy(backoff_base_s=0.01, retry_after_max_s=10.0, rng=random.Random(0))
    assert policy.wait_s(1, retry_after_s=2.5) == 2.5
    assert policy.wait_s(1, retry_after_s=500.0) == 10.0
    explicit = RetryPolicy(explicit_waits_s=(4.0,))
    assert explicit.wait_s(1, retry_after_s=1.0) == 4.0  # the longer of the two


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_explicit_waits_from_a_benchmark_pin():
    pin = ModelPin("m", tries=3, backoff_s=(2.0, 4.0, 6.0), empty_is_failure=True)
    policy = RetryPolicy.from_pin(pin)
    assert (policy.tries, policy.empty_is_failure) == (3, True)
    assert [policy.wait_s(i) for i in (1, 2, 3, 4)] == [2.0, 4.0, 6.0, 6.0]


def test_every_attempt_is_recorded_and_success_stops():
    waits, policy = recorder()
    replies = iter(
        [
            HttpReply(429, {"retry-after": "0.25"}, b"slow down"),
            ConnectionResetError("peer reset"),
            HttpReply(200, {}, b"{}"),
        ]
    )

    def fn(attempt: int) -> HttpReply:
        reply = next(replies)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    result = run_with_retries(fn, policy, lambda r: classify_http(r, policy))
    assert result.ok and result.value is not None and result.value.status == 200
    assert [a.attempt for a in result.attempts] == [1, 2, 3]
    assert [a.status for a in result.attempts] == [429, None, 200]
    assert result.attempts[0].error == "HTTP 429: slow down"
    assert result.attempts[1].error == "ConnectionResetError: peer reset"
    assert result.attempts[0].wait_s >= 0.25  # Retry-After honoured
    assert result.attempts[-1].wait_s == 0.0
    assert waits == [a.wait_s for a in result.attempts[:2]]


def test_the_policy_limits_the_tries_and_a_final_error_is_not_retried():
    waits, policy = recorder()
    calls: list[int] = []

    def down(attempt: int) -> HttpReply:
        calls.append(attempt)
        raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))

    result = run_with_retries(down, policy, lambda r: classify_http(r, policy))
    assert not result.ok and result.value is None
    assert calls == [1, 2, 3, 4] and len(waits) == 3
    assert result.error == "ConnectionRefusedError: [Errno 111] Connection refused"

    calls.clear()
    result = run_with_retries(
        lambda n: calls.append(n) or HttpReply(401, {}, b"bad key"),  # type: ignore[func-returns-value]
        policy,
        lambda r: classify_http(r, policy),
    )
    assert calls == [1] and result.error == "HTTP 401: bad key"
    assert result.attempts[0].status == 401


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_retried_statuses(status: int):
    assert classify_http(HttpReply(status, {}, b""), RetryPolicy()).retryable


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_final_statuses(status: int):
    outcome = classify_http(HttpReply(status, {}, b""), RetryPolicy())
    assert not outcome.ok and not outcome.retryable


def test_timeouts_retry_and_bugs_do_not():
    policy = RetryPolicy()
    assert classify_http(TimeoutError("timed out"), policy).retryable
    assert not classify_http(KeyError("oops"), policy).retryable


def test_a_custom_classifier_serves_any_call():
    policy = RetryPolicy(tries=5, explicit_waits_s=(0.0,))
    seen: list[int] = []

    def fn(attempt: int) -> int:
        seen.append(attempt)
        return attempt

    def classify(v: object) -> Outcome:
        return Outcome(True) if v == 3 else Outcome(False, retryable=True, error="no")

    result = run_with_retries(fn, policy, classify)
    assert result.value == 3 and seen == [1, 2, 3]
    assert [a.error for a in result.attempts] == ["no", "no", None]


def test_tries_must_be_positive():
    with pytest.raises(ValueError):
        RetryPolicy(tries=0)
