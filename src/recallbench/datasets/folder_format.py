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

from collections.abc import Mapping, Sequence
from pathlib import Path

from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import FileRecord, HaystackGroup, LoadedDataset
from recallbench.datasets.jsonl import id_list, read_jsonl, require
from recallbench.errors import DatasetFormatError

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


def load_turns(path: Path) -> tuple[list[Turn], dict[str, int]]:
    turns: list[Turn] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        turn_id = str(require(path, line, obj, "turn_id"))
        if turn_id in seen:
            raise DatasetFormatError(
                path, line, f"duplicate turn id {turn_id!r} (first on line {seen[turn_id]})"
            )
        seen[turn_id] = line
        image = obj.get("image")
        turns.append(
            Turn(
                turn_id=turn_id,
                session_id=str(require(path, line, obj, "session_id")),
                speaker=str(require(path, line, obj, "speaker")),
                text=str(require(path, line, obj, "text")),
                date=None if obj.get("date") is None else str(obj["date"]),
                image=None if image in (None, "", "None") else str(image),
            )
        )
    if not turns:
        raise DatasetFormatError(path, None, "no turns")
    return turns, seen


def group_sessions(turns: Sequence[Turn]) -> tuple[Session, ...]:
    """Turns grouped by session, sessions in order of first appearance, turns in file order; a
    session's date is its first turn's."""
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session_id, []).append(t)
    return tuple(
        Session(session_id=sid, date=ts[0].date, turns=tuple(ts)) for sid, ts in by_session.items()
    )


def sessions_from_turns(turns: list[Turn]) -> tuple[Session, ...]:
    """Group turns by session (first appearance order), then order sessions by date (stable)."""
    return tuple(sorted(group_sessions(turns), key=lambda s: s.date or ""))


def load_questions(
    path: Path, dataset: str, turn_ids: Mapping[str, int], turn_session: Mapping[str, str]
) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = str(require(path, line, obj, "id"))
        if qid in seen:
            raise DatasetFormatError(path, line, f"duplicate question id {qid!r}")
        seen[qid] = line
        require(path, line, obj, "evidence_turns")  # [] for no evidence by design
        evidence = id_list(path, line, obj, "evidence_turns")
        for e in evidence:
            if e not in turn_ids:
                raise DatasetFormatError(
                    path, line, f"question {qid!r}: evidence turn {e!r} is not a turn id"
                )
        if obj.get("evidence_sessions") is None:
            sessions = sorted({turn_session[e] for e in evidence})
        else:
            sessions = id_list(path, line, obj, "evidence_sessions")
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
                text=str(require(path, line, obj, "question")),
                gold=None if answer is None else str(answer),
                alternates=tuple(id_list(path, line, obj, "alternates")),
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
