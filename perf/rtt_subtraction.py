"""Speed with the round trip removed, checked on the delay-proxy rig.

The reference server (``recallbench serve-memory``'s, 20 ms of processing per request) sits
behind :class:`recallbench.testing.delay_proxy.DelayProxy` with a 50 ms one-way delay, so one
application-level round trip costs about 100 ms and a search about 120 ms. The floor is taken
through the same path, as a user would take it: ``recallbench network --method http`` against
the proxy (:func:`recallbench.systems.http.network.measure`, a warmed no-op ``GET /v1/ping`` on
a kept-alive connection). Then the ``http`` system runs the sample (50 questions, one search at
a time) with that network file (``run --network``), and the script prints the median latency,
the round trip subtracted, the median latency with one round trip removed
(``latency_minus_rtt_ms``) and the median of the server's own ``X-Processing-Ms`` of the timed
searches (the warm-up searches left out), and the difference of the last two. Target: within
2 ms, while the raw median is about 120 ms.

Reproduce (from the repository root)::

    PYTHONPATH=src python perf/rtt_subtraction.py [--delay-ms 50] [--processing-ms 20]

Figures are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import tomllib
from pathlib import Path

from recallbench.pipeline import start_run
from recallbench.spec import RunSpec
from recallbench.systems.http.network import measure
from recallbench.systems.http.reference import ReferenceServer
from recallbench.testing.delay_proxy import DelayProxy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=50.0, help="one-way delay")
    parser.add_argument("--processing-ms", type=float, default=20.0, help="server delay")
    parser.add_argument("--samples", type=int, default=30, help="network samples")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ReferenceServer(delay_ms=args.processing_ms) as server,
    ):
        port = int(server.base_url.rsplit(":", 1)[1])
        with DelayProxy(("127.0.0.1", port), args.delay_ms) as proxy:
            network = measure(proxy.address, samples=args.samples)
            section = tomllib.loads(server.config_text())["http"]
            section["base_url"] = f"http://{proxy.address}"
            spec = RunSpec(
                systems=("http",), datasets=("sample",), system_configs={"http": section}
            )
            scored = start_run(
                spec, Path(tmp), Path(tmp) / "out", extra_manifest={"network": [network]}
            )
            warmups = int(section.get("warmup_searches", 3))
            processing = server.processing_ms[warmups:]
        lines = (scored.run_dir / "observations.jsonl").read_text().splitlines()
        obs = [json.loads(x) for x in lines]
    usable = [o for o in obs if o["outcome"] == "usable"]
    raw = statistics.median(o["latency_ms"] for o in usable)
    rest = statistics.median(o["latency_minus_rtt_ms"] for o in usable)
    server_ms = statistics.median(processing)
    print(f"one-way delay {args.delay_ms:g} ms, server processing {args.processing_ms:g} ms")
    print(f"round trip subtracted (network median, {network['n']} samples): "
          f"{network['median_ms']:.3f} ms")  # fmt: skip
    print(f"searches timed: {len(usable)} of {len(obs)}")
    print(f"median latency: {raw:.3f} ms")
    print(f"median latency with one round trip removed: {rest:.3f} ms")
    print(f"median server X-Processing-Ms: {server_ms:.3f} ms")
    print(f"difference: {rest - server_ms:+.3f} ms (target: within 2 ms)")


if __name__ == "__main__":
    main()
