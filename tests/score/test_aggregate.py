"""A baseline run on the bundled sample: every figure is recomputable from verdicts.jsonl,
re-scoring is byte-identical, and the results folder describes itself."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.contracts import FORMAT_VERSION
from recallbench.pipeline import score_run, start_run
from recallbench.spec import RunSpec

SYSTEMS = ("random", "bm25", "naive")
TIMING = {
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
    "speed_points",  # from the observations' timing (recallbench.score.speed), like the rest
}
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)$")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("aggregate")
    spec = RunSpec(systems=SYSTEMS, datasets=("sample",), k=(1, 5, 10))
    scored = start_run(spec, data_dir=tmp, out_dir=tmp / "results", cache_dir=tmp / "cache")
    return scored.run_dir, tmp


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _recompute(verdicts: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[Any, int, int]]:
    """(dataset, system, slice, metric key) -> (value, denominator, n_excluded), from verdicts."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for v in verdicts:
        groups.setdefault((v["dataset"], v["system"], "all"), []).append(v)
        if v["slice"] != "all":
            groups.setdefault((v["dataset"], v["system"], v["slice"]), []).append(v)
    out: dict[tuple[Any, ...], tuple[Any, int, int]] = {}
    for (ds, system, slice_), vs in groups.items():
        per_question: dict[str, list[Any]] = {}
        for v in vs:
            for key, value in v["metrics"].items():
                per_question.setdefault(key, []).append(value)
            per_question.setdefault("chars_returned_mean", []).append(v["chars_returned"])
            per_question.setdefault("memories_returned_mean", []).append(v["n_returned"])
            per_question.setdefault("error_rate", []).append(float(v["outcome"] == "error"))
            per_question.setdefault("unusable_rate", []).append(float(v["outcome"] == "unusable"))
        for key, values in per_question.items():
            present = [x for x in values if x is not None]
            mean = round(sum(present) / len(present), 6) if present else None
            out[(ds, system, slice_, key)] = (mean, len(present), len(values) - len(present))
    return out


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    key = row["metric"] if row["k"] is None else f"{row['metric']}@{row['k']}"
    return (row["dataset"], row["system"], row["slice"], key)


def test_every_metric_row_is_recomputable_from_verdicts(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    verdicts = _jsonl(run_dir / "verdicts.jsonl")
    rows = [r for r in _jsonl(run_dir / "metrics.jsonl") if r["metric"] not in TIMING]
    expected = _recompute(verdicts)
    assert len(verdicts) == 3 * 50
    seen = set()
    for row in rows:
        key = _row_key(row)
        assert key not in seen, f"two rows for {key}"
        seen.add(key)
        assert key in expected, f"row {key} does not come from any verdict"
        value, denominator, n_excluded = expected[key]
        assert (row["value"], row["denominator"], row["n_excluded"]) == (
            value,
            denominator,
            n_excluded,
        ), key
    assert seen == set(expected), f"figures without a row: {set(expected) - seen}"
    # the abstain questions of the sample are excluded from retrieval, and counted
    hit = next(
        r
        for r in rows
        if r["system"] == "bm25"
        and r["slice"] == "all"
        and r["metric"] == "evidence_hit"
        and r["k"] == 5
    )
    assert hit["n_excluded"] == 7
    assert hit["denominator"] == 43
    assert "no_evidence (7)" in hit["exclusion_rule"]


def test_every_system_has_timing_rows(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    rows = _jsonl(run_dir / "metrics.jsonl")
    for system in SYSTEMS:
        names = {r["metric"] for r in rows if r["system"] == system and r["metric"] in TIMING}
        assert names == TIMING, system


def test_metric_rows_carry_provenance(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    checksum = manifest["datasets"][0]["checksum"]
    rows = _jsonl(run_dir / "metrics.jsonl")
    assert rows
    for row in rows:
        assert row["run_id"] == manifest["run_id"] == run_dir.name
        assert row["dataset_version"] == "sample@1.0"
        assert row["dataset_sha256"] == checksum
        assert isinstance(row["denominator_name"], str) and row["denominator_name"]
        assert isinstance(row["denominator"], int) and row["denominator"] >= 0
        assert isinstance(row["n_excluded"], int) and row["n_excluded"] >= 0
        if row["value"] is None:
            assert row["null_reason"], row
    assert {r["system"] for r in rows} == set(SYSTEMS)


def test_verdicts_hold_no_wall_clock_time(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    for name in ("verdicts.jsonl", "metrics.jsonl"):
        text = (run_dir / name).read_text(encoding="utf-8")
        assert "observed_at" not in text
        assert 'latency_ms"' not in text


def test_rescoring_is_byte_identical(run: tuple[Path, Path]) -> None:
    run_dir, tmp = run
    before = {n: (run_dir / n).read_bytes() for n in ("verdicts.jsonl", "metrics.jsonl")}
    result = CliRunner().invoke(app, ["score", str(run_dir), "--data-dir", str(tmp), "--quiet"])
    assert result.exit_code == 0, result.output
    for name, data in before.items():
        assert (run_dir / name).read_bytes() == data, name
    score_run(run_dir, tmp)
    for name, data in before.items():
        assert (run_dir / name).read_bytes() == data, name


def test_run_json_describes_the_run(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    m = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert m["format_version"] == FORMAT_VERSION
    assert RunSpec.from_dict(m["spec"]) == RunSpec(
        systems=SYSTEMS, datasets=("sample",), k=(1, 5, 10)
    )
    stamps = []
    for key in ("started_at", "ended_at"):
        assert isinstance(m[key], str) and RFC3339.match(m[key]), (key, m[key])
        stamp = datetime.fromisoformat(m[key])
        assert stamp.utcoffset() is not None
        stamps.append(stamp)
    assert stamps[0] <= stamps[1]
    assert set(m["git"]) >= {"commit", "dirty"}
    assert {"python", "os", "cpu"} <= set(m["machine"])
    assert m["packages"].get("numpy")
    assert m["concurrency"] == 1
    (ds,) = m["datasets"]
    assert ds["key"] == "sample"
    assert re.fullmatch(r"[0-9a-f]{64}", ds["checksum"])
    assert {f["name"] for f in ds["files"]} == {"turns.jsonl", "questions.jsonl"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) for f in ds["files"])
    assert m["run_id"].endswith(m["spec_hash"])


def test_results_folder_has_every_file(run: tuple[Path, Path]) -> None:
    run_dir, _ = run
    for name in ("run.json", "observations.jsonl", "verdicts.jsonl", "metrics.jsonl", "summary.md"):
        assert (run_dir / name).is_file(), name
    observations = _jsonl(run_dir / "observations.jsonl")
    assert len(observations) == 3 * 50
    assert len({(o["system"], o["question_id"]) for o in observations}) == 3 * 50


def test_every_interval_names_its_draws_and_is_recomputable(run: tuple[Path, Path]) -> None:
    from recallbench.score.stats import UNIT_SLICES, bootstrap_interval

    run_dir, _ = run
    verdicts = _jsonl(run_dir / "verdicts.jsonl")
    rows = _jsonl(run_dir / "metrics.jsonl")
    with_ci = [r for r in rows if r.get("ci_low") is not None]
    assert with_ci
    for r in rows:
        named = {"ci_unit", "ci_iterations", "ci_seed"} & set(r)
        want = set() if r.get("ci_low") is None else {"ci_unit", "ci_iterations", "ci_seed"}
        assert named == want, r  # named on every row with an interval, absent otherwise
    for r in with_ci:
        # the sample is one global haystack: questions stratified by slice
        assert (r["ci_unit"], r["ci_iterations"]) == (UNIT_SLICES, 1000), r
        key = r["metric"] if r["k"] is None else f"{r['metric']}@{r['k']}"
        mine = [
            v for v in verdicts
            if v["system"] == r["system"] and r["slice"] in ("all", v["slice"])
            and v["metrics"].get(key) is not None
        ]  # fmt: skip
        ci = bootstrap_interval(
            [float(v["metrics"][key]) for v in mine], ["all"] * len(mine),
            [v["slice"] for v in mine], seed=r["ci_seed"],
        )  # fmt: skip
        assert ci is not None and (ci.low, ci.high) == (r["ci_low"], r["ci_high"]), r


def test_a_dataset_of_twenty_groups_or_more_is_resampled_by_group() -> None:
    from types import SimpleNamespace

    from recallbench.score.aggregate import Resampling
    from recallbench.score.stats import UNIT_GROUPS, UNIT_SLICES

    def dataset(groups: int) -> Any:
        qs = [SimpleNamespace(id=f"q{i}", group=f"g{i % groups}") for i in range(60)]
        return SimpleNamespace(questions=qs)

    assert Resampling.of(dataset(20)).unit == UNIT_GROUPS
    assert Resampling.of(dataset(10)).unit == UNIT_SLICES  # LoCoMo has 10 conversations
