"""Start-up cost: wall time of ``recallbench --help`` and of the reference BM25 run, side by side.

The reference command (the architecture issue's): ``recallbench run -q --systems bm25
--no-baselines --datasets glasshouse-v0.1:medium --chunking turn --k 10``. Each command runs
``--repeat`` times in a fresh interpreter, the variants interleaved so that a busy machine hits
both alike; the median is printed with the ratio. ``--before SRC`` names the ``src`` folder of
another checkout (for example an older commit in a git worktree) to compare against.

    python perf/startup.py --repeat 5 --before /path/to/old/checkout/src

Also prints which heavy libraries each variant imported for the reference run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY = ("nltk", "scipy", "torch", "mem0", "chromadb", "sentence_transformers")
REFERENCE = ["run", "-q", "--systems", "bm25", "--no-baselines", "--datasets",
             "glasshouse-v0.1:medium", "--chunking", "turn", "--k", "10"]  # fmt: skip
PROBE = (
    "import sys\nfrom recallbench.cli import main\nsys.argv = ['recallbench', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
)


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    return env


def _time(args: list[str], src: str | None) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "recallbench", *args],
        env=_env(src),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def _heavy(args: list[str], src: str | None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=_env(src), capture_output=True, text=True
    )
    return next((ln[6:] for ln in done.stderr.splitlines() if ln.startswith("HEAVY ")), "?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", default=None, help="src folder of the checkout to compare")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    if args.data_dir:
        os.environ["RECALLBENCH_DATA"] = args.data_dir
    variants: dict[str, str | None] = {"this checkout": None}
    if args.before:
        variants = {"before": args.before, **variants}
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"--help": ["--help"], "reference run": [*REFERENCE, "--out", tmp]}
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for cname, cargs in commands.items():
                for vname, src in variants.items():
                    times.setdefault((cname, vname), []).append(_time(cargs, src))
        for cname in commands:
            medians = {v: statistics.median(times[(cname, v)]) for v in variants}
            cells = ", ".join(f"{v} {m:.2f} s" for v, m in medians.items())
            ratio = ""
            if args.before:
                ratio = f"; ratio before/now {medians['before'] / medians['this checkout']:.2f}"
            print(f"{cname}: median of {args.repeat}: {cells}{ratio}")
        for vname, src in variants.items():
            print(f"heavy libraries imported by the reference run ({vname}): "
                  f"{_heavy([*REFERENCE, '--out', tmp], src)}")  # fmt: skip


if __name__ == "__main__":
    main()
