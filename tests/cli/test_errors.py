"""User errors are one line and exit 2; anything else is a bug and shows its traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.contracts import FORMAT_VERSION
from recallbench.errors import USER_ERROR_EXIT
from recallbench.registry import Entry
from recallbench.systems import registry

BUG_IN_RULES = """
import sys
from recallbench.benchmarks import SAMPLE

def broken(*args, **kwargs):
    raise ValueError("deliberate bug in a rule set")

SAMPLE.rules.question_metrics = broken
from recallbench.cli import main
sys.argv = ["recallbench", "run", "-q", "--systems", "bm25", "--no-baselines", "--out", {out!r}]
main()
"""


def test_a_value_error_inside_a_rule_set_shows_its_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUG_IN_RULES.format(out=str(tmp_path / "out"))],
        capture_output=True,
        text=True,
    )
    assert done.returncode not in (0, USER_ERROR_EXIT)
    assert "Traceback (most recent call last)" in done.stderr
    assert "ValueError: deliberate bug in a rule set" in done.stderr
    assert "internal error" in done.stderr and "please report it" in done.stderr


def test_a_user_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recallbench",
            "run",
            "--datasets",
            "nosuch",
            "--out",
            f"{tmp_path}",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == USER_ERROR_EXIT
    assert "Traceback" not in done.stderr
    assert "unknown dataset 'nosuch'" in done.stderr


def test_a_manifest_from_a_newer_format_is_refused_naming_both_versions(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["run", "-q", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["format_version"] = "7"
    (run_dir / "run.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["score", str(run_dir)])
    assert result.exit_code == USER_ERROR_EXIT
    assert "format_version 7" in result.output
    assert f"format_version {FORMAT_VERSION}" in result.output


def test_systems_shows_mem0_capabilities_for_the_default_config() -> None:
    pytest.importorskip("mem0")
    result = CliRunner().invoke(app, ["systems"], terminal_width=400)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.strip("│ ").startswith("mem0")]
    row = " ".join(lines[at : at + 3])  # a long cell wraps onto the next lines
    assert "returns_source_turns=True" in row and "summarizes=False" in row
    assert "depends" in row and "--config" in row


def test_install_hint_keeps_its_brackets(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = Entry("fancy", "recallbench_no_such_module_xyz:Fancy", extra="dense")
    monkeypatch.setitem(registry.BUILTINS, "fancy", entry)
    result = CliRunner().invoke(app, ["systems"], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert 'pip install "recallbench[dense]"' in result.output
