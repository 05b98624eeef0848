"""``locomo``: LoCoMo (Maharana et al., ACL 2024), ten long two-person conversations.

Source: ``data/locomo10.json`` of the public GitHub repository ``snap-research/LoCoMo``, pinned to
a commit and to the file's SHA-256 (the file is unchanged since 2024-08-09). Licence CC BY-NC 4.0:
recallbench downloads it at run time and never ships it.

What the loader does, faithfully to the published file:

* one haystack group per conversation (``sample_id``); sessions are the ``session_N`` lists,
  iterated by number (never the ``session_N_date_time`` keys: one conversation has more date keys
  than sessions); a session's date is its ``session_N_date_time`` string, as published;
* a turn's id is its ``dia_id``; its speaker is the speaker's name; a turn that shared an image
  carries ``blip_caption`` and is handed to systems as ``<text> and shared <caption>.``, as
  LoCoMo's own prompts do (the image URL is kept as the turn's image reference);
* a question's id is ``<sample_id>:<index>`` (0-based position in ``qa``); its slice is the
  category name; integer answers are kept as their string for gold; category 5 (adversarial)
  items carry ``adversarial_answer`` and usually no ``answer``, and are expected to decline;
* evidence is parsed with :func:`recallbench.benchmarks.locomo.metrics.parse_evidence`, and every
  defect (empty, malformed, zero-padded, duplicate, or naming a turn that does not exist) is
  listed in the load report with its question id. Nothing crashes and nothing is dropped silently.

With the option ``errata="locomo-audit"`` (:class:`~recallbench.benchmarks.locomo.options.
LocomoOptions`) the third-party audit files are fetched and verified too (pinned in
:mod:`recallbench.benchmarks.locomo.errata`, stored in ``<data dir>/locomo-audit/``, recorded as
``locomo-audit/<file name>`` among the dataset's files, so the checksum covers them), mapped onto
the questions (an entry that does not match the dataset is refused, naming it), and described in
the card notes and the ``errata_overlay`` fact. Without it nothing is read and nothing changes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallbench.benchmarks.locomo import errata
from recallbench.benchmarks.locomo.metrics import ADVERSARIAL, CATEGORY_NAMES, parse_evidence
from recallbench.benchmarks.locomo.options import LocomoOptions
from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    FileRecord,
    FileSpec,
    HaystackGroup,
    LoadedDataset,
    benchmark_dataset,
)
from recallbench.datasets.fetch import ensure_file, json_file, read_json
from recallbench.errors import DatasetFormatError

NAME = "locomo"
COMMIT = "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
FILE_NAME = "locomo10.json"
FILE = FileSpec(
    name=FILE_NAME,
    sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
    url=f"https://raw.githubusercontent.com/snap-research/LoCoMo/{COMMIT}/data/{FILE_NAME}",
    size=2_805_274,
)
VERSION = COMMIT[:8]

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")

CARD_NOTES: tuple[str, ...] = (
    "LoCoMo (snap-research/LoCoMo, data/locomo10.json), CC BY-NC 4.0: downloaded at run time, "
    "never shipped with recallbench.",
    "Haystack: one group per conversation (10 groups); sessions are the session_N lists, dated "
    "with their session_N_date_time string as published.",
    "Turns that shared an image are handed to systems as '<text> and shared <blip_caption>.', as "
    "LoCoMo's own prompts do; the image URL is kept as the turn's image reference (systems that "
    "accept images get it with --image-mode native).",
    "Speakers are the two participants' names (no 'user'/'assistant'), so 'pair' chunking keeps "
    "every turn as a chunk of its own.",
    "Categories as the released file uses them: 1 multi-hop, 2 temporal, 3 open-domain, "
    "4 single-hop, 5 adversarial. Category 5 items carry adversarial_answer and usually no answer; "
    "they are expected to decline (expect=no_memory) and keep their evidence turns.",
    "Evidence defects (empty, malformed, zero-padded, duplicate, or naming a turn that does not "
    "exist) are listed in the load report with the question id; ids that can be read are kept, "
    "ids naming no turn are dropped, and a question with no usable evidence id gets null "
    "retrieval metrics with the reason.",
)


def _overlay(options: DatasetOptions | None) -> str | None:
    """The errata overlay the options ask for (checked), or None."""
    name = options.errata if isinstance(options, LocomoOptions) else None
    return None if name is None else errata.check_overlay(NAME, name)


def _files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    """``locomo10.json``, then the audit files when the options ask for the overlay."""
    return (FILE, *(errata.audit_files() if _overlay(options) else ()))


def read_errata(data_dir: Path) -> tuple[list[errata.AuditEntry], list[FileRecord]]:
    """The entries of every pinned audit file (fetched into ``<data dir>/locomo-audit/`` and
    verified by SHA-256 when missing), and their records named ``locomo-audit/<file name>``."""
    entries: list[errata.AuditEntry] = []
    records: list[FileRecord] = []
    for spec in errata.audit_files():
        path, record = ensure_file(errata.OVERLAY, spec, data_dir)
        entries.extend(errata.parse_audit_file(spec.name, read_json(path)))
        records.append(dataclasses.replace(record, name=f"{errata.OVERLAY}/{record.name}"))
    return entries, records


def _text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} and shared {caption}."
    return text


def _image(turn: Mapping[str, Any]) -> str | None:
    url = turn.get("img_url")
    if isinstance(url, list):
        url = url[0] if url else None
    return str(url) if url else None


def _sessions(
    sample_id: str, conversation: Mapping[str, Any], report: list[str]
) -> tuple[list[Session], dict[str, str]]:
    numbers = sorted(
        int(m.group(1))
        for key in conversation
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conversation[key], list)
    )
    date_numbers = sorted(
        int(m.group(1)) for key in conversation if (m := _DATE_KEY.fullmatch(key))
    )
    extra_dates = [n for n in date_numbers if n not in set(numbers)]
    if extra_dates:
        report.append(
            f"{sample_id}: {len(extra_dates)} session_N_date_time key(s) without a session "
            f"(session {', '.join(str(n) for n in extra_dates)}): ignored"
        )
    sessions: list[Session] = []
    turn_session: dict[str, str] = {}
    for n in numbers:
        session_id = f"{sample_id}:session_{n}"
        date = conversation.get(f"session_{n}_date_time")
        if date is None:
            report.append(f"{sample_id}: session_{n} has no session_{n}_date_time: undated")
        turns: list[Turn] = []
        for position, raw in enumerate(conversation[f"session_{n}"], start=1):
            if not isinstance(raw, Mapping):
                report.append(f"{sample_id}: session_{n} entry {position} is not a turn: skipped")
                continue
            dia_id = str(raw.get("dia_id") or f"D{n}:{position}")
            if "dia_id" not in raw:
                report.append(f"{sample_id}: session_{n} turn {position} has no dia_id: {dia_id}")
            if dia_id in turn_session:
                report.append(f"{sample_id}: duplicate dia_id {dia_id!r}: the later turn skipped")
                continue
            turn_session[dia_id] = session_id
            turns.append(
                Turn(
                    turn_id=dia_id,
                    session_id=session_id,
                    speaker=str(raw.get("speaker", "")),
                    text=_text(raw),
                    date=None if date is None else str(date),
                    image=_image(raw),
                )
            )
        sessions.append(
            Session(
                session_id=session_id, date=None if date is None else str(date), turns=tuple(turns)
            )
        )
    return sessions, turn_session


def _question(
    sample_id: str,
    index: int,
    qa: Mapping[str, Any],
    turn_session: Mapping[str, str],
    report: list[str],
) -> Question:
    qid = f"{sample_id}:{index}"
    category = qa.get("category")
    if category not in CATEGORY_NAMES:
        raise DatasetFormatError(
            Path(FILE_NAME), None, f"question {qid}: unknown category {category!r}"
        )
    parsed, defects = parse_evidence(qa.get("evidence"))
    for defect in defects:
        report.append(f"{qid}: evidence {defect}")
    missing = [e for e in parsed if e not in turn_session]
    for e in missing:
        report.append(f"{qid}: evidence id {e!r} names no turn of {sample_id}: dropped")
    evidence = tuple(e for e in parsed if e in turn_session)
    unknown_reason = None
    if not evidence:
        problems = defects + [f"{e!r} names no turn" for e in missing]
        unknown_reason = "LoCoMo gives no usable evidence id for this question"
        if problems:
            unknown_reason += f" ({'; '.join(problems)})"
    answer = qa.get("answer")
    if category != ADVERSARIAL and answer is None:
        report.append(f"{qid}: category {category} question has no answer")
    extra: dict[str, Any] = {
        "category": category,
        "category_name": CATEGORY_NAMES[category],
        "sample_id": sample_id,
        "index": index,
        "evidence_raw": qa.get("evidence"),
    }
    if isinstance(answer, int) and not isinstance(answer, bool):
        extra["answer_is_int"] = True
    if "adversarial_answer" in qa:
        extra["adversarial_answer"] = qa["adversarial_answer"]
    return Question(
        id=qid,
        dataset=NAME,
        group=sample_id,
        text=str(qa.get("question", "")),
        gold=None if answer is None else str(answer),
        expect="no_memory" if category == ADVERSARIAL else "answer",
        evidence_turns=evidence or None,
        evidence_sessions=tuple(dict.fromkeys(turn_session[e] for e in evidence)),
        axis=CATEGORY_NAMES[category],
        evidence_unknown_reason=unknown_reason,
        extra=extra,
    )


def parse_locomo(data: Any) -> tuple[list[HaystackGroup], list[Question], list[str]]:
    """Groups, questions and the load report of a parsed ``locomo10.json``-format document."""
    path = Path(FILE_NAME)
    if not isinstance(data, list):
        raise DatasetFormatError(path, None, "expected a JSON list of conversations")
    groups: list[HaystackGroup] = []
    questions: list[Question] = []
    report: list[str] = []
    seen: set[str] = set()
    for position, sample in enumerate(data):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise DatasetFormatError(path, None, f"item {position} is not a LoCoMo conversation")
        sample_id = str(sample.get("sample_id") or f"conv-{position}")
        if sample_id in seen:
            raise DatasetFormatError(path, None, f"duplicate sample_id {sample_id!r}")
        seen.add(sample_id)
        sessions, turn_session = _sessions(sample_id, sample["conversation"], report)
        qs = [
            _question(sample_id, i, qa, turn_session, report)
            for i, qa in enumerate(sample.get("qa") or [])
        ]
        questions.extend(qs)
        groups.append(HaystackGroup(sample_id, tuple(sessions), tuple(q.id for q in qs)))
    return groups, questions, report


def int_answer_ids(questions: list[Question]) -> list[str]:
    return [q.id for q in questions if q.extra.get("answer_is_int")]


def load(
    spec: DatasetSpec,
    variant: str,
    data_dir: Path,
    options: DatasetOptions,
    local_path: Path | None = None,
    predictions: bool = False,
) -> LoadedDataset:
    overlay = _overlay(options)
    data, record, _ = json_file(spec.name, FILE, data_dir, local_path, "locomo@PATH takes a file")
    groups, questions, report = parse_locomo(data)
    files = [record]
    facts: dict[str, Any] = {}
    overlay_notes: list[str] = []
    if overlay is not None:
        entries, records = read_errata(data_dir)
        questions, summary = errata.apply_errata(groups, questions, entries, overlay)
        files.extend(records)
        report.extend(summary.report)
        overlay_notes = summary.card_notes()
        facts[errata.FACTS_KEY] = summary.facts()
    notes = list(CARD_NOTES)
    ints = int_answer_ids(questions)
    if ints:
        notes.append(f"Integer answers kept as their string for gold: {', '.join(ints)}.")
    evidence = [line for line in report if ": evidence " in line]
    asked = {line.split(": ", 1)[0] for line in evidence}
    notes.append(
        f"Load report: {len(report)} entries, {len(evidence)} of them evidence defects in "
        f"{len(asked)} questions (every one listed with its question id)."
    )
    return benchmark_dataset(
        spec,
        "",
        local_path,
        files=files,
        groups=groups,
        questions=questions,
        load_report=report,
        card_notes=notes + overlay_notes,
        options=options,
        facts=facts,
        slice_order=tuple(CATEGORY_NAMES[n] for n in sorted(CATEGORY_NAMES)),
    )


SPEC = DatasetSpec(
    name=NAME,
    version=VERSION,
    description="LoCoMo: 10 long two-person conversations, 1,986 questions in 5 categories.",
    license="CC BY-NC 4.0",
    haystack="conversation",
    variants=(),
    default_variant="",
    loader=load,
    variant_files=_files,
    source=f"https://github.com/snap-research/LoCoMo (commit {COMMIT}), data/{FILE_NAME}",
)
