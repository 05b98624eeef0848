"""Fixtures shared by the submissions tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app


@pytest.fixture(scope="session")
def honest_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One retrieval run of bm25 on the bundled sample (it has null cells: the abstain slice).
    Shared by the modules: tests copy it, never change it."""
    out = tmp_path_factory.mktemp("runs")
    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "bm25", "--no-baselines", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = (p for p in out.iterdir() if p.is_dir())
    return run_dir
