"""``recallbench controls``: what saying nothing scores, printed with denominators and written
as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _cells(
    output: str, first: str, second: str | None = None, keys: int | None = None
) -> list[str]:
    """The cells of the one table row (header or body) whose first cell starts with ``first``
    (a long label may wrap onto the next line) and whose second is ``second``; a table split
    to fit the console repeats its ``keys`` leading columns in each part (2 with ``second``,
    else 1), and the row's cells of every part are joined in order."""
    keys = keys or (2 if second is not None else 1)
    found: list[str] = []
    for line in output.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").strip().strip("│").split("│")]
        if len(cells) > 1 and cells[0].startswith(first) and second in (None, cells[1]):
            found.extend(cells if not found else cells[keys:])
    assert found, (first, second, output)
    return found


def test_glasshouse_full_says_6_7_and_12_1_percent(shared_data: Path, tmp_path: Path) -> None:
    if not (shared_data / "glasshouse-v0.1" / "questions_full.jsonl").exists():
        pytest.skip("Glasshouse questions_full.jsonl not in the shared data")
    out = tmp_path / "floor.jsonl"
    result = _invoke(
        "controls", "--dataset", "glasshouse-v0.1", "--tier", "full", "--questions", "full",
        "--data-dir", str(shared_data), "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    header = _cells(result.output, "slice", keys=2)
    idk = header.index("I don't know.")
    assert _cells(result.output, "all", "dry plain")[idk] == "0.067 (6.7%, n=1547)"
    assert _cells(result.output, "all", "dry weighted")[idk] == "0.121 (12.1%, n=1547)"
    assert "A control, not a system" in result.output
    assert "1547 questions" in result.output
    lines = _lines(out)
    assert {line["metric"] for line in lines} == {"gh_dry", "gh_dry:weighted"}
    assert all("system" not in line for line in lines)
    [plain] = [
        x for x in lines if x["control"] == "I don't know." and x["slice"] == "all"
        and x["metric"] == "gh_dry"
    ]  # fmt: skip
    assert round(plain["value"], 3) == 0.067 and plain["denominator"] == 1547
    assert plain["dataset_sha256"] and plain["run_id"].startswith("control-")


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_locomo_shows_the_category_5_split(shared_data: Path, tmp_path: Path) -> None:
    if not (shared_data / "locomo" / "locomo10.json").exists():
        pytest.skip("LoCoMo not in the shared data")
    out = tmp_path / "floor.jsonl"
    result = _invoke(
        "controls", "--dataset", "locomo", "--data-dir", str(shared_data), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    row = _cells(result.output, "adversarial", "F1")
    assert row[2:] == [
        "0.000 (0.0%, n=446)",  # the empty answer
        "0.000 (0.0%, n=446)",  # I don't know.
        "1.000 (100.0%, n=446)",  # No information available.
        "1.000 (100.0%, n=446)",  # Not mentioned in the conversation.
    ]
    assert "adversarial (446)" in result.output.replace("\n", " ")
    adversarial = {
        x["control"]: (x["value"], x["denominator"])
        for x in _lines(out)
        if x["slice"] == "adversarial" and x["metric"] == "f1"
    }
    assert adversarial == {
        "": (0.0, 446),
        "I don't know.": (0.0, 446),
        "No information available.": (1.0, 446),
        "Not mentioned in the conversation.": (1.0, 446),
    }


def test_extra_answers_and_deterministic_figures(tmp_path: Path) -> None:
    mini = tmp_path / "mini"
    mini.mkdir()
    (mini / "turns.jsonl").write_text(
        json.dumps({"turn_id": "t1", "session_id": "s1", "speaker": "user", "text": "hi"}) + "\n"
    )
    (mini / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "question": "?", "answer": "hi", "evidence_turns": ["t1"]}) + "\n"
    )
    fixture = FIXTURES / "longmemeval" / "longmemeval_fixture.json"
    outputs = []
    for name in ("a.jsonl", "b.jsonl"):
        result = _invoke(
            "controls", "--dataset", f"longmemeval@{fixture}", "--answer", "unknown",
            "--answer", "n/a", "--out", str(tmp_path / name), "--data-dir", str(tmp_path),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    lines = _lines(tmp_path / "a.jsonl")
    controls = list(dict.fromkeys(x["control"] for x in lines))
    assert controls == [
        "",
        "I don't know.",
        "No information available.",
        "Not mentioned in the conversation.",
        "unknown",
        "n/a",
    ]
    # LongMemEval's answer figure needs an LLM judge: null with that reason, never a number
    assert all(x["value"] is None and x["null_reason"].startswith("no_judge:") for x in lines)
    assert "LLM judge" in outputs[0] and "every figure is null" in outputs[0]
    # the folder format scores retrieval only, and says so
    result = _invoke("controls", "--dataset", f"recallbench@{mini}", "--data-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "retrieval only" in result.output and "floor (returns nothing)" in result.output


def test_sample_states_retrieval_only() -> None:
    result = _invoke("controls", "--dataset", "sample")
    assert result.exit_code == 0, result.output
    assert "retrieval only" in result.output
    row = _cells(result.output, "floor (returns")  # the label wraps in this wide table
    assert row[1] == "43" and row[2] == "0.000"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _invoke("controls", "--dataset", "nope", "--data-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "unknown dataset 'nope'" in result.output
    result = _invoke("controls", "--dataset", "sample", "--tier", "big")
    assert result.exit_code == 2 and "no variants" in result.output
    result = _invoke("controls")
    assert result.exit_code == 2 and "--dataset" in result.output
