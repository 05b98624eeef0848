"""Golden run folders: make them with one recallbench, check another against them.

``make``: run every spec of ``SPECS`` into ``OUT/<name>/`` (and score the predictions files of
``PREDICTIONS``) with whatever ``recallbench`` this interpreter imports, e.g. an older checkout
through ``PYTHONPATH=/path/to/old/src``.

``check``: with the recallbench under test, (1) copy each golden folder, re-score it with
``recallbench score`` and require byte-identical ``verdicts.jsonl`` and ``metrics.jsonl``
("byte-identical when re-derived"); (2) run the same spec afresh and require the two runs to be
equal under :func:`recallbench.testing.compare_runs` ("equal under the helper": run ids and
timing rows ignored, nothing else); (3) re-score the predictions files and compare their
verdicts and metrics byte for byte.

    PYTHONPATH=OLD/src python tools/golden.py make --out GOLDEN
    python tools/golden.py check --golden GOLDEN --work SCRATCH
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "src" / "recallbench" / "datasets" / "sample"
LME_FIXTURE = REPO / "tests" / "fixtures" / "longmemeval" / "longmemeval_fixture.json"

SPECS: dict[str, list[str]] = {
    "sample-dense": ["--systems", "dense,hybrid"],
    "sample-turn": ["--systems", "bm25", "--chunking", "turn", "--k", "1,3,10"],
    "native": ["--datasets", "recallbench@{native}"],
    "gh-core": ["--datasets", "glasshouse-v0.1:core", "--systems", "dense"],
    "gh-small": ["--datasets", "glasshouse-v0.1:small"],
    "gh-medium": ["--datasets", "glasshouse-v0.1:medium", "--chunking", "turn", "--k", "1,10"],
    "gh-ref": [
        "--systems",
        "bm25",
        "--no-baselines",
        "--datasets",
        "glasshouse-v0.1:medium",
        "--chunking",
        "turn",
        "--k",
        "10",
    ],  # fmt: skip
    "gh-xling": ["--datasets", "glasshouse-v0.1:small", "--questions", "xling"],
    "gh-probes": ["--datasets", "glasshouse-v0.1:small", "--questions", "probes"],
    "locomo": ["--datasets", "locomo"],
    "beam": ["--datasets", "beam@{data}/beam/chats/100K/1"],
    "lme": ["--datasets", f"longmemeval@{LME_FIXTURE}"],
}
PREDICTIONS: dict[str, list[str]] = {
    "gh-medium": ["--dataset", "glasshouse-v0.1", "--tier", "medium", "--mode", "dry"],
    "locomo": ["--dataset", "locomo"],
}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "recallbench", *args]


def _args(template: list[str], data: Path, native: Path) -> list[str]:
    return [a.format(data=data, native=native) for a in template]


def _only_run(folder: Path) -> Path:
    (run,) = [p for p in folder.iterdir() if (p / "run.json").exists()]
    return run


def _predictions(golden: Path) -> None:
    """Predictions files made from the golden runs' own records (Glasshouse export, LoCoMo ids)."""
    pred = golden / "pred"
    pred.mkdir(exist_ok=True)
    gh = _only_run(golden / "gh-medium") / "exports" / "glasshouse" / "bm25" / "medium-medium.jsonl"
    shutil.copyfile(gh, pred / "gh-medium.jsonl")
    lines = []
    obs_text = (_only_run(golden / "locomo") / "observations.jsonl").read_text(encoding="utf-8")
    for raw in filter(None, obs_text.split("\n")):  # JSONL lines end at \n only
        o = json.loads(raw)
        if o["system"] == "bm25":
            ids = [t for m in o["memories"] for t in (m["source_turns"] or [])]
            answer = "I don't know" if len(ids) % 3 == 0 else "Caroline"
            lines.append(
                json.dumps({"id": o["question_id"], "answer": answer, "retrieved_turns": ids})
            )
    (pred / "locomo.jsonl").write_text("\n".join(lines) + "\n")


def _score_file(pred: Path, name: str, out: Path) -> None:
    subprocess.run(
        _cli(
            "score",
            str(pred / f"{name}.jsonl"),
            *PREDICTIONS[name],
            "--results-dir",
            str(out),
            "--out",
            str(out / "lines.jsonl"),
            "-q",
        ),  # fmt: skip
        check=True,
    )


def make(out: Path, data: Path) -> None:
    native = out / "native-data"
    native.mkdir(parents=True, exist_ok=True)
    for f in ("turns.jsonl", "questions.jsonl"):
        shutil.copyfile(SAMPLE / f, native / f)
    for name, template in SPECS.items():
        t0 = time.perf_counter()
        subprocess.run(
            _cli("run", "-q", "--out", str(out / name), *_args(template, data, native)), check=True
        )
        print(f"{name}: {time.perf_counter() - t0:.1f} s")
    _predictions(out)
    for name in PREDICTIONS:
        _score_file(out / "pred", name, out / "pred" / f"{name}.scored")


def check(golden: Path, work: Path, data: Path, fresh: bool) -> int:
    native = golden / "native-data"
    failures = 0
    for name, template in SPECS.items():
        src = _only_run(golden / name)
        copy = work / "rescored" / name / src.name
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(src, copy)
        subprocess.run(_cli("score", str(copy), "-q"), check=True, capture_output=True)
        same = all(
            filecmp.cmp(src / f, copy / f, shallow=False)
            for f in ("verdicts.jsonl", "metrics.jsonl")
        )
        line = f"{name}: re-derived {'byte-identical' if same else 'DIFFERENT'}"
        failures += not same
        if fresh:
            from recallbench.testing import run_differences

            out = work / "fresh" / name
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(
                _cli("run", "-q", "--out", str(out), *_args(template, data, native)),
                check=True,
                capture_output=True,
            )
            problems = run_differences(src, _only_run(out))
            line += "; fresh run " + ("equal under the helper" if not problems else "DIFFERS")
            failures += bool(problems)
            for p in problems:
                line += "\n    " + p
        print(line, flush=True)
    for name in PREDICTIONS:
        out = work / "pred" / f"{name}.scored"
        shutil.rmtree(out, ignore_errors=True)
        _score_file(golden / "pred", name, out)
        ref = golden / "pred" / f"{name}.scored"
        same = all(
            filecmp.cmp(ref / f, out / f, shallow=False)
            for f in ("verdicts.jsonl", "metrics.jsonl", "lines.jsonl")
        )
        failures += not same
        print(f"predictions {name}: {'byte-identical' if same else 'DIFFERENT'}", flush=True)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("check")
    c.add_argument("--golden", type=Path, required=True)
    c.add_argument("--work", type=Path, required=True)
    c.add_argument("--no-fresh", action="store_true", help="only re-derive, do not re-run")
    for p in (m, c):
        p.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data = args.data_dir or Path(os.environ.get("RECALLBENCH_DATA", REPO.parent / "shared/data"))
    os.environ["RECALLBENCH_DATA"] = str(data)
    if args.cmd == "make":
        make(args.out, data)
    else:
        sys.exit(1 if check(args.golden, args.work, data, not args.no_fresh) else 0)


if __name__ == "__main__":
    main()
