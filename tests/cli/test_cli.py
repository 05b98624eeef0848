from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recallbench.registry as generic_registry
from recallbench.cli import app
from recallbench.systems import registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_run_with_no_arguments_prints_baselines_and_writes_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "--quiet"])
    assert result.exit_code == 0, result.output
    for system in ("random", "bm25", "naive"):
        assert system in result.output
    runs = list((tmp_path / "results").iterdir())
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "run.json").read_text())
    assert manifest["spec"]["systems"] == ["random", "bm25", "naive"]
    assert manifest["spec"]["datasets"] == ["sample"]


def test_baselines_are_added_beside_any_system(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "-q", "--systems", "bm25", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    manifest = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    assert manifest["spec"]["systems"] == ["random", "naive", "bm25"]
    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "bm25", "--no-baselines", "--out", str(tmp_path / "b")]
    )
    manifest = json.loads(next((tmp_path / "b").glob("*/run.json")).read_text())
    assert manifest["spec"]["systems"] == ["bm25"]


def test_score_rescores_a_run_byte_for_byte(tmp_path: Path) -> None:
    CliRunner().invoke(app, ["run", "-q", "--out", str(tmp_path), "--k", "1,3"])
    run_dir = next(tmp_path.iterdir())
    before = {n: (run_dir / n).read_bytes() for n in ("verdicts.jsonl", "metrics.jsonl")}
    result = CliRunner().invoke(app, ["score", str(run_dir), "-q"])
    assert result.exit_code == 0, result.output
    assert {n: (run_dir / n).read_bytes() for n in before} == before


def test_unknown_system_and_bad_k_are_clear_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--systems", "nope", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "unknown system 'nope'" in result.output
    result = CliRunner().invoke(app, ["run", "--k", "0,x", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert not any(tmp_path.iterdir())


def test_python_dash_m_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "recallbench", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    assert "run" in out.stdout and "verify" in out.stdout


def _with_plugins(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES / "plugin_pkg"))
    targets = {
        "echo-plugin": "recallbench_test_plugins:EchoPluginSystem",
        "leaky-plugin": "recallbench_test_plugins:LeakyPluginSystem",
    }
    eps = [EntryPoint(n, targets[n], registry.ENTRY_POINT_GROUP) for n in names]
    monkeypatch.setattr(
        generic_registry, "entry_points", lambda group: [e for e in eps if e.group == group]
    )


def test_verify_passes_and_names_a_broken_system(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_plugins(monkeypatch, ["echo-plugin"])
    result = CliRunner().invoke(app, ["verify", "--system", "echo-plugin"])
    assert result.exit_code == 0, result.output
    _with_plugins(monkeypatch, ["echo-plugin", "leaky-plugin"])
    result = CliRunner().invoke(app, ["verify", "--system", "leaky-plugin"])
    assert result.exit_code == 1
    assert "leaky-plugin" in result.output and "forgets_after_reset" in result.output


@pytest.mark.slow
def test_verify_everything_exits_zero() -> None:
    result = CliRunner().invoke(app, ["verify"])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
