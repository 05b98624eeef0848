from __future__ import annotations

import threading
import time

from recallbench.run.calls import CallPool


def test_result_and_elapsed_time() -> None:
    pool = CallPool(1)
    out = pool.run(lambda: 42, timeout_s=5)
    assert out.ok and out.result == 42 and out.reason is None
    assert out.elapsed_ms is not None and out.elapsed_ms >= 0


def test_exception_becomes_a_reason() -> None:
    def boom() -> None:
        raise KeyError("gone")

    out = CallPool(1).run(boom, timeout_s=5)
    assert not out.ok and out.elapsed_ms is None
    assert out.reason == "KeyError: 'gone'"


def test_timeout_abandons_the_call_and_keeps_capacity() -> None:
    pool = CallPool(1)
    release = threading.Event()
    out = pool.run(lambda: release.wait(10), timeout_s=0.05)
    assert not out.ok and out.reason == "timeout after 0.05 s"
    # the stuck worker was replaced: the next call still runs
    assert pool.run(lambda: "next", timeout_s=5).result == "next"
    release.set()


def test_timeout_counts_from_when_a_call_starts() -> None:
    pool = CallPool(1)
    first = pool.submit(lambda: time.sleep(0.2))
    second = pool.submit(lambda: "queued")
    assert pool.wait(first, timeout_s=5).ok
    # the second call waited 0.2 s in the queue but ran instantly: no timeout
    assert pool.wait(second, timeout_s=0.1).result == "queued"
