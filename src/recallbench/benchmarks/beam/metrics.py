"""Per-question metrics of the BEAM benchmark, reimplemented as pure functions.

BEAM ("Beyond a Million tokens", Tavakoli et al.) probes ten memory abilities. Every probing
question carries a ``rubric``: a list of short requirements. An LLM judge grades the answer
against each requirement separately with 0, 0.5 or 1, and the question's score is the mean.

Event-ordering questions are also scored on order: the answer's events, once mapped onto the
gold events (the rubric items, in order), are compared with Kendall's tau-b, normalised to
[0, 1]; the official harness multiplies that by the F1 of the mapped event sets.

The judge and the event matcher are LLM calls; here they are plain callables, so everything in
this module is deterministic and testable. The official scoring is BEAM's own code, run by
:mod:`recallbench.benchmarks.beam.answering` (with :func:`kendall_tau_b_scipy` standing in for
SciPy); the rubric prompt here (``prompts/beam_rubric_v1.json``, :func:`build_rubric_prompt`,
:func:`grade_rubric`) is recallbench's own wording, the labelled alternative "recallbench
prompts v1", never the default.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "ABILITIES",
    "EVENT_ORDERING",
    "GRADES",
    "RUBRIC_PROMPT_FILE",
    "EventOrderingResult",
    "RubricOutcome",
    "align_items",
    "build_rubric_prompt",
    "event_ordering_details",
    "event_ordering_score",
    "gold_event_order",
    "grade_rubric",
    "kendall_tau_b",
    "kendall_tau_b_scipy",
    "parse_rubric",
    "parse_rubric_grade",
    "rubric_outcome",
    "rubric_prompt_version",
    "rubric_score",
    "split_rubric_item",
]

ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
"""The ten abilities, spelled as the top-level keys of ``probing_questions.json``."""

EVENT_ORDERING = "event_ordering"

GRADES: tuple[float, ...] = (0.0, 0.5, 1.0)
"""The only grades a judge may give one rubric item."""

RUBRIC_PROMPT_FILE: Path = Path(__file__).resolve().parent / "prompts" / ("beam_rubric_v1.json")

# ---------------------------------------------------------------- rubric items


def parse_rubric(raw: object) -> list[str]:
    """Validate a question's ``rubric`` field: a non-empty list of non-blank strings.

    Raises:
        ValueError: when the field has any other shape.
    """
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"rubric must be a non-empty list, got {raw!r}")
    items: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"rubric item must be a non-blank string, got {item!r}")
        items.append(item)
    return items


_RUBRIC_PREFIX = re.compile(r"LLM response should (\w+):\s*(.*)", re.DOTALL)


def split_rubric_item(item: str) -> tuple[str | None, str]:
    """Split ``"LLM response should <verb>: <text>"`` into ``(verb, text)``.

    Most rubric items follow that pattern (verbs seen: state, mention, contain); items of the
    abstention and event-ordering abilities are bare text and come back as ``(None, item)``.
    """
    match = _RUBRIC_PREFIX.fullmatch(item.strip())
    if match is None:
        return None, item.strip()
    return match.group(1).lower(), match.group(2).strip()


def gold_event_order(question: Mapping[str, Any]) -> list[str]:
    """Gold event order of an event-ordering question: its rubric items, in order."""
    return parse_rubric(question.get("rubric"))


# ---------------------------------------------------------------- judge prompt and grades


@lru_cache(maxsize=4)
def _load_template(path: str) -> tuple[str, str]:
    with open(path, encoding="utf-8") as fh:
        raw: Any = json.load(fh)
    return str(raw["version"]), str(raw["template"])


def rubric_prompt_version() -> str:
    """Version string of the rubric judge prompt file."""
    return _load_template(str(RUBRIC_PROMPT_FILE))[0]


_PLACEHOLDER = re.compile(r"\{(question|rubric_item|response)\}")


def build_rubric_prompt(question: str, rubric_item: str, response: str) -> str:
    """Judge prompt for one rubric item.

    The three placeholders are filled in a single pass, so text inside the values is never
    re-read as a placeholder, and the template's literal JSON braces stay as they are. Unlike
    the official harness, which leaves its question slot unfilled, the question is given to the
    judge so that it can tell an on-topic reply from an evasive one.
    """
    _, template = _load_template(str(RUBRIC_PROMPT_FILE))
    values = {"question": question, "rubric_item": rubric_item, "response": response}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_LABELLED_SCORE = re.compile(r"""["']?score["']?\s*[:=]\s*["']?\s*([0-9]*\.?[0-9]+)""", re.I)
_BARE_NUMBER = re.compile(r"[*`\s]*([0-9]*\.?[0-9]+)[*`.\s]*")


def _as_grade(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if number in GRADES else None


def parse_rubric_grade(text: str | None) -> float | None:
    """Read a judge's grade for one rubric item: 0.0, 0.5 or 1.0, or None when unreadable.

    Tried in order: the ``score`` field of the first JSON object holding one (code fences and
    surrounding prose are fine; the value may be a number or a numeric string); a labelled
    ``score: <n>`` in plain text; the whole reply being a bare number. Any other value (0.75,
    2, ...) is rejected as None; numbers elsewhere in prose are never guessed at.
    """
    if not text:
        return None
    for match in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "score" in obj:
            return _as_grade(obj["score"])
    labelled = _LABELLED_SCORE.search(text)
    if labelled:
        return _as_grade(labelled.group(1))
    bare = _BARE_NUMBER.fullmatch(text)
    if bare:
        return _as_grade(bare.group(1))
    return None


@dataclass(frozen=True, slots=True)
class RubricOutcome:
    """Grades of one question's rubric items and their mean.

    ``score`` counts an unreadable (None) grade as 0 and is None only when there are no items;
    ``missing`` says how many grades were unreadable, so a report can flag the question.
    """

    grades: tuple[float | None, ...]
    score: float | None
    missing: int


def rubric_outcome(grades: Sequence[float | None]) -> RubricOutcome:
    """Mean of per-item grades, with unreadable grades counted as 0 and reported.

    Counting a missing grade as 0 keeps every question in the average (dropping the item would
    reward a judge failure on a hard item), and ``missing`` keeps the failure visible.

    Raises:
        ValueError: for a grade other than 0, 0.5, 1 or None.
    """
    for grade in grades:
        if grade is not None and (isinstance(grade, bool) or grade not in GRADES):
            raise ValueError(f"rubric grade must be 0, 0.5, 1 or None, got {grade!r}")
    values = tuple(None if g is None else float(g) for g in grades)
    if not values:
        return RubricOutcome(grades=(), score=None, missing=0)
    missing = sum(g is None for g in values)
    score = sum(g for g in values if g is not None) / len(values)
    return RubricOutcome(grades=values, score=score, missing=missing)


def rubric_score(grades: Sequence[float | None]) -> float | None:
    """Question score: mean grade, None grades counting as 0; None when there are no grades."""
    return rubric_outcome(grades).score


def grade_rubric(
    question: str,
    rubric: Sequence[str],
    response: str,
    judge: Callable[[str], str],
) -> RubricOutcome:
    """Grade a response item by item: build each prompt, ask ``judge``, parse its reply."""
    items = parse_rubric(list(rubric))
    grades = [
        parse_rubric_grade(judge(build_rubric_prompt(question, item, response))) for item in items
    ]
    return rubric_outcome(grades)


# ---------------------------------------------------------------- event ordering


def kendall_tau_b(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Kendall's tau-b between two paired sequences of comparable values (e.g. ranks).

    tau-b = (concordant - discordant) / sqrt((n0 - ties_a) * (n0 - ties_b)), where n0 is the
    number of pairs and ties_x counts the pairs tied in x (a pair tied in both counts in both).
    Returns NaN when it is undefined: fewer than two items, or every pair tied on one side.
    O(n^2), which is plenty for event lists.

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"sequences differ in length: {len(a)} != {len(b)}")
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da = (a[i] > a[j]) - (a[i] < a[j])
            db = (b[i] > b[j]) - (b[i] < b[j])
            if da == 0:
                ties_a += 1
            if db == 0:
                ties_b += 1
            if da and db:
                if da == db:
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    denominator = (pairs - ties_a) * (pairs - ties_b)
    if denominator == 0:
        return math.nan
    return (concordant - discordant) / math.sqrt(denominator)


def kendall_tau_b_scipy(x: Sequence[Any], y: Sequence[Any]) -> float:
    """Kendall's tau-b as ``scipy.stats.kendalltau(x, y, variant="b")`` returns it, without
    SciPy: ``(concordant - discordant) / sqrt(n0 - ties_x) / sqrt(n0 - ties_y)`` (two
    divisions, in that order, as SciPy computes it), clamped to [-1, 1]; NaN when there are
    no pairs or every pair is tied in ``x`` or in ``y``. ``ties_x`` counts the pairs tied in
    ``x`` (tied in both included), ``n0`` all pairs. The counts are exact integers, so the
    value is SciPy's to the last bit. This is the official event-ordering arithmetic
    (compute_metrics.py calls SciPy); :func:`kendall_tau_b` is recallbench's own.

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"sequences differ in length: {len(x)} != {len(y)}")
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            ties_x += dx == 0
            ties_y += dy == 0
            if dx and dy:
                if dx == dy:
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    if ties_x == pairs or ties_y == pairs:
        return math.nan
    tau = (concordant - discordant) / math.sqrt(pairs - ties_x) / math.sqrt(pairs - ties_y)
    return min(1.0, max(-1.0, tau))


def align_items(
    system_items: Sequence[str],
    gold_items: Sequence[str],
    same: Callable[[str, str], bool],
) -> list[str]:
    """Map each system item onto the first still-unused gold item it matches.

    ``same(gold, system)`` decides equivalence (an LLM call in the official harness). An item
    with no match is kept as it is, so it later counts as a false positive.
    """
    used: set[int] = set()
    out: list[str] = []
    for item in system_items:
        for index, gold in enumerate(gold_items):
            if index not in used and same(gold, item):
                used.add(index)
                out.append(gold)
                break
        else:
            out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class EventOrderingResult:
    """Order and coverage scores of one event-ordering answer.

    ``tau_b`` is None when undefined (empty answer, or a single shared event); ``tau_norm`` is
    (tau_b + 1) / 2 with those cases fixed at 0.0 and 1.0; ``final`` is ``tau_norm * f1``.
    """

    precision: float
    recall: float
    f1: float
    tau_b: float | None
    tau_norm: float
    final: float


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def event_ordering_details(
    predicted_order: Sequence[str], gold_order: Sequence[str]
) -> EventOrderingResult:
    """Score an answer's event order against the gold order.

    Items must already be canonical: a predicted event equal to a gold event is the same event
    (see :func:`align_items`). Both lists are de-duplicated, keeping first occurrences.

    Tau-b is computed over the union of gold and predicted events (gold order first, then extra
    predicted events): in each list an event gets its position, and the events the list lacks
    tie together after its last position. So a missing gold event sits tied at the end of the
    prediction, and an invented event sits tied at the end of the gold order. Special cases:
    an empty prediction gets tau_norm 0.0; a single event that both lists share gets 1.0.

    Raises:
        ValueError: when the gold order is empty.
    """
    gold = _dedupe(gold_order)
    if not gold:
        raise ValueError("gold order is empty")
    predicted = _dedupe(predicted_order)
    gold_set = set(gold)
    shared = sum(item in gold_set for item in predicted)
    precision = shared / len(predicted) if predicted else 0.0
    recall = shared / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    union = gold + [item for item in predicted if item not in gold_set]
    tau: float | None = None
    if not predicted:
        tau_norm = 0.0
    elif len(union) < 2:
        tau_norm = 1.0
    else:
        tie_rank = len(union) + 1
        gold_rank = {item: i for i, item in enumerate(gold, start=1)}
        pred_rank = {item: i for i, item in enumerate(predicted, start=1)}
        value = kendall_tau_b(
            [gold_rank.get(item, tie_rank) for item in union],
            [pred_rank.get(item, tie_rank) for item in union],
        )
        # Not reachable with a non-empty prediction and two or more events; kept as a guard.
        tau = None if math.isnan(value) else value
        tau_norm = 0.5 if tau is None else (tau + 1) / 2
    return EventOrderingResult(
        precision=precision,
        recall=recall,
        f1=f1,
        tau_b=tau,
        tau_norm=tau_norm,
        final=tau_norm * f1,
    )


def event_ordering_score(predicted_order: Sequence[str], gold_order: Sequence[str]) -> float:
    """Normalised order agreement (tau_b + 1) / 2; see :func:`event_ordering_details`."""
    return event_ordering_details(predicted_order, gold_order).tau_norm
