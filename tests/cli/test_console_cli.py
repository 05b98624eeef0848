"""The console for people: --version, --format table|markdown|csv|json on run and score,
$COLUMNS honoured, the data files' own SHA-256 printed and labelled, exports on request."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench import __version__
from recallbench.benchmarks import load_dataset
from recallbench.cli import app
from recallbench.contracts import FORMAT_VERSION
from recallbench.report.formats import METRIC_COLUMNS
from recallbench.results import store


def _invoke(*args: str, columns: int | None = None) -> Any:
    env = {"COLUMNS": str(columns)} if columns else None
    return CliRunner().invoke(app, list(args), env=env)


def _run(out: Path, *extra: str, columns: int | None = None) -> tuple[Path, Any]:
    result = _invoke(
        "run", "-q", "--systems", "bm25", "--no-baselines", "--out", str(out), *extra,
        columns=columns,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return next(out.iterdir()), result


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    return list(store.read_jsonl_tolerant(run_dir / store.METRICS))


def test_version() -> None:
    result = _invoke("--version")
    assert result.exit_code == 0
    assert result.output == f"recallbench {__version__} (results format {FORMAT_VERSION})\n"


def test_json_and_csv_carry_every_metric_row(tmp_path: Path) -> None:
    run_dir, result = _run(tmp_path / "a", "--format", "json")
    doc = json.loads(result.stdout)  # stdout is the document alone
    assert doc["run_id"] == run_dir.name and doc["metrics"] == _metrics(run_dir)
    (ds,) = doc["datasets"]
    assert [f["name"] for f in ds["files"]] == ["turns.jsonl", "questions.jsonl"]
    assert all(len(f["sha256"]) == 64 for f in ds["files"])
    assert f"results: {run_dir}" in result.stderr
    result = _invoke("score", str(run_dir), "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert tuple(rows[0]) == METRIC_COLUMNS and len(rows) == len(_metrics(run_dir))
    first = _metrics(run_dir)[0]
    assert rows[0]["denominator"] == str(first["denominator"])
    assert rows[0]["run_id"] == run_dir.name and rows[0]["dataset_sha256"]


def test_markdown_and_a_bad_format(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path / "a")
    result = _invoke("score", str(run_dir), "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "### sample: retrieval from gold evidence ids" in result.output
    assert "| system | n | hit@1 |" in result.output
    result = _invoke("run", "--systems", "bm25", "--format", "yaml", "--out", str(tmp_path / "b"))
    assert result.exit_code == 2 and "--format must be one of table, markdown, csv, json" in (
        result.output
    )
    assert not (tmp_path / "b").exists()
    result = _invoke("score", str(run_dir), "--format", "longmemeval")
    assert result.exit_code == 2 and "applies to a predictions file" in result.output


def test_piped_output_honours_columns(tmp_path: Path) -> None:
    _, result = _run(tmp_path / "a", columns=80)
    table_lines = [line for line in result.output.splitlines() if line[:1] in "┏┃┡│└"]
    assert table_lines and max(len(line) for line in table_lines) <= 80
    assert "…" not in result.output
    assert "(part 1 of" in result.output
    _, result = _run(tmp_path / "b", columns=200)
    assert "(part 1 of" not in result.output


def test_the_data_files_sha256_is_printed_and_labelled(tmp_path: Path) -> None:
    run_dir, result = _run(tmp_path / "a")
    ds = load_dataset("sample", tmp_path)
    for f in ds.files:
        assert f"dataset sample@1.0: file {f.name} sha256 {f.sha256}" in result.output
    assert (
        f"dataset sample@1.0: checksum {ds.checksum} (the dataset checksum: SHA-256 over its "
        "files' SHA-256)" in result.output
    )


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_locomo_prints_the_sha256_of_locomo10_json(shared_data: Path) -> None:
    path = shared_data / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip("LoCoMo not in the shared data")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result = _invoke("controls", "--dataset", "locomo", "--data-dir", str(shared_data))
    assert result.exit_code == 0, result.output
    assert f"file locomo10.json sha256 {digest}" in result.output
    ds = load_dataset("locomo", shared_data)
    assert ds.checksum != digest  # the dataset checksum is another number, labelled as such
    assert f"checksum {ds.checksum} (the dataset checksum" in result.output
    # slices in LoCoMo's own order (categories 1-5), not the order questions show them
    assert ds.slice_order == ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")
    at = [result.output.index(f"│ {name}") for name in ds.slice_order]
    assert at == sorted(at)


def test_export_of_a_run_without_glasshouse_data_is_refused(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path / "a")
    assert not (run_dir / "exports").exists()
    result = _invoke("export", str(run_dir), "--format", "glasshouse")
    assert result.exit_code == 2 and "no dataset of" in result.output
    result = _invoke(
        "run", "--systems", "bm25", "--export", "glasshouse", "--out", str(tmp_path / "b")
    )
    assert result.exit_code == 2 and "--export glasshouse" in result.output
    assert not (tmp_path / "b").exists()
