"""recallbench's own dataset format: a folder with ``turns.jsonl`` and ``questions.jsonl``.

``turns.jsonl``: one turn per line, chronological:
``{"turn_id", "session_id", "speaker", "text", "date"?, "image"?}``.
``questions.jsonl``: one question per line: ``{"id", "question", "answer", "alternates"?,
"expect"?, "category"?, "evidence_turns", "evidence_sessions"?, "weight"?, "lang"?, ...}``;
any other field is kept as gold-side metadata (``Question.extra``) and never reaches a system.

Validation is strict: a line that is not a JSON object, a file that ends mid-line, a missing
field, a duplicate id or an evidence id that names no turn stops the load with the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.spec import FileRecord, HaystackGroup, LoadedDataset

TURNS_FILE = "turns.jsonl"
QUESTIONS_FILE = "questions.jsonl"
GLOBAL_GROUP = "all"
_QUESTION_KEYS = {
    "id",
    "question",
    "answer",
    "alternates",
    "expect",
    "category",
    "evidence_turns",
    "evidence_sessions",
    "weight",
    "lang",
}


class DatasetFormatError(ValueError):
    """Bad input in a dataset file; the message names the file and line."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; strict about JSON and truncation."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        last = data.count(b"\n") + 1
        raise DatasetFormatError(path, last, "file is truncated (the last line has no newline)")
    for number, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, number, f"not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DatasetFormatError(path, number, "expected a JSON object")
        yield number, obj


def _require(path: Path, line: int, obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj or obj[key] is None:
        raise DatasetFormatError(path, line, f"missing field {key!r}")
    return obj[key]


def _id_list(path: Path, line: int, obj: Mapping[str, Any], key: str) -> list[str]:
    """A list field of ids or strings; a string or object here is an error, not a list."""
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise DatasetFormatError(path, line, f"field {key!r} must be a list")
    return [str(v) for v in value]


def load_turns(path: Path) -> tuple[list[Turn], dict[str, int]]:
    turns: list[Turn] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        turn_id = str(_require(path, line, obj, "turn_id"))
        if turn_id in seen:
            raise DatasetFormatError(
                path, line, f"duplicate turn id {turn_id!r} (first on line {seen[turn_id]})"
            )
        seen[turn_id] = line
        image = obj.get("image")
        turns.append(
            Turn(
                turn_id=turn_id,
                session_id=str(_require(path, line, obj, "session_id")),
                speaker=str(_require(path, line, obj, "speaker")),
                text=str(_require(path, line, obj, "text")),
                date=None if obj.get("date") is None else str(obj["date"]),
                image=None if image in (None, "", "None") else str(image),
            )
        )
    if not turns:
        raise DatasetFormatError(path, None, "no turns")
    return turns, seen


def sessions_from_turns(turns: list[Turn]) -> tuple[Session, ...]:
    """Group turns by session (first appearance order), then order sessions by date (stable)."""
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session_id, []).append(t)
    sessions = [
        Session(session_id=sid, date=ts[0].date, turns=tuple(ts)) for sid, ts in by_session.items()
    ]
    sessions.sort(key=lambda s: s.date or "")
    return tuple(sessions)


def load_questions(
    path: Path, dataset: str, turn_ids: Mapping[str, int], turn_session: Mapping[str, str]
) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = str(_require(path, line, obj, "id"))
        if qid in seen:
            raise DatasetFormatError(path, line, f"duplicate question id {qid!r}")
        seen[qid] = line
        _require(path, line, obj, "evidence_turns")  # [] for no evidence by design
        evidence = _id_list(path, line, obj, "evidence_turns")
        for e in evidence:
            if e not in turn_ids:
                raise DatasetFormatError(
                    path, line, f"question {qid!r}: evidence turn {e!r} is not a turn id"
                )
        if obj.get("evidence_sessions") is None:
            sessions = sorted({turn_session[e] for e in evidence})
        else:
            sessions = _id_list(path, line, obj, "evidence_sessions")
        try:
            weight = float(obj.get("weight", 1.0))
        except (TypeError, ValueError):
            raise DatasetFormatError(path, line, "field 'weight' must be a number") from None
        answer = obj.get("answer")
        questions.append(
            Question(
                id=qid,
                dataset=dataset,
                group=GLOBAL_GROUP,
                text=str(_require(path, line, obj, "question")),
                gold=None if answer is None else str(answer),
                alternates=tuple(_id_list(path, line, obj, "alternates")),
                expect=str(obj.get("expect", "answer")),
                evidence_turns=tuple(evidence),
                evidence_sessions=tuple(str(s) for s in sessions),
                axis=str(obj.get("category", "")),
                weight=weight,
                lang=str(obj.get("lang", "en")),
                extra={k: v for k, v in obj.items() if k not in _QUESTION_KEYS},
            )
        )
    return questions


def load_native(
    folder: Path,
    *,
    name: str,
    variant: str,
    version: str,
    files: tuple[FileRecord, ...],
    card_notes: tuple[str, ...] = (),
) -> LoadedDataset:
    turns_path, questions_path = folder / TURNS_FILE, folder / QUESTIONS_FILE
    for p in (turns_path, questions_path):
        if not p.exists():
            raise DatasetFormatError(p, None, "file not found")
    turns, turn_ids = load_turns(turns_path)
    turn_session = {t.turn_id: t.session_id for t in turns}
    questions = load_questions(questions_path, name, turn_ids, turn_session)
    group = HaystackGroup(
        group_id=GLOBAL_GROUP,
        sessions=sessions_from_turns(turns),
        question_ids=tuple(q.id for q in questions),
    )
    return LoadedDataset(
        name=name,
        variant=variant,
        version=version,
        haystack="global",
        files=files,
        groups=(group,),
        questions=tuple(questions),
        card_notes=card_notes,
    )
