"""``beam``: BEAM, "Beyond a Million Tokens" (Tavakoli et al., 2025): long chats, ten abilities.

Source: the public GitHub repository ``mohammadtavakoli78/BEAM``, pinned to a commit, in its own
layout: ``chats/<split>/<n>/chat.json`` and ``chats/<split>/<n>/probing_questions/
probing_questions.json``. Variants: ``100k`` (20 conversations, folder ``100K``), ``500k`` (35)
and ``1m`` (the 1M conversations the repository carries in this layout; the repository holds only
part of that split, so a conversation it lacks is reported and skipped). The complete 1M split and
the 10M set are published on the Hugging Face hub in another format: not supported yet.

The repository states no licence, so recallbench downloads the files at run time and never ships
them. Only the first 100K conversation has a SHA-256 recorded here; every other file is pinned on
first use (recorded in a lock file, and every result says so).

Loading: one haystack group per conversation; a batch is a session; a message's ``id`` is its
turn id; a session's date is the batch's ``time_anchor``, else the first ``time_anchor`` among its
messages (mostly absent: most messages carry none, and the batch-level field is null in the
sample seen); evidence turns come from the question's ``source_chat_ids`` (a list, or an object
whose values are lists; none for abstention questions, which expect the system to decline).
Where the repository carries ``chat_trunecated.json`` (sic) for a conversation, that file is read
instead of ``chat.json``, as the authors' own answer-generation harness does.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallbench.benchmarks.beam.metrics import ABILITIES, parse_rubric
from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    FileRecord,
    FileSpec,
    HaystackGroup,
    LoadedDataset,
    benchmark_dataset,
    count_by_axis,
)
from recallbench.datasets.fetch import (
    PINNED_ON_FIRST_USE,
    DataFileError,
    ensure_file,
    local_file_record,
    read_json,
)
from recallbench.errors import DatasetFormatError

NAME = "beam"
REPO = "mohammadtavakoli78/BEAM"
COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
"""The commit the published files are pinned to (short id b2a3ee8); check it with
``git ls-remote https://github.com/mohammadtavakoli78/BEAM`` or on the repository's history page."""
BASE_URL = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}"
CHAT = "chat.json"
TRUNCATED_CHAT = "chat_trunecated.json"
QUESTIONS = "probing_questions/probing_questions.json"
SPLITS: dict[str, tuple[str, int]] = {"100k": ("100K", 20), "500k": ("500K", 35), "1m": ("1M", 35)}
PARTIAL_SPLITS = frozenset({"1m"})
TRUNCATED: frozenset[tuple[str, int]] = frozenset(
    {("100K", 11), ("100K", 12), ("100K", 17), ("100K", 18), ("1M", 6)}
)
"""Conversations for which the repository listing shows ``chat_trunecated.json``."""
KNOWN_SHA256: dict[str, str] = {
    "chats/100K/1/chat.json": "ea71efd5dcc13f7366d3737b45d532eadb3d1497f3d6f23d1fa1c4004d5ffdf2",
    "chats/100K/1/probing_questions/probing_questions.json": (
        "047398ff1497674b11585e7b4829c3d64d2d5e63f7f3572c826b73ca1faaf898"
    ),
}
GOLD_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
ABSTENTION = "abstention"

NOT_SUPPORTED = (
    "not supported yet: the {what} is published on the Hugging Face hub "
    "(https://huggingface.co/datasets/Mohammadta/{hub}) in another format than the repository's "
    "chats/<split>/<n>/ layout that recallbench reads. Use beam:100k, beam:500k or beam:1m (the 1M "
    "conversations the repository carries), or beam@PATH for a folder in the repository's layout."
)
VARIANT_NOTES: dict[str, str] = {
    "10m": NOT_SUPPORTED.format(what="10M set (BEAM-10M)", hub="BEAM-10M"),
    "1m-full": NOT_SUPPORTED.format(what="complete 1M split", hub="BEAM"),
}

CARD_NOTES: tuple[str, ...] = (
    f"BEAM ({REPO} at commit {COMMIT[:12]}); the repository states no licence, so the files are "
    "downloaded at run time and never shipped.",
    "Haystack: one group per conversation; a batch is a session; a message's id is its turn id; "
    "roles are user/assistant. Message text is handed as published, including the plan markers "
    "some user messages end with (such as '->-> 1,1').",
    "Dates: a session is dated by its batch time_anchor, else by the first message that carries "
    "one. time_anchor is mostly absent (null on every batch of the sample seen; only a few "
    "messages carry one), so most turns have no date of their own.",
    "Evidence: the question's source_chat_ids (a list, or an object whose values are lists); "
    "abstention questions have none by design (expect=no_memory).",
    "Scoring: every question is rubric-graded by an LLM judge (0 / 0.5 / 1 per item, averaged) "
    "and event-ordering answers also by Kendall tau-b; both are null until a judge exists. "
    "Retrieval figures come from source_chat_ids.",
    "The complete 1M split and the 10M set (Hugging Face hub, another format) are not "
    "supported yet.",
)


def chat_file(split_dir: str, number: int) -> str:
    name = TRUNCATED_CHAT if (split_dir, number) in TRUNCATED else CHAT
    return f"chats/{split_dir}/{number}/{name}"


def questions_file(split_dir: str, number: int) -> str:
    return f"chats/{split_dir}/{number}/{QUESTIONS}"


def _spec_for(name: str) -> FileSpec:
    return FileSpec(name, KNOWN_SHA256.get(name), f"{BASE_URL}/{name}")


def _conversation_files(split_dir: str, number: int) -> tuple[FileSpec, FileSpec]:
    return _spec_for(chat_file(split_dir, number)), _spec_for(questions_file(split_dir, number))


def _files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    if variant not in SPLITS:
        return ()
    split_dir, count = SPLITS[variant]
    return tuple(f for n in range(1, count + 1) for f in _conversation_files(split_dir, n))


# ---------------------------------------------------------------- parsing


def _evidence_ids(raw: Any) -> list[str] | None:
    """Message ids of ``source_chat_ids``: a list, or an object whose values are lists."""
    if raw is None:
        return None
    values: list[Any] = []
    if isinstance(raw, Mapping):
        for v in raw.values():
            values.extend(v if isinstance(v, list) else [v])
    elif isinstance(raw, list):
        values = list(raw)
    else:
        values = [raw]
    return list(dict.fromkeys(str(v) for v in values))


def parse_chat(
    conversation: str, chat: Any, report: list[str]
) -> tuple[list[Session], dict[str, str]]:
    """Sessions (one per batch) and a turn id -> session id map of one ``chat.json``."""
    if not isinstance(chat, list):
        raise _Shape("chat.json: expected a JSON list of batches")
    sessions: list[Session] = []
    turn_session: dict[str, str] = {}
    for position, batch in enumerate(chat, start=1):
        if not isinstance(batch, Mapping):
            raise _Shape(f"chat.json: batch {position} is not an object")
        number = batch.get("batch_number", position)
        session_id = f"{conversation}:batch_{number}"
        messages: list[Mapping[str, Any]] = []
        for group in batch.get("turns") or []:
            if isinstance(group, list):
                messages.extend(m for m in group if isinstance(m, Mapping))
            elif isinstance(group, Mapping):
                messages.append(group)
        date = batch.get("time_anchor") or next(
            (m["time_anchor"] for m in messages if m.get("time_anchor")), None
        )
        turns: list[Turn] = []
        for m in messages:
            if "id" not in m:
                report.append(f"{conversation}: a message of batch {number} has no id: skipped")
                continue
            turn_id = str(m["id"])
            if turn_id in turn_session:
                report.append(f"{conversation}: duplicate message id {turn_id}: the repeat skipped")
                continue
            turn_session[turn_id] = session_id
            turns.append(
                Turn(
                    turn_id=turn_id,
                    session_id=session_id,
                    speaker=str(m.get("role", "")),
                    text=str(m.get("content", "")),
                    date=None if date is None else str(date),
                )
            )
        sessions.append(Session(session_id, None if date is None else str(date), tuple(turns)))
    return sessions, turn_session


def parse_questions(
    conversation: str,
    probing: Any,
    turn_session: Mapping[str, str],
    report: list[str],
) -> list[Question]:
    if not isinstance(probing, Mapping):
        raise _Shape("probing_questions.json: expected an object keyed by ability")
    questions: list[Question] = []
    for ability, items in probing.items():
        if ability not in ABILITIES:
            report.append(f"{conversation}: unknown ability {ability!r}: its questions kept")
        for index, raw in enumerate(items or []):
            qid = f"{conversation}:{ability}:{index}"
            if not isinstance(raw, Mapping) or "question" not in raw:
                report.append(f"{qid}: not a question object: skipped")
                continue
            try:
                rubric = parse_rubric(raw.get("rubric"))
            except ValueError as exc:
                report.append(f"{qid}: {exc}")
                rubric = []
            gold_key = next((k for k in GOLD_FIELDS if raw.get(k) is not None), None)
            ids = _evidence_ids(raw.get("source_chat_ids"))
            evidence: tuple[str, ...] | None
            unknown = None
            if ability == ABSTENTION:
                evidence = ()
                if ids:
                    report.append(f"{qid}: abstention question lists source_chat_ids: ignored")
            elif not ids:
                evidence = None
                unknown = "BEAM gives no source_chat_ids for this question"
                report.append(f"{qid}: no source_chat_ids")
            else:
                missing = [i for i in ids if i not in turn_session]
                for i in missing:
                    report.append(f"{qid}: source_chat_id {i} names no message: dropped")
                evidence = tuple(i for i in ids if i in turn_session) or None
                if evidence is None:
                    unknown = "none of the question's source_chat_ids names a message"
            questions.append(
                Question(
                    id=qid,
                    dataset=NAME,
                    group=conversation,
                    text=str(raw["question"]),
                    gold=None if gold_key is None else str(raw[gold_key]),
                    expect="no_memory" if ability == ABSTENTION else "answer",
                    evidence_turns=evidence,
                    evidence_sessions=tuple(dict.fromkeys(turn_session[i] for i in evidence or ())),
                    axis=str(ability),
                    evidence_unknown_reason=unknown,
                    extra={
                        "ability": ability,
                        "rubric": tuple(rubric),
                        "gold_field": gold_key,
                        "difficulty": raw.get("difficulty"),
                        "source_chat_ids": raw.get("source_chat_ids"),
                    },
                )
            )
    return questions


class _Shape(ValueError):
    """A file whose JSON is valid but not shaped as BEAM publishes it (reported with its path)."""


def load_conversation(
    conversation: str, chat_path: Path, questions_path: Path, report: list[str]
) -> tuple[HaystackGroup, list[Question]]:
    try:
        sessions, turn_session = parse_chat(conversation, read_json(chat_path), report)
    except _Shape as exc:
        raise DatasetFormatError(chat_path, None, str(exc)) from None
    try:
        qs = parse_questions(conversation, read_json(questions_path), turn_session, report)
    except _Shape as exc:
        raise DatasetFormatError(questions_path, None, str(exc)) from None
    return HaystackGroup(conversation, tuple(sessions), tuple(q.id for q in qs)), qs


def _is_not_found(exc: DataFileError) -> bool:
    cause = exc.__cause__
    return isinstance(cause, urllib.error.HTTPError) and cause.code == 404


def _local_conversations(path: Path) -> list[tuple[str, Path]]:
    """``(conversation name, folder)`` for a conversation folder or a split folder."""
    if (path / QUESTIONS).is_file():
        return [(path.name, path)]
    found = (
        [p for p in path.iterdir() if p.is_dir() and (p / QUESTIONS).is_file()]
        if (path.is_dir())
        else []
    )
    if not found:
        raise DatasetFormatError(
            path,
            None,
            "not a BEAM conversation folder (chat.json + probing_questions/probing_questions.json)"
            " nor a folder of them",
        )
    return sorted(((p.name, p) for p in found), key=lambda x: (not x[0].isdigit(), x[0].zfill(9)))


def _load_local(
    path: Path, report: list[str]
) -> tuple[list[FileRecord], list[HaystackGroup], list[Question]]:
    records: list[FileRecord] = []
    groups: list[HaystackGroup] = []
    questions: list[Question] = []
    for conversation, folder in _local_conversations(path):
        chat = folder / TRUNCATED_CHAT
        if chat.is_file():
            report.append(f"{conversation}: reading {TRUNCATED_CHAT}, as the authors' harness does")
        else:
            chat = folder / CHAT
        if not chat.is_file():
            raise DatasetFormatError(folder, None, f"no {CHAT} in this conversation folder")
        qpath = folder / QUESTIONS
        for p in (chat, qpath):
            rec = local_file_record(p)
            records.append(
                FileRecord(str(p.relative_to(path.parent)), rec.sha256, rec.pinned, rec.note)
            )
        group, qs = load_conversation(conversation, chat, qpath, report)
        groups.append(group)
        questions.extend(qs)
    return records, groups, questions


def _load_pinned(
    variant: str, data_dir: Path, report: list[str]
) -> tuple[list[FileRecord], list[HaystackGroup], list[Question]]:
    split_dir, count = SPLITS[variant]
    records: list[FileRecord] = []
    groups: list[HaystackGroup] = []
    questions: list[Question] = []
    skipped: list[int] = []
    for number in range(1, count + 1):
        chat_spec, q_spec = _conversation_files(split_dir, number)
        try:
            chat_path, chat_rec = ensure_file(NAME, chat_spec, data_dir)
        except DataFileError as exc:
            if variant in PARTIAL_SPLITS and _is_not_found(exc):
                skipped.append(number)
                continue
            raise
        q_path, q_rec = ensure_file(NAME, q_spec, data_dir)
        records += [chat_rec, q_rec]
        group, qs = load_conversation(str(number), chat_path, q_path, report)
        groups.append(group)
        questions.extend(qs)
    if skipped:
        report.append(
            f"{split_dir}: conversation(s) {', '.join(map(str, skipped))} not in the repository's "
            "layout: skipped (the complete split is on the Hugging Face hub: not supported yet)"
        )
    if not groups:
        raise DataFileError(f"beam:{variant}: no conversation could be loaded")
    return records, groups, questions


def load(
    spec: DatasetSpec,
    variant: str,
    data_dir: Path,
    options: DatasetOptions,
    local_path: Path | None = None,
    predictions: bool = False,
) -> LoadedDataset:
    report: list[str] = []
    if local_path is not None:
        records, groups, questions = _load_local(local_path, report)
    else:
        records, groups, questions = _load_pinned(variant, data_dir, report)
    notes = list(CARD_NOTES)
    counts = count_by_axis(questions, ABILITIES)
    notes.append("Questions per ability: " + ", ".join(f"{a} {n}" for a, n in counts.items()))
    first_use = [r.name for r in records if r.note == PINNED_ON_FIRST_USE]
    if first_use:
        notes.append(
            f"{len(first_use)} of {len(records)} files {PINNED_ON_FIRST_USE} (no published "
            "SHA-256 yet; recorded in the data folder's lock file)."
        )
    return benchmark_dataset(
        spec,
        variant,
        local_path,
        files=records,
        groups=groups,
        questions=questions,
        load_report=report,
        card_notes=notes,
        options=options,
        slice_order=tuple(ABILITIES),
    )


SPEC = DatasetSpec(
    name=NAME,
    version=COMMIT[:8],
    description="BEAM: long user-assistant chats (100K-1M tokens), ten memory abilities.",
    license="none stated",
    haystack="conversation",
    variants=tuple(SPLITS),
    default_variant="100k",
    loader=load,
    variant_files=_files,
    source=f"https://github.com/{REPO} (commit {COMMIT}), chats/<split>/<n>/",
    variant_notes=VARIANT_NOTES,
)
