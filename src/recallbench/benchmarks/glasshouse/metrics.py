"""Glasshouse v0.1 string-mode ("dry") answer scoring, as pure functions.

Glasshouse grades an answer per axis with string rules only (no judge model):

* abstention questions (``expect == "no_memory"`` or axis ABSTAIN / FALSE_MEMORY) score 1 when the
  answer says it does not know, else 0; without an answer model they are ungraded (``None``);
* UPDATE / STALE reward the new value (1), punish the stale one (0) and half-credit "I don't
  know"; CONTRADICT rewards naming the disagreement; RECONCILE rewards naming both conditions;
  CONFLICT rewards the current value together with a correction; GATHER is the fraction of parts
  (rounded to three decimals);
* everything else is containment of the gold or an accepted alternative, after an
  "I don't know"-shaped answer has been zeroed (unless the gold or an alternative is itself
  shaped like one).

The aim is to give exactly the values the benchmark's own scorer gives, so the details below
follow its observed behaviour, quirks included, rather than a cleaner reading of the rules.

"I don't know" shapes are a fixed list of English phrases found anywhere in the raw answer,
case-insensitively, with single spaces between their words and an optional straight apostrophe
("dont know" counts, a curly "don\u2019t know" does not).

Text is normalised as one string, in this order: lower case; the articles a / an / the removed;
"percent" written "%" and "dollar(s)" written "$" (even inside longer words); digit-group commas
dropped; a proper fraction of digits ("1/4") written as its decimal rounded to two places;
number words written as digits one word at a time ("one" to "twenty", the tens, "hundred",
"thousand", "once", "twice", "half", "quarter", "third", plus the pairs "twenty four",
"twenty five" and "three quarters"), so "sixty-two" reads "60 2" and "zero" / "thrice" stay
words; the personal pronouns I / me / my / you / your / he / him / his / she / her / it / its /
we / us / our / they / them / their removed (which leaves the tail of "it's" as "s"); periods
and commas not touching a digit removed; hyphens, dashes, tildes, straight apostrophes and
quotes, brackets and slashes turned into spaces; runs of white space collapsed.

The normalised gold is then looked for in the normalised answer as a run of text that does not
start or end inside a word of ASCII letters and digits, the answer being allowed one ending
(-s, -es, -d, -ed, -ing) after the gold's last character. Failing that, a gold holding numbers
still matches when each of its numbers is one of the answer's numbers and each of its words of
three letters or more (hedges such as "about" or "nearly" aside) is in the answer as a whole
word, with the same endings allowed.
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
# The official list is matched as plain phrases: no word boundary is required around them,
# words are separated by exactly one space, and only the straight apostrophe is known (and is
# optional). Matching that behaviour is the point, so these are deliberately not \b / \s+ based.

_NOT_BE = r"(?:is not|isn'?t|was not|wasn'?t)"  # "is not", "isn't", "isnt", "was not", ...
_OWNER = r"(?:(?:the|your|our|my) )?"
_STORES = r"memory|memories|conversation|history|record|notes"  # "record" covers "records"
_IDK_PATTERNS: tuple[str, ...] = (
    r"never (?:stated|said|mentioned|came up)",
    r"not (?:stated|mentioned|specified|given)",
    rf"{_NOT_BE} (?:stated|mentioned|specified)",
    rf"{_NOT_BE} in {_OWNER}(?:{_STORES}|context)",
    r"no (?:such )?(?:information|record|mention|detail)",
    r"nothing (?:about|on) that",
    r"(?:don'?t|do not) (?:know|have)",
    r"cannot (?:tell|determine|say)",
    r"can'?t (?:tell|say)",
    r"(?:memories|conversation|history) (?:does not|do not|don'?t) contain",  # not "doesn't"
    r"unable to (?:tell|determine|find)",
    rf"not in {_OWNER}(?:{_STORES})",
)
_IDK_RE = re.compile("|".join(f"(?:{p})" for p in _IDK_PATTERNS), re.IGNORECASE)


def says_dont_know(text: str | None) -> bool:
    """True when ``text`` is shaped like "I don't know" (English phrasings, anywhere)."""
    if not text:
        return False
    return _IDK_RE.search(text) is not None


def gold_reads_like_dont_know(text: str | None) -> bool:
    """True when a gold answer itself is shaped like "I don't know" ("never stated", ...).

    Such a gold (or accepted alternative) disables the "I don't know scores 0" shortcut for its
    question, since a right answer to it is naturally phrased that way. Only the "I don't know"
    shapes count: a bare negative gold such as "never", "no one" or "not at all" does not.
    """
    return says_dont_know(text)


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

_ARTICLE_RE = re.compile(r"\b(?:a|an|the)\b")
_PERCENT_RE = re.compile(r"percent")
_DOLLAR_RE = re.compile(r"dollars?")
_DIGIT_GROUP_RE = re.compile(r"(?<=\d),(?=\d{3})")
_DIGIT_FRACTION_RE = re.compile(r"(\d+)\s*/\s*(\d+)")

# Number words read as digits, one word (or the listed pair) at a time; nothing else is
# combined, so "sixty-two" stays two numbers and "zero" / "thrice" / "million" stay words.
_NUMBER_WORDS: dict[str, str] = {
    "three quarters": "0.75", "twenty four": "24", "twenty five": "25",
    "quarter": "0.25", "half": "0.5", "third": "0.33",
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
    "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18",
    "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50",
    "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "once": "1", "twice": "2",
}  # fmt: skip
_NUMBER_WORD_RE = re.compile(
    r"\b(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b"
)
_PRONOUN_RE = re.compile(
    r"\b(?:i|me|my|you|your|he|him|his|she|her|it|its|we|us|our|they|them|their)\b"
)
_LONE_STOP_RE = re.compile(r"(?<!\d)[.,](?!\d)")  # a period or comma not touching a digit
_SEPARATOR_RE = re.compile("[-\u2013\u2014~'\"()\\[\\]/]+")
_SPACE_RE = re.compile(r"\s+")


def _fraction_as_decimal(match: re.Match[str]) -> str:
    num, den = int(match.group(1)), int(match.group(2))
    if den == 0 or num >= den:  # only proper fractions ("24/7" and dates like "3/2" stay)
        return match.group(0)
    return f" {round(num / den, 2)} "


def normalize(text: str | None) -> str:
    """The normalised form containment compares (see the module docstring)."""
    if not text:
        return ""
    s = _ARTICLE_RE.sub(" ", text.lower())
    s = _DOLLAR_RE.sub("$", _PERCENT_RE.sub("%", s))
    s = _DIGIT_GROUP_RE.sub("", s)
    s = _DIGIT_FRACTION_RE.sub(_fraction_as_decimal, s)
    s = _NUMBER_WORD_RE.sub(lambda m: f" {_NUMBER_WORDS[m.group(0)]} ", s)
    s = _PRONOUN_RE.sub(" ", s)
    s = _LONE_STOP_RE.sub(" ", s)
    s = _SEPARATOR_RE.sub(" ", s)
    return _SPACE_RE.sub(" ", s).strip()


# --------------------------------------------------------------------------------------------
# Containment
# --------------------------------------------------------------------------------------------

_ENDINGS: tuple[str, ...] = ("", "s", "d", "es", "ed", "ing")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_WORD_RE = re.compile(r"[a-z]+")
_HEDGES = frozenset(
    {"about", "around", "roughly", "approximately", "some", "over", "under", "just", "almost",
     "nearly"}
)  # fmt: skip


def _found(haystack: str, needle: str, inside: frozenset[str]) -> bool:
    """``needle`` in ``haystack``, not glued to a character of ``inside`` on either side.

    One of the endings -s, -d, -es, -ed, -ing may follow the needle before the boundary.
    """
    start = haystack.find(needle)
    while start != -1:
        if start == 0 or haystack[start - 1] not in inside:
            rest = haystack[start + len(needle) :]
            for ending in _ENDINGS:
                if rest.startswith(ending) and (
                    len(rest) == len(ending) or rest[len(ending)] not in inside
                ):
                    return True
        start = haystack.find(needle, start + 1)
    return False


def _numbers_with_words(answer: str, target: str) -> bool:
    """Every number of ``target`` is an answer number and its longer words are there too."""
    wanted = _NUMBER_RE.findall(target)
    if not wanted:
        return False
    have = set(_NUMBER_RE.findall(answer))
    if not all(n in have for n in wanted):
        return False
    words = (w for w in _WORD_RE.findall(target) if len(w) >= 3 and w not in _HEDGES)
    return all(_found(answer, w, _LETTERS) for w in words)


def contains(answer: str | None, target: str | None) -> bool:
    """Normalised containment of ``target`` in ``answer`` (see the module docstring)."""
    if not answer or not target:
        return False
    a, t = normalize(answer), normalize(target)
    if t and _found(a, t, _ALNUM):
        return True
    return _numbers_with_words(a, t)


def _contains_any(answer: str, targets: Iterable[str]) -> bool:
    return any(contains(answer, t) for t in targets)


# --------------------------------------------------------------------------------------------
# Axis-specific cue detection (on the raw answer, case-insensitive)
# --------------------------------------------------------------------------------------------

_CONTRADICTION_RE = re.compile(
    r"\b(?:conflict|contradic|inconsistent|not consistent|disagree|mismatch"
    r"|do(?:es)?n'?t match|do(?:es)? not match"
    r"|two different (?:answers|values|numbers|figures)"
    r"|at one point\b[^.!?]{0,60}\blater\b)",
    re.IGNORECASE,
)

# "no" and "not" as words; the rest also inside longer words ("unchanged", "factually").
_CORRECTION_RE = re.compile(
    r"\bno\b|\bnot\b|isn'?t|wasn'?t|incorrect|actually|changed|switched|used to|anymore"
    r"|that'?s (?:wrong|not right)|mistaken",
    re.IGNORECASE,
)

_CONFLICT_LEAD_NO_RE = re.compile(r"^no,?\s*", re.IGNORECASE)  # also eats "no" of "not ..."
_CONFLICT_LEAD_SUBJECT_RE = re.compile(
    r"^(?:it'?s|it|they'?re|they|that'?s|he'?s|she'?s)\s+", re.IGNORECASE
)
_CONFLICT_TRAIL_NOW_RE = re.compile(r"\s+now\b\.?$", re.IGNORECASE)


def contradiction_named(answer: str) -> bool:
    """True when the raw answer uses words that name a contradiction (CONTRADICT cues)."""
    return _CONTRADICTION_RE.search(answer) is not None


def correction_named(answer: str) -> bool:
    """True when the raw answer carries a correction word (CONFLICT cues)."""
    return _CORRECTION_RE.search(answer) is not None


def _conflict_current_value(gold: str) -> str:
    """A CONFLICT gold without its leading "no", "it's / they're ..." and trailing "now"."""
    value = _CONFLICT_LEAD_NO_RE.sub("", gold)
    value = _CONFLICT_LEAD_SUBJECT_RE.sub("", value)
    value = _CONFLICT_TRAIL_NOW_RE.sub("", value)
    return value.strip()


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
    side_a, side_b = _extra_str(q, "side_a"), _extra_str(q, "side_b")
    if side_a is not None and side_b is not None:  # the sides count only as a pair
        found = contains(answer, side_a) + contains(answer, side_b)
        if found:
            return 1.0 if found == 2 else 0.5
    return 1.0 if _contains_any(answer, _golds(q)) else 0.0


def _grade_conflict(q: Question, answer: str) -> float:
    alternates = [a for a in q.alternates if isinstance(a, str) and a.strip()]
    candidates = [_conflict_current_value(g) for g in (q.gold or "", *alternates)]
    candidates.extend(alternates)
    if not _contains_any(answer, (c for c in candidates if c)):
        return 0.0
    return 1.0 if correction_named(answer) else 0.5


def _grade_gather(q: Question, answer: str) -> float:
    raw_parts = q.extra.get("gold_parts") if q.extra else None
    parts = [p for p in (raw_parts or []) if isinstance(p, str)]  # a blank part is never found
    if not parts:
        return 1.0 if _contains_any(answer, _golds(q)) else 0.0
    return round(sum(1 for p in parts if contains(answer, p)) / len(parts), 3)


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
    is ``None``), the memory texts joined with spaces must contain the gold or an accepted
    alternative. A record that returned nothing is a miss.
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
    return _contains_any(" ".join(texts), golds)
