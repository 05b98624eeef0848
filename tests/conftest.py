"""Shared test fixtures. Real benchmark data is read through $RECALLBENCH_DATA (CI sets it to
../shared/data); tests that need it take the ``shared_data`` fixture and skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    env = os.environ.get("RECALLBENCH_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("shared benchmark data not available (set RECALLBENCH_DATA)")
    return path


@pytest.fixture(scope="module")
def shared_data_module() -> Path:
    """``shared_data`` for module-scoped fixtures (one run shared by a module's tests)."""
    path = shared_data_dir()
    if path is None:
        pytest.skip("shared benchmark data not available (set RECALLBENCH_DATA)")
    return path


def shared_instruments_dir() -> Path | None:
    """The benchmarks' own instrument files (``../shared/instruments``), read the way a user's
    pre-filled copy is: through ``$RECALLBENCH_INSTRUMENTS``."""
    env = os.environ.get("RECALLBENCH_INSTRUMENTS")
    path = Path(env) if env else REPO.parent / "shared" / "instruments"
    return path if path.is_dir() else None


@pytest.fixture(autouse=True)
def _shared_instruments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test reads the benchmarks' instrument files from the shared copies, as it reads
    the shared data; a test that needs them absent unsets the variable itself."""
    path = shared_instruments_dir()
    if path is not None and "RECALLBENCH_INSTRUMENTS" not in os.environ:
        monkeypatch.setenv("RECALLBENCH_INSTRUMENTS", str(path))


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep every test's shared cache out of the user's home."""
    if "RECALLBENCH_CACHE" not in os.environ:
        monkeypatch.setenv("RECALLBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
