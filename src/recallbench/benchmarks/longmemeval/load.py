"""``longmemeval``: LongMemEval (Wu et al., ICLR 2025), 500 questions over chat histories.

Source: the cleaned release on the Hugging Face hub, ``xiaowu0162/longmemeval-cleaned``, pinned by
revision: ``longmemeval_oracle.json`` (variant ``oracle``: only the evidence sessions),
``longmemeval_s_cleaned.json`` (``s``: about 50 sessions per question) and
``longmemeval_m_cleaned.json`` (``m``: about 500). The ``s`` file's SHA-256 is pinned here; the
others are pinned on first use (the first verified download is recorded in a lock file and every
result says so) until their hashes are added.

Each instance is one question with its own haystack, so a haystack group is one question. Turn
ids are ``<session_id>_<n>``, counting every turn of the session from 1. Gold evidence follows
the benchmark's convention: the user turns marked ``has_answer`` inside the answer sessions (its
official retrieval index holds user turns only); questions whose id ends in ``_abs`` are
abstention questions, with no evidence by design (``expect="no_memory"``). Systems receive every
turn (user and assistant) of every haystack session, dated with the session's date string as
published; ``has_answer`` marks never reach them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallbench.benchmarks.longmemeval.metrics import QUESTION_TYPES, is_abstention
from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    FileSpec,
    HaystackGroup,
    LoadedDataset,
    benchmark_dataset,
    count_by_axis,
)
from recallbench.datasets.fetch import PINNED_ON_FIRST_USE, json_file
from recallbench.errors import DatasetFormatError

NAME = "longmemeval"
REPO = "xiaowu0162/longmemeval-cleaned"
REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
BASE_URL = f"https://huggingface.co/datasets/{REPO}/resolve/{REVISION}"
FILES: dict[str, FileSpec] = {
    "oracle": FileSpec("longmemeval_oracle.json", None, f"{BASE_URL}/longmemeval_oracle.json"),
    "s": FileSpec(
        "longmemeval_s_cleaned.json",
        "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
        f"{BASE_URL}/longmemeval_s_cleaned.json",
        size=277_383_467,
    ),
    "m": FileSpec("longmemeval_m_cleaned.json", None, f"{BASE_URL}/longmemeval_m_cleaned.json"),
}
USER = "user"
REQUIRED = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
)
# "2023/05/20 (Sat) 02:21": sorts chronologically as text.
_DATE = re.compile(r"\d{4}/\d{2}/\d{2} \(\w{3}\) \d{2}:\d{2}(:\d{2})?")

CARD_NOTES: tuple[str, ...] = (
    f"LongMemEval cleaned release ({REPO} at revision {REVISION[:12]}), MIT licence.",
    "Haystack: one group per question (its own haystack_sessions); systems are reset between "
    "questions. Sessions are handed in chronological order (the s and m files list them so; the "
    "oracle file does not), every user and assistant turn, dated with the session's date string.",
    "Turn ids are <session_id>_<n>, n counting every turn of the session from 1.",
    "Gold evidence: user turns marked has_answer inside the answer sessions, as LongMemEval's own "
    "retrieval evaluation uses (its index holds user turns only). Questions with no such turn "
    "(for example evidence said by the assistant) get null retrieval metrics with the reason.",
    "Questions whose id ends in _abs are abstention questions: no evidence by design "
    "(expect=no_memory), left out of retrieval metrics and counted; their QA accuracy is "
    "reported separately.",
    "The query handed to systems is the question text only; question_date is kept as gold-side "
    "metadata for answer generation.",
)


def _files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    return (FILES[variant],) if variant in FILES else ()


def _fail(path: Path, qid: str, message: str) -> DatasetFormatError:
    return DatasetFormatError(path, None, f"question {qid!r}: {message}")


def _instance(
    path: Path, position: int, raw: Any, report: list[str]
) -> tuple[HaystackGroup, Question]:
    if not isinstance(raw, Mapping):
        raise DatasetFormatError(path, None, f"instance {position} is not a JSON object")
    qid = str(raw.get("question_id", f"#{position}"))
    for key in REQUIRED:
        if key not in raw:
            raise _fail(path, qid, f"missing field {key!r}")
    ids, dates, bodies = (
        raw["haystack_session_ids"],
        raw["haystack_dates"],
        raw["haystack_sessions"],
    )
    if not (isinstance(ids, list) and isinstance(dates, list) and isinstance(bodies, list)):
        raise _fail(
            path, qid, "haystack_session_ids, haystack_dates and haystack_sessions must be lists"
        )
    if not len(ids) == len(dates) == len(bodies):
        raise _fail(
            path,
            qid,
            f"haystack lists differ in length (ids {len(ids)}, dates {len(dates)}, "
            f"sessions {len(bodies)})",
        )
    answer_sessions = [str(s) for s in raw.get("answer_session_ids") or []]
    answer_set = set(answer_sessions)
    entries: list[tuple[str, str | None, Any]] = []
    seen: dict[str, int] = {}
    for sid_raw, date, body in zip(ids, dates, bodies, strict=True):
        sid = str(sid_raw)
        if sid in seen:
            seen[sid] += 1
            renamed = f"{sid}#{seen[sid]}"
            report.append(f"{qid}: haystack session id {sid!r} repeats: the repeat is {renamed!r}")
            sid = renamed
        else:
            seen[sid] = 1
        entries.append((sid, None if date is None else str(date), body))
    if all(d is not None and _DATE.fullmatch(d) for _, d, _ in entries):
        entries.sort(key=lambda e: str(e[1]))  # stable: equal dates keep the published order
    sessions: list[Session] = []
    user_turns: list[str] = []
    gold: list[str] = []
    for sid, date, body in entries:
        if not isinstance(body, list):
            raise _fail(path, qid, f"session {sid!r} is not a list of turns")
        turns: list[Turn] = []
        for n, msg in enumerate(body, start=1):
            if not isinstance(msg, Mapping) or "role" not in msg or "content" not in msg:
                raise _fail(path, qid, f"session {sid!r} turn {n} lacks role or content")
            turn_id = f"{sid}_{n}"
            role = str(msg["role"])
            turns.append(Turn(turn_id, sid, role, str(msg["content"]), date))
            if role == USER:
                user_turns.append(turn_id)
                if msg.get("has_answer") and sid in answer_set:
                    gold.append(turn_id)
        sessions.append(Session(sid, date, tuple(turns)))
    missing = [s for s in answer_sessions if s not in seen]
    if missing:
        report.append(f"{qid}: answer session(s) {missing} not in the haystack")
    qtype = str(raw["question_type"])
    if qtype not in QUESTION_TYPES:
        report.append(f"{qid}: unknown question_type {qtype!r}")
    abstention = is_abstention(qid)
    evidence: tuple[str, ...] | None
    unknown = None
    if abstention:
        evidence = ()
    elif gold:
        evidence = tuple(gold)
    else:
        evidence = None
        unknown = (
            "no user turn of the answer sessions is marked has_answer; LongMemEval's retrieval "
            "evaluation skips such questions"
        )
    question = Question(
        id=qid,
        dataset=NAME,
        group=qid,
        text=str(raw["question"]),
        gold=str(raw["answer"]),
        expect="no_memory" if abstention else "answer",
        evidence_turns=evidence,
        evidence_sessions=() if abstention else tuple(answer_sessions),
        axis=qtype,
        evidence_unknown_reason=unknown,
        extra={
            "question_type": qtype,
            "question_date": raw.get("question_date"),
            "is_abstention": abstention,
            "answer_session_ids": tuple(answer_sessions),
            "has_answer_turns": tuple(gold),
            "user_turns": tuple(user_turns),
        },
    )
    return HaystackGroup(qid, tuple(sessions), (qid,)), question


def parse_longmemeval(
    data: Any, path: Path = Path("longmemeval.json")
) -> tuple[list[HaystackGroup], list[Question], list[str]]:
    """Groups, questions and load report of a parsed LongMemEval file (a JSON list)."""
    if not isinstance(data, list):
        raise DatasetFormatError(path, None, "expected a JSON list of instances")
    groups: list[HaystackGroup] = []
    questions: list[Question] = []
    report: list[str] = []
    seen: set[str] = set()
    for position, raw in enumerate(data):
        group, question = _instance(path, position, raw, report)
        if question.id in seen:
            raise _fail(path, question.id, "duplicate question_id")
        seen.add(question.id)
        groups.append(group)
        questions.append(question)
    return groups, questions, report


def load(
    spec: DatasetSpec,
    variant: str,
    data_dir: Path,
    options: DatasetOptions,
    local_path: Path | None = None,
    predictions: bool = False,
) -> LoadedDataset:
    usage = "longmemeval@PATH takes a JSON file"
    data, record, path = json_file(spec.name, FILES.get(variant), data_dir, local_path, usage)
    groups, questions, report = parse_longmemeval(data, path)
    notes = list(CARD_NOTES)
    counts = count_by_axis(questions, QUESTION_TYPES)
    abstentions = sum(bool(q.extra["is_abstention"]) for q in questions)
    unknown = sum(q.evidence_turns is None for q in questions)
    notes.append(
        "Questions per type: "
        + ", ".join(f"{t} {n}" for t, n in counts.items())
        + f"; abstention {abstentions}; without a user evidence turn {unknown}."
    )
    if record.note == PINNED_ON_FIRST_USE:
        notes.append(
            f"{record.name}: {PINNED_ON_FIRST_USE} (no published SHA-256 yet; the lock file "
            f"records {record.sha256[:16]}...)."
        )
    return benchmark_dataset(
        spec,
        variant,
        local_path,
        files=(record,),
        groups=groups,
        questions=questions,
        load_report=report,
        card_notes=notes,
        options=options,
        slice_order=tuple(QUESTION_TYPES),
    )


SPEC = DatasetSpec(
    name=NAME,
    version=f"cleaned@{REVISION[:8]}",
    description="LongMemEval (cleaned): 500 questions, six types, each over its own chat history.",
    license="MIT",
    haystack="question",
    variants=("oracle", "s", "m"),
    default_variant="s",
    loader=load,
    variant_files=_files,
    source=f"https://huggingface.co/datasets/{REPO} (revision {REVISION})",
)
