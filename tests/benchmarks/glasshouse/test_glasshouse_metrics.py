"""Tests for Glasshouse v0.1 dry-mode (string) scoring rules.

Hand-made cases for every rule, then the official worked examples shipped with the data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks.glasshouse.metrics import (
    AXIS_WEIGHTS,
    contains,
    contradiction_named,
    correction_named,
    evidence_returned,
    gold_reads_like_dont_know,
    grade,
    is_abstention_question,
    normalize,
    says_dont_know,
    stale_trap_hit,
)
from recallbench.contracts import Question

REPO = Path(__file__).resolve().parents[3]
ABSTAIN_GOLD = "Never stated. The conversation does not contain that information."


def _q(
    axis: str = "BASIC",
    gold: str | None = "five weeks",
    alternates: tuple[str, ...] = (),
    expect: str = "answer",
    evidence_turns: tuple[str, ...] | None = ("t1", "t2"),
    **extra: Any,
) -> Question:
    row: dict[str, Any] = {"axis": axis, "gold_answer": gold, "expect": expect, **extra}
    return Question(
        id="X1",
        dataset="glasshouse-v0.1",
        group="all",
        text="question?",
        gold=gold,
        alternates=alternates,
        expect=expect,
        evidence_turns=evidence_turns,
        axis=axis,
        weight=float(AXIS_WEIGHTS.get(axis, 1)),
        extra=row,
    )


# ------------------------------------------------------------------------------------ weights


def test_axis_weights() -> None:
    ones = {"BASIC", "PARAPHRASE", "IMAGE", "XLING_QUERY", "XLING_STORE"}
    twos = {"TEMPORAL", "UPDATE", "GATHER", "RECONCILE"}
    threes = {"MULTI", "IMPLICIT", "CROSS", "CONFLICT", "STALE", "CONTRADICT", "ABSTAIN",
              "FALSE_MEMORY"}  # fmt: skip
    assert set(AXIS_WEIGHTS) == ones | twos | threes
    assert all(AXIS_WEIGHTS[a] == 1 for a in ones)
    assert all(AXIS_WEIGHTS[a] == 2 for a in twos)
    assert all(AXIS_WEIGHTS[a] == 3 for a in threes)


# ---------------------------------------------------------------------------- I don't know


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "I do not know",
        "I DON'T KNOW!!",
        "I dont know",  # the apostrophe is optional
        "We don't have that.",
        "I do not have any record",
        "That was never mentioned in our conversation.",
        "It never came up.",
        "He never said.",
        "Never stated. The conversation does not contain that information.",
        "That is not stated anywhere",
        "The price was not specified.",
        "No figure was given; it is not given",
        "It isn't mentioned",
        "That wasn't stated.",
        "it was not specified",
        "That is not in the memory.",
        "It wasn't in your notes",
        "it isn't in context",
        "There is no information about that in the stored memories.",
        "There is no such record",
        "No mention of it.",
        "no details were given",
        "There's nothing about that.",
        "I have nothing on that",
        "I cannot tell",
        "I cannot determine the answer",
        "I cannot say",
        "I can't tell",
        "I cant tell",
        "It isnt stated",
        "the memories don't contain it",
        "a piano record",  # the phrases need no word boundary ("no record")
        "The memories do not contain it",
        "the history does not contain an answer",
        "The conversation does not contain that information.",
        "I am unable to tell",
        "unable to determine",
        "I was unable to find it",
        "It's not in the conversation",
        "not in history",
        "That is not in my records",
    ],
)
def test_says_dont_know_positive(text: str) -> None:
    assert says_dont_know(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Never",
        "Yes, that's correct.",
        "they disagree on this",
        "The two statements conflict with each other.",
        "no new features",
        "not once",
        "I know: five weeks",
        "a blue bicycle",
        "no, it's daily now",
        "not in a hurry",
        "nothing else",
        # the official list knows the straight apostrophe only
        "I don\u2019t know",
        "I can\u2019t say",
        # words separated by exactly one space
        "I don't  know",
        "It was never\nstated",
        # "doesn't contain" is not one of the listed phrasings ("does not" / "don't" are)
        "The conversation doesn't contain that.",
        # bare negatives are not "I don't know" shapes
        "no one",
        "not at all",
        "nothing about the search",
    ],
)
def test_says_dont_know_negative(text: str) -> None:
    assert not says_dont_know(text)


def test_gold_reads_like_dont_know() -> None:
    # only golds shaped like "I don't know" exempt their question, not bare negatives
    assert gold_reads_like_dont_know("not stated")
    assert gold_reads_like_dont_know("don't have parking")
    assert gold_reads_like_dont_know("for months and never said anything")
    assert not gold_reads_like_dont_know("never")
    assert not gold_reads_like_dont_know("Never.")
    assert not gold_reads_like_dont_know("nobody")
    assert not gold_reads_like_dont_know("no one")
    assert not gold_reads_like_dont_know("nothing")
    assert not gold_reads_like_dont_know("not at all")
    assert not gold_reads_like_dont_know("nothing about the search")
    assert not gold_reads_like_dont_know("no, it's daily now")
    assert not gold_reads_like_dont_know("no new features")
    assert not gold_reads_like_dont_know("five weeks")
    assert not gold_reads_like_dont_know(None)


# ---------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Dishes!", "dishes!"),  # only periods and commas are dropped
        ("a quarter acre", "0.25 acre"),
        ("1/4 acre", "0.25 acre"),
        ("0.25 acre", "0.25 acre"),
        ("2/3 cup", "0.67 cup"),  # proper fractions, two decimals
        ("24/7", "24 7"),  # not a proper fraction: the slash is a separator
        ("five weeks", "5 weeks"),
        ("$3,000", "$3000"),
        ("1,250,000 won", "1250000 won"),
        ("It took 5 weeks.", "took 5 weeks"),
        ("tested with 2, and then", "tested with 2, and then"),  # a comma touching a digit stays
        # number words are read one by one; only "twenty four" / "twenty five" are pairs
        ("twenty five", "25"),
        ("twenty-five", "20 5"),
        ("sixty-two entries", "60 2 entries"),
        ("two and a half days", "2 and 0.5 days"),
        ("one hundred and five", "1 100 and 5"),
        ("three quarters", "0.75"),
        ("half an acre", "0.5 acre"),
        ("a third of it", "0.33 of"),
        ("zero", "zero"),
        # "once" and "twice" are numbers (Q220: "twice"), "thrice" is not
        ("twice a week", "2 week"),
        ("once", "1"),
        ("thrice", "thrice"),
        ("no one", "no 1"),
        ("5 percent", "5 %"),
        ("4.2%", "4.2%"),
        ("80 dollars", "80 $"),
        # personal pronouns go before apostrophes are split: "it's" leaves "s"
        ("He sorted it by timestamp", "sorted by timestamp"),
        ("It's theirs, they're sure", "s theirs re sure"),
        ('Yes: "quoted" (aside) [x] ~ c \u2013 d \u2014 e', "yes: quoted aside x c d e"),
        ("", ""),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


# ------------------------------------------------------------------------------ containment


@pytest.mark.parametrize(
    ("answer", "target", "expected"),
    [
        # short golds never match inside unrelated words
        ("a box of tools", "ox", False),
        ("they kept an ox", "ox", True),
        ("I know the answer", "no", False),
        ("no, never", "no", True),
        ("nothing", "no", False),
        ("a knot in the rope", "not", False),
        ("the conversation", "on", False),
        # number words and digits
        ("It took 5 weeks", "five weeks", True),
        ("five weeks", "5 weeks", True),
        ("5", "five weeks", False),  # numbers count only with the other content words
        ("5 days", "five weeks", False),
        ("1/4 acre", "a quarter acre", True),
        ("0.25 acre", "a quarter acre", True),
        ("a quarter acre", "1/4 acre", True),
        ("half an acre", "1/2 acre", True),
        ("SEVEN!!", "seven", True),
        ("it was 87 pounds", "about 87 pounds", True),  # numbers + content words
        ("87", "about 87 pounds", False),
        ("87 kilograms", "about 87 pounds", False),
        ("from 20 to 100", "from about 20 to about 100", True),
        ("from 20 to 50", "from about 20 to about 100", False),
        # compound number words are not combined: "62" is not "sixty-two"
        ("62 entries", "sixty-two entries", False),
        ("sixty-2 entries", "sixty-two entries", True),
        ("2.5 days", "two and a half days", False),
        # Q220: "twice" is the number 2, wherever a 2 stands
        ("It doubled: 2 times the size", "twice", True),
        ("two", "twice", True),
        ("three times", "thrice", False),
        # content words of three letters or more count in the number fallback, "and" too
        ("3 eggs, 2 cups", "3 eggs and 2 cups", False),
        ("3 eggs and 2 cups", "3 eggs and two cups", True),
        # thousands separators and currency words
        ("3000 dollars", "$3,000", True),
        ("$3,000", "3000", True),
        ("about 4000", "around 4,000", True),
        ("30", "$3,000", False),
        ("5 percent", "5%", True),
        # an ending (-s, -es, -d, -ed, -ing) may follow the whole gold in the answer ...
        ("they walked there", "walk", True),
        ("the aphids", "aphid", True),
        ("boxes", "box", True),
        ("went back to paperd", "went back to paper", True),
        ("a seed", "see", True),  # "-d" after any word, as the official scorer reads it
        ("walker", "walk", False),
        # ... but not in the middle of the gold, and the gold never loses one (Q091)
        ("planting beans", "plant beans", False),
        ("walk", "walked", False),
        ("making soup", "make soup", False),
        ("they keep it", "keeping it", False),
        ("keeping it", "keeping", True),
        # Q005: "no one" is two words, "one" read as 1
        ("No one helped, he did it all himself", "no one", True),
        ("no-one", "no one", True),
        ("someone", "no one", False),
        # case, articles, pronouns, punctuation
        ("Yes: he broke it during work hours on a Tuesday.", "he broke it during work hours", True),
        ("THE HISTORY GIVES TWO ANSWERS!!", "the history gives 2 answers", True),
        ("dishes", "the dishes", True),
        ("their neighbors advice", "the neighbors advice", True),
        ("their neighbor's advice", "the neighbors advice", False),  # "neighbor s advice"
        ("it is daily", "it's daily", False),  # the gold reads "s daily"
        # degenerate inputs
        ("the", "the history gives two different answers", False),
        ("", "five", False),
        ("five", "", False),
        ("them", "them", False),  # a gold of pronouns / articles only is empty: never found
    ],
)
def test_contains(answer: str, target: str, expected: bool) -> None:
    assert contains(answer, target) is expected


# ------------------------------------------------------------------------------ basic rules


def test_empty_answer_scores_zero_and_is_not_abstention() -> None:
    assert grade(_q(), None) == 0.0
    assert grade(_q(), "") == 0.0
    assert grade(_q(), "   \n") == 0.0
    abstain = _q(axis="ABSTAIN", gold=ABSTAIN_GOLD, expect="no_memory")
    assert grade(abstain, "") == 0.0
    assert grade(abstain, None) == 0.0
    assert grade(_q(axis="UPDATE"), "") == 0.0  # not the 0.5 of an "I don't know"


def test_default_containment() -> None:
    q = _q(gold="five weeks", alternates=("about a month",))
    assert grade(q, "It took 5 weeks.") == 1.0
    assert grade(q, "About a month") == 1.0
    assert grade(q, "six weeks") == 0.0
    assert grade(q, "5") == 0.0


def test_default_axis_ignores_gold_parts() -> None:
    q = _q(axis="BASIC", gold="a better bed and the couch", gold_parts=["better bed", "couch"])
    assert grade(q, "the couch") == 0.0
    assert grade(q, "a better bed and the couch") == 1.0


def test_dont_know_zeroed_before_matching() -> None:
    q = _q(gold="five weeks")
    assert grade(q, "I don't know, maybe five weeks?") == 0.0
    assert grade(q, "It was never mentioned.") == 0.0
    assert grade(q, "I dont know, five weeks?") == 0.0
    # a curly apostrophe is not one of the official phrasings: matched as an answer
    assert grade(q, "I don\u2019t know, five weeks?") == 1.0


def test_dont_know_not_zeroed_when_gold_reads_like_one() -> None:
    stated = _q(gold="five weeks", alternates=("not stated",))
    assert grade(stated, "That was not stated.") == 1.0
    parking = _q(gold="don't have parking")
    assert grade(parking, "They don't have parking.") == 1.0
    assert grade(parking, "I don't know") == 0.0  # still has to contain the gold
    months = _q(gold="for months and never said anything")
    assert grade(months, "He went for months and never said anything.") == 1.0


def test_bare_negative_gold_does_not_exempt_dont_know() -> None:
    # a gold of "never" does not read like "I don't know": "never came up" is still zeroed
    never = _q(gold="never", alternates=("none", "zero", "not before", "first time"))
    assert grade(never, "It never came up again, they never went back: never.") == 0.0
    assert grade(never, "Never.") == 1.0
    # Q142: "not at all" and its alternates are negatives, not "I don't know" shapes
    travel = _q(gold="not at all", alternates=("none", "no trips", "did not travel", "didn't go"))
    assert grade(travel, "They did not travel at all.") == 1.0
    assert grade(travel, "I don't know; not at all?") == 0.0
    assert grade(travel, "There is no information about trips, so none.") == 0.0
    # Q421: "nothing about the search" is not "nothing about that"
    fix = _q(gold="nothing about the search",
             alternates=("nothing about how long it takes to find",))  # fmt: skip
    assert grade(fix, "It says nothing about the search.") == 1.0
    assert grade(fix, "I don't know - nothing about the search?") == 0.0


def test_number_word_twice() -> None:
    # Q220: "twice" and "once" are read as numbers, so "2" / "two" / "2 times" answer "twice"
    q = _q(axis="MULTI", gold="twice")
    assert grade(q, "2 times the size") == 1.0
    assert grade(q, "It will be two times as big.") == 1.0
    assert grade(q, "Twice as big.") == 1.0
    assert grade(q, "three times") == 0.0
    assert grade(_q(gold="once a week"), "1 week") == 1.0


def test_no_one_gold() -> None:
    # Q005: "no one" normalises the same way in gold and answer
    q = _q(gold="alone", alternates=("alone", "nobody", "no one", "by himself"))
    assert grade(q, "No one; he wanted to do it himself.") == 1.0
    assert grade(q, "With someone from work.") == 0.0


def test_ending_only_added_to_the_gold() -> None:
    # Q091: the answer may add an ending to the gold, never drop one
    q = _q(gold="keeping it", alternates=("not quitting", "staying", "no plans to quit"))
    assert grade(q, "He is keeping it.") == 1.0
    assert grade(q, "He plans to keep the day job.") == 0.0
    assert grade(q, "They are staying put.") == 1.0
    assert grade(_q(gold="plant beans"), "planting beans") == 0.0
    assert grade(_q(gold="plant"), "planting beans") == 1.0


def test_no_memory_expect_graded_as_abstention_whatever_axis() -> None:
    q = _q(axis="XLING_QUERY", gold=ABSTAIN_GOLD, expect="no_memory")
    assert is_abstention_question(q)
    assert grade(q, "I don't know.") == 1.0
    assert grade(q, "Never stated.") == 1.0
    assert grade(q, "a blue bicycle") == 0.0
    assert grade(q, "Never") == 0.0


@pytest.mark.parametrize("axis", ["ABSTAIN", "FALSE_MEMORY"])
def test_abstention_axes(axis: str) -> None:
    q = _q(axis=axis, gold=ABSTAIN_GOLD, expect="no_memory")
    assert is_abstention_question(q)
    assert grade(q, "There is no information about that in the stored memories.") == 1.0
    assert grade(q, "It was definitely not Never stated.") == 1.0
    assert grade(q, "The two statements conflict with each other.") == 0.0
    assert grade(q, "Yes, that's correct.") == 0.0
    # an abstention-axis question is an abstention even with another expect
    assert is_abstention_question(_q(axis=axis, expect="answer"))


def test_without_answer_model_abstentions_are_ungraded() -> None:
    abstain = _q(axis="ABSTAIN", gold=ABSTAIN_GOLD, expect="no_memory")
    assert grade(abstain, "I don't know", answer_generated=False) is None
    assert grade(abstain, "", answer_generated=False) is None
    xq = _q(axis="XLING_QUERY", gold=ABSTAIN_GOLD, expect="no_memory")
    assert grade(xq, "memory text", answer_generated=False) is None
    basic = _q(gold="five weeks")
    assert grade(basic, "Took 5 weeks\nother memory", answer_generated=False) == 1.0
    assert grade(basic, "", answer_generated=False) == 0.0
    assert not is_abstention_question(basic)


# ------------------------------------------------------------------------------ UPDATE/STALE


def test_update() -> None:
    q = _q(axis="UPDATE", gold="four times a week", alternates=("4x a week",))
    assert grade(q, "four times a week") == 1.0
    assert grade(q, "Yes: 4 times a week.") == 1.0
    assert grade(q, "I don't know.") == 0.5
    assert grade(q, "That was never mentioned in our conversation.") == 0.5
    assert grade(q, "twice a week") == 0.0
    assert grade(q, "The two statements conflict with each other.") == 0.0


def test_stale() -> None:
    q = _q(axis="STALE", gold="a database", alternates=("database",),
           stale_answer="one file per month")  # fmt: skip
    assert grade(q, "a database") == 1.0
    assert grade(q, "one file per month") == 0.0
    assert grade(q, "I don't know.") == 0.5
    assert grade(q, "something else") == 0.0
    # new and old both given: the new value is checked first
    assert grade(q, "It used to be one file per month but now it's a database.") == 1.0
    # the old value given as current beats an "I don't know" phrasing
    assert grade(q, "I don't know, one file per month?") == 0.0


def test_stale_trap_hit() -> None:
    q = _q(axis="STALE", gold="metal pipe", stale_answer="wood")
    assert stale_trap_hit(q, "It's wood.")
    assert not stale_trap_hit(q, "They are wooden")  # whole words: "wooden" is not "wood"
    assert not stale_trap_hit(q, "It was wood, now metal pipe")
    assert not stale_trap_hit(q, "metal pipe")
    assert not stale_trap_hit(q, "")
    assert not stale_trap_hit(q, None)
    assert not stale_trap_hit(_q(axis="UPDATE", gold="metal pipe", stale_answer="wood"), "wood")


# -------------------------------------------------------------------------------- CONTRADICT


def _contradict() -> Question:
    return _q(axis="CONTRADICT", gold="the history gives two different answers",
              expect="flag_conflict", clash_a="200 seeds", clash_b="300 seeds")  # fmt: skip


@pytest.mark.parametrize(
    "answer",
    [
        "They sowed 200 seeds, or maybe 300 seeds.",
        "The two statements conflict with each other.",
        "There are conflicting figures.",
        "The notes contradict each other",
        "That's a contradiction.",
        "The records are inconsistent.",
        "The numbers are not consistent.",
        "The sources disagree.",
        "There is a mismatch.",
        "The figures don't match",
        "The figures dont match",
        "The later note doesn't match the earlier one",
        "The totals does not match",
        "the history gives two different answers",
        "I have two different numbers for that",
        "There are two different figures",
        "There are two different values.",
        "At one point it was 200, later it was 300.",
        "Some notes are INCONSISTENTLY kept",
    ],
)
def test_contradict_named(answer: str) -> None:
    assert grade(_contradict(), answer) == 1.0


def test_contradict_other_cases() -> None:
    q = _contradict()
    assert grade(q, "200 seeds") == 0.0  # one clash value only
    assert grade(q, "the history gives 2 different answers") == 0.0  # the word "two" is needed
    assert grade(q, "At one point it was 200. Later it was 300.") == 0.0  # not one sentence
    # "later" at most 60 characters after "at one point"
    assert grade(q, "At one point " + "x" * 54 + " later") == 1.0
    assert grade(q, "At one point " + "x" * 60 + " later") == 0.0
    # number words are not combined: "two hundred" reads "2 100", not "200"
    assert grade(q, "two hundred seeds and three hundred seeds") == 0.0
    assert grade(q, "The figures don\u2019t match") == 0.0  # straight apostrophe only
    assert grade(q, "I don't know.") == 0.5
    assert grade(q, "There is no information about that.") == 0.5
    assert grade(q, "How many seeds did they sow?") == 0.0
    assert grade(q, "") == 0.0
    assert contradiction_named("they DISAGREE")
    assert not contradiction_named("they agree")


# --------------------------------------------------------------------------------- RECONCILE


def _reconcile(alternates: tuple[str, ...] = ()) -> Question:
    return _q(axis="RECONCILE",
              gold="both are true: skips it on weekdays, cooks one at weekends",
              alternates=alternates, side_a="on weekdays", side_b="at weekends",
              gold_parts=None)  # fmt: skip


def test_reconcile() -> None:
    q = _reconcile(alternates=("depends on the day",))
    assert grade(q, "He skips it on weekdays but cooks at weekends.") == 1.0
    assert grade(q, "He skips breakfast on weekdays.") == 0.5
    assert grade(q, "At weekends he cooks.") == 0.5
    assert grade(q, "It depends on the day.") == 1.0
    assert grade(q, "Yes, every day.") == 0.0
    assert grade(q, "I don't know.") == 0.0  # "I don't know" earns nothing here
    assert grade(q, "I don't know if he eats on weekdays") == 0.0


def test_reconcile_sides_count_only_as_a_pair() -> None:
    q = _q(axis="RECONCILE", gold="depends on the day", side_a="on weekdays", side_b=None)
    assert grade(q, "He skips it on weekdays.") == 0.0  # one side alone is no half credit
    assert grade(q, "It depends on the day.") == 1.0


# ---------------------------------------------------------------------------------- CONFLICT


def _conflict() -> Question:
    return _q(axis="CONFLICT", gold="no, it's daily now", alternates=("every day",))


@pytest.mark.parametrize(
    "answer",
    [
        "No, it's daily now.",
        "Not weekly: daily.",
        "It isn't weekly, it's daily",
        "It wasn't weekly; daily",
        "That's incorrect, it is daily.",
        "Actually, daily.",
        "It changed to daily.",
        "They switched to every day.",
        "It used to be weekly, now daily.",
        "It's no longer weekly; daily.",
        "Daily, not weekly anymore.",
        "That's wrong, it's daily.",
        "That's not right - daily",
        "You're mistaken, it's every day.",
    ],
)
def test_conflict_with_correction(answer: str) -> None:
    assert grade(_conflict(), answer) == 1.0


def test_conflict_other_cases() -> None:
    q = _conflict()
    assert grade(q, "daily") == 0.5  # the current value alone
    assert grade(q, "It happens every day.") == 0.5
    assert grade(q, "no, it's 40 minutes now") == 0.0  # a correction without the value
    assert grade(q, "weekly") == 0.0
    assert grade(q, "I don't know, daily?") == 0.0  # "I don't know" zeroed first
    assert grade(q, "I know it's daily") == 0.5  # "know" is not the correction word "no"
    assert not correction_named("I know, nothing noteworthy")
    assert correction_named("NO.")
    # correction words other than "no" / "not" count inside longer words too
    assert correction_named("The schedule is unchanged")
    assert correction_named("factually")
    assert correction_named("thats wrong")
    assert not correction_named("That is wrong")  # "that's" / "thats" only
    assert not correction_named("It isn\u2019t weekly")  # straight apostrophe only


def test_conflict_current_value_strip() -> None:
    # a leading "no" goes even when it starts a word: "not ..." leaves "t ...", so only the
    # accepted alternatives can match such a gold
    bare = _q(axis="CONFLICT", gold="not on an empty stomach")
    assert grade(bare, "Not on an empty stomach.") == 0.0
    alt = _q(axis="CONFLICT", gold="not on an empty stomach",
             alternates=("not on an empty stomach", "with food"))  # fmt: skip
    assert grade(alt, "Not on an empty stomach.") == 1.0
    assert grade(alt, "with food") == 0.5
    # "it" / "they" / "he's" / "she's" leads and a trailing "now." go too
    lead = _q(axis="CONFLICT", gold="No, he's at the new office now.")
    assert grade(lead, "at the new office") == 0.5
    assert grade(lead, "No - at the new office") == 1.0


def test_conflict_gold_without_lead_words() -> None:
    q = _q(axis="CONFLICT", gold="no, they went from wood to metal")
    assert grade(q, "no, they went from wood to metal") == 1.0
    assert grade(q, "went from wood to metal") == 0.5
    q2 = _q(axis="CONFLICT", gold="no, they're going with netting", alternates=("netting",))
    assert grade(q2, "netting") == 0.5
    assert grade(q2, "Not spray: going with netting") == 1.0


# ------------------------------------------------------------------------------------ GATHER


def test_gather_fractions() -> None:
    q = _q(axis="GATHER", gold="a better bed and the couch", gold_parts=["better bed", "couch"])
    assert grade(q, "a better bed and the couch") == 1.0
    assert grade(q, "the couch") == 0.5
    assert grade(q, "nothing") == 0.0
    assert grade(q, "I don't know about the couch") == 0.0  # "I don't know" zeroed first
    # fractions are rounded to three decimals, as the official scorer reports them
    q3 = _q(axis="GATHER", gold="x", gold_parts=["quads", "hamstrings", "calves"])
    assert grade(q3, "quads and calves") == 0.667
    assert grade(q3, "hamstrings") == 0.333
    assert grade(q3, "hamstring") == 0.0  # the answer may add an ending, not drop one


def test_gather_without_parts_uses_gold() -> None:
    q = _q(axis="GATHER", gold="pizza or chicken", alternates=("pizza",), gold_parts=[])
    assert grade(q, "pizza or chicken") == 1.0
    assert grade(q, "maybe pizza") == 1.0
    assert grade(q, "salad") == 0.0


# -------------------------------------------------------------------------------- evidence


def test_evidence_returned() -> None:
    q = _q(gold="five weeks", evidence_turns=("12", "40"))
    assert evidence_returned(q, ["3", "40"], None) is True
    assert evidence_returned(q, ["3", "41"], ["it took five weeks"]) is False  # ids win
    assert evidence_returned(q, [], None) is False
    assert evidence_returned(q, None, ["it took 5 weeks", "other"]) is True
    assert evidence_returned(q, None, ["six weeks"]) is False
    assert evidence_returned(q, None, []) is False
    assert evidence_returned(q, None, None) is None
    assert evidence_returned(_q(evidence_turns=()), ["12"], None) is None
    assert evidence_returned(_q(evidence_turns=None), ["12"], ["five weeks"]) is None


# ----------------------------------------------------------------------- the shipped data


def _data_dir() -> Path | None:
    env = os.environ.get("RECALLBENCH_DATA")
    if env:
        return Path(env)
    default = REPO.parent / "shared" / "data"
    return default if default.is_dir() else None


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _question(row: Mapping[str, Any]) -> Question:
    return Question(
        id=row["id"],
        dataset="glasshouse-v0.1",
        group="all",
        text=row.get("question_en", ""),
        gold=row.get("gold_answer"),
        alternates=tuple(row.get("gold_alts", [])),
        expect=row.get("expect", "answer"),
        axis=row["axis"],
        weight=float(AXIS_WEIGHTS[row["axis"]]),
        extra=dict(row),
    )


def _glasshouse_dir() -> Path:
    base = _data_dir()
    folder = None if base is None else base / "glasshouse-v0.1"
    if folder is None or not (folder / "questions_core.jsonl").is_file():
        pytest.skip(f"Glasshouse v0.1 data not found under {base}")
    return folder


QUESTION_FILES = {"core": "questions_core.jsonl", "probes": "glasshouse_v0.1_probes.jsonl"}


def test_official_dry_examples() -> None:
    folder = _glasshouse_dir()
    examples_path = folder.parent / "glasshouse-v0.1-examples" / "official_dry_examples.jsonl"
    if not examples_path.is_file():
        pytest.skip(f"official examples not found at {examples_path}")
    questions: dict[tuple[str, str], Question] = {}
    for key, name in QUESTION_FILES.items():
        for row in _read_jsonl(folder / name):
            questions[(key, row["id"])] = _question(row)
    examples = list(_read_jsonl(examples_path))
    assert examples
    mismatches = []
    for ex in examples:
        q = questions[(ex["questions"], ex["id"])]
        assert q.axis == ex["axis"]
        got = grade(q, ex["answer"])
        want = ex["official_value"]
        if (got is None) != (want is None) or (
            got is not None and want is not None and got != pytest.approx(want)
        ):
            mismatches.append((ex["id"], ex["answer"], want, got))
    assert not mismatches, f"{len(mismatches)}/{len(examples)} disagree: {mismatches[:10]}"


@pytest.mark.parametrize("name", ["questions_full.jsonl", "questions_xling.jsonl"])
def test_every_gold_scores_full_marks(name: str) -> None:
    folder = _glasshouse_dir()
    path = folder / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    failures = []
    for row in _read_jsonl(path):
        q = _question(row)
        if grade(q, q.gold) != 1.0:
            failures.append((q.id, q.axis, q.gold))
        if q.axis == "STALE" and not stale_trap_hit(q, row["stale_answer"]):
            failures.append((q.id, "stale trap missed", row["stale_answer"]))
        if is_abstention_question(q):
            assert grade(q, q.gold, answer_generated=False) is None
    assert not failures, failures[:10]
