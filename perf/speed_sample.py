"""Speed from a parallel run: ``--speed-sample`` against one search at a time.

The ``http`` system runs a LongMemEval-shaped file (:func:`recallbench.testing.longmemeval_shaped`,
``--haystacks`` groups, one question each) against the reference server
(``recallbench serve-memory``'s, ``--processing-ms`` of fixed processing per request), twice in
one sitting:

- **serial**: ``--group-concurrency 1 --concurrency 1``, every search alone;
- **parallel**: ``--group-concurrency 8 --concurrency 4 --speed-sample N``.

It prints each run's wall time (runner time, from its first progress task to its last
question), the median search latency of the serial run, of the parallel run's sampled searches
(``speed_sample: true``, each run alone) and of its other searches, the share of the other
searches flagged ``queued: overlapped`` (N8), and both runs' speed rows. The sampled median is
the one meant to agree with the serial run; the results of the two runs are checked equal.

Reproduce (from the repository root)::

    PYTHONPATH=src python perf/speed_sample.py [--haystacks 50] [--sample 20] [--processing-ms 20]

Figures are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from recallbench import testing
from recallbench.pipeline import start_run
from recallbench.run.runner import Progress
from recallbench.spec import RunSpec, SpeedSpec
from recallbench.systems.http.reference import ReferenceServer


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _run(
    tmp: Path, name: str, spec: RunSpec, lanes: int
) -> tuple[float, list[dict[str, Any]], dict[str, Any], Path]:
    marks: list[float] = []
    progress = Progress(lambda _d, _t: marks.append(time.perf_counter()),
                        lambda _n: marks.append(time.perf_counter()))  # fmt: skip
    run = start_run(spec, tmp / "data", tmp / name, progress, group_concurrency=lanes)
    obs = _lines(run.run_dir / "observations.jsonl")
    speed = next(r for r in _lines(run.run_dir / "metrics.jsonl") if r["metric"] == "speed_points")
    return marks[-1] - marks[0], obs, speed, run.run_dir


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ms (n={len(values)})" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--haystacks", type=int, default=50)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--processing-ms", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as td, ReferenceServer(delay_ms=args.processing_ms) as srv:
        tmp = Path(td)
        data = testing.longmemeval_shaped(tmp / "lme.json", haystacks=args.haystacks)
        config = tomllib.loads(srv.config_text())["http"]

        def spec(concurrency: int, sample: int | None) -> RunSpec:
            return RunSpec(
                systems=("http",),
                datasets=(f"longmemeval@{data}",),
                k=(1, 5),
                concurrency=concurrency,
                system_configs={"http": config},
                speed=None if sample is None else SpeedSpec(sample=sample),
            )

        s_time, s_obs, s_speed, s_dir = _run(tmp, "serial", spec(1, None), 1)
        p_time, p_obs, p_speed, p_dir = _run(tmp, "parallel", spec(4, args.sample), 8)
        testing.compare_runs(s_dir, p_dir)
    lat = [o["latency_ms"] for o in s_obs if o["latency_ms"] is not None]
    sampled = [o["latency_ms"] for o in p_obs if o.get("speed_sample")]
    others = [o for o in p_obs if not o.get("speed_sample")]
    queued = sum(
        any(f.startswith("queued: overlapped") for f in o.get("flags", ())) for o in others
    )
    print(f"{args.haystacks} haystacks, {args.processing_ms:g} ms processing per request")
    print(f"serial    (1 lane, 1 search in flight):  {s_time:6.2f} s")
    print(f"parallel  (8 lanes, 4 searches each):    {p_time:6.2f} s "
          f"({s_time / p_time:.2f}x faster; results equal)")  # fmt: skip
    print(f"median search latency, serial run:        {_median(lat)}")
    print(f"median, parallel run, sampled (alone):    {_median(sampled)}")
    print(f"median, parallel run, other searches:     "
          f"{_median([o['latency_ms'] for o in others if o['latency_ms'] is not None])}; "
          f"{queued} of {len(others)} flagged queued: overlapped (N8)")  # fmt: skip
    for name, row in (("serial", s_speed), ("parallel", p_speed)):
        print(f"speed row, {name}: value {row['value']}, n={row['denominator']}, "
              f"left out: {row['exclusion_rule'] or '-'}")  # fmt: skip


if __name__ == "__main__":
    main()
