"""BM25 over the Glasshouse v0.1 medium tier: ingest plus every question, wall time and memory.

Loads ``glasshouse-v0.1:medium`` through recallbench's own loader (pinned files, verified), hands
the 12,884 turns to the built-in ``bm25`` system as the runner does (pair chunking, images
stripped for a text-only system), asks all 879 questions of ``questions_medium.jsonl`` at
``k=10`` and grades them with the Glasshouse rule set. It prints, as one JSON object:

- wall time of the load, the ingest, the searches (with p50/p95 per search) and the scoring;
  ``bm25`` builds its index lazily at the first search, so ``first_search_ms`` holds the index
  build and the percentiles are over the other searches;
- peak memory: ``tracemalloc`` peak of Python allocations during ingest plus searches, and the
  process's peak resident set size (``resource.getrusage``, kilobytes on Linux);
- the dry-mode plain and weighted figures and the evidence figure, as a sanity check.

Reproduce (from the repository root)::

    RECALLBENCH_DATA=/path/to/data python benchmarks/glasshouse_bm25_medium.py

``RECALLBENCH_DATA`` is the folder that holds ``glasshouse-v0.1/``. Options: ``--k K``
(default 10), ``--chunking turn|pair|session`` (default pair), ``--questions
medium|xling|probes`` (default medium). Figures are timed, never asserted by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from recallbench.benchmarks import load_dataset
from recallbench.benchmarks.glasshouse.rules import DRY, EVIDENCE, GlasshouseRules
from recallbench.contracts import Memory, Observation
from recallbench.run.runner import prepare_sessions
from recallbench.systems.base import SystemContext, close_system
from recallbench.systems.registry import create_system


def _observation(qid: str, memories: list[Memory], k: int, ms: float) -> Observation:
    return Observation(
        run_id="benchmark",
        dataset="glasshouse-v0.1:medium",
        dataset_version="",
        group="all",
        question_id=qid,
        system="bm25",
        k=k,
        attempt=1,
        observed_at="",
        latency_ms=ms,
        memories=tuple(memories),
        chars_returned=sum(len(m.text) for m in memories),
        outcome="usable" if memories else "unusable",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--chunking", default="pair")
    parser.add_argument("--questions", default="medium")
    args = parser.parse_args()
    root = os.environ.get("RECALLBENCH_DATA")
    if not root:
        sys.exit("set RECALLBENCH_DATA to the folder holding glasshouse-v0.1/")

    wall0 = time.perf_counter()
    t0 = time.perf_counter()
    ds = load_dataset(
        "glasshouse-v0.1:medium", Path(root), {"questions": args.questions, "image_mode": "native"}
    )
    load_s = time.perf_counter() - t0

    tracemalloc.start()
    system = create_system("bm25", SystemContext(seed=0))
    group = ds.groups[0]
    sessions = prepare_sessions(
        group.sessions, args.chunking, system.capabilities.accepts_images, "native"
    )
    t0 = time.perf_counter()
    system.reset()
    for s in sessions:
        system.add(s)
    ingest_s = time.perf_counter() - t0

    observations: list[Observation] = []
    latencies: list[float] = []
    t0 = time.perf_counter()
    for q in ds.questions:
        t1 = time.perf_counter()
        memories = system.search(q.text, args.k)
        ms = (time.perf_counter() - t1) * 1000.0
        latencies.append(ms)
        observations.append(_observation(q.id, memories, args.k, ms))
    search_s = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    close_system(system)

    rules = GlasshouseRules()
    t0 = time.perf_counter()
    values: list[tuple[float, float]] = []
    evidence: list[float] = []
    for q, o in zip(ds.questions, observations, strict=True):
        metrics, _ = rules.question_metrics(q, o, (args.k,))
        if metrics[DRY] is not None:
            values.append((q.weight, float(metrics[DRY])))
        if metrics[EVIDENCE] is not None:
            evidence.append(float(metrics[EVIDENCE]))
    score_s = time.perf_counter() - t0
    wall_s = time.perf_counter() - wall0

    rest = latencies[1:] or latencies
    cuts = statistics.quantiles(rest, n=20)
    report: dict[str, Any] = {
        "dataset": ds.version_label,
        "question_file": ds.facts.get("question_file"),
        "turns": sum(len(s.turns) for s in sessions),
        "chunks": sum(len(s.chunks) for s in sessions),
        "questions": len(ds.questions),
        "k": args.k,
        "chunking": args.chunking,
        "wall_s": round(wall_s, 3),
        "load_s": round(load_s, 3),
        "ingest_s": round(ingest_s, 3),
        "search_s": round(search_s, 3),
        "first_search_ms": round(latencies[0], 3),
        "search_ms_p50": round(statistics.median(rest), 3),
        "search_ms_p95": round(cuts[18], 3),
        "score_s": round(score_s, 3),
        "tracemalloc_peak_mb_ingest_and_search": round(traced_peak / 2**20, 1),
        "max_rss_mb_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "gh_dry_plain": round(sum(v for _, v in values) / len(values), 4) if values else None,
        "gh_dry_weighted": (
            round(sum(w * v for w, v in values) / sum(w for w, _ in values), 4) if values else None
        ),
        "gh_dry_graded": len(values),
        "gh_evidence": round(sum(evidence) / len(evidence), 4) if evidence else None,
        "gh_evidence_n": len(evidence),
        "chars_per_question": round(
            sum(o.chars_returned for o in observations) / len(observations), 1
        ),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
