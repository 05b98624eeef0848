"""Tests for the BEAM per-question rules (expected values worked out by hand)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks.beam.metrics import (
    ABILITIES,
    EVENT_ORDERING,
    RUBRIC_PROMPT_FILE,
    align_items,
    build_rubric_prompt,
    event_ordering_details,
    event_ordering_score,
    gold_event_order,
    grade_rubric,
    kendall_tau_b,
    parse_rubric,
    parse_rubric_grade,
    rubric_outcome,
    rubric_prompt_version,
    rubric_score,
    split_rubric_item,
)

REPO = Path(__file__).resolve().parents[3]


def _data_dir() -> Path:
    return Path(os.environ.get("RECALLBENCH_DATA", str(REPO.parent / "shared" / "data")))


def _probing_questions() -> dict[str, list[dict[str, Any]]]:
    path = _data_dir() / "beam" / "chats" / "100K" / "1" / "probing_questions"
    path = path / "probing_questions.json"
    if not path.is_file():
        pytest.skip(f"BEAM sample not found at {path}")
    with path.open(encoding="utf-8") as fh:
        data: dict[str, list[dict[str, Any]]] = json.load(fh)
    return data


# ---------------------------------------------------------------- rubric prompt and grades


def test_prompt_file_shape() -> None:
    with RUBRIC_PROMPT_FILE.open(encoding="utf-8") as fh:
        raw = json.load(fh)
    assert raw["version"] == "1" == rubric_prompt_version()
    found = set(re.findall(r"\{(question|rubric_item|response)\}", raw["template"]))
    assert found == {"question", "rubric_item", "response"}


def test_build_rubric_prompt_single_pass() -> None:
    prompt = build_rubric_prompt("Q? {response}", "must say {x}", "R {rubric_item}")
    assert "Q? {response}" in prompt
    assert "must say {x}" in prompt
    assert "R {rubric_item}" in prompt
    assert '"score"' in prompt  # the literal JSON braces of the template survive


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ('{"score": 1, "reason": "all there"}', 1.0),
        ('```json\n{"score": 0.5, "reason": "partly"}\n```', 0.5),
        ('Here you go: {"score": "0.5"}', 0.5),
        ('{"reason": "x", "score": 0}', 0.0),
        ("Score: 1", 1.0),
        ("score = .5", 0.5),
        ("0.5", 0.5),
        ("**1**", 1.0),
        ("1.0.", 1.0),
        ('{"score": 0.75}', None),
        ('{"score": true}', None),
        ("2", None),
        ("The reply covers 1 of 2 points.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_rubric_grade(text: str | None, grade: float | None) -> None:
    assert parse_rubric_grade(text) == grade


def test_rubric_outcome_counts_missing_as_zero() -> None:
    outcome = rubric_outcome([1.0, 0.5, None, 0])
    assert outcome.score == pytest.approx(1.5 / 4)
    assert outcome.missing == 1
    assert outcome.grades == (1.0, 0.5, None, 0.0)
    assert rubric_score([1, 1]) == 1.0
    assert rubric_score([]) is None


def test_rubric_outcome_rejects_bad_grades() -> None:
    with pytest.raises(ValueError):
        rubric_outcome([0.25])
    with pytest.raises(ValueError):
        rubric_outcome([True])


def test_grade_rubric_with_fake_judge() -> None:
    replies = {
        "names the date": '{"score": 1, "reason": "ok"}',
        "names the place": '```json\n{"score": "0.5"}\n```',
        "names the person": "I am not sure.",
    }
    prompts: list[str] = []

    def judge(prompt: str) -> str:
        prompts.append(prompt)
        return next(reply for item, reply in replies.items() if item in prompt)

    outcome = grade_rubric("Where and when?", list(replies), "On May 3 in Oslo.", judge)
    assert outcome.grades == (1.0, 0.5, None)
    assert outcome.score == pytest.approx(0.5)
    assert outcome.missing == 1
    assert len(prompts) == 3
    assert all("Where and when?" in p and "On May 3 in Oslo." in p for p in prompts)


def test_parse_rubric() -> None:
    assert parse_rubric(["a", "b"]) == ["a", "b"]
    for bad in ([], None, "a", ["a", ""], ["a", 3]):
        with pytest.raises(ValueError):
            parse_rubric(bad)


def test_split_rubric_item() -> None:
    assert split_rubric_item("LLM response should state: 8 weeks") == ("state", "8 weeks")
    assert split_rubric_item("LLM response should contain: code blocks") == (
        "contain",
        "code blocks",
    )
    assert split_rubric_item("Core functionality") == (None, "Core functionality")


# ---------------------------------------------------------------- Kendall tau-b


def test_kendall_tau_b_by_hand() -> None:
    assert kendall_tau_b([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # pairs: (1,2) discordant, (1,3) and (2,3) concordant
    assert kendall_tau_b([1, 2, 3], [2, 1, 3]) == pytest.approx(1 / 3)
    # one pair tied in b: 5 concordant / sqrt(6 * 5)
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 4, 4]) == pytest.approx(5 / math.sqrt(30))
    # ties in both: a = [1,1,2], b = [1,2,2]; pairs (0,1) tied a, (1,2) tied b, (0,2) concordant
    assert kendall_tau_b([1, 1, 2], [1, 2, 2]) == pytest.approx(1 / math.sqrt(2 * 2))


def test_kendall_tau_b_undefined_and_errors() -> None:
    assert math.isnan(kendall_tau_b([1], [1]))
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2], [1])


# ---------------------------------------------------------------- event ordering


def test_event_ordering_perfect_and_reversed() -> None:
    gold = ["A", "B", "C"]
    perfect = event_ordering_details(gold, gold)
    assert (perfect.tau_norm, perfect.f1, perfect.final) == (1.0, 1.0, 1.0)
    assert event_ordering_score(["C", "B", "A"], gold) == pytest.approx(0.0)


def test_event_ordering_missing_event() -> None:
    # union A,B,C; gold ranks 1,2,3; predicted A=1, C=2, B tied at 4: tau = (2 - 1) / 3
    result = event_ordering_details(["A", "C"], ["A", "B", "C"])
    assert result.tau_b == pytest.approx(1 / 3)
    assert result.tau_norm == pytest.approx(2 / 3)
    assert result.precision == 1.0
    assert result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(0.8)
    assert result.final == pytest.approx(0.8 * 2 / 3)


def test_event_ordering_missing_events_tie_at_end() -> None:
    # predicted B only: A and C tie at the end: one concordant, one discordant pair -> tau 0
    assert event_ordering_score(["B"], ["A", "B", "C"]) == pytest.approx(0.5)


def test_event_ordering_extra_event() -> None:
    # union A,B,X; gold ranks 1,2,4 (X tied after the end); predicted 1,3,2 -> tau 1/3
    result = event_ordering_details(["A", "X", "B"], ["A", "B"])
    assert result.tau_norm == pytest.approx(2 / 3)
    assert result.precision == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(0.8)


def test_event_ordering_special_cases() -> None:
    empty = event_ordering_details([], ["A", "B"])
    assert (empty.tau_b, empty.tau_norm, empty.f1, empty.final) == (None, 0.0, 0.0, 0.0)
    single = event_ordering_details(["A"], ["A"])
    assert (single.tau_b, single.tau_norm, single.final) == (None, 1.0, 1.0)
    assert event_ordering_score(["A", "A", "B"], ["A", "B"]) == 1.0
    with pytest.raises(ValueError):
        event_ordering_score(["A"], [])


def test_align_items_first_unused_match() -> None:
    gold = ["Initial setup", "Deployment", "Deployment fixes"]

    def same(gold_item: str, system_item: str) -> bool:
        return gold_item.lower() in system_item.lower()

    system = ["We did the initial setup", "deployment", "deployment again", "tests"]
    aligned = align_items(system, gold, same)
    assert aligned == ["Initial setup", "Deployment", "deployment again", "tests"]


# ---------------------------------------------------------------- real sample


def test_real_sample_abilities_and_rubrics() -> None:
    data = _probing_questions()
    assert tuple(data) == ABILITIES
    verbs: set[str] = set()

    def judge(prompt: str) -> str:
        return '{"score": 1, "reason": "fake"}'

    for ability, questions in data.items():
        assert questions
        for question in questions:
            items = parse_rubric(question["rubric"])
            outcome = grade_rubric(question["question"], items, "an answer", judge)
            assert outcome.score == 1.0
            for item in items:
                verb, text = split_rubric_item(item)
                assert text
                if verb is None:
                    assert ability in {"abstention", EVENT_ORDERING}
                else:
                    verbs.add(verb)
    assert verbs == {"state", "mention", "contain"}


def test_real_sample_event_order_shape() -> None:
    data = _probing_questions()
    for question in data[EVENT_ORDERING]:
        gold = gold_event_order(question)
        tested = [re.sub(r"^\d+(st|nd|rd|th):\s*", "", x) for x in question["ordering_tested"]]
        assert gold == tested
        assert len(gold) == question["total_mentions"]
        assert event_ordering_score(gold, gold) == 1.0
