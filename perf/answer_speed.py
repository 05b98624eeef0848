"""Chat-client throughput against the mock endpoint: calls per second against the ideal.

Starts :class:`recallbench.testing.mock_llm.MockLLMServer` on loopback with ``--delay``
seconds of latency per call (default 0.2), then for each concurrency (default 1, 8, 32) makes
``--calls-per-slot`` x concurrency distinct reader calls through one
:class:`recallbench.llm.client.ChatClient` (``max_concurrency`` = the concurrency, a thread pool
of that size, the response cache on in a temporary folder, as a run uses it) and reports calls
per second and its ratio to the ideal, ``concurrency / delay``. Then it repeats the largest
pass with every reply already in the cache (the mock server must see no call) and reports that
pass's wall time. Target: at least 80% of ideal at 32.

Reproduce (from the repository root)::

    PYTHONPATH=src python perf/answer_speed.py

Options: ``--delay S``, ``--concurrency 1,8,32``, ``--calls-per-slot N`` (default 8). Figures
are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recallbench.llm.cache import ResponseCache
from recallbench.llm.client import ChatClient
from recallbench.llm.retry import RetryPolicy
from recallbench.llm.types import ChatRequest, Completion, Endpoint
from recallbench.testing.mock_llm import READER, MockLLMServer

MEMORIES = "\n".join(f"- memory line {i}: the plot is a quarter acre" for i in range(10))


def request(tag: str, i: int) -> ChatRequest:
    prompt = f"Memories:\n{MEMORIES}\n\nQuestion: call {tag}-{i}?\nAnswer in one sentence."
    return ChatRequest.user(prompt, "reader", temperature=0, max_tokens=200)


def timed_pass(
    client: ChatClient, requests: list[ChatRequest], workers: int
) -> tuple[float, list[Completion]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(client.complete, requests))
    return time.perf_counter() - started, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--calls-per-slot", type=int, default=8)
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    folder = Path(tempfile.mkdtemp(prefix="rb-answer-speed-"))
    rows: list[tuple[int, int, float, float, float, float]] = []
    try:
        cache = ResponseCache.for_cache_dir(folder)
        with MockLLMServer(delay_s=args.delay) as server:
            last: tuple[ChatClient, list[ChatRequest], int] | None = None
            for c in levels:
                endpoint = Endpoint(server.base_url, READER, max_concurrency=c, timeout_s=30)
                client = ChatClient(endpoint, cache, RetryPolicy(tries=1))
                requests = [request(f"c{c}", i) for i in range(c * args.calls_per_slot)]
                wall, done = timed_pass(client, requests, c)
                failed = sum(not d.ok for d in done)
                if failed:
                    print(f"concurrency {c}: {failed} calls failed", file=sys.stderr)
                rate = len(requests) / wall
                ideal = c / args.delay
                rows.append((c, len(requests), wall, rate, ideal, rate / ideal))
                last = (client, requests, c)
            assert last is not None
            client, requests, c = last
            before = server.calls
            cached_wall, cached = timed_pass(client, requests, c)
            hits = sum(d.cached for d in cached)
            assert server.calls == before, "a cached pass must not call the endpoint"
        cache.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(f"chat client against the mock endpoint, {args.delay * 1000:.0f} ms per call")
    print()
    print("| concurrency | calls | wall s | calls/s | ideal calls/s | of ideal |")
    print("|---:|---:|---:|---:|---:|---:|")
    for c, n, wall, rate, ideal, ratio in rows:
        print(f"| {c} | {n} | {wall:.2f} | {rate:.1f} | {ideal:.1f} | {ratio:.0%} |")
    print()
    print(
        f"cache pass: {len(requests)} calls, {hits} served from the cache, "
        f"{cached_wall:.3f} s ({len(requests) / cached_wall:.0f} calls/s), 0 calls to the endpoint"
    )
    print()
    print(
        "reproduce: PYTHONPATH=src python perf/answer_speed.py "
        f"--delay {args.delay:g} --concurrency {args.concurrency} "
        f"--calls-per-slot {args.calls_per_slot}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
