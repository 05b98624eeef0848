"""The benchmark registry: built-ins by name, lazy imports, plugins through entry points."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import recallbench.registry as generic_registry
from recallbench import benchmarks
from recallbench.benchmarks import (
    ENTRY_POINT_GROUP,
    SAMPLE,
    Benchmark,
    get_benchmark,
    load_dataset,
    metric_catalogue,
)
from recallbench.errors import DatasetRefError, RegistryError
from recallbench.registry import Entry, Registry
from recallbench.score.metrics import MetricInfo, MetricKey
from recallbench.score.rules import RuleSet

PLUGIN = Benchmark(
    spec=dataclasses.replace(SAMPLE.spec, name="my-bench"),
    default_k=(2, 4),
    headline=(MetricKey("evidence_recall", 4),),
    metrics=(MetricInfo("my_metric", False, "count", "a plugin's own metric"),),
)
NOT_A_BENCHMARK = object()


def plugins(monkeypatch: pytest.MonkeyPatch, targets: dict[str, str]) -> None:
    eps = [EntryPoint(n, v, ENTRY_POINT_GROUP) for n, v in targets.items()]

    def entry_points(**params: Any) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == params.get("group")]

    monkeypatch.setattr(generic_registry, "entry_points", entry_points)


def test_every_builtin_is_a_benchmark_with_its_own_depths_and_headline() -> None:
    names = list(benchmarks.BENCHMARKS.entries())
    assert names == ["sample", "glasshouse-v0.1", "locomo", "longmemeval", "beam"]
    for name in names:
        bench = get_benchmark(name)
        assert bench.name == name and bench.default_k and bench.headline
        assert isinstance(bench.rules, RuleSet)
    assert get_benchmark("longmemeval").default_k == (1, 3, 5, 10, 30, 50)


def test_every_metric_a_run_can_write_has_a_direction() -> None:
    catalogue = metric_catalogue()
    for name in ("evidence_hit@10", "gh_dry:weighted", "f1:excl_cat5", "turn:recall_any@5",
                 "label:abstention", "rubric", "error_rate", "latency_ms_p50"):  # fmt: skip
        assert catalogue.get(name) is not None, name
    assert catalogue.higher_is_better("evidence_hit@10") is True
    assert catalogue.higher_is_better("latency_ms_p95") is False


def test_a_plugin_benchmark_is_found_and_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins(monkeypatch, {"my-bench": f"{__name__}:PLUGIN"})
    assert list(benchmarks.BENCHMARKS.entries())[-1] == "my-bench"
    ds = load_dataset("my-bench", Path("."))
    assert ds.benchmark == "my-bench" and ds.default_k == (2, 4)
    assert metric_catalogue(["my-bench"]).higher_is_better("my_metric") is False


def test_a_plugin_cannot_replace_a_builtin_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins(monkeypatch, {"locomo": f"{__name__}:PLUGIN"})
    assert benchmarks.BENCHMARKS.entries()["locomo"].source == "builtin"
    assert [e.name for e in benchmarks.BENCHMARKS.shadowed] == ["locomo"]


def test_a_plugin_that_is_not_a_benchmark_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins(monkeypatch, {"bogus": f"{__name__}:NOT_A_BENCHMARK"})
    with pytest.raises(RegistryError, match="must be a Benchmark"):
        get_benchmark("bogus")


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(DatasetRefError, match="unknown dataset 'nope'; known: sample, glasshouse"):
        get_benchmark("nope")


def test_two_plugins_claiming_one_name_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [
        EntryPoint("x", "a:One", "recallbench.test"),
        EntryPoint("x", "b:Two", "recallbench.test"),
    ]
    monkeypatch.setattr(generic_registry, "entry_points", lambda group: eps)
    with pytest.raises(RegistryError, match="two plugins register the thing 'x'"):
        Registry("thing", {}, "recallbench.test").entries()
    assert Registry("thing", {"y": Entry("y", "z:Y")}, None).entries()["y"].target == "z:Y"


def test_loading_one_benchmark_imports_no_other() -> None:
    code = (
        "import sys\n"
        "from recallbench.benchmarks import get_benchmark\n"
        "get_benchmark('locomo')\n"
        "print(sorted({m.split('.')[2] for m in sys.modules"
        " if m.startswith('recallbench.benchmarks.') and m.count('.') >= 3}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['locomo']"
