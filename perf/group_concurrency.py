"""Parallel ingest: a LongMemEval-shaped file of 50 haystacks, 50 ms per ``add``, run with
``--group-concurrency`` 1 and 8 (and any other levels given); the ratio of the two run times.

The data is written by :func:`recallbench.testing.longmemeval_shaped` (50 haystacks of three
two-turn sessions, one question each: 150 ``add`` calls, 7.5 s of sleeping at one group at a
time). The system is :class:`recallbench.testing.SlowAddBM25` in-process (``slow-add``,
``add_delay_s = 0.05``), or, with ``--via-reference-server``, the ``http`` system against
``recallbench serve-memory``'s reference server with a 50 ms processing delay (skipped, saying so,
while ``recallbench.systems.http.reference`` does not exist). Each level runs the same spec
(``--concurrency 1``); the time is the runner's, from its first progress task to its last
question (ingest and search, no scoring), best of ``--repeat``. The two runs are also checked
equal with :func:`recallbench.testing.compare_runs`. Target: 8 lanes at least 6 times faster
than 1.

Reproduce (from the repository root)::

    PYTHONPATH=src python perf/group_concurrency.py
    PYTHONPATH=src python perf/group_concurrency.py --via-reference-server

Figures are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recallbench import testing
from recallbench.pipeline import start_run
from recallbench.run.runner import Progress
from recallbench.spec import RunSpec

REFERENCE = "recallbench.systems.http.reference"


class _Clock:
    """Progress callbacks that note the first task's start and the last advance."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.end = 0.0

    def progress(self) -> Progress:
        def start_task(_description: str, _total: int) -> None:
            if self.start is None:
                self.start = time.perf_counter()

        def advance(_n: int) -> None:
            self.end = time.perf_counter()

        return Progress(start_task, advance)

    @property
    def seconds(self) -> float:
        return self.end - (self.start or self.end)


@contextlib.contextmanager
def _system(via_reference: bool, delay_s: float) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(system name, its config) for the run: slow-add in-process, or http against the
    reference server."""
    if not via_reference:
        yield "slow-add", {"add_delay_s": delay_s}
        return
    module = importlib.import_module(REFERENCE)
    with module.ReferenceServer(delay_ms=delay_s * 1000.0) as server:
        config = tomllib.loads(server.config_text())
        yield "http", config.get("http", config)


def _has_reference() -> bool:
    try:
        importlib.import_module(REFERENCE)
    except ModuleNotFoundError:
        return False
    return True


def run_level(
    tmp: Path, data: Path, level: int, system: str, config: Mapping[str, Any]
) -> tuple[float, Path]:
    """One run at ``--group-concurrency level``: (runner seconds, run folder)."""
    clock = _Clock()
    spec = RunSpec(
        systems=(system,),
        datasets=(f"longmemeval@{data}",),
        k=(1, 5),
        system_configs={system: dict(config)},
    )
    scored = start_run(
        spec, tmp / "data", tmp / f"g{level}", clock.progress(), group_concurrency=level
    )
    return clock.seconds, scored.run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--haystacks", type=int, default=50)
    parser.add_argument("--delay-ms", type=float, default=50.0, help="per add")
    parser.add_argument("--levels", default="1,8", help="group concurrencies, first the base")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--via-reference-server", action="store_true")
    args = parser.parse_args(argv)
    if args.via_reference_server and not _has_reference():
        print(
            f"skipped --via-reference-server: {REFERENCE} is not in this checkout (the http "
            "system and its reference server are not merged yet); run without the flag for the "
            "in-process system"
        )
        return 0
    testing.register()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as td, _system(
        args.via_reference_server, args.delay_ms / 1000.0
    ) as (system, config):
        tmp = Path(td)
        data = testing.longmemeval_shaped(tmp / "lme.json", haystacks=args.haystacks)
        times: dict[int, float] = {}
        runs: dict[int, Path] = {}
        for level in levels:
            best = float("inf")
            for i in range(args.repeat):
                seconds, run = run_level(tmp / f"r{i}", data, level, system, config)
                best = min(best, seconds)
                runs[level] = run
            times[level] = best
            print(f"group-concurrency {level}: {best:.2f} s", flush=True)
        base = levels[0]
        for level in levels[1:]:
            testing.compare_runs(runs[base], runs[level])
            print(
                f"{system}, {args.haystacks} haystacks, {args.delay_ms:g} ms per add: "
                f"--group-concurrency {level} is {times[base] / times[level]:.2f}x faster than "
                f"{base} (results equal)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
