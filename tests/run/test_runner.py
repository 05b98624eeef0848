from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recallbench import testing
from recallbench.pipeline import resume_run, start_run
from recallbench.results import store
from recallbench.spec import RunSpec


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench.systems import registry

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _strip(records: list[dict], drop: set[str]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in drop} for r in records]


TIMING_METRICS = {
    "latency_ms_p50",
    "latency_ms_p90",
    "latency_ms_p95",
    "latency_ms_p99",
    "latency_ms_max",
    "ingest_ms_per_session",
    "ingest_ms_total",
    "ingest_add_ms_total",
    "ingest_index_wait_ms_total",
    "ingest_turns_per_s",
}


def _comparable(run_dir: Path) -> tuple[list[dict], list[dict]]:
    verdicts = _strip(_lines(run_dir / store.VERDICTS), {"run_id", "run_date"})
    metrics = [
        m
        for m in _strip(_lines(run_dir / store.METRICS), {"run_id", "run_date"})
        if m["metric"] not in TIMING_METRICS
    ]
    return verdicts, metrics


def test_errors_and_timeouts_are_misses_in_the_denominator(tmp_path: Path) -> None:
    spec = RunSpec(systems=("flaky",), datasets=("sample",), k=(1, 5), timeout_s=0.5)
    scored = start_run(spec, tmp_path / "data", tmp_path / "out")
    obs = _lines(scored.run_dir / store.OBSERVATIONS)
    errors = [o for o in obs if o["outcome"] == "error"]
    reasons = {o["outcome_reason"] for o in errors}
    assert any("RuntimeError: backend exploded" in r for r in reasons)
    assert any(r.startswith("timeout after 0.5 s") for r in reasons)
    assert all(o["latency_ms"] is None for o in errors)
    assert len(obs) == 50  # the run went on
    verdicts = {v["question_id"]: v for v in _lines(scored.run_dir / store.VERDICTS)}
    for o in errors:
        v = verdicts[o["question_id"]]
        assert v["outcome"] == "error"
        values = [x for x in v["metrics"].values() if x is not None]
        assert all(x == 0.0 for x in values)
    hit = next(
        m for m in scored.metrics if m.metric == "evidence_hit" and m.k == 5 and m.slice == "all"
    )
    n_with_evidence = sum(
        1 for v in verdicts.values() if v["metrics"]["evidence_hit@5"] is not None
    )
    assert hit.denominator == n_with_evidence
    assert "misses" in hit.denominator_name
    p50 = next(m for m in scored.metrics if m.metric == "latency_ms_p50")
    assert p50.n_excluded == sum(1 for o in obs if o["outcome"] != "usable")


def test_no_source_turns_gives_null_with_reason_never_zero(tmp_path: Path) -> None:
    spec = RunSpec(systems=("no-source", "bm25"), datasets=("sample",), k=(5,))
    scored = start_run(spec, tmp_path / "data", tmp_path / "out")
    row = next(
        m
        for m in scored.metrics
        if m.system == "no-source" and m.metric == "evidence_hit" and m.slice == "all"
    )
    assert row.value is None
    assert row.null_reason and "no_source_turns" in row.null_reason
    bm25 = next(
        m
        for m in scored.metrics
        if m.system == "bm25" and m.metric == "evidence_hit" and m.slice == "all"
    )
    assert bm25.value is not None and bm25.value > 0


def test_concurrency_gives_the_same_verdicts(tmp_path: Path) -> None:
    one = start_run(
        RunSpec(systems=("random", "bm25"), datasets=("sample",)), tmp_path / "d", tmp_path / "a"
    )
    four = start_run(
        RunSpec(systems=("random", "bm25"), datasets=("sample",), concurrency=4),
        tmp_path / "d",
        tmp_path / "b",
    )
    assert _comparable(one.run_dir)[0] == _comparable(four.run_dir)[0]


def test_results_folder_is_self_describing(tmp_path: Path) -> None:
    scored = start_run(
        RunSpec(systems=("bm25",), datasets=("sample",)), tmp_path / "d", tmp_path / "out"
    )
    names = {p.name for p in scored.run_dir.iterdir()}
    assert {
        "run.json",
        "observations.jsonl",
        "ingest.jsonl",
        "verdicts.jsonl",
        "metrics.jsonl",
        "summary.md",
    } <= names
    manifest = json.loads((scored.run_dir / "run.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["run_id"] == scored.run_dir.name
    assert manifest["run_id"].endswith(manifest["spec_hash"])
    summary = (scored.run_dir / "summary.md").read_text()
    assert manifest["run_id"] in summary
    assert manifest["datasets"][0]["checksum"] in summary


KILL_SCRIPT = """
from recallbench import testing
testing.register()
from pathlib import Path
from recallbench.pipeline import start_run
from recallbench.spec import RunSpec
spec = RunSpec(systems=("slow-bm25", "random"), datasets=("sample",), k=(1, 5))
start_run(spec, Path({data!r}), Path({out!r}))
"""


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_sigkill_then_resume_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    script = KILL_SCRIPT.format(data=str(tmp_path / "d"), out=str(out))
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 60
    obs_path: Path | None = None
    while time.monotonic() < deadline:
        runs = list(out.glob("*/observations.jsonl")) if out.exists() else []
        if runs and len(runs[0].read_bytes().splitlines()) >= 15:
            obs_path = runs[0]
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert obs_path is not None, "the run never got going"
    run_dir = obs_path.parent
    before = len(obs_path.read_bytes().splitlines())
    assert before < 100  # killed part-way (2 systems x 50 questions)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"

    resumed = resume_run(run_dir, tmp_path / "d")
    obs = _lines(run_dir / store.OBSERVATIONS)
    keys = [(o["system"], o["question_id"]) for o in obs]
    assert len(keys) == len(set(keys)) == 100
    assert {o["run_id"] for o in obs} == {run_dir.name}
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed_at"]) == 1

    fresh = start_run(
        RunSpec(systems=("slow-bm25", "random"), datasets=("sample",), k=(1, 5)),
        tmp_path / "d",
        tmp_path / "fresh",
    )
    assert _comparable(resumed.run_dir) == _comparable(fresh.run_dir)


class _Misnamed:
    """A plugin whose own ``name`` is not the name it is registered under."""

    name = "something-else"

    def __init__(self, context: object = None) -> None:
        from recallbench.systems.base import Capabilities

        self.capabilities = Capabilities()

    def add(self, session: object) -> None:
        pass

    def search(self, query: str, k: int) -> list:
        return []

    def reset(self) -> None:
        pass


class _NoCapabilities(_Misnamed):
    def __init__(self, context: object = None) -> None:
        pass


def test_records_use_the_registry_name_and_a_plugin_without_capabilities_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallbench.registry import Entry
    from recallbench.systems import registry

    monkeypatch.setitem(registry.BUILTINS, "misnamed", Entry("misnamed", f"{__name__}:_Misnamed"))
    monkeypatch.setitem(registry.BUILTINS, "nocaps", Entry("nocaps", f"{__name__}:_NoCapabilities"))
    spec = RunSpec(systems=("misnamed", "nocaps", "bm25"), datasets=("sample",), k=(1,))
    scored = start_run(spec, tmp_path / "d", tmp_path / "out")
    observations = _lines(scored.run_dir / "observations.jsonl")
    assert {o["system"] for o in observations} == {"misnamed", "nocaps", "bm25"}
    nocaps = [o for o in observations if o["system"] == "nocaps"]
    assert len(nocaps) == 50 and all(o["outcome"] == "error" for o in nocaps)
    assert "could not be built: AttributeError" in nocaps[0]["outcome_reason"]
    # the run went to the end; nocaps failed every call, so it ends failed (issue 12)
    assert json.loads((scored.run_dir / "run.json").read_text())["status"] == "failed"


class _CloseRaises(_Misnamed):
    def close(self) -> None:
        raise RuntimeError("close exploded")


def test_a_close_that_raises_is_a_warning_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallbench.registry import Entry
    from recallbench.systems import registry

    monkeypatch.setitem(
        registry.BUILTINS, "badclose", Entry("badclose", f"{__name__}:_CloseRaises")
    )
    spec = RunSpec(systems=("badclose", "bm25"), datasets=("sample",), k=(1,))
    with pytest.warns(RuntimeWarning, match="badclose: close\\(\\) raised RuntimeError"):
        scored = start_run(spec, tmp_path / "d", tmp_path / "out")
    observations = _lines(scored.run_dir / "observations.jsonl")
    assert sum(o["system"] == "badclose" for o in observations) == 50
    assert json.loads((scored.run_dir / "run.json").read_text())["status"] == "complete"
