"""Calling a system with a per-call timeout on daemon worker threads.

A call that overruns its timeout is abandoned (in-process code cannot be killed): its worker is
replaced so capacity stays at ``workers``, and being a daemon it cannot keep the process alive;
when the abandoned call finally returns, that worker exits instead of taking more calls. A call
still waiting in the queue can be cancelled (:meth:`CallPool.cancel`): it then never starts, so
nothing runs inside a system the runner has given up on.

``post`` (optional, per call) runs in the worker the moment the call returns, on its result
(validation and copying: a system that reuses one result list cannot change it afterwards); an
exception from ``post`` is kept apart from the call's own (``CallOutcome.invalid``). The call's
time (``elapsed_ms``) does not include ``post``.

A :class:`Limiter` (optional, shared by every pool serving one system) holds a worker back
before its call starts: at most ``max_concurrency`` calls of that system run at once, and calls
start at most ``requests_per_second`` a second, evenly spaced (a token bucket holding one
token). Waiting for it is not part of ``elapsed_ms`` nor of the timeout, which count from the
call's start. An abandoned call gives its slot back at once (its system is given up on).

A :class:`Gate` (optional, shared like the limiter) lets a call run *alone*: a call submitted
``alone`` starts only when no other call of that system is running, and none starts while it
runs (``run --speed-sample``: searches timed one at a time). Ordinary calls wait while an alone
call waits or runs, except ``early`` ones (warm-ups, which a lane's barrier holds together),
which may still enter while it waits. Waiting at the gate, like at the limiter, is not part of
``elapsed_ms`` nor of the timeout.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Limiter:
    """A system's limits, shared by all its instances: ``max_concurrency`` calls in flight,
    ``requests_per_second`` call starts a second (None: no limit)."""

    def __init__(
        self, max_concurrency: int | None = None, requests_per_second: float | None = None
    ) -> None:
        self.max_concurrency = max_concurrency
        self.requests_per_second = requests_per_second
        self._slots = threading.Semaphore(max_concurrency) if max_concurrency else None
        self._interval = 1.0 / requests_per_second if requests_per_second else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        """The most calls that ran at once (for tests and timing scripts)."""

    def acquire(self) -> None:
        """Block until a call may start (a free slot, then the next start time)."""
        if self._slots is not None:
            self._slots.acquire()
        if self._interval:
            with self._lock:
                now = time.monotonic()
                start = max(now, self._next)
                self._next = start + self._interval
            if start > now:
                time.sleep(start - now)
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def release(self) -> None:
        with self._lock:
            self.in_flight -= 1
        if self._slots is not None:
            self._slots.release()


class Gate:
    """Calls of one system run either together (``shared``) or one ``alone`` call with nothing
    else: a readers-writer lock that prefers the alone calls, except for ``early`` shared calls."""

    SHARED = "shared"
    EARLY = "early"
    ALONE = "alone"

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._alone_running = False
        self._alone_waiting = 0
        self.alone_calls = 0
        """How many alone calls have run (for tests and timing scripts)."""

    def enter(self, mode: str) -> None:
        with self._cond:
            if mode == self.ALONE:
                self._alone_waiting += 1
                try:
                    self._cond.wait_for(lambda: not self._alone_running and self._running == 0)
                finally:
                    self._alone_waiting -= 1
                self._alone_running = True
                self.alone_calls += 1
            else:
                early = mode == self.EARLY
                self._cond.wait_for(
                    lambda: not self._alone_running and (early or not self._alone_waiting)
                )
                self._running += 1

    def leave(self, mode: str) -> None:
        with self._cond:
            if mode == self.ALONE:
                self._alone_running = False
            else:
                self._running -= 1
            self._cond.notify_all()


@dataclass
class Call:
    fn: Callable[[], Any]
    post: Callable[[Any], Any] | None = None
    gate_mode: str = Gate.SHARED
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    cancelled: bool = False
    abandoned: bool = False
    holds_slot: bool = False
    holds_gate: bool = False
    t0: float = 0.0
    t1: float = 0.0
    result: Any = None
    error: BaseException | None = None
    invalid: BaseException | None = None

    @property
    def elapsed_ms(self) -> float:
        return (self.t1 - self.t0) * 1000.0


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """``ok``: the call returned and ``post`` accepted its result. ``timed_out``: abandoned
    after its timeout. ``invalid``: the exception ``post`` raised (the call itself returned)."""

    ok: bool
    result: Any
    elapsed_ms: float | None
    reason: str | None
    timed_out: bool = False
    invalid: BaseException | None = None


class CallPool:
    def __init__(
        self, workers: int = 1, limiter: Limiter | None = None, gate: Gate | None = None
    ) -> None:
        self._queue: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self._workers = max(1, workers)
        self._limiter = limiter
        self._gate = gate
        for _ in range(self._workers):
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._loop, daemon=True, name="recallbench-call").start()

    def _loop(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:
                return
            with call.lock:
                if call.cancelled:
                    continue
            if self._gate is not None:
                self._gate.enter(call.gate_mode)
            if self._limiter is not None:
                self._limiter.acquire()
            with call.lock:
                if call.cancelled:
                    if self._limiter is not None:
                        self._limiter.release()
                    if self._gate is not None:
                        self._gate.leave(call.gate_mode)
                    continue
                call.holds_slot = self._limiter is not None
                call.holds_gate = self._gate is not None
                call.t0 = time.perf_counter()
                call.started.set()
            try:
                call.result = call.fn()
            except BaseException as exc:  # noqa: BLE001 - any failure becomes an observation
                call.error = exc
            call.t1 = time.perf_counter()
            self._release(call)
            if call.error is None and call.post is not None:
                try:
                    call.result = call.post(call.result)
                except BaseException as exc:  # noqa: BLE001 - an invalid result is recorded
                    call.invalid = exc
            with call.lock:
                call.done.set()
                if call.abandoned:  # a replacement worker took this one's place
                    return

    def _release(self, call: Call) -> None:
        """Give the call's limiter slot and gate place back, once (on return, or when it is
        abandoned)."""
        with call.lock:
            holds, call.holds_slot = call.holds_slot, False
            gated, call.holds_gate = call.holds_gate, False
        if holds and self._limiter is not None:
            self._limiter.release()
        if gated and self._gate is not None:
            self._gate.leave(call.gate_mode)

    def submit(
        self,
        fn: Callable[[], Any],
        post: Callable[[Any], Any] | None = None,
        gate_mode: str = Gate.SHARED,
    ) -> Call:
        """Queue ``fn``; ``gate_mode`` (:class:`Gate`, when the pool has one): ``alone`` runs it
        with no other call of the system running, ``early`` lets it in while one waits."""
        call = Call(fn, post, gate_mode)
        self._queue.put(call)
        return call

    def cancel(self, call: Call) -> bool:
        """Make sure ``call`` never starts; False if it already started (it may still run)."""
        with call.lock:
            if call.started.is_set():
                return False
            call.cancelled = True
            return True

    def abandon(self, call: Call) -> None:
        """Give up on ``call``: cancel it if queued; if it is running, replace its worker."""
        if self.cancel(call):
            return
        with call.lock:
            if call.done.is_set() or call.abandoned:
                return
            call.abandoned = True
        self._release(call)
        self._spawn()

    def wait(self, call: Call, timeout_s: float, abandon: bool = True) -> CallOutcome:
        """Wait for a submitted call; the timeout counts from when the call started running.

        A call that overruns is abandoned (its worker replaced) unless ``abandon`` is False:
        then the caller must call :meth:`abandon` itself, after cancelling whatever queued
        calls the replacement worker must not pick up."""
        call.started.wait()
        remaining = timeout_s - (time.perf_counter() - call.t0)
        if not call.done.wait(max(0.0, remaining)):
            if abandon:
                self.abandon(call)  # the stuck worker is abandoned; keep capacity
            if not abandon or not call.done.is_set() or call.abandoned:
                return CallOutcome(False, None, None, f"timeout after {timeout_s:g} s", True)
        if call.error is not None:
            err = call.error
            return CallOutcome(False, None, None, f"{type(err).__name__}: {err}")
        if call.invalid is not None:
            bad = call.invalid
            return CallOutcome(False, None, call.elapsed_ms, f"invalid result: {bad}", False, bad)
        return CallOutcome(True, call.result, call.elapsed_ms, None)

    def run(
        self, fn: Callable[[], Any], timeout_s: float, post: Callable[[Any], Any] | None = None
    ) -> CallOutcome:
        return self.wait(self.submit(fn, post), timeout_s)

    def close(self) -> None:
        for _ in range(self._workers):
            self._queue.put(None)
