"""Glasshouse's own submission manifest (``submission.json``): filled from the run's records,
valid against Glasshouse's pinned schema (read from ``$RECALLBENCH_INSTRUMENTS``, skipped when
absent) with ``jsonschema``, and never written with an invented or zero headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.benchmarks import load_dataset
from recallbench.benchmarks.glasshouse.answering import glasshouse_answering
from recallbench.benchmarks.glasshouse.submission import (
    SCHEMA_FILE,
    submission_manifest,
    submission_path,
)
from recallbench.cli import app
from recallbench.contracts import MetricRow, Verdict, to_json_dict
from recallbench.instruments.pins import fetch_instrument
from recallbench.instruments.protocol import InstrumentOptions
from recallbench.pipeline import new_manifest
from recallbench.results.manifest import RunManifest
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec

jsonschema = pytest.importorskip("jsonschema")

NAME = "glasshouse-v0.1"
KEY = "glasshouse-v0.1:core"


@pytest.fixture
def data(shared_data: Path) -> Path:
    if not (shared_data / NAME / "glasshouse_v0.1_core.jsonl").exists():
        pytest.skip("Glasshouse v0.1 files not in the shared data folder")
    return shared_data


@pytest.fixture
def schema(tmp_path: Path) -> dict[str, Any]:
    local = Path(__import__("os").environ.get("RECALLBENCH_INSTRUMENTS", "/nonexistent"))
    if not (local / SCHEMA_FILE.name / SCHEMA_FILE.path).is_file():
        pytest.skip("Glasshouse's submission schema not in $RECALLBENCH_INSTRUMENTS")
    return json.loads(fetch_instrument(SCHEMA_FILE, tmp_path / "cache").text)


def _run(data: Path, tmp_path: Path, mode: str) -> tuple[RunManifest, Any]:
    """A manifest as a run records it, with the official instrument's pins and the pinned
    models as reader and judge."""
    ds = load_dataset(KEY, data, {})
    inst = glasshouse_answering(InstrumentOptions(cache_dir=tmp_path / "cache"))
    judge = ModelChoice(inst.judge_pin.model)
    reader = ModelChoice(inst.reader.model) if mode == "answer" else None
    spec = RunSpec(
        systems=("bm25",), datasets=(KEY,),
        answering=AnsweringSpec(mode=mode, judge=judge, reader=reader),
    )  # fmt: skip
    manifest = new_manifest(spec, [ds])
    url = "https://openrouter.ai/api/v1"
    manifest.answering = {
        "mode": mode,
        "judges": [judge.model],
        "datasets": {
            KEY: {
                "instrument": inst.name,
                "files": [to_json_dict(f) for f in inst.files()],
                "deviations": list(inst.deviations()),
                "reader": {"model": reader.model, "base_url": url} if reader else None,
                "reader_pin": to_json_dict(inst.reader),
                "judge": {"model": judge.model, "base_url": url},
                "judge_pin": to_json_dict(inst.judge_pin),
                "metrics": ["gh_answer" if mode == "answer" else "gh_memory"],
                "non_standard": [],
            }
        },
    }
    return manifest, ds


def _verdicts(ds: Any, n: int, failed: int = 0) -> list[Verdict]:
    return [
        Verdict(
            run_id="r", dataset=KEY, dataset_version="v", system="bm25", question_id=q.id,
            slice=q.axis, outcome="error" if i < failed else "usable", outcome_reason=None,
            n_returned=1, chars_returned=10, metrics={},
        )  # fmt: skip
        for i, q in enumerate(ds.questions[:n])
    ]


def _row(metric: str, value: float | None) -> MetricRow:
    return MetricRow(
        run_id="r", dataset=KEY, dataset_version=f"{KEY}@0.1", dataset_sha256="ab" * 32,
        system="bm25", slice="all", metric=metric, k=None, value=value,
        denominator_name="questions_scored", denominator=5, n_excluded=0,
        null_reason=None if value is not None else "nothing judged",
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["answer", "memory"])
def test_manifest_is_filled_from_the_records_and_matches_the_schema(
    data: Path, tmp_path: Path, schema: dict[str, Any], mode: str
) -> None:
    manifest, ds = _run(data, tmp_path, mode)
    metric = "gh_answer" if mode == "answer" else "gh_memory"
    rows = [_row(metric, 0.4), _row(f"{metric}:weighted", 0.35)]
    doc = submission_manifest(tmp_path, manifest, ds, "core", "bm25", _verdicts(ds, 5, 2), rows)
    assert doc is not None
    jsonschema.validate(doc, schema)
    (run,) = doc["runs"]
    assert (run["id"], run["n"], run["errors"], run["score"]) == (manifest.run_id, 5, 2, 0.4)
    assert doc["runs"][0]["config"]["subset"] == "full"
    assert doc["headline"]["score"] == 0.4 and "stdev" not in doc["headline"]
    assert doc["benchmark"]["revision"].startswith("2eeb19e")
    assert doc["judge"]["model"] == "google/gemini-3.7-flash" and doc["judge"]["temperature"] == 0
    assert "JUDGE_PROMPT" in doc["judge"]["prompt"]
    assert doc["corpus"]["turns"] == 1882 and doc["corpus"]["ingest_failures"] == 0
    assert doc["records"] == "verdicts.jsonl"
    assert doc["records_filter"] == {"dataset": KEY, "system": "bm25"}
    assert doc["recallbench"]["weighted_score"] == 0.35
    assert "submitter" not in doc and "hosted" not in doc["system"]  # not known: left out
    if mode == "answer":
        assert doc["reader"]["model"] == "openai/gpt-4o-mini"
        assert "ANSWER_PROMPT" in doc["prompts"]["reader"]
    else:
        assert doc["reader"]["model"].startswith("none: memory mode")


def test_no_manifest_for_an_unmeasured_headline_or_retrieval_mode(
    data: Path, tmp_path: Path
) -> None:
    manifest, ds = _run(data, tmp_path, "answer")
    v = _verdicts(ds, 3)
    assert submission_manifest(tmp_path, manifest, ds, "core", "bm25", v,
                               [_row("gh_answer", None)]) is None  # fmt: skip
    assert submission_manifest(tmp_path, manifest, ds, "core", "bm25", v, []) is None
    manifest.answering = {}
    assert submission_manifest(tmp_path, manifest, ds, "core", "bm25", v,
                               [_row("gh_answer", 0.5)]) is None  # fmt: skip


@pytest.mark.slow
def test_a_memory_run_writes_a_valid_submission_that_validate_rederives(
    data: Path, tmp_path: Path, schema: dict[str, Any]
) -> None:
    """End to end: a memory-mode run with the mock judge writes ``submission.json``; it
    matches the schema, and ``validate`` re-derives it byte for byte (and fails the run only
    on its judge, which is not the one Glasshouse pins)."""
    result = CliRunner().invoke(app, [
        "run", "-q", "--systems", "bm25", "--no-baselines", "--datasets", KEY,
        "--mode", "memory", "--judge", "mock-judge", "--data-dir", str(data),
        "--out", str(tmp_path / "out"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out").iterdir()
    ds = load_dataset(KEY, data, {})
    path = submission_path(run_dir, "bm25", ds, "core")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, schema)
    assert doc["judge"]["model"] == "mock-judge" and "not a glasshouse-v0.1 score" in doc[
        "judge"]["note"]  # fmt: skip
    check = CliRunner().invoke(app, ["validate", str(run_dir), "--json", "--data-dir", str(data)])
    report = json.loads(check.output)
    status = {c["name"]: c["status"] for c in report["checks"]}
    assert status["derived files recomputed"] == "pass"
    assert status["aggregates recomputed"] == "pass"
    assert status["reader and judge pins"] == "fail"
    assert check.exit_code == 1 and report["valid"] is False
