"""The finish_ingest hook's time (waiting for indexing) is its own figure, apart from add time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallbench import testing
from recallbench.pipeline import start_run
from recallbench.results import store
from recallbench.score.aggregate import NO_FINISH_HOOK
from recallbench.score.metrics import TIMING
from recallbench.spec import RunSpec
from recallbench.systems import registry


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()


def test_index_wait_and_add_time_split_the_ingest_time(tmp_path: Path) -> None:
    spec = RunSpec(systems=("slow-finish", "random"), datasets=("sample",), k=(1,))
    run = start_run(spec, tmp_path / "d", tmp_path / "out").run_dir
    rows = {
        (r["system"], r["metric"]): r
        for r in map(json.loads, (run / store.METRICS).read_text().splitlines())
        if r["slice"] == "all"
    }
    (ingest,) = [
        r
        for r in map(json.loads, (run / store.INGEST).read_text().splitlines())
        if r["system"] == "slow-finish"
    ]
    wait = rows[("slow-finish", "ingest_index_wait_ms_total")]
    add = rows[("slow-finish", "ingest_add_ms_total")]
    total = rows[("slow-finish", "ingest_ms_total")]
    assert wait["value"] == ingest["finish_ms"] and wait["denominator"] == 1
    assert add["value"] == pytest.approx(ingest["ingest_ms"] - ingest["finish_ms"])
    assert add["value"] + wait["value"] == pytest.approx(total["value"])
    assert wait["denominator_name"] == "haystack_groups_ingested"
    none = rows[("random", "ingest_index_wait_ms_total")]  # random declares no hook
    assert none["value"] is None and none["null_reason"] == NO_FINISH_HOOK
    assert rows[("random", "ingest_add_ms_total")]["value"] == pytest.approx(
        rows[("random", "ingest_ms_total")]["value"]
    )
    assert {"ingest_add_ms_total", "ingest_index_wait_ms_total"} <= TIMING  # compare_runs skips
    summary = (run / store.SUMMARY).read_text()
    assert "- ingest timing, slow-finish on sample: add " in summary
    assert "index wait (finish_ingest)" in summary and "ingest timing, random" not in summary
