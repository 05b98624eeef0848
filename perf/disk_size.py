"""Disk: the bytes of a Glasshouse core+medium run folder with the baselines, and that every
figure is still recomputable from it.

Runs ``random``, ``bm25`` and ``naive`` on ``glasshouse-v0.1:core`` and
``glasshouse-v0.1:medium`` (the shared data folder, ``$RECALLBENCH_DATA``), then prints the
bytes of each file of the run folder and their total; re-scores a copy of the folder and
checks that ``metrics.jsonl``, ``verdicts.jsonl`` and ``summary.md`` come back byte for byte;
with ``--export`` also writes the Glasshouse exports (``recallbench export``) and prints their
size. Before memory lists were stored once and exports written on request only, this run
wrote 487,381,359 bytes (409 MB of exports); see docs/glasshouse.md.

Reproduce (from the repository root)::

    PYTHONPATH=src RECALLBENCH_DATA=../shared/data python perf/disk_size.py [--export]

The byte counts depend only on the data, not on the machine (latencies differ, their width
hardly); nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from recallbench.datasets.fetch import resolve_data_dir
from recallbench.pipeline import export_run, score_run, start_run
from recallbench.spec import RunSpec

DERIVED = ("metrics.jsonl", "verdicts.jsonl", "summary.md")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", action="store_true", help="also write and size the exports")
    args = parser.parse_args(argv)
    data = resolve_data_dir(None)
    spec = RunSpec(
        systems=("random", "bm25", "naive"),
        datasets=("glasshouse-v0.1:core", "glasshouse-v0.1:medium"),
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = start_run(spec, data, Path(tmp) / "results").run_dir
        for p in sorted(run_dir.iterdir()):
            if p.is_file():
                print(f"{p.name:20} {p.stat().st_size:>12,} bytes")
        print(f"{'total':20} {_size(run_dir):>12,} bytes")
        copy = Path(tmp) / "rescored"
        shutil.copytree(run_dir, copy)
        score_run(copy, data)
        same = all((copy / n).read_bytes() == (run_dir / n).read_bytes() for n in DERIVED)
        print(f"re-scored from the folder: {', '.join(DERIVED)} byte-identical: {same}")
        if args.export:
            written = export_run(run_dir, data, "glasshouse")
            print(f"exports: {len(written)} files, {_size(run_dir / 'exports'):,} bytes")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
