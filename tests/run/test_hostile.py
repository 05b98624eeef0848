"""The adapter boundary: a hostile plugin (``recallbench.testing.HostileSystem``) per defect."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from recallbench import testing
from recallbench.pipeline import start_run
from recallbench.results import store
from recallbench.spec import RunSpec

REPO = Path(__file__).resolve().parents[2]
LME = REPO / "tests" / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
MULTI = f"longmemeval@{LME}"  # five questions, each its own haystack group
BASELINES = ("random", "bm25", "naive")


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench.systems import registry

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()
    testing.HostileSystem.log.clear()
    testing.HostileSystem.overlaps = 0


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _run(
    tmp_path: Path, config: dict[str, Any], systems: tuple[str, ...] = ("hostile", "bm25"),
    dataset: str = "sample", name: str = "out", **kw: Any,
) -> Path:  # fmt: skip
    configs = {"hostile": config} if "hostile" in systems else {}
    spec = RunSpec(systems=systems, datasets=(dataset,), k=(1, 5), system_configs=configs, **kw)
    return start_run(spec, tmp_path / "data", tmp_path / name).run_dir


def _obs(run_dir: Path, system: str = "hostile") -> list[dict[str, Any]]:
    return [o for o in store.read_observation_records(run_dir) if o["system"] == system]


def _complete(run_dir: Path, status: str = "complete") -> None:
    """The run went to the end and was scored: ``complete``, or ``failed`` (``status``) where
    the hostile system failed every call of a kind, or more than the failure threshold."""
    assert json.loads((run_dir / "run.json").read_text())["status"] == status


FAILS_THE_RUN = frozenset(
    {
        "constructor_raises",
        "lone_surrogate",
        "search_refused",
        "server_down",
        "str_source_turns",
        "text_int",
        "text_none",
        "unknown_turn",
    }
)
"""Modes in which the hostile system fails every search (or more than half of them)."""


@pytest.mark.parametrize(
    ("mode", "field"),
    [
        ("text_none", "memories[0].text: a NoneType, expected str"),
        ("text_int", "memories[0].text: a int, expected str"),
        ("lone_surrogate", "memories[0].text: not valid UTF-8 text"),
        ("str_source_turns", "memories[0].source_turns: a str, expected a list of turn ids"),
        (
            "unknown_turn",
            "memories[0].source_turns: names turns not handed to the system in this haystack "
            "group: no-such-turn",
        ),
    ],
)
def test_an_impossible_value_is_an_error_naming_the_field(
    tmp_path: Path, mode: str, field: str
) -> None:
    run = _run(tmp_path, {"mode": mode})
    _complete(run, "failed")  # every search of the hostile system is an error
    obs = _obs(run)
    assert len(obs) == 50 and len(_obs(run, "bm25")) == 50
    answered = [o for o in obs if o["outcome"] != "unusable"]  # bm25 found nothing: no memory
    assert answered and all(o["outcome"] == "error" for o in answered)
    assert all(f"invalid result: {field}" in o["outcome_reason"] for o in answered)


def test_a_numpy_score_is_normalised_to_a_float(tmp_path: Path) -> None:
    run = _run(tmp_path, {"mode": "numpy_score"})
    _complete(run)
    usable = [o for o in _obs(run) if o["outcome"] == "usable"]
    assert usable
    assert all(type(m["score"]) is float for o in usable for m in o["memories"])


def test_a_system_that_cannot_be_built_fails_every_question_and_others_run(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, {"mode": "constructor_raises"}, dataset=MULTI)
    _complete(run, "failed")
    obs = _obs(run)
    assert len(obs) == 5
    assert all(o["outcome"] == "error" for o in obs)
    assert {o["outcome_reason"] for o in obs} == {
        "system could not be built: RuntimeError: cannot connect"
    }
    others = _obs(run, "bm25")
    assert len(others) == 5 and not any(o["outcome"] == "error" for o in others)


def test_an_add_that_times_out_quarantines_the_instance(tmp_path: Path) -> None:
    run = _run(tmp_path, {"mode": "add_sleeps", "sleep_s": 1.0}, dataset=MULTI, timeout_s=0.2)
    time.sleep(1.0)  # let the abandoned add return, then look at what it did afterwards
    _complete(run)
    obs = _obs(run)
    first, rest = obs[0], obs[1:]
    assert first["outcome"] == "error"
    assert first["outcome_reason"].startswith("instance quarantined after a timeout (add of")
    assert all(o["outcome"] == "usable" for o in rest)  # a fresh instance per later group
    ingest = [r for r in _lines(run / store.INGEST) if r["system"] == "hostile"]
    assert [r["outcome"] for r in ingest] == ["error", "usable", "usable", "usable", "usable"]
    first_instance = testing.HostileSystem.log[0][0]
    calls = [(m, d) for i, m, d in testing.HostileSystem.log if i == first_instance]
    assert calls[:2] == [("reset", ""), ("add", calls[1][1])]
    assert calls[2:] == [("close", "")]  # never called again, only closed
    assert testing.HostileSystem.overlaps == 0


def test_a_search_that_times_out_never_runs_beside_another_call(tmp_path: Path) -> None:
    run = _run(
        tmp_path, {"mode": "search_sleeps", "sleep_s": 1.0}, systems=("hostile",),
        timeout_s=0.2, concurrency=1,
    )  # fmt: skip
    time.sleep(1.0)
    _complete(run, "failed")  # the one group's instance was quarantined: its searches failed
    obs = _obs(run)
    assert len(obs) == 50
    assert obs[0]["outcome_reason"] == "timeout after 0.2 s"
    assert {o["outcome_reason"] for o in obs[1:]} == {"instance quarantined after a timeout"}
    assert testing.HostileSystem.overlaps == 0
    assert [m for _, m, _ in testing.HostileSystem.log].count("search") == 1


def test_an_add_that_raises_makes_the_ingest_partial_and_searches_still_run(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, {"mode": "add_raises"})
    _complete(run)
    (ingest,) = [r for r in _lines(run / store.INGEST) if r["system"] == "hostile"]
    assert ingest["outcome"] == "partial"
    assert "RuntimeError: add of" in ingest["outcome_reason"]
    assert any(o["outcome"] == "usable" for o in _obs(run))


def test_a_reused_result_list_is_copied_when_the_call_returns(tmp_path: Path) -> None:
    run = _run(tmp_path, {"mode": "reused_list"}, concurrency=1)
    mine = {o["question_id"]: o["memories"] for o in _obs(run)}
    bm25 = {o["question_id"]: o["memories"] for o in _obs(run, "bm25")}
    assert mine == bm25


def test_claiming_every_turn_costs_every_turn_and_is_flagged(tmp_path: Path) -> None:
    run = _run(tmp_path, {"mode": "claims_every_turn"})
    turns = _lines(REPO / "src" / "recallbench" / "datasets" / "sample" / "turns.jsonl")
    corpus = sum(len(t["text"]) for t in turns)
    obs = _obs(run)
    assert {o["chars_returned"] for o in obs} == {corpus}
    verdicts = [v for v in _lines(run / store.VERDICTS) if v["system"] == "hostile"]
    assert all(v["chars_returned"] == corpus for v in verdicts)
    assert all(v["flags"][0].startswith("source_text_absent: memory all") for v in verdicts)
    bm25 = [v for v in _lines(run / store.VERDICTS) if v["system"] == "bm25"]
    assert all("flags" not in v for v in bm25)  # no flag, no field: same bytes as before


def test_a_system_cannot_change_the_sessions_later_systems_see(tmp_path: Path) -> None:
    with_plugin = _run(tmp_path, {"mode": "mutates_session"}, name="a")
    without = _run(tmp_path, {}, systems=("bm25",), name="b")
    testing.compare_runs(with_plugin, without, systems=("bm25",))


ALL_MODES = sorted(testing.HostileSystem.MODES)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("plain")
    spec = RunSpec(systems=BASELINES, datasets=(MULTI,), k=(1, 5), timeout_s=0.2)
    return start_run(spec, tmp / "data", tmp / "out").run_dir


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_run_with_the_hostile_plugin_first_completes_and_baselines_agree(
    tmp_path: Path, plain_run: Path, mode: str
) -> None:
    config: dict[str, Any] = {"mode": mode, "sleep_s": 0.5}
    run = _run(tmp_path, config, systems=("hostile", *BASELINES), dataset=MULTI, timeout_s=0.2)
    _complete(run, "failed" if mode in FAILS_THE_RUN else "complete")
    verdicts = _lines(run / store.VERDICTS)
    for system in ("hostile", *BASELINES):
        mine = [v for v in verdicts if v["system"] == system]
        assert len(mine) == 5, system  # every question accounted for
        assert all(v["outcome"] == "usable" or v["outcome_reason"] for v in mine)
    testing.compare_runs(run, plain_run, systems=BASELINES)
