"""Calling a system with a per-call timeout on daemon worker threads.

A call that overruns its timeout is abandoned (in-process code cannot be killed): its worker is
replaced so capacity stays at ``workers``, and being a daemon it cannot keep the process alive.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    fn: Callable[[], Any]
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    t0: float = 0.0
    t1: float = 0.0
    result: Any = None
    error: BaseException | None = None

    @property
    def elapsed_ms(self) -> float:
        return (self.t1 - self.t0) * 1000.0


@dataclass(frozen=True, slots=True)
class CallOutcome:
    ok: bool
    result: Any
    elapsed_ms: float | None
    reason: str | None


class CallPool:
    def __init__(self, workers: int = 1) -> None:
        self._queue: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self._workers = max(1, workers)
        for _ in range(self._workers):
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._loop, daemon=True, name="recallbench-call").start()

    def _loop(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:
                return
            call.t0 = time.perf_counter()
            call.started.set()
            try:
                call.result = call.fn()
            except BaseException as exc:  # noqa: BLE001 - any failure becomes an observation
                call.error = exc
            call.t1 = time.perf_counter()
            call.done.set()

    def submit(self, fn: Callable[[], Any]) -> Call:
        call = Call(fn)
        self._queue.put(call)
        return call

    def wait(self, call: Call, timeout_s: float) -> CallOutcome:
        """Wait for a submitted call; the timeout counts from when the call started running."""
        call.started.wait()
        remaining = timeout_s - (time.perf_counter() - call.t0)
        if not call.done.wait(max(0.0, remaining)):
            self._spawn()  # the stuck worker is abandoned; keep capacity
            return CallOutcome(False, None, None, f"timeout after {timeout_s:g} s")
        if call.error is not None:
            err = call.error
            return CallOutcome(False, None, None, f"{type(err).__name__}: {err}")
        return CallOutcome(True, call.result, call.elapsed_ms, None)

    def run(self, fn: Callable[[], Any], timeout_s: float) -> CallOutcome:
        return self.wait(self.submit(fn), timeout_s)

    def close(self) -> None:
        for _ in range(self._workers):
            self._queue.put(None)
