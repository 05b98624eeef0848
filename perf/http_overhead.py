"""The harness's own timing overhead around a no-op HTTP handler on loopback.

A no-op server (in this script: every ``POST /v1/search`` answers one fixed memory at once,
every other request ``{}``; HTTP/1.1 keep-alive, no Nagle delay) reports its handler's own
time in ``X-Processing-Ms``. The ``http`` system runs the sample (50 questions, one search at
a time, warmed) against it through the whole runner; per timed search, the overhead is the
runner's ``latency_ms`` minus the handler's self-reported time for that request (paired in
order: one worker, the warm-up searches first and left out). Printed: p50, p90 and max of the
overhead, and the handler's p50. This is what recallbench adds to any hosted system's
latency on this machine: the client's HTTP stack, JSON, the loopback hop, the call pool and
validation of the result.

Reproduce (from the repository root)::

    PYTHONPATH=src python perf/http_overhead.py [--repeat 3]

Figures are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from recallbench.pipeline import start_run
from recallbench.spec import RunSpec
from recallbench.systems.http.reference import ReferenceServer

SEARCH_REPLY = json.dumps(
    {"results": [{"id": "m-1", "memory": "no-op", "turn_ids": [], "score": 1.0}]}
).encode()


class _NoOp(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    times: list[float] = []
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_POST(self) -> None:  # noqa: N802
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        search = self.path.startswith("/v1/search")
        data = SEARCH_REPLY if search else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        handler_ms = (time.perf_counter() - started) * 1000.0
        self.send_header("X-Processing-Ms", f"{handler_ms:.4f}")
        self.end_headers()
        self.wfile.write(data)
        if search:
            with self.lock:
                self.times.append(handler_ms)

    do_GET = do_POST


def _once(tmp: Path, config_text: str) -> tuple[list[float], list[float]]:
    _NoOp.times = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoOp)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        section = tomllib.loads(config_text)["http"]
        section["base_url"] = f"http://127.0.0.1:{server.server_address[1]}"
        spec = RunSpec(systems=("http",), datasets=("sample",), system_configs={"http": section})
        scored = start_run(spec, tmp, tmp / "out")
    finally:
        server.shutdown()
        server.server_close()
    warmups = int(section.get("warmup_searches", 3))
    handler = _NoOp.times[warmups:]
    lines = (scored.run_dir / "observations.jsonl").read_text().splitlines()
    latency = [json.loads(x)["latency_ms"] for x in lines]
    return latency, handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs (each 50 searches)")
    args = parser.parse_args()
    config_text = ReferenceServer().config_text()
    overhead: list[float] = []
    handler_all: list[float] = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            latency, handler = _once(Path(tmp), config_text)
        assert len(latency) == len(handler), (len(latency), len(handler))
        overhead += [lat - h for lat, h in zip(latency, handler, strict=True)]
        handler_all += handler
        print(f"run {i + 1}: overhead p50 {statistics.median(overhead[-len(latency) :]):.3f} ms")
    values = np.asarray(overhead)
    print(f"searches: {len(overhead)} over {args.repeat} runs")
    print(f"handler's own time p50: {statistics.median(handler_all):.4f} ms")
    print(
        f"harness overhead (latency_ms - handler time): p50 {np.percentile(values, 50):.3f} ms, "
        f"p90 {np.percentile(values, 90):.3f} ms, max {values.max():.3f} ms"
    )


if __name__ == "__main__":
    main()
