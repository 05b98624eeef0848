"""The shape of the package: layers that import only downward, no import cycle, and a start-up
that imports only what the run needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("nltk", "scipy", "torch", "mem0", "chromadb", "sentence_transformers")


def test_import_linter_contracts_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True) == 0


def _cycles(graph: grimp.ImportGraph, nodes: set[str]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v) & nodes:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules() -> None:
    """Type-checking imports count too: a cycle hidden behind TYPE_CHECKING is still one."""
    graph = grimp.build_graph("recallbench", cache_dir=None)
    nodes = set(graph.modules)
    assert _cycles(graph, nodes) == []


def test_no_import_cycle_between_packages() -> None:
    graph = grimp.build_graph("recallbench", cache_dir=None)
    top = {m for m in graph.modules if m.count(".") == 1}
    squashed = grimp.build_graph("recallbench", cache_dir=None)
    for m in top:
        if squashed.find_children(m):
            squashed.squash_module(m)
    assert _cycles(squashed, set(squashed.modules) & top) == []


def _loaded_after(args: list[str], tmp_path: Path) -> list[str]:
    """Heavy modules a fresh interpreter holds after ``recallbench ARGS``."""
    code = (
        "import sys\n"
        "from recallbench.cli import main\n"
        f"sys.argv = ['recallbench', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print('OTHER', sorted(m for m in sys.modules if m.startswith('recallbench.benchmarks.')"
        " and not m.startswith('recallbench.benchmarks.glasshouse')"
        " and m not in ('recallbench.benchmarks.base',)))\n"
    )
    env = {**os.environ, "RECALLBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    tagged = [line for line in done.stdout.splitlines() if line.startswith(("LOADED ", "OTHER "))]
    lines = dict(line.split(" ", 1) for line in tagged)
    return [lines["LOADED"], lines["OTHER"]]


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    loaded, _ = _loaded_after(["--help"], tmp_path)
    assert loaded == "[]"


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_reference_glasshouse_run_imports_only_what_it_needs(
    shared_data: Path, tmp_path: Path
) -> None:
    """The reference command of the architecture issue: no NLTK, SciPy, torch, Mem0, Chroma or
    sentence-transformers, and no other benchmark's code."""
    if not (shared_data / "glasshouse-v0.1" / "glasshouse_v0.1_medium.jsonl").exists():
        pytest.skip("Glasshouse medium tier not in the shared data")
    args = ["run", "-q", "--systems", "bm25", "--no-baselines", "--datasets",
            "glasshouse-v0.1:medium", "--chunking", "turn", "--k", "10",
            "--data-dir", str(shared_data), "--out", str(tmp_path / "out")]  # fmt: skip
    loaded, other = _loaded_after(args, tmp_path)
    assert loaded == "[]"
    assert other == "[]"
