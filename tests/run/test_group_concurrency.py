"""--group-concurrency: haystack groups on parallel lanes, each with its own instance; per-system
limits; the tries a system reports recorded per record. No timing is asserted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from recallbench import testing
from recallbench.contracts import Memory
from recallbench.llm.types import Attempt
from recallbench.pipeline import resume_run, start_run
from recallbench.results import store
from recallbench.run.calls import CallPool, Limiter
from recallbench.spec import RunSpec
from recallbench.systems import registry
from recallbench.systems.registry import SystemEntry

FIXTURE = Path(__file__).parents[1] / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()
    for cls in (LimitedSystem, TriesSystem):
        registry.BUILTINS[cls.name] = SystemEntry(cls.name, f"{__name__}:{cls.__name__}", "test")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


class _Limits:
    max_concurrency = 2
    requests_per_second = None


class LimitedSystem(testing.SlowAddBM25):
    """slow-add declaring ``limits.max_concurrency = 2`` (as the http system's config does)."""

    name = "limited"
    limits = _Limits()


class TriesSystem(testing.SlowAddBM25):
    """Reports two tries (a 429, then a 200) for every call, per thread, like the http system."""

    name = "tries"

    def last_attempts(self) -> tuple[Attempt, ...]:
        return (Attempt(1, 429, "HTTP 429", 0.05, 1.5), Attempt(2, 200, None, 0.0, 2.5))

    def search(self, query: str, k: int) -> list[Memory]:
        return super().search(query, k)


def _run(tmp: Path, name: str, spec: RunSpec, **kw: Any) -> Path:
    return start_run(spec, tmp / "data", tmp / name, **kw).run_dir


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_parallel_groups_give_the_results_of_one_at_a_time(tmp_path: Path) -> None:
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=12)
    spec = RunSpec(
        systems=("slow-add", "bm25", "random"),
        datasets=(f"longmemeval@{data}", "sample"),
        k=(1, 5),
        concurrency=2,
        system_configs={"slow-add": {"add_delay_s": 0.05}},
    )
    one = _run(tmp_path, "one", spec)
    testing.SlowAddBM25.peak = 0
    four = _run(tmp_path, "four", spec, group_concurrency=4)
    assert testing.SlowAddBM25.peak > 1  # groups really ran at once
    testing.compare_runs(one, four)
    manifest = json.loads((four / "run.json").read_text())
    assert manifest["execution"]["group_concurrency"] == 4
    assert manifest["spec_hash"] == json.loads((one / "run.json").read_text())["spec_hash"]
    ingests = _lines(four / store.INGEST)
    keys = [(r["dataset"], r["system"], r["group"]) for r in ingests]
    assert len(keys) == len(set(keys)) == len(_lines(one / store.INGEST)) == 3 * (12 + 1)


def test_each_instance_serves_one_group_at_a_time(tmp_path: Path) -> None:
    testing.HostileSystem.overlaps = 0
    spec = RunSpec(systems=("hostile",), datasets=(f"longmemeval@{FIXTURE}",), k=(1,))
    run = _run(tmp_path, "out", spec, group_concurrency=3)
    assert testing.HostileSystem.overlaps == 0
    obs = _lines(run / store.OBSERVATIONS)
    assert {o["outcome"] for o in obs} <= {"usable", "unusable"} and len(obs) == 5
    # each group's records are together: the group order of the file has no repeats
    groups = [o["group"] for o in obs]
    assert [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g] == list(
        dict.fromkeys(groups)
    )


def test_a_timeout_quarantines_only_its_lanes_instance(tmp_path: Path) -> None:
    spec = RunSpec(
        systems=("hostile",),
        datasets=(f"longmemeval@{FIXTURE}",),
        k=(1,),
        timeout_s=0.5,
        system_configs={"hostile": {"mode": "add_sleeps", "sleep_s": 2.0, "times": 1}},
    )
    run = _run(tmp_path, "out", spec, group_concurrency=3)
    ingests = _lines(run / store.INGEST)
    bad = [r for r in ingests if r["outcome"] != "usable"]
    assert len(bad) == 1 and "timeout after 0.5 s" in bad[0]["outcome_reason"]
    obs = _lines(run / store.OBSERVATIONS)
    failed = [o for o in obs if o["outcome"] == "error"]
    assert [o["group"] for o in failed] == [bad[0]["group"]]
    assert failed[0]["outcome_reason"].startswith("instance quarantined after a timeout")
    assert len(obs) == 5


def test_max_concurrency_caps_calls_in_flight_across_lanes(tmp_path: Path) -> None:
    testing.SlowAddBM25.peak = 0
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=8)
    spec = RunSpec(
        systems=("limited",),
        datasets=(f"longmemeval@{data}",),
        k=(1,),
        system_configs={"limited": {"add_delay_s": 0.02}},
    )
    run = _run(tmp_path, "out", spec, group_concurrency=4)
    assert 1 <= testing.SlowAddBM25.peak <= 2
    assert all(o["outcome"] == "usable" for o in _lines(run / store.OBSERVATIONS))


def test_limiter_spaces_call_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench.run import calls

    clock = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(round(s, 6))
        clock[0] += s

    monkeypatch.setattr(calls.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(calls.time, "sleep", sleep)
    limiter = Limiter(None, requests_per_second=4.0)
    for _ in range(3):
        limiter.acquire()
        limiter.release()
    assert slept == [0.25, 0.25]  # the first starts at once, then one every 1/4 s


def test_an_abandoned_call_gives_its_slot_back() -> None:
    limiter = Limiter(max_concurrency=1)
    pool = CallPool(2, limiter)
    stuck = pool.run(lambda: time.sleep(1.0), 0.05)
    assert stuck.timed_out
    after = pool.run(lambda: "ok", 5.0)  # would wait for the stuck call's slot otherwise
    assert after.ok and after.result == "ok"
    pool.close()


def test_tries_reported_by_the_system_are_recorded(tmp_path: Path) -> None:
    spec = RunSpec(
        systems=("tries", "bm25"),
        datasets=("sample",),
        k=(1,),
        system_configs={"tries": {"add_delay_s": 0}},
    )
    run = _run(tmp_path, "out", spec)
    obs = [o for o in _lines(run / store.OBSERVATIONS) if o["system"] == "tries"]
    assert {o["attempt"] for o in obs} == {2}
    assert obs[0]["retries"] == [
        {"attempt": 1, "status": 429, "error": "HTTP 429", "wait_s": 0.05, "latency_ms": 1.5},
        {"attempt": 2, "status": 200, "error": None, "wait_s": 0.0, "latency_ms": 2.5},
    ]
    (ingest,) = [r for r in _lines(run / store.INGEST) if r["system"] == "tries"]
    calls = [r["call"] for r in ingest["retries"]]
    assert calls[:2] == ["reset", "reset"] and calls[2].startswith("add of session ")
    bm25 = [o for o in _lines(run / store.OBSERVATIONS) if o["system"] == "bm25"]
    assert all(o["attempt"] == 1 and "retries" not in o for o in bm25)  # bytes as before


KILL_SCRIPT = """
from recallbench import testing
testing.register()
from pathlib import Path
from recallbench.pipeline import start_run
from recallbench.spec import RunSpec
spec = RunSpec(systems=("slow-add",), datasets=("longmemeval@{data}",), k=(1, 5),
               system_configs={{"slow-add": {{"add_delay_s": 0.05}}}})
start_run(spec, Path({d!r}), Path({out!r}), group_concurrency=4)
"""


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_sigkill_then_resume_with_lanes_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=40)
    out = tmp_path / "killed"
    script = KILL_SCRIPT.format(data=str(data), d=str(tmp_path / "d"), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    deadline = time.monotonic() + 60
    obs_path: Path | None = None
    while time.monotonic() < deadline:
        runs = list(out.glob("*/observations.jsonl")) if out.exists() else []
        if runs and len(runs[0].read_bytes().splitlines()) >= 8:
            obs_path = runs[0]
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert obs_path is not None, "the run never got going"
    run_dir = obs_path.parent
    assert len(obs_path.read_bytes().splitlines()) < 40  # killed part-way
    resumed = resume_run(run_dir, tmp_path / "d")
    assert resumed.manifest.group_concurrency == 4
    keys = [o["question_id"] for o in _lines(run_dir / store.OBSERVATIONS)]
    assert len(keys) == len(set(keys)) == 40
    groups = [r["group"] for r in _lines(run_dir / store.INGEST)]
    assert len(groups) == len(set(groups)) == 40
    fresh = start_run(
        RunSpec(
            systems=("slow-add",),
            datasets=(f"longmemeval@{data}",),
            k=(1, 5),
            system_configs={"slow-add": {"add_delay_s": 0.05}},
        ),
        tmp_path / "d",
        tmp_path / "fresh",
    )
    testing.compare_runs(run_dir, fresh.run_dir)
