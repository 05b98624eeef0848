"""Tests for the LoCoMo per-question rules (expected values worked out by hand)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks.locomo.metrics import (
    CATEGORY_NAMES,
    adversarial_score,
    evidence_recall,
    f1,
    multi_answer_f1,
    normalize_answer,
    parse_evidence,
    qa_score,
    tokens,
)

REPO = Path(__file__).resolve().parents[3]


def _data_dir() -> Path:
    return Path(os.environ.get("RECALLBENCH_DATA", str(REPO.parent / "shared" / "data")))


def _locomo() -> list[dict[str, Any]]:
    path = _data_dir() / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip(f"LoCoMo data not found at {path}")
    with path.open(encoding="utf-8") as fh:
        data: list[dict[str, Any]] = json.load(fh)
    return data


# ---------------------------------------------------------------- normalisation and F1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Quick, brown fox -- and the dog's bone!", "quick brown fox dogs bone"),
        ("Andrew and Anna", "andrew anna"),
        ("  A   cat\tin\nthe hat ", "cat in hat"),
        ("an apple, a pear", "apple pear"),
        ("the-end", "theend"),
        ("", ""),
        ("...", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_tokens_are_stemmed_and_accept_ints() -> None:
    assert tokens("Running dogs") == ["run", "dog"]
    assert tokens(2022) == ["2022"]


def test_f1_partial_overlap() -> None:
    # "cat sat" vs "cat sat down": 2 shared, P = 1, R = 2/3, F1 = 0.8
    assert f1("The cat sat", "a cat sat down") == pytest.approx(0.8)


def test_f1_uses_stems() -> None:
    assert f1("running dogs", "The dog runs") == pytest.approx(1.0)


def test_f1_integer_gold() -> None:
    # ["in", "2022"] vs ["2022"]: P = 1/2, R = 1, F1 = 2/3
    assert f1("In 2022.", 2022) == pytest.approx(2 / 3)


def test_f1_counts_multisets() -> None:
    # "paris paris" vs "paris": one shared token, P = 1/2, R = 1
    assert f1("paris paris", "paris") == pytest.approx(2 / 3)


def test_f1_zero_cases() -> None:
    assert f1("blue", "red") == 0.0
    assert f1("", "red") == 0.0
    assert f1("the", "the") == 0.0  # nothing left after normalisation


def test_multi_answer_f1_best_match_per_gold_part() -> None:
    # painting -> 1, pottery -> 1, camping -> 0
    assert multi_answer_f1("pottery, painting", "painting, pottery, camping") == pytest.approx(
        2 / 3
    )


def test_multi_answer_f1_single_prediction_part() -> None:
    # each gold part vs "pottery painting": P = 1/2, R = 1, F1 = 2/3; mean 2/3
    assert multi_answer_f1("pottery and painting", "painting, pottery") == pytest.approx(2 / 3)


def test_adversarial_score() -> None:
    assert adversarial_score("Not mentioned in the conversation") == 1.0
    assert adversarial_score("No information available.") == 1.0
    assert adversarial_score("I don't know") == 0.0
    assert adversarial_score("") == 0.0
    assert adversarial_score(None) == 0.0


# ---------------------------------------------------------------- dispatch


def test_qa_score_dispatch() -> None:
    assert qa_score("pottery, painting", "painting, pottery, camping", 1) == pytest.approx(2 / 3)
    assert qa_score("7 May 2023", "7 May 2023", 2) == 1.0
    assert qa_score("The cat sat", "a cat sat down", 4) == pytest.approx(0.8)
    assert qa_score("not mentioned", None, 5) == 1.0
    assert qa_score("Paris", "Paris", 5) == 0.0


def test_qa_score_category3_uses_text_before_semicolon() -> None:
    gold = "Likely yes; because she loves it"
    # "yes" -> ["ye"]; gold part "Likely yes" -> ["like", "ye"]: P = 1, R = 1/2
    assert qa_score("yes", gold, 3) == pytest.approx(2 / 3)
    assert qa_score("yes", gold, 4) < qa_score("yes", gold, 3)


@pytest.mark.parametrize("category", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("prediction", [None, ""])
def test_qa_score_empty_prediction(prediction: str | None, category: int) -> None:
    assert qa_score(prediction, "anything", category) == 0.0


def test_qa_score_errors() -> None:
    with pytest.raises(ValueError):
        qa_score("x", "x", 6)
    with pytest.raises(ValueError):
        qa_score("x", None, 2)


def test_category_names() -> None:
    assert CATEGORY_NAMES == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }


# ---------------------------------------------------------------- evidence


def test_evidence_recall() -> None:
    assert evidence_recall(["D1:1", "D2:3"], ["D1:1", "D1:2"]) == 0.5
    assert evidence_recall([], ["D1:1"]) == 0.0
    assert evidence_recall(["D1:1"], ["D1:1", "D1:1"]) == 1.0
    assert evidence_recall(["D1:1"], []) is None


def test_parse_evidence_clean() -> None:
    assert parse_evidence(["D1:3", "D2:10"]) == (["D1:3", "D2:10"], [])


def test_parse_evidence_empty_list() -> None:
    assert parse_evidence([]) == ([], ["empty evidence list"])


def test_parse_evidence_not_a_list() -> None:
    assert parse_evidence("D1:3") == ([], ["evidence is not a list"])


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D:11:26"], ["D11:26"]),
        (["D1:18", "D", "D1:20"], ["D1:18", "D1:20"]),
    ],
)
def test_parse_evidence_malformed(raw: list[str], ids: list[str]) -> None:
    parsed, defects = parse_evidence(raw)
    assert parsed == ids
    assert len(defects) == 1
    assert defects[0].startswith("malformed entry")


def test_parse_evidence_names_unusable_tokens() -> None:
    _, defects = parse_evidence(["D1:18", "D"])
    assert "unusable tokens ['D']" in defects[0]


def test_parse_evidence_zero_padding() -> None:
    parsed, defects = parse_evidence(["D30:05", "D03:1"])
    assert parsed == ["D30:5", "D3:1"]
    assert [d.split(" id")[0] for d in defects] == ["zero-padded", "zero-padded"]


def test_parse_evidence_duplicates_and_non_strings() -> None:
    parsed, defects = parse_evidence(["D1:3", "D1:3", 7])
    assert parsed == ["D1:3"]
    assert defects[0].startswith("duplicate id")
    assert defects[1].startswith("malformed entry 7")


# ---------------------------------------------------------------- real data


def test_real_evidence_defects_match_source_notes() -> None:
    data = _locomo()
    kinds: Counter[str] = Counter()
    questions = 0
    for conversation in data:
        for qa in conversation["qa"]:
            questions += 1
            ids, defects = parse_evidence(qa.get("evidence"))
            for defect in defects:
                if defect.startswith("empty evidence list"):
                    kinds["empty"] += 1
                elif defect.startswith("malformed entry"):
                    kinds["malformed"] += 1
                elif defect.startswith("zero-padded"):
                    kinds["zero-padded"] += 1
                elif defect.startswith("duplicate id"):
                    kinds["duplicate"] += 1
                else:
                    kinds["other"] += 1
            assert all(i.startswith("D") and ":" in i for i in ids)
    assert questions == 1986
    # SOURCE.md counts 4 empty lists and 6 malformed strings; the file also holds one zero-padded
    # id (D30:05, conv-50) and one list naming the same turn twice (D4:5, conv-50).
    assert kinds == Counter({"empty": 4, "malformed": 6, "zero-padded": 1, "duplicate": 1})


def test_real_answers_score_one_against_themselves() -> None:
    data = _locomo()
    categories: Counter[int] = Counter()
    int_answers = 0
    for conversation in data:
        for qa in conversation["qa"]:
            category = qa["category"]
            categories[category] += 1
            if category == 5:
                continue
            gold = qa["answer"]
            int_answers += isinstance(gold, int)
            if category == 3:
                first = str(gold).split(";")[0]
                assert qa_score(first, gold, 3) == pytest.approx(1.0)
            else:
                assert qa_score(str(gold), gold, category) == pytest.approx(1.0)
    assert categories == Counter({1: 282, 2: 321, 3: 96, 4: 841, 5: 446})
    assert int_answers == 6
