"""Glasshouse v0.1 string-mode ("dry") answer scoring, as pure functions.

Glasshouse grades an answer per axis with string rules only (no judge model):

* abstention questions (``expect == "no_memory"`` or axis ABSTAIN / FALSE_MEMORY) score 1 when the
  answer says it does not know, else 0; without an answer model they are ungraded (``None``);
* UPDATE / STALE reward the new value (1), punish the stale one (0) and half-credit "I don't
  know"; CONTRADICT rewards naming the disagreement; RECONCILE rewards naming both conditions;
  CONFLICT rewards the current value together with a correction; GATHER is the fraction of parts;
* everything else is normalised whole-word containment of the gold or an accepted alternative,
  after an "I don't know"-shaped answer has been zeroed.

Containment works on normalised token lists: lower case, punctuation and apostrophes removed,
thousands separators dropped, number words / fractions / "a quarter" turned into canonical
numbers, articles and personal pronouns dropped. Words match whole, allowing the inflections
-s, -es, -d, -ed and -ing either way, so a short gold never matches inside an unrelated word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from recallbench.contracts import Question

__all__ = [
    "ABSTENTION_AXES",
    "AXIS_WEIGHTS",
    "IDK_EXEMPT_AXES",
    "contains",
    "contradiction_named",
    "correction_named",
    "evidence_returned",
    "grade",
    "gold_reads_like_dont_know",
    "is_abstention_question",
    "normalize",
    "normalized_tokens",
    "says_dont_know",
    "stale_trap_hit",
]

AXIS_WEIGHTS: dict[str, int] = {
    "BASIC": 1,
    "PARAPHRASE": 1,
    "IMAGE": 1,
    "XLING_QUERY": 1,
    "XLING_STORE": 1,
    "TEMPORAL": 2,
    "UPDATE": 2,
    "GATHER": 2,
    "RECONCILE": 2,
    "MULTI": 3,
    "IMPLICIT": 3,
    "CROSS": 3,
    "CONFLICT": 3,
    "STALE": 3,
    "CONTRADICT": 3,
    "ABSTAIN": 3,
    "FALSE_MEMORY": 3,
}

ABSTENTION_AXES: frozenset[str] = frozenset({"ABSTAIN", "FALSE_MEMORY"})
"""Axes graded as abstentions whatever their ``expect``."""

IDK_EXEMPT_AXES: frozenset[str] = frozenset(
    {"ABSTAIN", "FALSE_MEMORY", "STALE", "CONTRADICT", "UPDATE"}
)
"""Axes where an "I don't know"-shaped answer is not zeroed before matching."""

# --------------------------------------------------------------------------------------------
# "I don't know" detection (English only, case-insensitive, anywhere in the answer)
# --------------------------------------------------------------------------------------------

_APOS = "['\u2019]"  # straight or curly apostrophe
_PLACES = r"(?:memory|memories|conversation|history|records?|notes|context)"
_IDK_PATTERNS: tuple[str, ...] = (
    r"\bnever\s+(?:stated|said|mentioned|came\s+up)\b",
    r"\bnot\s+(?:stated|mentioned|specified|given)\b",
    rf"\b(?:(?:is|was)\s+not|isn{_APOS}t|wasn{_APOS}t)\s+(?:stated|mentioned|specified)\b",
    rf"\b(?:(?:is|was)\s+not|isn{_APOS}t|wasn{_APOS}t)\s+in\s+(?:(?:the|your|our|my)\s+)?"
    rf"{_PLACES}\b",
    r"\bno\s+(?:such\s+)?(?:information|record|mention|detail)s?\b",
    r"\bnothing\s+(?:about|on)\s+that\b",
    rf"\b(?:don{_APOS}t|do\s+not)\s+(?:know|have)\b",
    r"\bcannot\s+(?:tell|determine|say)\b",
    rf"\bcan{_APOS}t\s+(?:tell|say)\b",
    r"\b(?:memories|conversation|history)\s+(?:do|does)\s+not\s+contain\b",
    r"\bunable\s+to\s+(?:tell|determine|find)\b",
    r"\bnot\s+in\s+(?:(?:the|your|our|my)\s+)?"
    r"(?:memory|memories|conversation|history|records?|notes)\b",
)
_IDK_RE = re.compile("|".join(f"(?:{p})" for p in _IDK_PATTERNS), re.IGNORECASE)

# Bare negative golds ("never", "nobody", ...) read like an "I don't know" too.
_NEGATIVE_GOLD_RE = re.compile(
    r"^\W*(?:never|none|nothing|nobody|nowhere|neither|no\s+one)\b", re.IGNORECASE
)


def says_dont_know(text: str | None) -> bool:
    """True when ``text`` is shaped like "I don't know" (English phrasings, anywhere)."""
    if not text:
        return False
    return _IDK_RE.search(text) is not None


def gold_reads_like_dont_know(text: str | None) -> bool:
    """True when a gold answer itself reads like a non-answer ("never", "not stated", ...).

    Such a gold disables the "I don't know scores 0" shortcut, since a right answer to it is
    naturally phrased that way.
    """
    if not text:
        return False
    return says_dont_know(text) or _NEGATIVE_GOLD_RE.search(text) is not None


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

_ARTICLES = frozenset({"a", "an", "the"})
_PRONOUNS = frozenset(
    {
        "i", "me", "my", "mine", "myself",
        "you", "your", "yours", "yourself", "yourselves",
        "he", "him", "his", "himself",
        "she", "her", "hers", "herself",
        "it", "its", "itself",
        "we", "us", "our", "ours", "ourselves",
        "they", "them", "their", "theirs", "themselves",
        # contractions once the apostrophe is gone (only those that are not other words)
        "im", "ive", "youre", "youve", "youll", "youd", "hes", "shes", "hed",
        "theyre", "theyve", "theyll", "theyd", "weve",
    }
)  # fmt: skip

_UNITS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS: dict[str, int] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES: dict[str, int] = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_FRACTION_WORDS: dict[str, float] = {"half": 0.5, "quarter": 0.25}

_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SLASH_FRACTION_RE = re.compile(r"(?<![\d.])(\d+)\s*/\s*(\d+)(?![\d/])")
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


def _fmt_number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _is_number(token: str) -> bool:
    return _NUMBER_RE.fullmatch(token) is not None


def _slash_fraction(match: re.Match[str]) -> str:
    num, den = int(match.group(1)), int(match.group(2))
    if den == 0:
        return match.group(0)
    return f" {_fmt_number(num / den)} "


def _raw_tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens with punctuation, separators and fractions handled."""
    t = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    t = _THOUSANDS_RE.sub("", t)
    t = _SLASH_FRACTION_RE.sub(_slash_fraction, t)
    t = t.replace("%", " percent ")
    t = t.replace("'", "")
    return _TOKEN_RE.findall(t)


def _parse_int(tokens: Sequence[str], i: int) -> tuple[float, int] | None:
    """Parse a whole number written in words (or digits + scale words) starting at ``i``.

    Returns ``(value, tokens consumed)`` or ``None`` when no number starts there.
    """
    n = len(tokens)
    total = 0.0
    current = 0.0
    j = i
    last: str | None = None  # "unit", "teen", "tens", "scale", "digit"
    while j < n:
        tok = tokens[j]
        if tok in _UNITS:
            value = _UNITS[tok]
            if last in (None, "scale"):
                current += value
                last = "unit" if value < 10 else "teen"
            elif last == "tens" and 1 <= value <= 9:
                current += value
                last = "unit"
            else:
                break
        elif tok in _TENS:
            if last in (None, "scale"):
                current += _TENS[tok]
                last = "tens"
            else:
                break
        elif _is_number(tok):
            value_f = float(tok)
            if last is None:
                current = value_f
                last = "digit"
            elif last == "tens" and value_f.is_integer() and 1 <= value_f <= 9 and "." not in tok:
                current += value_f
                last = "unit"
            else:
                break
        elif tok in _SCALES and last is not None and last != "scale":
            scale = _SCALES[tok]
            current = (current or 1.0) * scale
            if scale >= 1000:
                total += current
                current = 0.0
            last = "scale"
        elif (
            tok == "and"
            and last == "scale"
            and j + 1 < n
            and (tokens[j + 1] in _UNITS or tokens[j + 1] in _TENS)
        ):
            pass  # "one hundred and five"
        else:
            break
        j += 1
    if last is None:
        return None
    return total + current, j - i


def _parse_number(tokens: Sequence[str], i: int) -> tuple[float, int] | None:
    """Parse a number phrase at ``i``: words, digits, fractions, "and a half", "a quarter"."""
    n = len(tokens)
    tok = tokens[i]
    # "a quarter", "one half", "a hundred"
    if tok in ("a", "an", "one") and i + 1 < n:
        nxt = tokens[i + 1]
        if nxt in _FRACTION_WORDS:
            return _FRACTION_WORDS[nxt], 2
        if tok in ("a", "an") and nxt in _SCALES:
            parsed = _parse_int(["one", *tokens[i + 1 :]], 0)
            if parsed is not None:
                return parsed
    if tok in _FRACTION_WORDS:
        return _FRACTION_WORDS[tok], 1
    parsed = _parse_int(tokens, i)
    if parsed is None:
        return None
    value, used = parsed
    j = i + used
    # "three quarters", "two halves"
    if j < n and tokens[j] in ("quarters", "halves"):
        return value * (0.25 if tokens[j] == "quarters" else 0.5), used + 1
    # "two and a half", "one and a quarter"
    if j + 2 < n and tokens[j] == "and" and tokens[j + 1] in ("a", "an", "one"):
        frac = _FRACTION_WORDS.get(tokens[j + 2])
        if frac is not None:
            return value + frac, used + 3
    return value, used


def normalized_tokens(text: str | None, *, drop_function_words: bool = True) -> list[str]:
    """The token list containment works on (see the module docstring)."""
    if not text:
        return []
    raw = _raw_tokens(text)
    out: list[str] = []
    i = 0
    while i < len(raw):
        parsed = _parse_number(raw, i)
        if parsed is not None:
            value, used = parsed
            out.append(_fmt_number(value))
            i += used
            continue
        tok = raw[i]
        i += 1
        if drop_function_words and (tok in _ARTICLES or tok in _PRONOUNS):
            continue
        out.append(tok)
    return out


def normalize(text: str | None) -> str:
    """Normalised text: the normalised tokens joined by single spaces."""
    return " ".join(normalized_tokens(text))


# --------------------------------------------------------------------------------------------
# Containment
# --------------------------------------------------------------------------------------------

_SUFFIXES: tuple[str, ...] = ("s", "es", "ed", "ing")

# Words ignored when a numeric gold is compared as numbers plus its other content words.
_NUMERIC_STOPWORDS = frozenset(
    {
        "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are",
        "was", "were", "be", "been", "about", "around", "roughly", "approximately", "some",
        "just", "than",
    }
)  # fmt: skip


def _inflects(longer: str, stem: str) -> bool:
    """True when ``longer`` is ``stem`` plus one allowed inflection (-s, -es, -d, -ed, -ing)."""
    if len(stem) < 2 or len(longer) <= len(stem):
        return False
    for suffix in _SUFFIXES:
        if longer == stem + suffix:
            return True
    if stem.endswith("e") and len(stem) >= 3:
        if longer == stem[:-1] + "ing":  # make -> making
            return True
        if longer == stem + "d" and not stem.endswith("ee"):  # use -> used (not see -> seed)
            return True
    return False


def _word_match(word: str, target: str) -> bool:
    if word == target:
        return True
    if _is_number(word) or _is_number(target):
        return False
    return _inflects(word, target) or _inflects(target, word)


def _sequence_in(answer: Sequence[str], target: Sequence[str]) -> bool:
    m = len(target)
    if m == 0 or m > len(answer):
        return False
    for start in range(len(answer) - m + 1):
        if all(_word_match(answer[start + k], target[k]) for k in range(m)):
            return True
    return False


def _numbers_and_content(answer: Sequence[str], target: Sequence[str]) -> bool:
    """A numeric target's numbers all present as numbers, and its other content words too."""
    numbers = [t for t in target if _is_number(t)]
    if not numbers:
        return False
    answer_numbers = {t for t in answer if _is_number(t)}
    if not all(num in answer_numbers for num in numbers):
        return False
    content = [t for t in target if not _is_number(t) and t not in _NUMERIC_STOPWORDS]
    return all(any(_word_match(w, c) for w in answer) for c in content)


def contains(answer: str | None, target: str | None) -> bool:
    """Normalised whole-word containment of ``target`` in ``answer``.

    Tokens match whole (with an allowed inflection either way); a target holding numbers also
    matches when every one of its numbers appears in the answer as a number and every other
    content word of it appears too.
    """
    if not answer or not target or not target.strip():
        return False
    target_tokens = normalized_tokens(target)
    answer_tokens = normalized_tokens(answer)
    if not target_tokens:  # a gold made only of articles / pronouns: compare them as written
        target_tokens = normalized_tokens(target, drop_function_words=False)
        answer_tokens = normalized_tokens(answer, drop_function_words=False)
    if not target_tokens:
        return False
    if _sequence_in(answer_tokens, target_tokens):
        return True
    return _numbers_and_content(answer_tokens, target_tokens)


def _contains_any(answer: str, targets: Iterable[str]) -> bool:
    return any(contains(answer, t) for t in targets)


# --------------------------------------------------------------------------------------------
# Axis-specific cue detection
# --------------------------------------------------------------------------------------------

_CONTRADICTION_RE = re.compile(
    r"\bconflict"
    r"|\bcontradict"
    r"|\binconsistent\b"
    r"|\bnot\s+consistent\b"
    r"|\bdisagree"
    r"|\bmismatch"
    rf"|\b(?:doesn{_APOS}t|does\s+not|don{_APOS}t)\s+match"
    r"|\btwo\s+different\s+(?:answers|values|numbers|figures)\b"
    r"|\bat\s+one\s+point\b[^.!?]*\blater\b",
    re.IGNORECASE,
)

_CORRECTION_RE = re.compile(
    r"\b(?:no|not|incorrect|actually|changed|switched|anymore|mistaken)\b"
    rf"|\b(?:isn{_APOS}t|wasn{_APOS}t)(?!\w)"
    r"|\bused\s+to\b"
    r"|\bno\s+longer\b"
    rf"|\b(?:that{_APOS}s|that\s+is)\s+(?:wrong|not\s+right)\b",
    re.IGNORECASE,
)

_CONFLICT_LEAD_NO_RE = re.compile(r"^\s*no\s*,\s*", re.IGNORECASE)
_CONFLICT_LEAD_SUBJECT_RE = re.compile(
    rf"^\s*(?:it{_APOS}s|they{_APOS}re|that{_APOS}s|there{_APOS}s|it\s+is|they\s+are|that\s+is"
    r"|there\s+is|there\s+are)\s+",
    re.IGNORECASE,
)
_CONFLICT_TRAIL_NOW_RE = re.compile(r"\s*,?\s*\bnow\W*$", re.IGNORECASE)


def contradiction_named(answer: str) -> bool:
    """True when the raw answer uses words that name a contradiction (CONTRADICT cues)."""
    return _CONTRADICTION_RE.search(answer) is not None


def correction_named(answer: str) -> bool:
    """True when the raw answer carries a correction word (CONFLICT cues)."""
    return _CORRECTION_RE.search(answer) is not None


def _conflict_current_value(gold: str) -> str:
    """The gold of a CONFLICT question without its "no," / "it's ..." lead and trailing "now"."""
    value = _CONFLICT_LEAD_NO_RE.sub("", gold)
    value = _CONFLICT_LEAD_SUBJECT_RE.sub("", value)
    value = _CONFLICT_TRAIL_NOW_RE.sub("", value)
    return value if value.strip() else gold


# --------------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------------


def _golds(q: Question) -> list[str]:
    out: list[str] = []
    for g in (q.gold, *q.alternates):
        if isinstance(g, str) and g.strip() and g not in out:
            out.append(g)
    return out


def _extra_str(q: Question, key: str) -> str | None:
    value = q.extra.get(key) if q.extra else None
    return value if isinstance(value, str) and value.strip() else None


def is_abstention_question(q: Question) -> bool:
    """``expect == "no_memory"`` or an ABSTAIN / FALSE_MEMORY axis question."""
    return q.expect == "no_memory" or q.axis in ABSTENTION_AXES


def _grade_update(q: Question, answer: str) -> float:
    if _contains_any(answer, _golds(q)):
        return 1.0
    if q.axis == "STALE":
        stale = _extra_str(q, "stale_answer")
        if stale is not None and contains(answer, stale):
            return 0.0
    if says_dont_know(answer):
        return 0.5
    return 0.0


def _grade_contradict(q: Question, answer: str) -> float:
    clash_a, clash_b = _extra_str(q, "clash_a"), _extra_str(q, "clash_b")
    if (
        clash_a is not None
        and clash_b is not None
        and contains(answer, clash_a)
        and contains(answer, clash_b)
    ):
        return 1.0
    if contradiction_named(answer):
        return 1.0
    if says_dont_know(answer):
        return 0.5
    return 0.0


def _grade_reconcile(q: Question, answer: str) -> float:
    sides = [s for s in (_extra_str(q, "side_a"), _extra_str(q, "side_b")) if s is not None]
    found = sum(1 for s in sides if contains(answer, s))
    if sides and found == len(sides) and len(sides) == 2:
        return 1.0
    if found >= 1:
        return 0.5
    return 1.0 if _contains_any(answer, _golds(q)) else 0.0


def _grade_conflict(q: Question, answer: str) -> float:
    candidates: list[str] = []
    if q.gold and q.gold.strip():
        candidates.append(_conflict_current_value(q.gold))
    candidates.extend(a for a in q.alternates if isinstance(a, str) and a.strip())
    if not _contains_any(answer, candidates):
        return 0.0
    return 1.0 if correction_named(answer) else 0.5


def _grade_gather(q: Question, answer: str) -> float:
    raw_parts = q.extra.get("gold_parts") if q.extra else None
    parts = [p for p in (raw_parts or []) if isinstance(p, str) and p.strip()]
    if not parts:
        return 1.0 if _contains_any(answer, _golds(q)) else 0.0
    return sum(1 for p in parts if contains(answer, p)) / len(parts)


def grade(q: Question, answer: str | None, answer_generated: bool = True) -> float | None:
    """Glasshouse dry-mode score of ``answer`` to ``q``: 0, 0.5, 1, a fraction, or ``None``.

    ``answer_generated=False`` means no answer model ran and ``answer`` is the returned memories
    joined; abstention questions are then ungraded (``None``). An empty answer scores 0.
    """
    abstention = is_abstention_question(q)
    if abstention and not answer_generated:
        return None
    if answer is None or not answer.strip():
        return 0.0
    if abstention:
        return 1.0 if says_dont_know(answer) else 0.0

    axis = q.axis
    if axis in ("UPDATE", "STALE"):
        return _grade_update(q, answer)
    if axis == "CONTRADICT":
        return _grade_contradict(q, answer)

    if (
        axis not in IDK_EXEMPT_AXES
        and says_dont_know(answer)
        and not any(gold_reads_like_dont_know(g) for g in _golds(q))
    ):
        return 0.0

    if axis == "RECONCILE":
        return _grade_reconcile(q, answer)
    if axis == "CONFLICT":
        return _grade_conflict(q, answer)
    if axis == "GATHER":
        return _grade_gather(q, answer)
    return 1.0 if _contains_any(answer, _golds(q)) else 0.0


def stale_trap_hit(q: Question, answer: str | None) -> bool:
    """STALE only: the old value given as current (and the new value not given)."""
    if q.axis != "STALE" or not answer or not answer.strip():
        return False
    stale = _extra_str(q, "stale_answer")
    if stale is None or not contains(answer, stale):
        return False
    return not _contains_any(answer, _golds(q))


def evidence_returned(
    q: Question,
    retrieved_turns: Sequence[str] | None,
    memories_returned: Sequence[str] | None,
) -> bool | None:
    """Did any evidence come back?

    ``None`` for a question without evidence turns, or when the record carries neither turn ids
    nor memory texts. With turn ids, any evidence turn among them; without (``retrieved_turns``
    is ``None``), the joined memory texts must contain the gold or an accepted alternative.
    A record that returned nothing is a miss.
    """
    evidence = q.evidence_turns
    if not evidence:
        return None
    if retrieved_turns is None and memories_returned is None:
        return None
    if retrieved_turns is not None:
        wanted = {str(t) for t in evidence}
        return any(str(t) in wanted for t in retrieved_turns)
    assert memories_returned is not None
    texts = [m for m in memories_returned if m]
    if not texts:
        return False
    golds = _golds(q)
    if not golds:
        return None
    return _contains_any("\n".join(texts), golds)
