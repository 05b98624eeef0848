"""Answer mode end to end on the bundled sample against the mock endpoint with latency per
call: calls per second of the answer step against the ideal, and re-judging from the cache.

For each concurrency (default 1, 8, 32) it runs ``recallbench run --datasets sample --mode
answer --reader mock --judge mock-judge`` (the three baselines: 150 questions, each a reader
call then a judge call, plus one empty-prompt baseline call) through the pipeline against one
:class:`~recallbench.testing.mock_llm.MockLLMServer` with ``--delay`` seconds per call (default
0.2), ``--llm-concurrency`` set to the level and the response cache off, and times the answer
step alone (from its first progress tick's start to its last). The ideal is ``concurrency /
delay`` calls per second. Then it re-judges the last run with the same judge from a warm cache
(``score RUN --judge``: every judgement already cached, no call may reach the endpoint) and
reports that wall time. Target: at least 80% of ideal at 32.

Reproduce (from the repository root)::

    RECALLBENCH_DATA=../shared/data PYTHONPATH=src python perf/answer_mode_speed.py

Figures are timed, never asserted by the test suite; the machine's other load shows in them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from recallbench import pipeline
from recallbench.datasets.fetch import resolve_data_dir
from recallbench.run.runner import Progress
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec
from recallbench.testing.mock_llm import MockLLMServer


def answer_run(
    server: MockLLMServer, level: int, out: Path, cache: Path, use_cache: bool
) -> tuple[float, int, Path]:
    """One answer-mode run; (answer-step seconds, calls the endpoint received, run folder)."""
    marks: dict[str, float] = {}

    def start(description: str, total: int) -> None:
        if description.startswith("answer "):
            marks["start"] = time.perf_counter()

    def advance(n: int) -> None:
        if "start" in marks:
            marks["end"] = time.perf_counter()

    spec = RunSpec(
        systems=("random", "bm25", "naive"),
        datasets=("sample",),
        answering=AnsweringSpec(
            "answer",
            reader=ModelChoice("mock", server.base_url),
            judge=ModelChoice("mock-judge", server.base_url),
            llm_concurrency=level,
        ),
    )
    server.reset_counters()
    scored = pipeline.start_run(
        spec,
        resolve_data_dir(),
        out,
        Progress(start_task=start, advance=advance),
        cache,
        llm=pipeline.LLMOptions(use_cache=use_cache),
    )
    return marks["end"] - marks["start"], server.stats()["calls"], scored.run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,8,32")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    folder = Path(tempfile.mkdtemp(prefix="rb-answer-mode-speed-"))
    rows = []
    try:
        with MockLLMServer(delay_s=args.delay) as server:
            last = None
            for level in levels:
                seconds, calls, last = answer_run(
                    server, level, folder / f"c{level}", folder / f"cache{level}", False
                )
                rate = (calls - 1) / seconds  # the empty-prompt call comes before the step
                ideal = level / args.delay
                rows.append((level, calls - 1, seconds, rate, ideal, rate / ideal))
            # warm the cache with one more run of the last level, then re-judge from it
            assert last is not None
            warm = folder / "warm-cache"
            _, _, run_dir = answer_run(server, levels[-1], folder / "warm", warm, True)
            # the judgements are dropped, so every one is asked again, and answered by the cache
            (run_dir / "judgements.jsonl").unlink()
            server.reset_counters()
            started = time.perf_counter()
            pipeline.rejudge_run(
                run_dir, resolve_data_dir(),
                ModelChoice("mock-judge", server.base_url), None, warm,
            )
            rejudge_s = time.perf_counter() - started
            rejudge_calls = server.stats()["calls"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"answer step on the sample (3 baselines x 50 questions), mock latency {args.delay} s")
    print("| llm concurrency | calls | seconds | calls/s | ideal calls/s | of ideal |")
    print("|---:|---:|---:|---:|---:|---:|")
    for level, calls, seconds, rate, ideal, share in rows:
        print(f"| {level} | {calls} | {seconds:.2f} | {rate:.1f} | {ideal:.1f} | {share:.0%} |")
    print(json.dumps({"rejudge_from_cache_s": round(rejudge_s, 3),
                      "rejudge_calls_reaching_endpoint": rejudge_calls}))
    print("reproduce: RECALLBENCH_DATA=../shared/data PYTHONPATH=src "
          "python perf/answer_mode_speed.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
