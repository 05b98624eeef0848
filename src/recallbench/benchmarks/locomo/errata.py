"""Third-party errata for LoCoMo: the ``locomo-audit`` overlay, parsed and mapped (pure functions).

Source: ``audit/errors_conv_<n>.json`` (n = 0..9) of the public GitHub repository
``dial481/locomo-audit``, pinned to a commit and to each file's SHA-256. It is an independent
audit, not part of LoCoMo, licensed CC BY-NC 4.0 like LoCoMo: recallbench downloads the files at
run time (into ``<data dir>/locomo-audit/``) and never ships them.

Each file is a JSON list of entries, one per question the audit found wrong, with
``question_id`` ``locomo_<conversation index>_qa<question index>`` (both 0-based, in
``locomo10.json`` order: ``locomo_0_qa1`` is ``conv-26:1``), the question text, its category,
an ``error_type``, the ``cited_evidence`` and the audit's ``correct_evidence``. ``WRONG_CITATION``
means the answer is right and the evidence list wrong; every other type (:data:`ANSWER_KEY_ERRORS`)
says the answer key itself is wrong.

What the overlay does (nothing here reads or writes a file):

* :func:`parse_audit_file` reads one file's entries, refusing a malformed entry by name;
* :func:`apply_errata` maps the entries onto the loaded questions, refusing (by entry) one that
  names no question, whose question text or category differs from the dataset's, and marks every
  question with a :class:`QuestionErratum` under ``Question.extra[ERRATA_KEY]`` (``entry=None``
  when the audit lists nothing for it), so the rule set can score the errata figures beside the
  official ones. The official gold (answer, evidence) is never changed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from recallbench.benchmarks.locomo.metrics import ADVERSARIAL, parse_evidence
from recallbench.contracts import Question
from recallbench.datasets.dataset import FileSpec, HaystackGroup
from recallbench.errors import DatasetFormatError, OptionError

OVERLAY = "locomo-audit"
"""The overlay's name (``--errata locomo-audit``) and the data folder its files live in."""
OVERLAYS: tuple[str, ...] = (OVERLAY,)
REPOSITORY = "dial481/locomo-audit"
COMMIT = "ded8d0f08903d72b5a5eeda4fee5ced76126e7bc"
BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/audit"
"""Where :func:`audit_files` points the downloads; read at call time, so a test can point it at
a loopback server (the SHA-256 pins do not move)."""
ERRATA_KEY = "errata"
"""The ``Question.extra`` key holding a question's :class:`QuestionErratum` (overlay on only)."""
FACTS_KEY = "errata_overlay"
"""The ``run.json`` options key (a loader fact) describing the overlay; ``errata`` itself is the
user's choice, the overlay's name."""
KIND = "third-party errata"
LABEL = f"{KIND} ({OVERLAY}, {REPOSITORY}@{COMMIT[:8]})"
"""How tables, notes and reasons name the overlay: never as LoCoMo's own."""

PINS: dict[str, str] = {
    "errors_conv_0.json": "63c778c8432b058d791417ec37bf8ac30b0bb83b1272afacb5a162b84fe5e3c4",
    "errors_conv_1.json": "a2db16644318c3c144544f4cb373028e416bbf20c6f07f46606cf66f45de4e6c",
    "errors_conv_2.json": "93c2aa8ee7d3bfb59ae1cca283d176a794d76d3751c69264ddc1f63ceb2b4b3a",
    "errors_conv_3.json": "c1d0162e534bf68dba6aff3ca3e73ba8179cab7a400d098b8be89048c7b58585",
    "errors_conv_4.json": "42520f95b654c85b564da6cd26f40cefb981de574066f7b92bdebbc780fa1376",
    "errors_conv_5.json": "af8c675a3e216ddb94e07c417fb37c45fc46740dfa8ce586fc8c527f7a3b9ee7",
    "errors_conv_6.json": "acb6d0d02f938180b3d1a7a45f80d432ece69d13b197371cb71ddbddb83a26ea",
    "errors_conv_7.json": "bbe2268a3254dcc9d3741a84748fadf8e169d21d837810e92dc63cdf8db562cb",
    "errors_conv_8.json": "c15ace8ef1a7cbf3fe63d3b7ff9c2851885f5e00abc1c184971ebb11128aedb2",
    "errors_conv_9.json": "2c2b8791d024e11ca6015a109f160b7177379b3b42ac8c9adb990546fc89c4ff",
}
"""File name -> SHA-256 of each audit file at :data:`COMMIT`, in file order."""

WRONG_CITATION = "WRONG_CITATION"
ANSWER_KEY_ERRORS: tuple[str, ...] = (
    "HALLUCINATION",
    "TEMPORAL_ERROR",
    "ATTRIBUTION_ERROR",
    "AMBIGUOUS",
    "INCOMPLETE",
)
"""Error types saying the answer key is wrong (the question is left out of ``f1:errata``)."""
ERROR_TYPES: tuple[str, ...] = (WRONG_CITATION, *ANSWER_KEY_ERRORS)

_AUDIT_ID = re.compile(r"locomo_(0|[1-9]\d*)_qa(0|[1-9]\d*)")
_FIELDS = ("question_id", "question", "category", "error_type", "correct_evidence")


def check_overlay(dataset: str, name: str) -> str:
    """``name`` when it is a known overlay; otherwise an :class:`OptionError` listing them."""
    if name not in OVERLAYS:
        raise OptionError(
            f"{dataset}: unknown errata {name!r}; choose one of {', '.join(OVERLAYS)}"
        )
    return name


def audit_files() -> tuple[FileSpec, ...]:
    """The pinned audit files, with download URLs under :data:`BASE_URL` as it is now."""
    return tuple(
        FileSpec(name=name, sha256=sha, url=f"{BASE_URL}/{name}") for name, sha in PINS.items()
    )


def parse_audit_id(text: object) -> tuple[int, int] | None:
    """``locomo_<conversation>_qa<question>`` -> (conversation index, question index), 0-based;
    None for anything else (leading zeros included)."""
    if not isinstance(text, str):
        return None
    match = _AUDIT_ID.fullmatch(text)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One entry of an audit file, as published (evidence lists kept as raw strings)."""

    audit_id: str
    file: str
    conversation: int
    index: int
    question: str
    category: int
    error_type: str
    cited_evidence: tuple[str, ...]
    correct_evidence: tuple[str, ...]
    golden_answer: str
    correct_answer: str

    @property
    def wrong_citation(self) -> bool:
        """The answer is right, the evidence list wrong (``correct_evidence`` is the audit's)."""
        return self.error_type == WRONG_CITATION

    @property
    def answer_key_error(self) -> bool:
        """The answer key itself is wrong (one of :data:`ANSWER_KEY_ERRORS`)."""
        return self.error_type in ANSWER_KEY_ERRORS


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value)


def parse_audit_file(name: str, data: Any) -> list[AuditEntry]:
    """The entries of one parsed audit file named ``name``.

    Raises :class:`DatasetFormatError` (naming the file, and the entry by position and
    ``question_id``) for a document that is not a list, an entry that is not an object or lacks
    one of ``question_id``, ``question``, ``category``, ``error_type``, ``correct_evidence``, a
    ``question_id`` not of the form ``locomo_<n>_qa<m>``, an unknown ``error_type``, and a
    question listed twice in the file.
    """
    path = Path(OVERLAY) / name
    if not isinstance(data, list):
        raise DatasetFormatError(path, None, "expected a JSON list of audit entries")
    entries: list[AuditEntry] = []
    seen: set[str] = set()
    for position, raw in enumerate(data):
        if not isinstance(raw, Mapping):
            raise DatasetFormatError(path, None, f"entry {position} is not an object")
        qid = raw.get("question_id")
        missing = [f for f in _FIELDS if f not in raw]
        if missing:
            raise DatasetFormatError(
                path, None, f"entry {position} ({qid}): missing field {', '.join(missing)}"
            )
        where = parse_audit_id(qid)
        if where is None:
            raise DatasetFormatError(
                path,
                None,
                f"entry {position} ({qid}): question_id is not locomo_<conversation>_qa<question>",
            )
        error_type = raw["error_type"]
        if error_type not in ERROR_TYPES:
            raise DatasetFormatError(
                path,
                None,
                f"entry {position} ({qid}): unknown error_type {error_type!r}; known: "
                f"{', '.join(ERROR_TYPES)}",
            )
        if qid in seen:
            raise DatasetFormatError(path, None, f"{qid} is listed twice")
        seen.add(str(qid))
        entries.append(
            AuditEntry(
                audit_id=str(qid),
                file=name,
                conversation=where[0],
                index=where[1],
                question=str(raw["question"]),
                category=raw["category"],
                error_type=str(error_type),
                cited_evidence=_strings(raw.get("cited_evidence")),
                correct_evidence=_strings(raw["correct_evidence"]),
                golden_answer=str(raw.get("golden_answer", "")),
                correct_answer=str(raw.get("correct_answer", "")),
            )
        )
    return entries


@dataclass(frozen=True, slots=True)
class QuestionErratum:
    """What the overlay says of one question, under ``Question.extra[ERRATA_KEY]``.

    ``entry`` is None when the audit lists no error for the question. ``evidence`` is set for a
    ``WRONG_CITATION`` entry only: its ``correct_evidence`` parsed as LoCoMo's evidence is, ids
    naming no turn of the conversation dropped; when nothing usable is left it is None and
    ``evidence_unknown_reason`` says why.
    """

    overlay: str
    entry: AuditEntry | None = None
    evidence: tuple[str, ...] | None = None
    evidence_unknown_reason: str | None = None

    @property
    def wrong_citation(self) -> bool:
        return self.entry is not None and self.entry.wrong_citation

    @property
    def answer_key_error(self) -> bool:
        return self.entry is not None and self.entry.answer_key_error


@dataclass(frozen=True)
class ErrataSummary:
    """What the overlay changed: its entries, the questions in its scope (categories 1-4) and
    the lines of the load report about its evidence."""

    overlay: str
    entries: tuple[AuditEntry, ...]
    in_scope: int
    report: tuple[str, ...] = ()

    @property
    def wrong_citation(self) -> int:
        return sum(e.wrong_citation for e in self.entries)

    @property
    def answer_key_errors(self) -> int:
        return sum(e.answer_key_error for e in self.entries)

    @property
    def by_type(self) -> dict[str, int]:
        return dict(sorted(Counter(e.error_type for e in self.entries).items()))

    @property
    def ceiling(self) -> float:
        """1 - answer-key errors / questions in scope (0.0 with none in scope): the audit's
        ceiling, the share of questions on which a right answer meets a right key."""
        return 1 - self.answer_key_errors / self.in_scope if self.in_scope else 0.0

    def facts(self) -> dict[str, Any]:
        """The overlay as recorded in ``run.json`` (the dataset's ``options``)."""
        return {
            "name": self.overlay,
            "source": f"https://github.com/{REPOSITORY} (commit {COMMIT}), audit/",
            "third_party": True,
            "entries": len(self.entries),
            "wrong_citation": self.wrong_citation,
            "answer_key_errors": self.answer_key_errors,
            "by_type": self.by_type,
            "questions_in_scope": self.in_scope,
            "ceiling": round(self.ceiling, 6),
        }

    def card_notes(self) -> list[str]:
        """Card notes saying what the overlay is and what it changed, as third-party errata."""
        types = ", ".join(f"{t} {n}" for t, n in self.by_type.items() if t != WRONG_CITATION)
        n, k = self.answer_key_errors, self.in_scope
        return [
            f"Overlay of {LABEL}, audit/errors_conv_0..9.json, CC BY-NC 4.0: downloaded at run "
            "time, never shipped with recallbench. An independent audit, not part of LoCoMo: "
            "the official figures are unchanged and stay the headline; the errata figures are "
            "the metrics ending in ':errata'.",
            f"The third-party errata list {len(self.entries)} entries among the {k:,} questions "
            f"of categories 1-4: {self.wrong_citation} WRONG_CITATION (answer right, evidence "
            f"wrong: evidence_recall:errata scores their correct_evidence) and {n} answer-key "
            f"errors ({types}: left out of f1:errata); answer_key_ceiling:errata = 1 - "
            f"{n}/{k:,} = {self.ceiling:.2%}.",
        ]


def _fail(entry: AuditEntry, message: str) -> DatasetFormatError:
    return DatasetFormatError(
        Path(OVERLAY) / entry.file,
        None,
        f"entry {entry.audit_id}: {message}; these errata do not describe this copy of LoCoMo",
    )


def apply_errata(
    groups: Sequence[HaystackGroup],
    questions: Sequence[Question],
    entries: Sequence[AuditEntry],
    overlay: str = OVERLAY,
) -> tuple[list[Question], ErrataSummary]:
    """The questions with a :class:`QuestionErratum` under ``extra[ERRATA_KEY]`` (every one),
    and the summary.

    An entry's conversation index is the position of a group in ``groups`` (the file's order),
    its question index the ``<index>`` of the question id ``<sample_id>:<index>``. Raises
    :class:`DatasetFormatError` naming the entry when it names no conversation or question of the
    dataset, when its question text is not exactly the dataset's, when its category differs, or
    when two entries name one question.
    """
    by_id = {q.id: q for q in questions}
    per_group = Counter(q.group for q in questions)
    marks: dict[str, QuestionErratum] = {}
    report: list[str] = []
    for entry in entries:
        if entry.conversation >= len(groups):
            raise _fail(
                entry,
                f"it names conversation {entry.conversation} and the dataset has {len(groups)}",
            )
        group = groups[entry.conversation].group_id
        qid = f"{group}:{entry.index}"
        question = by_id.get(qid)
        if question is None:
            raise _fail(
                entry,
                f"it names question {entry.index} of {group} and {group} has "
                f"{per_group.get(group, 0)}",
            )
        if entry.question != question.text:
            raise _fail(
                entry,
                f"its question {entry.question!r} differs from {qid}'s {question.text!r}",
            )
        category = question.extra.get("category")
        if entry.category != category:
            raise _fail(
                entry, f"its category {entry.category!r} differs from {qid}'s category {category}"
            )
        if qid in marks:
            raise _fail(entry, f"{qid} has two entries")
        evidence: tuple[str, ...] | None = None
        unknown: str | None = None
        if entry.wrong_citation:
            turns = {t.turn_id for s in groups[entry.conversation].sessions for t in s.turns}
            parsed, defects = parse_evidence(list(entry.correct_evidence))
            problems = [f"{d}" for d in defects]
            for e in parsed:
                if e not in turns:
                    problems.append(f"{e!r} names no turn of {group}")
            for problem in problems:
                report.append(f"{qid}: {OVERLAY} {entry.audit_id} correct_evidence {problem}")
            kept = tuple(e for e in parsed if e in turns)
            if kept:
                evidence = kept
            else:
                unknown = f"{LABEL} give no usable correct_evidence ({'; '.join(problems)})"
        marks[qid] = QuestionErratum(overlay, entry, evidence, unknown)
    marked = [
        replace(q, extra={**q.extra, ERRATA_KEY: marks.get(q.id, QuestionErratum(overlay))})
        for q in questions
    ]
    in_scope = sum(1 for q in questions if q.extra.get("category") != ADVERSARIAL)
    return marked, ErrataSummary(overlay, tuple(entries), in_scope, tuple(report))
