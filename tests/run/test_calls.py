from __future__ import annotations

import threading
import time

from recallbench.run.calls import CallPool, Gate


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


class _Watch:
    """Counts the calls running at once and notes every alone call that saw another."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.alone_seen_company = 0
        self.alone_running = False

    def call(self, alone: bool, seconds: float) -> None:
        with self.lock:
            self.running += 1
            if alone and self.running > 1:
                self.alone_seen_company += 1
            if not alone and self.alone_running:
                self.alone_seen_company += 1
            self.alone_running = self.alone_running or alone
        time.sleep(seconds)
        with self.lock:
            self.running -= 1
            if alone:
                self.alone_running = False


def test_an_alone_call_runs_with_no_other_call_of_any_pool_sharing_the_gate() -> None:
    gate = Gate()
    watch = _Watch()
    pools = [CallPool(3, gate=gate) for _ in range(3)]
    calls = []
    for i in range(60):
        pool, alone = pools[i % 3], i % 10 == 5
        mode = Gate.ALONE if alone else Gate.SHARED
        calls.append((pool, pool.submit(lambda a=alone: watch.call(a, 0.003), gate_mode=mode)))
    assert all(pool.wait(call, 10).ok for pool, call in calls)
    assert gate.alone_calls == 6
    assert watch.alone_seen_company == 0


def test_early_calls_enter_while_an_alone_call_waits() -> None:
    """A lane's warm-up calls (early) wait at a barrier inside their calls: they must all get in
    though another lane's alone call is waiting for the running calls to end."""
    gate = Gate()
    pool = CallPool(2, gate=gate)
    other = CallPool(1, gate=gate)
    barrier = threading.Barrier(2)
    first = pool.submit(lambda: barrier.wait(5), gate_mode=Gate.EARLY)
    first.started.wait(5)
    alone = other.submit(lambda: "alone", gate_mode=Gate.ALONE)
    time.sleep(0.05)  # the alone call is now waiting at the gate
    second = pool.submit(lambda: barrier.wait(5), gate_mode=Gate.EARLY)
    assert pool.wait(first, 10).ok and pool.wait(second, 10).ok  # no broken barrier
    assert other.wait(alone, 10).result == "alone"


def test_an_abandoned_call_gives_its_place_at_the_gate_back() -> None:
    gate = Gate()
    pool = CallPool(1, gate=gate)
    release = threading.Event()
    out = pool.run(lambda: release.wait(10), timeout_s=0.05)
    assert out.timed_out
    assert pool.run(lambda: "after", timeout_s=5).result == "after"
    # an alone call would wait for the abandoned one forever if it still held its place
    lone = CallPool(1, gate=gate)
    assert lone.wait(lone.submit(lambda: "alone", gate_mode=Gate.ALONE), 5).result == "alone"
    release.set()
