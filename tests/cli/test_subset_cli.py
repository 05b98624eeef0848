"""``run --limit/--groups/--questions-from`` on the command line: every metric row, table title
and summary of a subset run says "subset" and which part; a full run says "full"; bad ids and
sizes are refused before any folder is made; a resume keeps its subset and repeats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench import testing
from recallbench.cli import app

cli = CliRunner()


def _run(*args: str) -> tuple[int, str]:
    result = cli.invoke(app, ["run", "--systems", "bm25", "--no-baselines", "-q", *args])
    return result.exit_code, result.output


def _folder(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_limit_run_says_subset_on_every_row_title_and_summary(tmp_path: Path) -> None:
    code, out = _run("--limit", "10", "--seed", "4", "--out", str(tmp_path))
    assert code == 0, out
    label = "subset: limit 10 (seed 4)"
    run = _folder(tmp_path)
    rows = _lines(run / "metrics.jsonl")
    assert rows and all(label in r["non_standard"] for r in rows)
    summary = (run / "summary.md").read_text()
    titles = [line for line in summary.splitlines() if line.startswith("### ")]
    assert titles and all(t.endswith(f"[{label}]") for t in titles)
    assert f"- questions: {label} (sample 10): not the benchmark's full score" in summary
    assert f"questions: {label}" in out  # the console says it too
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["spec"]["subset"] == {"kind": "limit", "limit": 10, "seed": 4}
    assert manifest["datasets"][0]["questions"] == 10
    assert len(_lines(run / "verdicts.jsonl")) == 10


def test_a_full_run_says_full_and_its_rows_are_unlabelled(tmp_path: Path) -> None:
    code, out = _run("--out", str(tmp_path))
    assert code == 0, out
    run = _folder(tmp_path)
    assert "- questions: full run (sample 50)" in (run / "summary.md").read_text()
    assert "questions: full run" in out
    assert all("non_standard" not in r for r in _lines(run / "metrics.jsonl"))
    assert "subset" not in json.loads((run / "run.json").read_text())["spec"]


def test_groups_and_questions_from_record_what_was_run(tmp_path: Path) -> None:
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=6)
    code, out = _run(
        "--datasets", f"longmemeval@{data}", "--groups", "q2,q5", "--out", str(tmp_path / "g")
    )
    assert code == 0, out
    run = _folder(tmp_path / "g")
    assert {v["question_id"] for v in _lines(run / "verdicts.jsonl")} == {"q2", "q5"}
    assert {r["group"] for r in _lines(run / "ingest.jsonl")} == {"q2", "q5"}  # no other ingest
    assert "[subset: groups q2, q5]" in (run / "summary.md").read_text()

    ids = tmp_path / "ids.txt"
    ids.write_text("q1\nq3\n")
    code, out = _run(
        "--datasets", f"longmemeval@{data}", "--questions-from", str(ids),
        "--out", str(tmp_path / "q"),
    )  # fmt: skip
    assert code == 0, out
    spec = json.loads((_folder(tmp_path / "q") / "run.json").read_text())["spec"]
    assert spec["subset"]["questions"] == ["q1", "q3"]
    assert len(spec["subset"]["questions_sha256"]) == 64


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "51"], "--limit 51: sample has 50 questions; give at most 50"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--groups", "conv-1,all"], "sample has no haystack group 'conv-1'"),
        (["--limit", "5", "--groups", "all"], "--limit and --groups: give one way"),
    ],
)
def test_bad_subsets_are_refused_before_any_folder(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    code, output = _run(*args, "--out", str(out))
    assert code == 2
    assert message in " ".join(output.split())
    assert not out.exists() or not any(out.iterdir())


def test_unknown_question_ids_are_named(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("nope-1\n")
    code, output = _run("--questions-from", str(ids), "--out", str(tmp_path / "o"))
    assert code == 2 and "sample has no question 'nope-1'" in output


def test_a_resume_keeps_its_subset_and_repeats(tmp_path: Path) -> None:
    code, out = _run("--limit", "5", "--repeats", "2", "--out", str(tmp_path))
    assert code == 0, out
    run = _folder(tmp_path)
    for args, what in ((["--limit", "6"], "subset"), (["--repeats", "3"], "--repeats 3")):
        result = cli.invoke(app, ["run", "--resume", str(run), "-q", *args])
        assert result.exit_code == 2, result.output
        assert what in result.output and "conflicts with the run being resumed" in result.output
    same = cli.invoke(app, ["run", "--resume", str(run), "-q", "--limit", "5", "--repeats", "2"])
    assert same.exit_code == 0, same.output
