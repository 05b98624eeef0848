"""``recallbench report RUN... [--out DIR]``: where it writes, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recallbench.cli import app


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["report", *args])
    return result.exit_code, result.output


def _run(out: Path) -> Path:
    result = CliRunner().invoke(app, ["run", "-q", "--systems", "bm25", "--no-baselines",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def test_report_writes_into_the_first_run_or_out(tmp_path: Path) -> None:
    run = _run(tmp_path / "runs")
    code, out = _invoke(str(run))
    assert code == 0, out
    assert (run / "report.md").is_file() and (run / "report.html").is_file()
    assert f"wrote {run / 'report.html'} (" in out
    other = _run(tmp_path / "again")
    code, out = _invoke(str(run), str(other), "--out", str(tmp_path / "both"))
    assert code == 0, out
    md = (tmp_path / "both" / "report.md").read_text()
    for folder in (run, other):
        assert json.loads((folder / "run.json").read_text())["run_id"] in md
    # with two runs, each series names its run
    assert "bm25 (" in md


def test_report_refuses_what_is_not_a_scored_run(tmp_path: Path) -> None:
    code, out = _invoke(str(tmp_path / "missing"))
    assert code == 2 and "not a folder" in out
    code, out = _invoke(str(tmp_path))
    assert code == 2 and "not a recallbench results folder" in out
    run = _run(tmp_path / "runs")
    (run / "metrics.jsonl").unlink()
    code, out = _invoke(str(run))
    assert code == 2 and "never scored" in out and "recallbench score" in out
    (tmp_path / "file").write_text("")
    code, out = _invoke(str(run), "--out", str(tmp_path / "file"))
    assert code == 2 and "a file is in the way" in out
