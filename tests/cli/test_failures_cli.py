"""Failure is loud: the console names each system's failed calls by cause with counts, a run in
which a system failed every call (or more than --max-failure-rate) exits 3 with run.json
``failed``, and summary.md says so; the tables still print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench import testing
from recallbench.cli import FAILED_RUN_EXIT, app
from recallbench.systems import registry

REFUSED = "URLError: <urlopen error [Errno 111] Connection refused>"


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()


def _run(tmp_path: Path, *args: str, mode: str | None = None) -> tuple[int, str, str, Path]:
    extra: list[str] = []
    if mode is not None:
        cfg = tmp_path / "cfg.toml"
        cfg.write_text(f'[hostile]\nmode = "{mode}"\n')
        extra = ["--config", str(cfg)]
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "-q", "--out", str(out), "--k", "1,5", *extra, *args])
    folders = sorted(out.iterdir()) if out.exists() else []
    return result.exit_code, result.stdout, result.stderr, folders[-1] if folders else out


def test_server_down_exits_3_and_names_the_cause(tmp_path: Path) -> None:
    code, stdout, stderr, run = _run(tmp_path, "--systems", "hostile", mode="server_down")
    assert code == FAILED_RUN_EXIT == 3, stderr
    assert (
        f"FAILED: hostile on sample: 50 of 50 searches failed: ingest failed: reset: {REFUSED} "
        "(50)" in stderr
    )
    assert (
        f"FAILED: hostile on sample: 31 of 31 ingest calls failed: reset: {REFUSED} (31)"
        in stderr
    )  # reset and 30 adds: nothing went in
    assert "run failed:" in stderr and "Traceback" not in stderr
    assert "bm25" in stdout and "hostile" in stdout  # the tables still print: misses are real
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    summary = (run / "summary.md").read_text()
    assert "- FAILED: hostile on sample: 50 of 50 searches failed" in summary
    assert "- run failed:" in summary


def test_every_search_refused_is_counted_by_cause(tmp_path: Path) -> None:
    code, _, stderr, run = _run(
        tmp_path, "--systems", "hostile", "--no-baselines", mode="search_refused"
    )
    assert code == 3
    assert f"hostile on sample: 50 of 50 searches failed: {REFUSED} (50)" in stderr
    assert "ingest calls failed" not in stderr


def test_add_failures_group_identical_causes(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[hostile]\nmode = "add_raises"\ntimes = 3\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "hostile", "--no-baselines", "--config", str(cfg),
              "--out", str(out), "--k", "1"],
    )  # fmt: skip
    # 3 of 31 calls (reset, 30 adds) failed: named, under the threshold, the run completes
    assert result.exit_code == 0, result.stderr
    assert "errors: hostile on sample: 3 of 31 ingest calls failed: " in result.stderr
    line = next(x for x in result.stderr.splitlines() if "ingest calls failed" in x)
    assert line.count("add: RuntimeError: add of ") == 3 and line.count("(1)") == 3


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_a_few_errors_under_the_threshold_are_named_and_the_run_completes(
    tmp_path: Path,
) -> None:
    code, _, stderr, run = _run(tmp_path, "--systems", "flaky", "--no-baselines")
    assert code == 0, stderr
    assert "errors: flaky on sample: " in stderr and "RuntimeError: backend exploded" in stderr
    assert "FAILED" not in stderr
    assert json.loads((run / "run.json").read_text())["status"] == "complete"


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_max_failure_rate_zero_fails_on_any_error(tmp_path: Path) -> None:
    code, _, stderr, run = _run(
        tmp_path, "--systems", "flaky", "--no-baselines", "--max-failure-rate", "0"
    )
    assert code == 3 and "FAILED: flaky on sample" in stderr
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["status"] == "failed" and manifest["execution"]["max_failure_rate"] == 0


def test_a_clean_run_prints_no_failure_line(tmp_path: Path) -> None:
    code, _, stderr, run = _run(tmp_path, "--systems", "bm25", "--no-baselines")
    assert code == 0 and "failed" not in stderr and "errors:" not in stderr
    assert json.loads((run / "run.json").read_text())["status"] == "complete"


def test_resume_refuses_other_execution_settings(tmp_path: Path) -> None:
    code, _, _, run = _run(tmp_path, "--systems", "bm25", "--no-baselines")
    assert code == 0
    for flag, value in (("--group-concurrency", "2"), ("--max-failure-rate", "0.1")):
        result = CliRunner().invoke(app, ["run", "-q", "--resume", str(run), flag, value])
        assert result.exit_code == 2
        assert f"{flag} {value}" in result.stderr and "conflicts with the run" in result.stderr
    same = CliRunner().invoke(app, ["run", "-q", "--resume", str(run), "--group-concurrency", "1"])
    assert same.exit_code == 0, same.stderr


def test_help_names_the_exit_codes_and_the_options() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.split())
    for needle in ("--group-concurrency", "--max-failure-rate", "3 the run finished"):
        assert needle in text, needle


def test_group_concurrency_must_be_positive(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "-q", "--group-concurrency", "0", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
