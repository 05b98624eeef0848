"""``recallbench score FILE`` as a researcher uses it with hand-made files, and the rules every
``score`` and ``run`` names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

LOCOMO_TURNS = [
    ("Ann", "D1:1", "I adopted a grey cat named Miso."),
    ("Bo", "D1:2", "I ran 3 marathons this year."),
    ("Ann", "D1:3", "My sister lives in Lisbon."),
    ("Bo", "D1:4", "I like painting and pottery."),
]
LOCOMO_QA = [
    ("What is the cat's name?", "Miso", "D1:1", 4),
    ("Where does Ann's sister live?", "Lisbon", "D1:3", 4),
    ("How many marathons did Bo run?", "3", "D1:2", 2),
    ("What does Bo like?", "painting, pottery", "D1:4", 1),
]


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    conversation = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in LOCOMO_TURNS],
        },
        "qa": [
            {"question": q, "answer": a, "evidence": [e], "category": c} for q, a, e, c in LOCOMO_QA
        ],
    }
    path = tmp_path / "mini_locomo.json"
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    return path


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _score(path: Path, mini: Path, *args: str) -> Any:
    return CliRunner().invoke(
        app,
        ["score", str(path), "--dataset", f"locomo@{mini}", "--data-dir", str(path.parent),
         *args],
    )  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_only_the_right_line_answered_is_not_a_perfect_score(mini: Path, tmp_path: Path) -> None:
    rows = [{"id": "conv-x:0", "answer": "Miso"}] + [{"id": f"conv-x:{i}"} for i in (1, 2, 3)]
    result = _score(_write(tmp_path / "p.jsonl", rows), mini)
    assert result.exit_code == 0, result.output
    assert "3 line(s) have no 'answer' while other lines do: scored as misses" in result.output
    metrics = _lines(tmp_path / "p.scored" / "metrics.jsonl")
    f1 = next(r for r in metrics if r["metric"] == "f1" and r["slice"] == "all")
    assert (f1["value"], f1["denominator"]) == (0.25, 4)


def test_tables_headline_first_k_in_numeric_order_and_no_timing(mini: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "conv-x:0", "answer": "Miso", "retrieved_turns": ["D1:1"], "latency_ms": 4.0},
        {"id": "conv-x:1", "answer": "Porto", "retrieved_turns": ["D1:2"], "latency_ms": 9.0},
    ]
    result = _score(_write(tmp_path / "p.jsonl", rows), mini, "--k", "1,5,10")
    assert result.exit_code == 0, result.output
    out = result.output
    # the benchmark's own tables, as a run prints them
    assert "locomo: QA F1 by category" in out and "locomo: evidence recall (all" in out
    table = out[out.index("locomo: all") :]
    cells = [line.split("│")[2].strip() for line in table.splitlines() if "│" in line]
    metric_rows = [m for m in cells if m]  # the header row is drawn with another bar
    assert metric_rows[:2] == ["f1", "evidence_recall"]  # LoCoMo's headline
    hits = [m for m in metric_rows if m.startswith("evidence_hit@")]
    assert hits == ["evidence_hit@1", "evidence_hit@5", "evidence_hit@10"]
    for timing in ("latency_ms_p", "ingest_", "failed_search", "p50 ms"):
        assert timing not in out
    assert "timing: none (a predictions file records no timing recallbench measured)" in out
    metrics = _lines(tmp_path / "p.scored" / "metrics.jsonl")
    assert not [r for r in metrics if r["metric"].startswith(("latency", "ingest"))]


def test_name_names_the_system(mini: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "Miso"}])
    result = _score(path, mini, "--name", "my-memory")
    assert result.exit_code == 0, result.output
    assert "my-memory" in result.output
    verdicts = _lines(tmp_path / "p.scored" / "verdicts.jsonl")
    assert {v["system"] for v in verdicts} == {"my-memory"}
    assert _score(path, mini, "--name", " ").exit_code == 2


def test_refusals_are_one_line_and_exit_2(mini: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "prediction": "Miso"}])
    result = _score(path, mini)
    assert result.exit_code == 2
    assert f"{path}:1: field 'prediction' is not a field of the recallbench" in result.output
    assert "accepted fields: id, answer, retrieved_turns" in result.output
    path = _write(tmp_path / "t.jsonl", [{"id": "conv-x:0", "retrieved_turns": ["D1-3"]}])
    result = _score(path, mini)
    assert result.exit_code == 2 and "turn id 'D1-3'" in result.output
    assert f"{path}:1:" in result.output
    assert not (tmp_path / "t.scored").exists()  # refused before anything is written
    result = _score(path, mini, "--unknown-turns", "warn")
    assert result.exit_code == 0, result.output
    assert "1 retrieved turn id(s) on 1 line(s) name no turn of locomo" in result.output
    summary = (tmp_path / "t.scored" / "summary.md").read_text()
    assert "1 retrieved turn id(s) on 1 line(s) name no turn" in summary
    assert _score(path, mini, "--unknown-turns", "maybe").exit_code == 2
    result = _score(path, mini, "--format", "glasshouse")
    assert result.exit_code == 2 and "choose one of recallbench" in result.output


def test_out_marks_questions_with_no_line(mini: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "Miso"}])
    out = tmp_path / "lines.jsonl"
    assert _score(path, mini, "--out", str(out), "-q").exit_code == 0
    lines = {x["id"]: x for x in _lines(out)}
    assert "missing" not in lines["conv-x:0"]
    assert lines["conv-x:3"]["missing"] is True and lines["conv-x:3"]["f1"] == 0.0
    assert lines["conv-x:3"]["missing_reason"].startswith("missing_line: p.jsonl has no line")


def test_score_names_the_rules_on_screen_and_in_summary(mini: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "Miso"}])
    result = _score(path, mini, "-q")
    assert result.exit_code == 0, result.output
    head = "rules for locomo: locomo, following snap-research/LoCoMo task_eval/evaluation.py"
    assert head in result.output and "at commit 9228632" in result.output
    assert "deviation: a question with an empty evidence list" in result.output
    assert "format: recallbench" in result.output
    summary_path = tmp_path / "p.scored" / "summary.md"
    summary = summary_path.read_text()
    assert head in summary and "deviation: f1 is null (no_answer)" in summary
    assert "locomo: QA F1 by category" in summary and "predictions file p.jsonl" in summary
    first = summary_path.read_bytes()
    assert _score(path, mini, "-q").exit_code == 0
    assert summary_path.read_bytes() == first  # same inputs, same bytes


def test_run_and_rescore_name_the_rules(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "-q", "--out", str(tmp_path), "--k", "1,3"])
    assert result.exit_code == 0, result.output
    assert "rules for sample: retrieval (recallbench's own metrics" in result.output
    run_dir = next(tmp_path.iterdir())
    record = json.loads((run_dir / "run.json").read_text())["datasets"][0]
    assert record["rules_source"] is None and record["deviations"] == []
    assert "rules for sample: retrieval" in (run_dir / "summary.md").read_text()
    result = CliRunner().invoke(app, ["score", str(run_dir), "-q"])
    assert result.exit_code == 0 and "rules for sample: retrieval" in result.output


def test_a_benchmark_run_records_its_rules_in_run_json(mini: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "bm25", "--no-baselines", "--datasets", f"locomo@{mini}",
         "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    record = json.loads((run_dir / "run.json").read_text())["datasets"][0]
    assert record["rules_source"] == {
        "repository": "snap-research/LoCoMo",
        "commit": "9228632",
        "files": ["task_eval/evaluation.py"],
        "note": "branch code",
    }
    assert len(record["deviations"]) == 3
    assert record["deviations"][0].startswith("f1 is null (no_answer)")
    summary = (run_dir / "summary.md").read_text()
    assert "following snap-research/LoCoMo task_eval/evaluation.py at commit 9228632" in summary
    assert "deviation: evidence_recall is computed over" in result.output


LME_FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
)


def test_longmemeval_hypotheses_print_the_per_type_tables(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "hyp.jsonl",
        [{"question_id": "fx_ssu_1", "hypothesis": "Rex."}, {"question_id": "fx_ms_2"}],
    )
    args = ["score", str(path), "--dataset", f"longmemeval@{LME_FIXTURE}",
            "--data-dir", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--k", "1,5"])
    assert result.exit_code == 0, result.output
    assert "format: longmemeval (LongMemEval's hypothesis lines" in result.output
    assert "QA accuracy (judge label) by question type" in result.output
    assert "turn recall_any@5 by question type" in result.output
    assert "1 line(s) have no 'hypothesis' while other lines do" in result.output
    assert "following xiaowu0162/LongMemEval src/retrieval/eval_utils.py" in result.output
    result = CliRunner().invoke(app, [*args, "--format", "recallbench"])
    assert result.exit_code == 2 and "field 'question_id'" in result.output


def test_glasshouse_file_prints_the_per_axis_tables(shared_data: Path, tmp_path: Path) -> None:
    if not (shared_data / "glasshouse-v0.1" / "questions_core.jsonl").exists():
        pytest.skip("Glasshouse v0.1 files not in the shared data folder")
    path = _write(
        tmp_path / "run.jsonl",
        [{"id": "Q001", "answer": "a quarter acre", "retrieved_turns": [12], "prompt_tokens": 9}],
    )
    result = CliRunner().invoke(
        app,
        ["score", str(path), "--dataset", "glasshouse-v0.1", "--tier", "core", "--questions",
         "core", "--data-dir", str(shared_data), "--name", "mine"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.output
    assert "mine, Glasshouse dry score by axis" in out
    assert "scored from the predictions file run.jsonl" in out and "chunking" not in out
    assert "format: glasshouse (Glasshouse's run records" in out
    assert "answer scoring mode: dry" in out
    assert "following wontopos/glasshouse glasshouse-v0.1/score.py" in out
