"""recallbench's own dataset format: strict validation that names the file and the line."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from recallbench.benchmarks import load_dataset
from recallbench.datasets import sample
from recallbench.datasets.folder_format import QUESTIONS_FILE, TURNS_FILE
from recallbench.errors import ChecksumMismatchError, DatasetFormatError


def _turn(turn_id: str, session_id: str, date: str, speaker: str, text: str) -> dict[str, str]:
    return {
        "turn_id": turn_id,
        "session_id": session_id,
        "date": date,
        "speaker": speaker,
        "text": text,
    }


TURNS = [
    _turn("a1", "A", "2025-02-01", "user", "hi"),
    _turn("a2", "A", "2025-02-01", "assistant", "ok"),
    _turn("b1", "B", "2025-01-01", "user", "cat"),
    _turn("b2", "B", "2025-01-01", "assistant", "."),
]
QUESTIONS = [
    {"id": "q1", "question": "Pet?", "answer": "cat", "evidence_turns": ["b1"], "category": "fact"},
    {
        "id": "q2",
        "question": "Greeting?",
        "answer": "hi",
        "evidence_turns": ["a1", "b1"],
        "stale_answer": "hello",
    },
    {"id": "q3", "question": "Dog?", "answer": "none", "expect": "no_memory", "evidence_turns": []},
]


def _lines(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write_folder(folder: Path, turns: str | None = None, questions: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TURNS_FILE).write_text(_lines(TURNS) if turns is None else turns, encoding="utf-8")
    (folder / QUESTIONS_FILE).write_text(
        _lines(QUESTIONS) if questions is None else questions, encoding="utf-8"
    )
    return folder


def _load(folder: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_dataset(f"recallbench@{folder}", tmp_path / "data")


# Each defect: (file it is in, line the message must name, turns text, questions text)
def _cut_mid_json_with_newline() -> tuple[str, int, str | None, str | None]:
    text = _lines(TURNS)
    last = json.dumps(TURNS[-1])
    return TURNS_FILE, 4, text[: -len(last) - 1] + last[:20] + "\n", None


def _cut_without_newline() -> tuple[str, int, str | None, str | None]:
    return QUESTIONS_FILE, 3, None, _lines(QUESTIONS)[:-15]


def _not_json() -> tuple[str, int, str | None, str | None]:
    lines = _lines(QUESTIONS).splitlines(keepends=True)
    lines.insert(1, "this is not json\n")
    return QUESTIONS_FILE, 2, None, "".join(lines)


def _not_an_object() -> tuple[str, int, str | None, str | None]:
    return TURNS_FILE, 5, _lines(TURNS) + '["a", "list"]\n', None


def _duplicate_turn() -> tuple[str, int, str | None, str | None]:
    turns = [*TURNS, dict(TURNS[0], text="again")]
    return TURNS_FILE, 5, _lines(turns), None


def _unknown_evidence() -> tuple[str, int, str | None, str | None]:
    questions = [QUESTIONS[0], dict(QUESTIONS[1], evidence_turns=["a1", "zz9"]), QUESTIONS[2]]
    return QUESTIONS_FILE, 2, None, _lines(questions)


def _duplicate_question() -> tuple[str, int, str | None, str | None]:
    return QUESTIONS_FILE, 4, None, _lines([*QUESTIONS, dict(QUESTIONS[0])])


def _missing_field() -> tuple[str, int, str | None, str | None]:
    turns = [*TURNS[:2], {k: v for k, v in TURNS[2].items() if k != "speaker"}, TURNS[3]]
    return TURNS_FILE, 3, _lines(turns), None


def _evidence_null() -> tuple[str, int, str | None, str | None]:
    return QUESTIONS_FILE, 1, None, _lines([dict(QUESTIONS[0], evidence_turns=None)])


def _evidence_missing() -> tuple[str, int, str | None, str | None]:
    q = {k: v for k, v in QUESTIONS[1].items() if k != "evidence_turns"}
    return QUESTIONS_FILE, 2, None, _lines([QUESTIONS[0], q])


def _evidence_string() -> tuple[str, int, str | None, str | None]:
    return QUESTIONS_FILE, 1, None, _lines([dict(QUESTIONS[0], evidence_turns="b1")])


def _weight_not_a_number() -> tuple[str, int, str | None, str | None]:
    return QUESTIONS_FILE, 3, None, _lines([*QUESTIONS[:2], dict(QUESTIONS[2], weight="heavy")])


DEFECTS: dict[str, Callable[[], tuple[str, int, str | None, str | None]]] = {
    "cut_mid_json_with_newline": _cut_mid_json_with_newline,
    "cut_without_newline": _cut_without_newline,
    "not_json": _not_json,
    "not_an_object": _not_an_object,
    "duplicate_turn_id": _duplicate_turn,
    "unknown_evidence_turn": _unknown_evidence,
    "duplicate_question_id": _duplicate_question,
    "missing_field": _missing_field,
    "evidence_null": _evidence_null,
    "evidence_missing": _evidence_missing,
    "evidence_not_a_list": _evidence_string,
    "weight_not_a_number": _weight_not_a_number,
}
EXPECTED_WORDS = {
    "cut_mid_json_with_newline": "JSON",
    "cut_without_newline": "truncated",
    "not_json": "JSON",
    "not_an_object": "object",
    "duplicate_turn_id": "a1",
    "unknown_evidence_turn": "zz9",
    "duplicate_question_id": "q1",
    "missing_field": "speaker",
    "evidence_null": "evidence_turns",
    "evidence_missing": "evidence_turns",
    "evidence_not_a_list": "evidence_turns",
    "weight_not_a_number": "weight",
}


def make_defect(name: str, folder: Path) -> tuple[Path, int]:
    """Write a folder with one defect; return the bad file and the line to name."""
    file, line, turns, questions = DEFECTS[name]()
    write_folder(folder, turns, questions)
    return folder / file, line


def test_valid_folder_loads(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "ds")
    ds = _load(folder, tmp_path)
    # named by the folder's name and checksum, never its absolute path (issue 10, item 12)
    assert ds.name == f"recallbench@ds-{ds.checksum[:8]}"
    assert not ds.pinned
    assert {f.name for f in ds.files} == {TURNS_FILE, QUESTIONS_FILE}
    (group,) = ds.groups
    # sessions in date order; turns kept in file order within a session
    assert [s.session_id for s in group.sessions] == ["B", "A"]
    assert [t.turn_id for t in group.sessions[1].turns] == ["a1", "a2"]
    assert group.question_ids == ("q1", "q2", "q3")
    q1, q2, q3 = ds.questions
    assert q1.evidence_turns == ("b1",) and q1.evidence_sessions == ("B",) and q1.axis == "fact"
    assert q2.evidence_sessions == ("A", "B")
    assert q2.extra == {"stale_answer": "hello"}
    assert q3.evidence_turns == () and q3.expect == "no_memory"


def test_checksum_follows_the_bytes(tmp_path: Path) -> None:
    one = _load(write_folder(tmp_path / "one"), tmp_path)
    two = _load(write_folder(tmp_path / "two"), tmp_path)
    assert one.checksum == two.checksum
    other = _load(write_folder(tmp_path / "three", questions=_lines(QUESTIONS[:2])), tmp_path)
    assert other.checksum != one.checksum


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_bad_input_names_file_and_line(defect: str, tmp_path: Path) -> None:
    bad_file, line = make_defect(defect, tmp_path / "ds")
    with pytest.raises(DatasetFormatError) as info:
        _load(tmp_path / "ds", tmp_path)
    message = str(info.value)
    assert f"{bad_file}:{line}:" in message, message
    assert EXPECTED_WORDS[defect] in message, message
    assert info.value.path == bad_file
    assert info.value.line == line


def test_missing_file_is_named(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "ds")
    (folder / QUESTIONS_FILE).unlink()
    with pytest.raises(DatasetFormatError, match=QUESTIONS_FILE):
        _load(folder, tmp_path)


def test_blank_lines_are_allowed(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "ds", turns=_lines(TURNS[:2]) + "\n" + _lines(TURNS[2:]))
    ds = _load(folder, tmp_path)
    assert sum(len(s.turns) for s in ds.groups[0].sessions) == 4


@pytest.mark.parametrize("file", [TURNS_FILE, QUESTIONS_FILE])
def test_tampered_sample_fails_its_checksum(
    file: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "sample"
    shutil.copytree(sample.SAMPLE_DIR, copy)
    path = copy / file
    data = path.read_bytes()
    tampered = data.replace(b"Pickle", b"Pickel", 1)
    assert tampered != data
    path.write_bytes(tampered)
    monkeypatch.setattr(sample, "SAMPLE_DIR", copy)
    with pytest.raises(ChecksumMismatchError) as info:
        load_dataset("sample", tmp_path / "data")
    message = str(info.value)
    pinned = {f.name: f.sha256 for f in sample.FILES}[file]
    actual = hashlib.sha256(tampered).hexdigest()
    assert str(path) in message
    assert pinned is not None and pinned in message
    assert actual in message
    assert info.value.expected == pinned and info.value.actual == actual
