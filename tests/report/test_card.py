"""The results card (``card.md``): its YAML header holds every item of issue 13's point 4, it is
re-derived byte for byte, and an unmeasured or carried cell says so."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recallbench.datasets as datasets_package
from recallbench.cli import app
from recallbench.pipeline import start_run
from recallbench.report.card import (
    UNMEASURED,
    CardError,
    card_data,
    read_card,
    write_card,
)
from recallbench.results import store
from recallbench.results.manifest import read_manifest
from recallbench.results.scored import ScoredRun
from recallbench.spec import RunSpec
from recallbench.systems import registry
from recallbench.systems.base import Capabilities
from recallbench.systems.bm25 import BM25System

runner = CliRunner()
SAMPLE = Path(datasets_package.__file__).parent / "sample"


class ExtractorBM25(BM25System):
    """BM25 that says an LLM sits inside it (as Mem0 with an extractor does)."""

    capabilities = Capabilities(llm_inside="extractor-model-x")

    def __init__(self, context: Any = None) -> None:
        super().__init__(context)
        self.settings = {"llm_model": "extractor-model-x", "top_n": 3}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> ScoredRun:
    tmp = tmp_path_factory.mktemp("card")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
        registry.BUILTINS["extractor"] = registry.SystemEntry(
            "extractor", f"{__name__}:ExtractorBM25", "test"
        )
        spec = RunSpec(systems=("bm25", "naive", "extractor"), datasets=("sample",), k=(1, 5))
        return start_run(spec, tmp, tmp / "out", operator="  Ada Lovelace (lab 3) ")


@pytest.fixture(scope="module")
def card(scored: ScoredRun) -> dict[str, Any]:
    return read_card(scored.run_dir / "card.md")


def test_the_card_is_written_with_every_scoring_and_its_header_parses(
    scored: ScoredRun, card: dict[str, Any]
) -> None:
    text = (scored.run_dir / "card.md").read_text(encoding="utf-8")
    assert text.startswith("---\n") and "\n---\n\n# Results card: run " in text
    assert card["card_version"] == 1 and card["run_id"] == scored.manifest.run_id
    assert card == card_data(scored)  # the header is the data, exactly


def test_operator_run_date_and_scope(scored: ScoredRun, card: dict[str, Any]) -> None:
    assert card["operator"] == "Ada Lovelace (lab 3)"
    assert read_manifest(scored.run_dir).operator == "Ada Lovelace (lab 3)"
    assert card["run_date"] == scored.manifest.started_at
    assert card["ended_at"] == scored.manifest.ended_at
    assert card["scope"] == "full" and card["datasets"][0]["scope"] == "full"
    assert card["mode"] == "retrieval" and card["outcome"] == "complete"
    # the run date sits next to every number, in the header and in the Markdown table
    results = card["datasets"][0]["results"]
    assert results and all(r["run_date"] == card["run_date"] for r in results)
    body = (scored.run_dir / "card.md").read_text(encoding="utf-8").split("\n---\n", 1)[1]
    table = [line for line in body.splitlines() if line.startswith("| bm25 |")]
    assert table and all(line.endswith(f"| {card['run_date']} |") for line in table)


def test_judge_reader_and_the_llm_inside_each_system(card: dict[str, Any]) -> None:
    ds = card["datasets"][0]
    assert ds["judge"]["type"] == "none" and "gold evidence ids" in ds["judge"]["note"]
    assert ds["reader"] == "none"
    systems = {s["name"]: s for s in card["systems"]}
    assert systems["extractor"]["llm_inside"] == "extractor-model-x"
    assert systems["extractor"]["models_in_settings"] == {"llm_model": "extractor-model-x"}
    assert systems["bm25"]["llm_inside"] == "none declared"


def test_unmeasured_cells_read_unmeasured_never_zero_and_nothing_is_carried(
    card: dict[str, Any],
) -> None:
    results = card["datasets"][0]["results"]
    naive = {r["metric"]: r for r in results if r["system"] == "naive"}
    assert naive["evidence_recall@5"]["value"] == UNMEASURED
    assert naive["evidence_recall@5"]["why_unmeasured"].startswith("ignores_k")
    assert all(r["value"] != 0 or "why_unmeasured" not in r for r in results)
    assert card["carried_cells"] == "none: every cell was measured in this run"
    assert all("carried_from" not in r for r in results)


def test_data_scale_and_run_conditions(scored: ScoredRun, card: dict[str, Any]) -> None:
    ds = card["datasets"][0]
    assert ds["scale"] == {
        "questions": 50, "haystack_groups": 1, "sessions": 30, "turns": 312,
        "mean_turns_per_haystack": 312.0,
    }  # fmt: skip
    c = card["conditions"]
    assert (c["k"], c["chunking"], c["concurrency"]) == ([1, 5], "pair", 1)
    assert c["group_concurrency"] == 1 and c["seed"] == 0 and c["timeout_s"] == 60.0
    assert c["image_mode"] == {"sample": "native"} and ds["image_mode"] == "native"
    chars = ds["chars_returned_per_question"]
    assert set(chars) == {"bm25", "naive", "extractor"}
    assert all(isinstance(v, float) and v > 0 for v in chars.values())
    assert card["hardware"]["cpu_count"] >= 1
    assert card["runtime"]["python"] and card["runtime"]["format_version"] == "4"


def test_floor_repeats_and_limitations(card: dict[str, Any]) -> None:
    ds = card["datasets"][0]
    (control,) = ds["floor"]
    assert control["run_id"].startswith("control-")
    assert control["figures"] == {"evidence_hit@5": 0.0, "evidence_recall@5": 0.0}
    assert ds["repeats_tolerance"].startswith("not measured (1 repeat(s)")
    text = "\n".join(card["limitations"])
    assert "ignores_k" in text  # nulls and their reasons
    assert "speed_points (N7: " in text  # the speed codes
    assert "slice abstain skipped" in text  # slices with no figure
    assert "no_evidence (7)" in text  # questions left out
    assert "reproduction tolerance: not measured" in text


def test_the_card_names_each_file_sha256_as_such(scored: ScoredRun, card: dict[str, Any]) -> None:
    ds = card["datasets"][0]
    files = {f["name"]: f["file_sha256"] for f in ds["files"]}
    assert files == {n: _sha256(SAMPLE / n) for n in ("questions.jsonl", "turns.jsonl")}
    assert ds["dataset_checksum"] not in files.values()
    assert "not the SHA-256 of any file" in ds["dataset_checksum_is"]
    recorded = read_manifest(scored.run_dir).datasets[0]
    assert recorded.file_sha256 == files
    body = (scored.run_dir / "card.md").read_text(encoding="utf-8")
    assert f"file turns.jsonl: file SHA-256 {files['turns.jsonl']}" in body


def test_run_json_holds_the_sha256_of_each_log_it_was_scored_from(
    scored: ScoredRun, card: dict[str, Any]
) -> None:
    manifest = read_manifest(scored.run_dir)
    logs = {n: _sha256(scored.run_dir / n) for n in store.LOGS if (scored.run_dir / n).exists()}
    assert set(logs) == {"observations.jsonl", "texts.jsonl", "lists.jsonl", "ingest.jsonl"}
    assert manifest.scored_from == logs == card["logs_sha256"]


def test_every_verdict_and_metric_row_carries_its_provenance(scored: ScoredRun) -> None:
    checksum = scored.manifest.datasets[0].checksum
    for name in (store.VERDICTS, store.METRICS):
        for line in (scored.run_dir / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            assert record["run_id"] == scored.manifest.run_id
            assert record["dataset"] == "sample" and record["dataset_version"] == "sample@1.0"
            assert record["dataset_sha256"] == checksum
            assert record["run_date"] == scored.manifest.started_at


def test_rescoring_rewrites_every_file_byte_for_byte(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "-q", "--out", str(tmp_path), "--operator", "ci",
                                 "--systems", "bm25,naive", "--no-baselines"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = tmp_path.iterdir()
    assert all((run_dir / n).is_file() for n in store.DERIVED)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.name != store.LOCK_FILE}
    result = runner.invoke(app, ["score", str(run_dir), "-q"])
    assert result.exit_code == 0, result.output
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.name != store.LOCK_FILE}
    assert after.keys() == before.keys()
    changed = [name for name in before if after[name] != before[name]]
    assert changed == []  # card.md, summary.md, verdicts, metrics and run.json alike


def test_a_card_from_the_folder_alone_says_the_floor_was_not_computed(
    scored: ScoredRun, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for p in scored.run_dir.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    data = read_card(write_card(folder))
    assert data["datasets"][0]["floor"].startswith("not computed")
    assert data["datasets"][0]["results"] == card_data(scored)["datasets"][0]["results"]
    assert data["datasets"][0]["scale"]["turns"] == 312  # from run.json


def test_a_cell_copied_from_another_run_is_marked_with_that_run(
    scored: ScoredRun, tmp_path: Path
) -> None:
    folder = tmp_path / "carried"
    folder.mkdir()
    for p in scored.run_dir.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    rows = [json.loads(x) for x in (folder / store.METRICS).read_text().splitlines()]
    for r in rows:
        if r["system"] == "bm25" and r["metric"] == "mrr" and r["slice"] == "all":
            r["run_id"] = "20260101T000000Z-feedbeef"
    store.write_jsonl(folder / store.METRICS, rows)
    data = read_card(write_card(folder))
    assert data["carried_cells"] == [
        {"dataset": "sample", "system": "bm25", "metric": "mrr@5",
         "from_run": "20260101T000000Z-feedbeef"},
    ]  # fmt: skip
    assert "carried from 20260101T000000Z-feedbeef" in (folder / "card.md").read_text()


def test_three_repeats_state_a_tolerance_of_two_standard_deviations(scored: ScoredRun) -> None:
    base = [v for v in scored.verdicts if v.system == "bm25" and v.slice == "fact"][:2]
    verdicts = [
        dataclasses.replace(v, repeat=repeat, metrics={**v.metrics, "evidence_recall@5": value})
        for repeat, value in enumerate((0.0, 0.5, 1.0))
        for v in base
    ]
    spec = dataclasses.replace(scored.spec, repeats=3)
    manifest = dataclasses.replace(scored.manifest, spec=spec)
    view = dataclasses.replace(scored, manifest=manifest, verdicts=tuple(verdicts))
    tol = card_data(view)["datasets"][0]["repeats_tolerance"]
    assert tol == {"bm25": {"evidence_recall@5": {"all": 1.0, "fact": 1.0}}}  # 2 x sd 0.5
    assert card_data(view)["conditions"]["repeats"] == 3


@pytest.mark.slow
def test_an_answer_mode_card_names_the_judge_reader_and_prompt_hashes(tmp_path: Path) -> None:
    result = runner.invoke(app, [
        "run", "--systems", "bm25", "--no-baselines", "--datasets", "sample", "--mode",
        "answer", "--reader", "mock", "--judge", "mock-judge", "--out", str(tmp_path), "-q",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = tmp_path.iterdir()
    ds = read_card(run_dir / "card.md")["datasets"][0]
    judge, reader = ds["judge"], ds["reader"]
    assert judge["type"] == "llm" and judge["model"] == "mock-judge"
    assert judge["metrics"] == ["answer_correct"]
    assert reader["model"] == "mock"
    for f in judge["prompt_files"] + reader["prompt_files"]:
        assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
    assert "answer_correct" in {r["metric"] for r in ds["results"]}
    logs = read_card(run_dir / "card.md")["logs_sha256"]
    assert {"answers.jsonl", "judgements.jsonl"} <= set(logs)


def test_operator_flag_errors(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "-q", "--out", str(tmp_path), "--operator", "  "])
    assert result.exit_code == 2 and "--operator must name who ran" in result.output
    result = runner.invoke(app, ["run", "-q", "--out", str(tmp_path), "--operator", "a\nb"])
    assert result.exit_code == 2 and "one line" in result.output
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_resume_keeps_the_operator(scored: ScoredRun) -> None:
    result = runner.invoke(app, ["run", "--resume", str(scored.run_dir), "--operator", "Bob"])
    assert result.exit_code == 2 and "a resumed run keeps who started it" in result.output


def test_read_card_refuses_a_file_without_a_header(tmp_path: Path) -> None:
    path = tmp_path / "card.md"
    path.write_text("# no header\n", encoding="utf-8")
    with pytest.raises(CardError, match="no YAML header"):
        read_card(path)
    path.write_text("---\nrun_id: x\n", encoding="utf-8")
    with pytest.raises(CardError, match="not closed"):
        read_card(path)
    path.write_text("---\n- a list\n---\n", encoding="utf-8")
    with pytest.raises(CardError, match="not a mapping"):
        read_card(path)


def test_the_docs_example_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "card.md"
    (example,) = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "-q", "--operator", "Ada, lab 3", "--out", "results"])
    assert result.exit_code == 0, result.output
    expected = [line.split("# ", 1)[1].strip() for line in example.splitlines() if "print(" in line]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, str(doc), "exec"), {})
    assert out.getvalue().splitlines() == expected


def test_every_interval_on_the_card_says_how_it_was_drawn(card: dict[str, Any]) -> None:
    results = card["datasets"][0]["results"]
    with_ci = [r for r in results if r["ci_95"] is not None]
    assert with_ci
    for r in with_ci:  # the sample is one global haystack
        assert r["ci_resampled"].startswith("questions by slice, 1000 draws, seed "), r
    assert all("ci_resampled" not in r for r in results if r["ci_95"] is None)
