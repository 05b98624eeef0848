"""The system registry: built-ins, errors that help, and plugins found through entry points."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import recallbench
import recallbench.registry as generic_registry
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, MemorySystem, SystemContext
from recallbench.systems.conformance import CHECKS
from recallbench.systems.registry import (
    BASELINES,
    SystemEntry,
    SystemUnavailableError,
    UnknownSystemError,
    available_systems,
    create_system,
)

REPO = Path(__file__).resolve().parents[2]
PLUGIN_FIXTURE = REPO / "tests" / "fixtures" / "plugin_pkg"
FIXTURE_TARGETS = {
    "echo-plugin": "recallbench_test_plugins:EchoPluginSystem",
    "leaky-plugin": "recallbench_test_plugins:LeakyPluginSystem",
}


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, targets: dict[str, str]) -> None:
    """Replace the registry's ``entry_points`` with one that yields ``targets``."""
    eps = [EntryPoint(n, v, registry.ENTRY_POINT_GROUP) for n, v in targets.items()]

    def entry_points(**params: Any) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == params.get("group", ep.group)]

    monkeypatch.setattr(generic_registry, "entry_points", entry_points)


def test_builtins_are_registered_first() -> None:
    systems = available_systems()
    assert list(systems)[: len(registry.BUILTINS)] == list(registry.BUILTINS)
    for name in BASELINES:
        assert systems[name].source == "builtin"
        assert systems[name].extra is None


@pytest.mark.parametrize("name", BASELINES)
def test_baselines_build(name: str, tmp_path: Path) -> None:
    system = create_system(name, SystemContext(seed=3, work_dir=tmp_path))
    assert isinstance(system, MemorySystem)
    assert system.name == name
    assert isinstance(system.capabilities, Capabilities)


def test_unknown_system_lists_registered_names() -> None:
    with pytest.raises(UnknownSystemError) as info:
        create_system("definitely-not-a-system")
    message = str(info.value)
    assert "'definitely-not-a-system'" in message
    for name in BASELINES:
        assert name in message


def test_builtin_with_missing_dependency_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = SystemEntry("fancy", "recallbench_no_such_module_xyz:Fancy", "builtin", "fancy")
    monkeypatch.setitem(registry.BUILTINS, "fancy", entry)
    with pytest.raises(SystemUnavailableError) as info:
        create_system("fancy")
    assert info.value.name == "fancy" and info.value.extra == "fancy"
    assert 'pip install "recallbench[fancy]"' in str(info.value)
    assert isinstance(info.value.__cause__, ImportError)


def test_plugin_with_missing_dependency_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, {"broken-plugin": "recallbench_no_such_module_xyz:Broken"})
    assert available_systems()["broken-plugin"].source == "plugin"
    with pytest.raises(SystemUnavailableError) as info:
        create_system("broken-plugin")
    assert info.value.extra is None
    assert "broken-plugin" in str(info.value) and "pip install" not in str(info.value)


def test_plugins_found_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_FIXTURE))
    # Listed out of order, plus one that tries to shadow a built-in.
    fake_entry_points(
        monkeypatch,
        {
            "leaky-plugin": FIXTURE_TARGETS["leaky-plugin"],
            "echo-plugin": FIXTURE_TARGETS["echo-plugin"],
            "bm25": FIXTURE_TARGETS["leaky-plugin"],
        },
    )
    systems = available_systems()
    assert list(systems)[-2:] == ["echo-plugin", "leaky-plugin"]
    assert systems["echo-plugin"].source == "plugin"
    assert systems["echo-plugin"].target == FIXTURE_TARGETS["echo-plugin"]
    assert systems["bm25"].source == "builtin"  # a plugin cannot replace a built-in
    context = SystemContext(seed=1, config={"x": 1})
    echo = create_system("echo-plugin", context)
    assert type(echo).__name__ == "EchoPluginSystem" and echo.name == "echo-plugin"
    assert echo.context is context  # type: ignore[attr-defined]
    assert type(create_system("bm25")).__name__ == "BM25System"


def test_nameless_system_gets_its_registry_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, {"anon": f"{__name__}:Nameless"})
    assert create_system("anon").name == "anon"


class Nameless:
    name = ""
    capabilities = Capabilities()

    def __init__(self, context: SystemContext) -> None:
        self.context = context


# ------------------------------------------------------------------------------------------
# The plugin path for real: install the fixture distribution into a fresh virtualenv.

VENV_SCRIPT = textwrap.dedent(
    """
    import json
    import recallbench_test_plugins
    from recallbench.systems.registry import available_systems
    from recallbench.systems.conformance import check_system

    out = {
        "module": recallbench_test_plugins.__file__,
        "systems": {name: e.source for name, e in available_systems().items()},
        "results": {
            name: [[r.check, r.status, r.detail] for r in check_system(name)]
            for name in ("echo-plugin", "leaky-plugin")
        },
    }
    print(json.dumps(out))
    """
)


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@pytest.mark.slow
def test_plugin_installed_in_fresh_venv_is_found_and_checked(tmp_path: Path) -> None:
    # Build from a copy so pip's in-tree build leaves nothing behind in the repository.
    pkg = tmp_path / "plugin_pkg"
    shutil.copytree(
        PLUGIN_FIXTURE, pkg, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    venv = tmp_path / "venv"
    # No pip inside the venv: the base interpreter's pip and setuptools are visible through
    # --system-site-packages, which keeps this offline and quick.
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        timeout=120,
    )
    python = _venv_python(venv)
    # recallbench itself is found through PYTHONPATH whichever way it was installed here; when
    # this interpreter is itself a venv, its site-packages (recallbench's dependencies, pip,
    # setuptools) are not the "system" ones, so they are passed along too.
    paths = [str(Path(recallbench.__file__).resolve().parents[1])]
    if sys.prefix != sys.base_prefix:
        paths += [p for p in sys.path if p.endswith("site-packages")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(paths),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONNOUSERSITE": "1",
    }
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", str(pkg)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    run = subprocess.run(
        [str(python), "-c", VENV_SCRIPT],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])

    assert Path(out["module"]).resolve().is_relative_to(venv.resolve())
    systems = out["systems"]
    assert list(systems)[: len(BASELINES)] == list(BASELINES)
    assert systems["echo-plugin"] == "plugin:recallbench-test-plugins"
    assert systems["leaky-plugin"] == "plugin:recallbench-test-plugins"

    echo = out["results"]["echo-plugin"]
    assert [c for c, _, _ in echo] == list(CHECKS)
    assert all(status == "pass" for _, status, _ in echo), echo
    leaky = {c: (status, detail) for c, status, detail in out["results"]["leaky-plugin"]}
    status, detail = leaky["forgets_after_reset"]
    assert status == "fail"
    assert "leaky-plugin" in detail and "forgets_after_reset" in detail

    # Installed only in the venv: this interpreter does not see it.
    assert "echo-plugin" not in available_systems()
