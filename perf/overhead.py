"""Harness overhead per question: the runner around a system that does nothing.

Reproduce:  python benchmarks/overhead.py [--questions 10000] [--concurrency 1]

A no-op system (returns one fixed memory instantly) is run over a synthetic dataset of N
questions in one haystack group. The time per question is everything recallbench does around a
search: the worker hand-off, the timeout bookkeeping, building the observation and appending it
to observations.jsonl (flushed per line). Scoring is timed separately. Target: <= 0.2 ms.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from recallbench import testing
from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import FileRecord, HaystackGroup, LoadedDataset
from recallbench.pipeline import read_logs
from recallbench.run.runner import Runner
from recallbench.score.rules import RuleSet
from recallbench.score.scorer import score_dataset
from recallbench.spec import RunSpec


def synthetic(n: int) -> LoadedDataset:
    turns = tuple(
        Turn(f"t{i}", "s1", "user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(20)
    )
    questions = tuple(
        Question(
            id=f"q{i}",
            dataset="synthetic",
            group="all",
            text=f"question {i}",
            gold="x",
            evidence_turns=("t0",),
        )
        for i in range(n)
    )
    ids = tuple(q.id for q in questions)
    return LoadedDataset(
        name="synthetic",
        variant="",
        version="0",
        haystack="global",
        files=(FileRecord("none", "0" * 64, pinned=False),),
        groups=(HaystackGroup("all", (Session("s1", None, turns),), ids),),
        questions=questions,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    testing.register()
    ds = synthetic(args.questions)
    spec = RunSpec(
        systems=("noop",), datasets=("synthetic",), k=(1, 5, 10), concurrency=args.concurrency
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        t0 = time.perf_counter()
        Runner(spec, [ds], run_dir, "bench").execute()
        run_s = time.perf_counter() - t0
        observations, _ = read_logs(run_dir)
        t1 = time.perf_counter()
        score_dataset(ds, observations, spec.k, spec.systems, RuleSet())
        score_s = time.perf_counter() - t1
    n = args.questions
    print(f"questions: {n}, concurrency: {args.concurrency}")
    print(f"runner overhead: {run_s * 1000 / n:.4f} ms/question ({run_s:.2f} s total)")
    print(f"scoring:         {score_s * 1000 / n:.4f} ms/question ({score_s:.2f} s total)")
    print(f"target: <= 0.2 ms/question -> {'met' if run_s * 1000 / n <= 0.2 else 'NOT met'}")


if __name__ == "__main__":
    main()
