"""Per-question metrics of the LoCoMo benchmark, reimplemented as pure functions.

LoCoMo (Maharana et al., ACL 2024) scores a free-text answer with a token-level F1 computed on
normalised, Porter-stemmed tokens, with one rule per question category:

* category 1 (multi-hop): the gold answer lists several items separated by commas; each gold item
  is matched with its best prediction item and the per-item F1 values are averaged;
* category 2 (temporal) and 4 (single-hop): plain F1;
* category 3 (open-domain): plain F1 against the gold text before its first ``;``;
* category 5 (adversarial): the question cannot be answered from the conversation; the answer
  scores 1 when it says so with one of two fixed phrases.

Retrieval is scored separately with :func:`evidence_recall` over the ``dia_id`` values listed in a
question's ``evidence`` field; :func:`parse_evidence` repairs the handful of malformed entries
found in the public file and reports every defect it met.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from nltk.stem import PorterStemmer  # type: ignore[import-untyped]

__all__ = [
    "ABSTENTION_PHRASES",
    "CATEGORY_NAMES",
    "adversarial_score",
    "evidence_recall",
    "f1",
    "multi_answer_f1",
    "normalize_answer",
    "parse_evidence",
    "qa_score",
    "tokens",
]

ADVERSARIAL = 5
"""LoCoMo's category 5: questions about things never said, expected to decline."""
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's integer question categories, named as the released data actually uses them."""

ABSTENTION_PHRASES: tuple[str, ...] = ("no information available", "not mentioned")
"""Category-5 answers score 1 when their lowercased text contains one of these phrases."""

_PUNCTUATION = frozenset(string.punctuation)
_DROPPED_WORDS = re.compile(r"\b(?:a|an|the|and)\b")
_STEMMER = PorterStemmer()


def normalize_answer(s: str) -> str:
    """Return ``s`` normalised for token comparison.

    Steps, in order: drop commas, lowercase, drop ASCII punctuation, drop the words
    ``a``/``an``/``the``/``and``, collapse runs of whitespace into single spaces (and trim).
    Punctuation goes before the word filter, so ``"the-end"`` becomes ``"theend"`` and survives.
    """
    text = s.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _DROPPED_WORDS.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stem(word))


def tokens(text: str | int) -> list[str]:
    """Normalised, Porter-stemmed tokens of ``text`` (integers are read through ``str``)."""
    return [_stem(word) for word in normalize_answer(str(text)).split()]


def f1(prediction: str | int, gold: str | int) -> float:
    """Token F1 between a prediction and a gold answer after normalisation and stemming.

    Tokens are compared as multisets; when no token is shared (including when either side is
    empty after normalisation) the score is 0.0.
    """
    pred_tokens = tokens(prediction)
    gold_tokens = tokens(gold)
    shared = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str | int, gold: str | int) -> float:
    """Category-1 score: mean over comma-separated gold parts of the best F1 among prediction parts.

    Both sides are split on ``,`` before normalisation (which would delete the commas).
    """
    pred_parts = [part.strip() for part in str(prediction).split(",")]
    gold_parts = [part.strip() for part in str(gold).split(",")]
    best = [max(f1(pred, part) for pred in pred_parts) for part in gold_parts]
    return sum(best) / len(best)


def adversarial_score(prediction: str | None) -> float:
    """Category-5 score: 1.0 when the answer declines with one of :data:`ABSTENTION_PHRASES`."""
    if not prediction:
        return 0.0
    lowered = prediction.lower()
    return 1.0 if any(phrase in lowered for phrase in ABSTENTION_PHRASES) else 0.0


def qa_score(prediction: str | None, gold: str | int | None, category: int) -> float:
    """Score one answer with the rule of its LoCoMo category.

    An empty or missing prediction scores 0.0 in every category. ``gold`` is ignored for
    category 5 (most adversarial items carry no ``answer`` field) and required otherwise.

    Raises:
        ValueError: for an unknown category, or a missing gold answer outside category 5.
    """
    if category not in CATEGORY_NAMES:
        raise ValueError(f"unknown LoCoMo category: {category!r}")
    if category == ADVERSARIAL:
        return adversarial_score(prediction)
    if gold is None:
        raise ValueError(f"category {category} needs a gold answer")
    if not prediction:
        return 0.0
    if category == 1:
        return multi_answer_f1(prediction, gold)
    if category == 3:
        return f1(prediction, str(gold).split(";")[0].strip())
    return f1(prediction, gold)


def evidence_recall(retrieved_turn_ids: Iterable[str], evidence: Sequence[str]) -> float | None:
    """Fraction of the distinct evidence ``dia_id`` values found among the retrieved turn ids.

    Returns None when there is no evidence to find (the question cannot be scored).
    """
    wanted = set(evidence)
    if not wanted:
        return None
    found = wanted.intersection(retrieved_turn_ids)
    return len(found) / len(wanted)


_CANONICAL_ID = re.compile(r"D(\d+):(\d+)")
_STRAY_COLON_ID = re.compile(r"D:(\d+):(\d+)")
_SEPARATORS = re.compile(r"[;,\s]+")


def _canonical(session: str, turn: str) -> str:
    return f"D{int(session)}:{int(turn)}"


def parse_evidence(raw: object) -> tuple[list[str], list[str]]:
    """Parse a LoCoMo ``evidence`` field into canonical ``dia_id`` values and defect notes.

    Canonical ids look like ``D<session>:<turn>`` without leading zeros. Ids are returned in
    order of first appearance, without duplicates. Every defect yields one description whose
    first words name its kind, so callers can count them:

    * ``"empty evidence list"`` when the list is empty;
    * ``"malformed entry ..."``, one per entry that is not a single id: several ids in one string
      (split on ``;``, ``,`` and whitespace), a stray colon (``D:11:26`` read as ``D11:26``),
      a non-string, or text holding no usable id; unusable tokens are named in the note;
    * ``"zero-padded id ..."`` for an otherwise well-formed id with leading zeros
      (``D30:05`` read as ``D30:5``);
    * ``"duplicate id ..."`` when an id repeats;
    * ``"evidence is not a list"`` when ``raw`` is not a list (nothing is parsed).

    Whether the ids exist in the conversation is not checked here.
    """
    if not isinstance(raw, list):
        return [], ["evidence is not a list"]
    if not raw:
        return [], ["empty evidence list"]
    ids: list[str] = []
    defects: list[str] = []

    def add(dia_id: str) -> None:
        if dia_id in ids:
            defects.append(f"duplicate id {dia_id!r}")
        else:
            ids.append(dia_id)

    for entry in raw:
        if not isinstance(entry, str):
            defects.append(f"malformed entry {entry!r}: not a string")
            continue
        exact = _CANONICAL_ID.fullmatch(entry)
        if exact:
            dia_id = _canonical(*exact.groups())
            if dia_id != entry:
                defects.append(f"zero-padded id {entry!r} read as {dia_id!r}")
            add(dia_id)
            continue
        parsed: list[str] = []
        unusable: list[str] = []
        for token in _SEPARATORS.split(entry.strip()):
            if not token:
                continue
            match = _CANONICAL_ID.fullmatch(token) or _STRAY_COLON_ID.fullmatch(token)
            if match:
                parsed.append(_canonical(*match.groups()))
            else:
                unusable.append(token)
        note = f"malformed entry {entry!r}: read as {parsed!r}"
        if unusable:
            note += f", unusable tokens {unusable!r}"
        defects.append(note)
        for dia_id in parsed:
            add(dia_id)
    return ids, defects
