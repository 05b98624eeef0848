"""``run --repeats N``: the repeat joins the key of every record (observations, ingests, verdicts,
answers, judgements, metric rows), resume and repair key on it, repeat 0 is the single run byte
for byte, each repeat's LLM calls use the repeat as the cache's sample index, and format-3
folders still read (as repeat 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench import testing
from recallbench.cli import app
from recallbench.pipeline import repair_run, resume_run, score_run, start_run
from recallbench.results import store
from recallbench.spec import RunSpec


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write_lines(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


SPEC = RunSpec(systems=("bm25", "random"), datasets=("sample",), k=(1, 5))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One single run and one of three repeats, shared by the tests that only read them."""
    tmp = tmp_path_factory.mktemp("repeats")
    single = start_run(SPEC, tmp / "data", tmp / "single").run_dir
    spec = RunSpec(systems=SPEC.systems, datasets=SPEC.datasets, k=SPEC.k, repeats=3)
    three = start_run(spec, tmp / "data", tmp / "three").run_dir
    return {"single": single, "three": three, "data": tmp / "data"}


def test_the_repeat_joins_every_key(runs: dict[str, Path]) -> None:
    run = runs["three"]
    obs = _lines(run / store.OBSERVATIONS)
    keys = [(o["system"], o["question_id"], o.get("repeat", 0)) for o in obs]
    assert len(keys) == len(set(keys)) == 3 * 2 * 50
    assert all("repeat" not in o for o in obs[:100])  # repeat 0: left out, as a single run
    assert {o.get("repeat") for o in obs[100:]} == {1, 2}
    ingests = _lines(run / store.INGEST)
    assert sorted((r["system"], r.get("repeat", 0)) for r in ingests) == sorted(
        (s, r) for s in SPEC.systems for r in range(3)
    )
    verdicts = _lines(run / store.VERDICTS)
    vkeys = {(v["system"], v["question_id"], v.get("repeat", 0)) for v in verdicts}
    assert vkeys == set(keys)
    rows = _lines(run / store.METRICS)
    assert {r.get("repeat", 0) for r in rows} == {0, 1, 2}
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["format_version"] == "4" and manifest["spec"]["repeats"] == 3


def test_repeat_zero_is_the_single_run(runs: dict[str, Path]) -> None:
    single, three = runs["single"], runs["three"]

    def first(path: Path) -> list[dict]:
        return [
            r for r in _lines(path) if "repeat" not in r and ":repeat_" not in r.get("metric", "")
        ]

    tmp = three.parent / "repeat0"
    tmp.mkdir(exist_ok=True)
    for name in (store.VERDICTS, store.METRICS):
        records = [{**r, "run_id": single.name} for r in first(three / name)]
        _write_lines(tmp / name, records)
    assert testing.run_differences(single, tmp) == []
    assert "repeats" not in json.loads((single / "run.json").read_text())["spec"]


def test_figures_over_repeats_per_slice(runs: dict[str, Path]) -> None:
    rows = _lines(runs["three"] / store.METRICS)
    over = {
        (r["system"], r["slice"], r["metric"]): r
        for r in rows
        if r["metric"].startswith("evidence_recall:repeat_") and r["k"] == 5
    }
    per = {
        (r["system"], r["slice"], r.get("repeat", 0)): r["value"]
        for r in rows
        if r["metric"] == "evidence_recall" and r["k"] == 5
    }
    for system in SPEC.systems:
        for s in ("all", "fact", "temporal"):
            values = [per[(system, s, i)] for i in range(3)]
            mean = over[(system, s, "evidence_recall:repeat_mean")]
            assert mean["value"] == pytest.approx(sum(values) / 3, abs=1e-6)
            assert mean["denominator_name"] == "repeats" and mean["denominator"] == 3
            tol = over[(system, s, "evidence_recall:repeat_tolerance")]
            sd = over[(system, s, "evidence_recall:repeat_sd")]
            assert tol["value"] == pytest.approx(2 * sd["value"], abs=2e-6)  # each rounded
    # bm25 is deterministic: no spread; random gets seed + repeat, so its repeats differ
    assert over[("bm25", "all", "evidence_recall:repeat_sd")]["value"] == 0.0
    assert over[("random", "all", "evidence_recall:repeat_sd")]["value"] > 0.0
    summary = (runs["three"] / "summary.md").read_text()
    assert "### sample: over 3 repeats" in summary
    assert "repeats: 3 (tables show repeat 0" in summary


def test_two_repeats_say_the_tolerance_is_not_measured(tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample",), k=(1,), repeats=2)
    run = start_run(spec, tmp_path / "data", tmp_path / "out").run_dir
    tol = [r for r in _lines(run / store.METRICS) if r["metric"].endswith(":repeat_tolerance")]
    assert tol and all(r["value"] is None for r in tol)
    assert all(r["null_reason"].startswith("not measured") for r in tol)
    assert "reproduction tolerance not measured" in (run / "summary.md").read_text()


def test_resume_continues_an_interrupted_repeat(runs: dict[str, Path], tmp_path: Path) -> None:
    spec = RunSpec(systems=SPEC.systems, datasets=SPEC.datasets, k=SPEC.k, repeats=3)
    run = start_run(spec, runs["data"], tmp_path / "cut").run_dir
    obs = _lines(run / store.OBSERVATIONS)
    kept = obs[: 100 + 30]  # repeat 0 whole, repeat 1 in part, repeat 2 never started
    _write_lines(run / store.OBSERVATIONS, kept)
    ingests = [r for r in _lines(run / store.INGEST) if r.get("repeat", 0) < 2]
    _write_lines(run / store.INGEST, ingests)
    for name in (store.VERDICTS, store.METRICS, store.SUMMARY):
        (run / name).unlink()
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**manifest, "status": "interrupted"}))

    resume_run(run, runs["data"])
    obs = _lines(run / store.OBSERVATIONS)
    keys = [(o["system"], o["question_id"], o.get("repeat", 0)) for o in obs]
    assert len(keys) == len(set(keys)) == 300
    assert obs[:130] == kept  # nothing asked twice
    ingest_keys = [(r["system"], r.get("repeat", 0)) for r in _lines(run / store.INGEST)]
    assert len(ingest_keys) == len(set(ingest_keys)) == 6
    testing.compare_runs(runs["three"], run)
    assert repair_run(run) == 0  # the repeats are not duplicates


def test_repair_drops_a_duplicate_within_one_repeat_only(tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample",), k=(1,), repeats=2)
    run = start_run(spec, tmp_path / "data", tmp_path / "out").run_dir
    obs = _lines(run / store.OBSERVATIONS)
    _write_lines(run / store.OBSERVATIONS, [*obs, obs[60]])  # a second line of repeat 1
    assert repair_run(run) == 1
    assert len(_lines(run / store.OBSERVATIONS)) == 100


def test_a_format_3_folder_reads_as_repeat_zero(runs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    old = tmp_path / runs["single"].name
    shutil.copytree(runs["single"], old)
    manifest = json.loads((old / "run.json").read_text())
    (old / "run.json").write_text(json.dumps({**manifest, "format_version": "3"}))
    before = (old / store.VERDICTS).read_bytes()
    scored = score_run(old, runs["data"])
    assert scored.manifest.format_version == "4"
    assert (old / store.VERDICTS).read_bytes() == before
    assert all(v.repeat == 0 for v in scored.verdicts)


def test_repeats_below_one_are_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "--systems", "bm25", "--no-baselines", "--repeats", "0",
              "--out", str(tmp_path / "o"), "-q"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--repeats must be an integer of at least 1" in result.output
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.slow
def test_each_repeat_samples_the_llm_afresh_and_is_cached_as_its_own(tmp_path: Path) -> None:
    """The mock reader and judge on loopback, two repeats: every answer and judgement of
    repeat r has cache sample index r, none of repeat 1 comes from repeat 0's cache entries,
    and a second run finds all of them in the cache."""
    args = ["run", "--systems", "bm25", "--no-baselines", "--mode", "answer", "--reader",
            "mock", "--judge", "mock-judge", "--repeats", "2", "--limit", "4", "-q",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    cli = CliRunner()
    for name in ("first", "second"):
        result = cli.invoke(app, [*args, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    (first,) = (tmp_path / "first").iterdir()
    (second,) = (tmp_path / "second").iterdir()
    for file in (store.ANSWERS, store.JUDGEMENTS):
        records = _lines(first / file)
        assert (
            sorted((r.get("repeat", 0), r["sample"]) for r in records)
            == [(0, 0)] * 4 + [(1, 1)] * 4
        )
        assert all(r["cached_calls"] == 0 for r in records)  # repeat 1 did not reuse repeat 0
        again = _lines(second / file)
        assert len(again) == 8 and all(r["cached_calls"] == r["calls"] > 0 for r in again)


def test_re_deriving_a_run_of_repeats_gives_the_same_bytes(runs: dict[str, Path]) -> None:
    run = runs["three"]
    names = (store.VERDICTS, store.METRICS, store.SUMMARY)
    before = {n: (run / n).read_bytes() for n in names}
    score_run(run, runs["data"])
    assert {n: (run / n).read_bytes() for n in names} == before


def test_the_call_factory_gives_each_sample_index_its_own_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from recallbench import answers
    from recallbench.llm.types import Endpoint
    from recallbench.spec import ModelChoice

    made: list[int] = []

    def client_call(role: object, cache: Path, use: bool, prices: object, sample: int):  # type: ignore[no-untyped-def]
        made.append(sample)
        return lambda request: (role, sample)

    monkeypatch.setattr(answers, "_client_call", client_call)
    role = answers.Role(ModelChoice("m"), Endpoint("http://127.0.0.1:9/v1", "m"), None)
    make = answers.call_factory(tmp_path)
    assert make(role)(None) == (role, 0)  # repeat 0: the sample index a single run uses
    assert make(role, sample=2)(None) == (role, 2)
    assert make(role, sample=2) is make(role, sample=2)  # one client per endpoint and sample
    assert made == [0, 2]
