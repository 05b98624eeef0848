"""The reference server itself: its failure schedule, delay, processing header, counters."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from recallbench.systems.http.reference import FailureSchedule, ReferenceServer

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _post(server: ReferenceServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        server.base_url + path, data=json.dumps(body).encode(), method="POST"
    )
    try:
        with _OPENER.open(request, timeout=10) as reply:
            return reply.status, dict(reply.headers)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers)


def test_the_same_request_never_fails_more_than_max_in_row() -> None:
    schedule = FailureSchedule(rate=0.9, seed=3, max_in_row=2, retry_after_s=0.25)
    with ReferenceServer(failures=schedule) as server:
        body = {"namespace": "n", "query": "cat", "k": 1}
        statuses = [_post(server, "/v1/search", body) for _ in range(30)]
    codes = [s for s, _ in statuses]
    run = longest = 0
    for code in codes:
        run = run + 1 if code != 200 else 0
        longest = max(longest, run)
    assert longest <= 2 and 200 in codes and {429, 503} <= set(codes)
    assert all(h["Retry-After"] == "0.25" for s, h in statuses if s == 429)
    counters = server.counters
    assert counters["requests"] == counters["search"] == 30
    assert (
        counters["failed"]
        == counters["failed_429"] + counters["failed_503"]
        == codes.count(429) + codes.count(503)
    )


def test_a_schedule_is_seeded() -> None:
    def codes(seed: int) -> list[int]:
        with ReferenceServer(failures=FailureSchedule(rate=0.5, seed=seed)) as server:
            return [
                _post(server, "/v1/search", {"namespace": "n", "query": str(i)})[0]
                for i in range(20)
            ]

    assert codes(1) == codes(1) != codes(2)


def test_the_delay_is_inside_the_reported_processing_time() -> None:
    with ReferenceServer(delay_ms=30) as server:
        status, headers = _post(server, "/v1/reset", {"namespace": "n"})
    assert status == 200 and float(headers["X-Processing-Ms"]) >= 30.0


def test_bad_requests_and_unknown_endpoints(reference: ReferenceServer) -> None:
    assert _post(reference, "/v1/memories", {"namespace": "n"})[0] == 400
    assert _post(reference, "/v2/nothing", {})[0] == 404
    with pytest.raises(ValueError, match="kinds must be among 429, 503, reset"):
        FailureSchedule(kinds=("500",))
