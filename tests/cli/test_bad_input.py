"""Bad input in recallbench's own format, through the command line: a non-zero exit, a message
naming the file and the line, and no partial results folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from recallbench.cli import app


def _turn(turn_id: str, session_id: str, date: str, speaker: str, text: str) -> dict[str, str]:
    return {
        "turn_id": turn_id,
        "session_id": session_id,
        "date": date,
        "speaker": speaker,
        "text": text,
    }


TURNS = [
    _turn("t1", "s1", "2025-01-01", "user", "I am Ana"),
    _turn("t2", "s1", "2025-01-01", "assistant", "Hi"),
    _turn("t3", "s2", "2025-01-02", "user", "A cat"),
    _turn("t4", "s2", "2025-01-02", "assistant", "Ok"),
]
QUESTIONS = [
    {"id": "q1", "question": "Name?", "answer": "Ana", "evidence_turns": ["t1"]},
    {"id": "q2", "question": "Pet?", "answer": "cat", "evidence_turns": ["t3"]},
]


def _run_native(folder: Path, out: Path, data_dir: Path) -> Result:
    """``recallbench run`` on a folder in recallbench's own format."""
    args = ["run", "-q", "--datasets", f"recallbench@{folder}", "--out", str(out)]
    return CliRunner().invoke(app, [*args, "--data-dir", str(data_dir)])


def _lines(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _truncated_mid_json() -> tuple[str, int, str, str]:
    text = _lines(TURNS)
    return "turns.jsonl", 4, text[: text.rindex("{") + 25] + "\n", _lines(QUESTIONS)


def _truncated_without_newline() -> tuple[str, int, str, str]:
    return "questions.jsonl", 2, _lines(TURNS), _lines(QUESTIONS)[:-12]


def _not_json() -> tuple[str, int, str, str]:
    return (
        "turns.jsonl",
        2,
        _lines(TURNS[:1]) + "{not json}\n" + _lines(TURNS[1:]),
        _lines(QUESTIONS),
    )


def _duplicate_turn() -> tuple[str, int, str, str]:
    return "turns.jsonl", 3, _lines([TURNS[0], TURNS[1], TURNS[0], TURNS[3]]), _lines(QUESTIONS)


def _unknown_evidence() -> tuple[str, int, str, str]:
    bad = [QUESTIONS[0], dict(QUESTIONS[1], evidence_turns=["t9"])]
    return "questions.jsonl", 2, _lines(TURNS), _lines(bad)


def _duplicate_question() -> tuple[str, int, str, str]:
    return "questions.jsonl", 2, _lines(TURNS), _lines([QUESTIONS[0], QUESTIONS[0]])


DEFECTS = {
    "truncated_mid_json": _truncated_mid_json,
    "truncated_without_newline": _truncated_without_newline,
    "not_json": _not_json,
    "duplicate_turn_id": _duplicate_turn,
    "unknown_evidence_turn": _unknown_evidence,
    "duplicate_question_id": _duplicate_question,
}


def _make(name: str, folder: Path) -> tuple[Path, int]:
    file, line, turns, questions = DEFECTS[name]()
    folder.mkdir(parents=True)
    (folder / "turns.jsonl").write_text(turns, encoding="utf-8")
    (folder / "questions.jsonl").write_text(questions, encoding="utf-8")
    return folder / file, line


def _no_run_folder(out: Path) -> bool:
    return not out.exists() or not any(out.iterdir())


def test_the_fixture_is_valid_without_a_defect(tmp_path: Path) -> None:
    folder = tmp_path / "ok"
    folder.mkdir()
    (folder / "turns.jsonl").write_text(_lines(TURNS), encoding="utf-8")
    (folder / "questions.jsonl").write_text(_lines(QUESTIONS), encoding="utf-8")
    out = tmp_path / "results"
    result = _run_native(folder, out, tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert len(list(out.iterdir())) == 1


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_bad_dataset_stops_the_run(defect: str, tmp_path: Path) -> None:
    bad_file, line = _make(defect, tmp_path / "ds")
    out = tmp_path / "results"
    result = _run_native(tmp_path / "ds", out, tmp_path / "data")
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"{bad_file}:{line}:" in result.output, result.output
    assert _no_run_folder(out)


def test_bad_dataset_through_the_real_command(tmp_path: Path) -> None:
    bad_file, line = _make("truncated_without_newline", tmp_path / "ds")
    out = tmp_path / "results"
    env = dict(os.environ, COLUMNS="400")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "recallbench",
            "run",
            "-q",
            "--datasets",
            f"recallbench@{tmp_path / 'ds'}",
            "--out",
            str(out),
            "--data-dir",
            str(tmp_path / "d"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode != 0
    assert f"{bad_file}:{line}:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _no_run_folder(out)


def test_message_keeps_brackets_in_paths(tmp_path: Path) -> None:
    # rich markup must not eat "[draft]" from the path the message names
    folder = tmp_path / "x[draft]"
    bad_file, line = _make("duplicate_question_id", folder)
    out = tmp_path / "results"
    result = _run_native(folder, out, tmp_path / "data")
    assert result.exit_code != 0
    assert f"{bad_file}:{line}:" in result.output, result.output
    assert _no_run_folder(out)
