"""Ingest throughput and search latency of the built-in retrieval systems, side by side.

For each of ``bm25``, ``dense``, ``hybrid``, ``mem0`` and ``chroma`` (those whose extras are
installed) this ingests the Glasshouse core tier as one haystack (pair chunking: a user turn
plus the assistant turn that follows it), then runs the first ``--questions`` core questions
(``question_en``) as searches, and prints turns ingested per second, search p50/p95 in
milliseconds and the ratios to ``bm25``. Model loading happens before any clock starts; every
system ingests with a fresh, empty embedding cache, so its ingest pays for embedding. Each
system then ingests the corpus once more, into a new instance sharing that now-full cache: this
"warm" time is the system's own storage and indexing cost without the model.

A system may defer work to its first search (``bm25`` builds its index there), so throughput is
turns divided by the time until the first search has returned (ingest + first search); the
first search is then left out of the latency sample, which follows a short warm-up. With
``--repeat N`` every system is measured N times, in interleaved rounds, and the medians are
shown (the spread is printed too): on a shared 2-core machine single runs are noisy.

It then times ``dense`` ingesting the same corpus twice through one fresh on-disk embedding
cache, each time a new system: the second ingest must run no model inference (its model-call
count is printed and checked).

Reproduce (from the repository root, with the ``all`` extra installed)::

    RECALLBENCH_DATA=/path/to/data python benchmarks/systems_throughput.py

``RECALLBENCH_DATA`` is the folder that holds ``glasshouse-v0.1/``. Options: ``--questions N``
(default 200), ``--k K`` (default 10), ``--systems bm25,dense,...``, ``--repeat N``
(default 1), ``--threads N`` (torch CPU threads; default: torch's choice). Process CPU time is
printed beside wall time: when other work shares the machine it moves less than wall time.
Figures are timed, never asserted by the test suite.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recallbench.contracts import Chunk, Session, Turn
from recallbench.systems.base import SystemContext, close_system
from recallbench.systems.registry import SystemUnavailableError, create_system

DATASET_DIR = "glasshouse-v0.1"
CORPUS_FILE = "glasshouse_v0.1_core.jsonl"
QUESTIONS_FILE = "questions_core.jsonl"
SYSTEMS = ("bm25", "dense", "hybrid", "mem0", "chroma")
WARMUP_QUERIES = 5


def data_dir() -> Path:
    root = os.environ.get("RECALLBENCH_DATA")
    if not root:
        sys.exit("set RECALLBENCH_DATA to the folder holding glasshouse-v0.1/")
    return Path(root) / DATASET_DIR


def load_sessions(path: Path) -> list[Session]:
    """Sessions from the corpus JSONL, neutral fields only, with pair chunks."""
    by_session: dict[str, list[Turn]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        turn = Turn(
            turn_id=str(row["turn_id"]),
            session_id=str(row["session_id"]),
            speaker=str(row["speaker"]),
            text=str(row["text"]),
            date=row.get("date"),
        )
        by_session.setdefault(turn.session_id, []).append(turn)
    sessions = []
    for sid, turns in by_session.items():
        date = turns[0].date
        sessions.append(Session(sid, date, tuple(turns), pair_chunks(sid, date, turns)))
    return sessions


def pair_chunks(session_id: str, date: str | None, turns: list[Turn]) -> tuple[Chunk, ...]:
    """A user turn plus the assistant turn right after it; any other turn stands alone."""
    chunks: list[Chunk] = []
    i = 0
    while i < len(turns):
        group = [turns[i]]
        if (
            turns[i].speaker == "user"
            and i + 1 < len(turns)
            and turns[i + 1].speaker == "assistant"
        ):
            group.append(turns[i + 1])
        chunks.append(Chunk(f"{session_id}:{group[0].turn_id}", session_id, date, tuple(group)))
        i += len(group)
    return tuple(chunks)


def load_questions(path: Path, n: int) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(str(json.loads(line)["question_en"]))
        if len(out) >= n:
            break
    return out


def ingest(system: Any, sessions: list[Session]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) to add every session."""
    start, cpu = time.perf_counter(), time.process_time()
    for session in sessions:
        system.add(session)
    return time.perf_counter() - start, time.process_time() - cpu


def search_latencies(system: Any, questions: list[str], k: int) -> tuple[list[float], list[float]]:
    """Per-query (wall ms, process CPU ms), after a short warm-up."""
    for q in questions[:WARMUP_QUERIES]:
        system.search(q, k)
    wall, cpu = [], []
    for q in questions:
        start, c0 = time.perf_counter(), time.process_time()
        system.search(q, k)
        wall.append((time.perf_counter() - start) * 1000.0)
        cpu.append((time.process_time() - c0) * 1000.0)
    return wall, cpu


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(p / 100.0 * (len(ordered) - 1))))
    return ordered[idx]


def measure(name: str, sessions: list[Session], questions: list[str], k: int) -> dict[str, Any]:
    """Cold ingest into a fresh system and empty cache, searches, then a warm re-ingest."""
    root = Path(tempfile.mkdtemp(prefix=f"rb-bench-{name}-"))
    built = time.perf_counter()
    system = create_system(name, SystemContext(seed=0, work_dir=root / "a", cache_dir=root))
    build_s = time.perf_counter() - built
    system.reset()
    n_turns = sum(len(s.turns) for s in sessions)
    gc.collect()
    ingest_s, ingest_cpu = ingest(system, sessions)
    start = time.perf_counter()
    system.search(questions[0], k)
    first_s = time.perf_counter() - start
    lat, lat_cpu = search_latencies(system, questions, k)
    close_system(system)
    # The same corpus again into a new instance: every vector comes from the cache, so this is
    # the system's own storage and indexing cost without the embedding model.
    again = create_system(name, SystemContext(seed=0, work_dir=root / "b", cache_dir=root))
    gc.collect()
    warm_s, _ = ingest(again, sessions)
    close_system(again)
    shutil.rmtree(root, ignore_errors=True)
    return {
        "system": name,
        "build_s": build_s,
        "ingest_s": ingest_s,
        "ingest_cpu_s": ingest_cpu,
        "warm_s": warm_s,
        "first_ms": first_s * 1000.0,
        "turns_per_s": n_turns / (ingest_s + first_s),
        "p50_ms": statistics.median(lat),
        "p95_ms": percentile(lat, 95),
        "p50_cpu_ms": statistics.median(lat_cpu),
    }


def median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"system": runs[0]["system"], "n": len(runs)}
    keys = ("build_s", "ingest_s", "ingest_cpu_s", "warm_s", "first_ms", "turns_per_s", "p50_ms")
    for key in (*keys, "p95_ms", "p50_cpu_ms"):
        row[key] = statistics.median(r[key] for r in runs)
    row["tput_range"] = (min(r["turns_per_s"] for r in runs), max(r["turns_per_s"] for r in runs))
    row["p50_range"] = (min(r["p50_ms"] for r in runs), max(r["p50_ms"] for r in runs))
    return row


def dense_cache_check(sessions: list[Session]) -> dict[str, Any]:
    cache = Path(tempfile.mkdtemp(prefix="rb-bench-cache-"))
    results: dict[str, Any] = {}
    for label in ("first", "second"):
        system = create_system("dense", SystemContext(cache_dir=cache))
        model = system.encoder.model
        calls_before = model.encode_calls
        seconds, _cpu = ingest(system, sessions)
        results[label] = {
            "ingest_s": seconds,
            "model_calls": model.encode_calls - calls_before,
            **system.encoder.stats,
        }
        close_system(system)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    args = parser.parse_args(argv)

    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    root = data_dir()
    sessions = load_sessions(root / CORPUS_FILE)
    questions = load_questions(root / QUESTIONS_FILE, args.questions)
    n_turns = sum(len(s.turns) for s in sessions)
    n_chunks = sum(len(s.chunks) for s in sessions)
    print(
        f"Glasshouse core: {len(sessions)} sessions, {n_turns} turns, {n_chunks} pair chunks; "
        f"{len(questions)} questions, k={args.k}; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    for mod in ("torch", "sentence_transformers", "mem0", "chromadb", "qdrant_client"):
        try:
            version = getattr(importlib.import_module(mod), "__version__", "?")
        except ImportError:
            version = "not installed"
        print(f"  {mod} {version}")

    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    runs: dict[str, list[dict[str, Any]]] = {}
    for _round in range(max(1, args.repeat)):
        for name in list(names):
            try:
                runs.setdefault(name, []).append(measure(name, sessions, questions, args.k))
            except SystemUnavailableError as exc:
                print(f"  skipped {name}: {exc}")
                names.remove(name)
    rows = [median_row(r) for r in runs.values() if r]
    base = next((r for r in rows if r["system"] == "bm25"), None)
    header = (
        f"{'system':<8} {'build s':>8} {'ingest s':>9} {'cpu s':>7} {'warm s':>7} {'1st q ms':>9} "
        f"{'turns/s':>9} {'x bm25':>8} {'p50 ms':>8} {'p95 ms':>8} {'cpu ms':>7} {'x bm25':>8}"
    )
    print()
    print(header)
    print("-" * len(header))
    for r in rows:
        tput_ratio = r["turns_per_s"] / base["turns_per_s"] if base else float("nan")
        p50_ratio = r["p50_ms"] / base["p50_ms"] if base and base["p50_ms"] > 0 else float("nan")
        print(
            f"{r['system']:<8} {r['build_s']:>8.2f} {r['ingest_s']:>9.2f} "
            f"{r['ingest_cpu_s']:>7.1f} {r['warm_s']:>7.2f} {r['first_ms']:>9.1f} "
            f"{r['turns_per_s']:>9.0f} "
            f"{tput_ratio:>8.4f} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
            f"{r['p50_cpu_ms']:>7.2f} {p50_ratio:>8.1f}"
        )
    print(
        "turns/s: turns / (ingest + first search), cold embedding cache; cpu s / cpu ms: "
        "process CPU time of that ingest / median per search (all threads); warm s: the same "
        "ingest into a new instance with every vector cached (the system's own cost)"
    )
    if max(1, args.repeat) > 1:
        print()
        print(f"medians of {args.repeat} interleaved rounds; ranges (min-max):")
        for r in rows:
            lo, hi = r["tput_range"]
            plo, phi = r["p50_range"]
            print(f"  {r['system']:<8} turns/s {lo:.0f}-{hi:.0f}, p50 ms {plo:.2f}-{phi:.2f}")

    if "dense" in {r["system"] for r in rows}:
        check = dense_cache_check(sessions)
        print()
        print("dense, same corpus twice through one on-disk embedding cache:")
        for label, c in check.items():
            print(
                f"  {label:<6} ingest {c['ingest_s']:.2f} s, model calls {c['model_calls']}, "
                f"cache hits {c['hits']}, misses {c['misses']}"
            )
        if check["second"]["model_calls"] != 0:
            print("  ERROR: the second ingest ran the model")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
