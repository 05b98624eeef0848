"""--speed-sample: a seeded sample of searches run alone after their group's other searches,
recorded as such and the only ones scored for speed. No timing is asserted."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from recallbench import testing
from recallbench.contracts import Memory, Observation, Session
from recallbench.pipeline import start_run
from recallbench.results import store
from recallbench.score import speed as sp
from recallbench.spec import RunSpec, SpeedSpec
from recallbench.systems import registry
from recallbench.systems.registry import SystemEntry


class WatchedBM25(testing.SlowAddBM25):
    """slow-add noting, for every search, whether any other call of any instance ran during
    it (from its start to its end)."""

    name = "watched"
    lock = threading.Lock()
    running: dict[int, dict[str, Any]] = {}
    searches: dict[str, bool] = {}
    """Query text -> whether another call overlapped it."""

    def _enter(self, query: str | None) -> dict[str, Any]:
        me = {"query": query, "company": False}
        with WatchedBM25.lock:
            if WatchedBM25.running:
                me["company"] = True
                for other in WatchedBM25.running.values():
                    other["company"] = True
            WatchedBM25.running[id(me)] = me
        return me

    def _leave(self, me: dict[str, Any]) -> None:
        with WatchedBM25.lock:
            del WatchedBM25.running[id(me)]
            if me["query"] is not None:
                WatchedBM25.searches[me["query"]] = me["company"]

    def add(self, session: Session) -> None:
        me = self._enter(None)
        try:
            super().add(session)
        finally:
            self._leave(me)

    def search(self, query: str, k: int) -> list[Memory]:
        me = self._enter(query)
        try:
            return super().search(query, k)
        finally:
            self._leave(me)


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()
    registry.BUILTINS["watched"] = SystemEntry("watched", f"{__name__}:WatchedBM25", "test")
    WatchedBM25.searches = {}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _spec(data: Path, sample: int | None) -> RunSpec:
    return RunSpec(
        systems=("watched", "bm25"),
        datasets=(f"longmemeval@{data}",),
        k=(1, 5),
        concurrency=3,
        system_configs={"watched": {"add_delay_s": 0.01, "search_delay_s": 0.01}},
        speed=None if sample is None else SpeedSpec(sample=sample),
    )


def test_the_sample_is_searched_alone_and_recorded_as_such(tmp_path: Path) -> None:
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=12)
    plain = start_run(_spec(data, None), tmp_path, tmp_path / "plain", group_concurrency=4)
    WatchedBM25.searches = {}
    run = start_run(_spec(data, 6), tmp_path, tmp_path / "sampled", group_concurrency=4)
    obs = _lines(run.run_dir / store.OBSERVATIONS)
    questions = {q["question_id"]: q for q in json.loads(data.read_text())}
    sampled = {o["question_id"] for o in obs if o.get("speed_sample")}
    assert len(sampled) == 6
    # the same questions for every system, and the seeded draw the scorer documents
    for system in ("watched", "bm25"):
        mine = {o["question_id"] for o in obs if o["system"] == system and o.get("speed_sample")}
        assert mine == sampled
    assert sampled == sp.speed_sample(list(questions), 0, run.manifest.datasets[0].key, 6)
    # each sampled search ran with no other call of the system in flight; others overlapped
    texts = {questions[q]["question"]: q in sampled for q in questions}
    alone = [WatchedBM25.searches[t] for t, s in texts.items() if s]
    assert alone == [False] * 6
    assert any(WatchedBM25.searches[t] for t, s in texts.items() if not s)
    # the field is absent when not sampled, and accuracy does not change
    assert all("speed_sample" not in o for o in _lines(plain.run_dir / store.OBSERVATIONS))
    testing.compare_runs(plain.run_dir, run.run_dir)
    manifest = json.loads((run.run_dir / "run.json").read_text())
    assert manifest["spec"]["speed"]["sample"] == 6


def test_speed_is_scored_on_the_sample_only() -> None:
    def obs(qid: str, sampled: bool | None, latency: float = 100.0) -> Observation:
        return Observation(
            "r", "ds", "v", "g", qid, "http", 5, 1, "", latency, (), 0, "usable",
            speed_sample=sampled,
        )  # fmt: skip

    target = 500.0
    s = sp.observation_speed(obs("a", True), target, (), sampled=True)
    assert s.points == 1.0
    s = sp.observation_speed(obs("b", None), target, (), sampled=True)
    assert s.points is None and s.rule == sp.NOT_SAMPLED
    # without a sample every search is scored; a code fixed before measuring still wins
    assert sp.observation_speed(obs("b", None), target, ()).points == 1.0
    assert sp.observation_speed(obs("a", True), target, ("N7",), sampled=True).rule == "N7"
    summary = sp.summarise(
        [sp.observation_speed(obs(q, q in "ab" or None), target, (), True) for q in "abcde"],
        target,
    )
    assert summary.scored == 2 and summary.not_measurable == {sp.NOT_SAMPLED: 3}


def test_the_draw_is_seeded_and_bounded() -> None:
    ids = [f"q{i}" for i in range(40)]
    a = sp.speed_sample(ids, 7, "ds", 5)
    assert a == sp.speed_sample(ids, 7, "ds", 5) and len(a) == 5 and a <= set(ids)
    assert a != sp.speed_sample(ids, 8, "ds", 5)
    assert sp.speed_sample(ids[:3], 7, "ds", 5) == frozenset(ids[:3])
    with pytest.raises(sp.SpeedInputError, match="at least 1"):
        sp.speed_sample(ids, 7, "ds", 0)
