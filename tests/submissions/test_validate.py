"""``recallbench validate``: an honest bundle passes; a bundle whose metrics were edited by
hand, one with a path-traversal member, one with a filled cell the observations do not support
(and a few other lies) fail, each naming the check that caught it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.results import store
from recallbench.submissions.validate import FAIL, PASS, SKIP, recorded_log_hashes, validate


@pytest.fixture(scope="module")
def honest(honest_run: Path) -> Path:
    """The shared bm25 run on the bundled sample (``conftest.honest_run``)."""
    return honest_run


@pytest.fixture
def bundle(honest: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "bundle"
    shutil.copytree(honest, dest)
    return dest


def _check(v, name: str) -> str:  # noqa: ANN001
    (c,) = (c for c in v.checks if c.name == name)
    return c.status


def _validate(path: Path, tmp_path: Path):  # noqa: ANN202
    return validate(path, Path("unused-data-dir"), tmp_path / "cache")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n"
                            for r in rows))  # fmt: skip


def test_an_honest_bundle_passes_as_a_folder_a_zip_and_a_tar_gz(
    bundle: Path, tmp_path: Path
) -> None:
    before = {p.name: p.read_bytes() for p in bundle.iterdir()}
    v = _validate(bundle, tmp_path)
    assert v.ok, v.checks
    assert {p.name: p.read_bytes() for p in bundle.iterdir()} == before  # never written to
    assert _check(v, "aggregates recomputed") == PASS
    assert _check(v, "verdicts recomputed") == PASS
    assert _check(v, "no unmeasured cell filled") == PASS
    assert _check(v, "reader and judge pins") == SKIP  # retrieval mode
    z = tmp_path / "bundle.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(bundle.rglob("*")):
            zf.write(p, Path("run") / p.relative_to(bundle))
    t = tmp_path / "bundle.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        tf.add(bundle, arcname="run")
    for archive in (z, t):
        assert _validate(archive, tmp_path).ok
    result = CliRunner().invoke(app, ["validate", str(t)])
    assert result.exit_code == 0, result.output
    assert "valid: " in result.output


def test_metrics_edited_by_hand_are_rejected(bundle: Path, tmp_path: Path) -> None:
    rows = _rows(bundle / store.METRICS)
    i = next(i for i, r in enumerate(rows) if r["metric"] == "evidence_recall" and r["k"] == 10
             and r["slice"] == "all")  # fmt: skip
    rows[i]["value"] = round(rows[i]["value"] + 0.1, 6)
    _write_rows(bundle / store.METRICS, rows)
    v = _validate(bundle, tmp_path)
    assert not v.ok
    assert _check(v, "aggregates recomputed") == FAIL
    assert _check(v, "verdicts recomputed") == PASS
    detail = next(c.detail for c in v.checks if c.name == "aggregates recomputed")
    assert "metric=evidence_recall k=10 slice=all" in detail and "claimed" in detail
    result = CliRunner().invoke(app, ["validate", str(bundle)])
    assert result.exit_code == 1
    assert "NOT valid" in result.output and "FAIL aggregates recomputed" in result.output


def test_a_path_traversal_member_is_refused_and_nothing_escapes(
    bundle: Path, tmp_path: Path
) -> None:
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for p in sorted(bundle.rglob("*")):
            zf.write(p, Path("run") / p.relative_to(bundle))
        zf.writestr("run/../../escaped.txt", "gotcha")
    v = _validate(z, tmp_path)
    assert not v.ok
    assert [c.name for c in v.checks] == ["bundle"]
    assert "traversal" in v.checks[0].detail
    assert not list(tmp_path.parent.rglob("escaped.txt"))


def test_a_filled_cell_the_observations_do_not_support_is_rejected(
    bundle: Path, tmp_path: Path
) -> None:
    rows = _rows(bundle / store.METRICS)
    i = next(i for i, r in enumerate(rows) if r["value"] is None)
    rows[i]["value"], rows[i]["null_reason"] = 0.5, None
    _write_rows(bundle / store.METRICS, rows)
    v = _validate(bundle, tmp_path)
    assert _check(v, "no unmeasured cell filled") == FAIL
    detail = next(c.detail for c in v.checks if c.name == "no unmeasured cell filled")
    assert "0.5 claimed, null re-scored" in detail
    assert not v.ok


def test_a_filled_per_question_cell_is_rejected(bundle: Path, tmp_path: Path) -> None:
    rows = _rows(bundle / store.VERDICTS)
    i, metric = next(
        (i, m) for i, r in enumerate(rows) for m, val in r["metrics"].items() if val is None
    )
    rows[i]["metrics"][metric] = 1.0
    rows[i]["null_reasons"].pop(metric, None)
    _write_rows(bundle / store.VERDICTS, rows)
    v = _validate(bundle, tmp_path)
    assert _check(v, "no unmeasured cell filled") == FAIL
    assert _check(v, "verdicts recomputed") == FAIL


def test_a_changed_log_or_dataset_checksum_is_caught(bundle: Path, tmp_path: Path) -> None:
    raw = json.loads((bundle / store.RUN_JSON).read_text())
    raw["datasets"][0]["checksum"] = "0" * 64
    (bundle / store.RUN_JSON).write_text(json.dumps(raw))
    v = _validate(bundle, tmp_path)
    assert _check(v, "dataset hashes") == FAIL
    assert not v.ok


def test_log_hashes_are_checked_against_run_json(bundle: Path, tmp_path: Path) -> None:
    """Every scored run records the SHA-256 of each log it was scored from (``scored_from``)."""
    raw = json.loads((bundle / store.RUN_JSON).read_text())
    logs = [n for n in store.LOGS if (bundle / n).is_file()]
    assert raw["scored_from"] == {
        n: hashlib.sha256((bundle / n).read_bytes()).hexdigest() for n in logs
    }
    assert _check(_validate(bundle, tmp_path), "log hashes") == PASS
    with (bundle / store.OBSERVATIONS).open("a") as f:
        f.write("\n")
    v = _validate(bundle, tmp_path)
    assert _check(v, "log hashes") == FAIL
    assert store.OBSERVATIONS in next(c.detail for c in v.checks if c.name == "log hashes")
    del raw["scored_from"]
    (bundle / store.RUN_JSON).write_text(json.dumps(raw, indent=2))
    assert _check(_validate(bundle, tmp_path), "log hashes") == SKIP


def test_recorded_log_hash_shapes() -> None:
    sha = "a" * 64
    assert recorded_log_hashes({}) is None
    assert recorded_log_hashes({"scored_from": {"x.jsonl": sha}}) == {"x.jsonl": sha}
    assert recorded_log_hashes({"scored_from": {"x.jsonl": {"sha256": sha}}}) == {"x.jsonl": sha}
    shaped = {"scored_from": [{"path": "x.jsonl", "sha256": sha}]}
    assert recorded_log_hashes(shaped) == {"x.jsonl": sha}


def test_not_a_results_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    v = _validate(tmp_path / "empty", tmp_path)
    assert not v.ok and "no run.json" in v.checks[0].detail
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "no such file" in result.output


def test_a_malformed_record_fails_a_check_and_raises_nothing(bundle: Path, tmp_path: Path) -> None:
    with (bundle / store.OBSERVATIONS).open("a") as f:
        f.write('{"question_id": 3}\n')
    v = _validate(bundle, tmp_path)
    assert not v.ok
    assert _check(v, "aggregates recomputed") == FAIL
    raw = json.loads((bundle / store.RUN_JSON).read_text())
    raw["spec"] = "not a spec"
    (bundle / store.RUN_JSON).write_text(json.dumps(raw))
    v = _validate(bundle, tmp_path)
    assert _check(v, "run.json") == FAIL


def test_pins_are_the_benchmarks_own(tmp_path: Path) -> None:
    """A recorded Glasshouse answering record is checked against the pins read from the
    benchmark's pinned ``judge.py``: another model, an edited pin, a changed instrument file
    hash and a non-standard label each fail."""
    local = Path(os.environ.get("RECALLBENCH_INSTRUMENTS", "/nonexistent"))
    if not (local / "glasshouse" / "glasshouse-v0.1" / "judge.py").is_file():
        pytest.skip("Glasshouse's judge.py not in $RECALLBENCH_INSTRUMENTS")
    from recallbench.benchmarks.glasshouse.answering import glasshouse_answering
    from recallbench.contracts import to_json_dict
    from recallbench.instruments.protocol import InstrumentOptions
    from recallbench.submissions.validate import _pin_problems

    inst = glasshouse_answering(InstrumentOptions(cache_dir=tmp_path / "cache"))
    honest = {
        "reader": {"model": inst.reader.model}, "reader_pin": to_json_dict(inst.reader),
        "judge": {"model": inst.judge_pin.model}, "judge_pin": to_json_dict(inst.judge_pin),
        "files": [to_json_dict(f) for f in inst.files()], "non_standard": [],
    }  # fmt: skip
    assert _pin_problems("gh", honest, inst) == []
    other = {**honest, "judge": {"model": "mock-judge"}}
    assert _pin_problems("gh", other, inst) == [
        f"gh: judge mock-judge, the benchmark pins {inst.judge_pin.model}"
    ]
    edited = {**honest, "reader_pin": {**honest["reader_pin"], "model": "x/y"}}
    assert "gh: the reader pin in run.json is not the benchmark's" in _pin_problems(
        "gh", edited, inst
    )
    files = [{**f, "sha256": "0" * 64} for f in honest["files"]]
    assert any("instrument file" in p for p in _pin_problems("gh", {**honest, "files": files},
                                                             inst))  # fmt: skip
    labelled = {**honest, "non_standard": ["not a glasshouse-v0.1 score: same model"]}
    assert _pin_problems("gh", labelled, inst) == ["gh: not a glasshouse-v0.1 score: same model"]
