"""Tests for the LongMemEval per-question rules (expected values worked out by hand)."""

from __future__ import annotations

import json
import math
import string

import pytest

from recallbench.benchmarks.longmemeval.metrics import (
    DEFAULT_KS,
    JUDGE_PROMPTS_FILE,
    QUESTION_TYPES,
    SessionCutoff,
    build_judge_prompt,
    dcg,
    flatten_ranking,
    is_abstention,
    judge_prompts,
    ndcg_at_k,
    parse_judge_label,
    pseudo_session_id,
    qa_summary,
    session_evaluation,
    session_labels,
    session_metrics,
    session_ranking,
    strip_turn_suffix,
    turn_metrics,
)

# A small haystack. s1 and s4 are answer sessions; even-numbered turns are assistant turns.
# s1: s1_1 user (has_answer), s1_2 asst, s1_3 user, s1_4 asst, s1_5 user (has_answer)
# s2: s2_1 user, s2_2 asst, s2_3 user
# s3: s3_1 user, s3_2 asst, s3_3 user
# s4: s4_1 user (has_answer), s4_2 asst, s4_3 user
USER_TURNS = frozenset({"s1_1", "s1_3", "s1_5", "s2_1", "s2_3", "s3_1", "s3_3", "s4_1", "s4_3"})
HAS_ANSWER = frozenset({"s1_1", "s1_5", "s4_1"})
GOLD_S1 = frozenset({"s1_1", "s1_5"})
LOG2_3 = math.log2(3)
LOG2_6 = math.log2(6)


# ---------------------------------------------------------------- helpers


def test_default_ks() -> None:
    assert DEFAULT_KS == (1, 3, 5, 10, 30, 50)


def test_dcg_rank_two_is_not_discounted() -> None:
    # rank 1 in full, rank i >= 2 divided by log2(i): log2(2) = 1 leaves rank 2 undiscounted
    assert dcg([1, 1, 1]) == pytest.approx(2 + 1 / LOG2_3)
    assert dcg([0, 1]) == pytest.approx(1.0)
    assert dcg([]) == 0.0


def test_ndcg_at_k() -> None:
    assert ndcg_at_k([0, 1], n_relevant=1, k=2) == pytest.approx(1.0)
    assert ndcg_at_k([0, 0, 1], n_relevant=1, k=3) == pytest.approx(1 / LOG2_3)
    # ideal list truncated at k: two relevant items but k = 1
    assert ndcg_at_k([1, 1], n_relevant=2, k=1) == pytest.approx(1.0)
    assert ndcg_at_k([1], n_relevant=0, k=5) == 0.0


def test_is_abstention() -> None:
    assert is_abstention("gpt4_2655b836_abs")
    assert not is_abstention("gpt4_2655b836")
    assert not is_abstention("abs_2655b836")
    assert not is_abstention("x_abs_2")


def test_question_types() -> None:
    assert set(QUESTION_TYPES) == {
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
    }


def test_strip_turn_suffix() -> None:
    assert strip_turn_suffix("answer_4be1b6b4_2_7") == "answer_4be1b6b4_2"
    with pytest.raises(ValueError):
        strip_turn_suffix("nounderscore")


# ---------------------------------------------------------------- turn granularity


def test_flatten_ranking_drops_duplicates_and_non_user_turns() -> None:
    ranked = [["s1_2", "s1_1"], ["s1_1", "s2_1"], ["s2_2"], ["s1_3"]]
    assert flatten_ranking(ranked, USER_TURNS) == ["s1_1", "s2_1", "s1_3"]


def test_turn_metrics_memory_covering_two_turns() -> None:
    # flattened: s2_1, s1_1, s1_5, s3_1 (the second memory covers both gold turns)
    ranked = [["s2_1"], ["s1_1", "s1_5"], ["s3_1"]]
    m = turn_metrics(ranked, GOLD_S1, USER_TURNS, ks=(1, 3, 5))
    assert m["turn:recall_any@1"] == 0.0
    assert m["turn:recall_all@1"] == 0.0
    assert m["turn:ndcg_any@1"] == 0.0
    assert m["turn:recall_any@3"] == 1.0
    assert m["turn:recall_all@3"] == 1.0
    # DCG = 0 + 1/log2(2) + 1/log2(3); ideal = 1 + 1/log2(2) = 2
    assert m["turn:ndcg_any@3"] == pytest.approx((1 + 1 / LOG2_3) / 2)
    assert m["turn:ndcg_any@5"] == pytest.approx((1 + 1 / LOG2_3) / 2)
    assert set(m) == {
        f"turn:{name}@{k}" for name in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5)
    }


def test_turn_metrics_partial_hit_and_assistant_turns() -> None:
    # flattened: s1_1, s2_1, s1_3 (s1_2 is an assistant turn, the second s1_1 a duplicate)
    ranked = [["s1_2", "s1_1"], ["s1_1", "s2_1"], ["s1_3"]]
    m = turn_metrics(ranked, GOLD_S1, USER_TURNS, ks=(1, 3))
    assert m["turn:recall_any@1"] == 1.0
    assert m["turn:recall_all@1"] == 0.0
    assert m["turn:ndcg_any@1"] == pytest.approx(1.0)  # ideal@1 = 1
    assert m["turn:recall_all@3"] == 0.0
    assert m["turn:ndcg_any@3"] == pytest.approx(0.5)  # DCG 1, ideal 2


def test_turn_metrics_gold_outside_user_turns_is_ignored() -> None:
    m = turn_metrics([["s1_1"]], {"s1_1", "s1_2"}, USER_TURNS, ks=(1,))
    assert m["turn:recall_all@1"] == 1.0
    assert m["turn:ndcg_any@1"] == pytest.approx(1.0)


@pytest.mark.parametrize("ranked", [[], [[]], [["s1_2", "s2_2"]]])
def test_turn_metrics_empty_prediction_is_all_zero(ranked: list[list[str]]) -> None:
    m = turn_metrics(ranked, GOLD_S1, USER_TURNS)
    assert len(m) == 3 * len(DEFAULT_KS)
    assert all(value == 0.0 for value in m.values())


def test_turn_metrics_without_gold_follows_official_arithmetic() -> None:
    m = turn_metrics([["s1_1"]], set(), USER_TURNS, ks=(5,))
    assert m == {"turn:recall_any@5": 0.0, "turn:recall_all@5": 1.0, "turn:ndcg_any@5": 0.0}


def test_bad_cutoffs() -> None:
    with pytest.raises(ValueError):
        turn_metrics([], GOLD_S1, USER_TURNS, ks=(0,))
    with pytest.raises(ValueError):
        turn_metrics([], GOLD_S1, USER_TURNS, ks=())


# ---------------------------------------------------------------- session granularity

SESSION_RANKED = [["s1_3"], ["s2_1"], ["s2_3"], ["s1_1"], ["s3_1"], ["s4_1"]]


def test_session_ranking_pseudo_sessions() -> None:
    ranking = session_ranking(
        SESSION_RANKED, strip_turn_suffix, {"s1", "s4"}, HAS_ANSWER, USER_TURNS
    )
    # s1_3 is an unmarked user turn of answer session s1; s2_3 repeats s2
    assert ranking == [pseudo_session_id("s1"), "s2", "s1", "s3", "s4"]
    assert pseudo_session_id("s1") == "noans_s1"


def test_session_metrics_k_grows_over_distinct_sessions() -> None:
    m = session_metrics(
        SESSION_RANKED, strip_turn_suffix, {"s1", "s4"}, HAS_ANSWER, USER_TURNS, ks=(1, 2, 3, 5, 10)
    )
    # k=1: [noans_s1]; k=2: [noans_s1, s2] -- the pseudo-session never counts as gold
    for k in (1, 2):
        assert m[f"session:recall_any@{k}"] == 0.0
        assert m[f"session:ndcg_any@{k}"] == 0.0
    # k=3 covers four turns (s1_3, s2_1, s2_3, s1_1): sessions [noans_s1, s2, s1]
    assert m["session:recall_any@3"] == 1.0
    assert m["session:recall_all@3"] == 0.0
    # nDCG is scored per ranked turn over those four turns, as the official function does:
    # relevances 0, 0, 0, 1 (s1_1 is a gold turn), DCG = 1/log2(4) = 0.5. The ideal list holds
    # every gold turn of the corpus (s1_1, s1_5, s4_1: three) cut at the grown k of four:
    # 1 + 1 + 1/log2(3). nDCG = 0.5 / (2 + 1/log2(3)) = 0.19005
    assert m["session:ndcg_any@3"] == pytest.approx(0.5 / (2 + 1 / LOG2_3))
    # k=5 covers six turns: [noans_s1, s2, s2, s1, s3, s4], relevances 0, 0, 0, 1, 0, 1:
    # DCG = 1/log2(4) + 1/log2(6) = 0.5 + 0.38685; same ideal (three gold turns) -> 0.33709
    assert m["session:recall_all@5"] == 1.0
    assert m["session:ndcg_any@5"] == pytest.approx((0.5 + 1 / LOG2_6) / (2 + 1 / LOG2_3))
    # the ranking holds only five sessions: k=10 equals k=5
    assert m["session:ndcg_any@10"] == m["session:ndcg_any@5"]


def test_session_ndcg_two_gold_turns_in_one_session() -> None:
    """The worked case: one answer session holding two gold turns, both ranked."""
    # Answer session s1 only; its gold turns are s1_1 and s1_5 (s4_1 is marked but s4 is not an
    # answer session, so it is not gold). Corpus: the nine user turns; two gold turns.
    # Ranked user turns: s1_1, s2_1, s1_5, s3_1, s4_1 -> sessions s1, s2, s1, s3, s4.
    ranked = [["s1_1"], ["s2_1"], ["s1_5"], ["s3_1"], ["s4_1"]]
    m = session_metrics(ranked, strip_turn_suffix, {"s1"}, HAS_ANSWER, USER_TURNS, ks=(1, 2, 3))
    # k=1: one turn (s1): relevances [1]; ideal = two gold turns cut at 1 -> [1]; nDCG = 1
    assert m["session:ndcg_any@1"] == pytest.approx(1.0)
    # k=2: two turns cover s1, s2: relevances [1, 0], DCG 1; ideal [1, 1] = 1 + 1/log2(2) = 2
    assert m["session:ndcg_any@2"] == pytest.approx(0.5)
    # k=3: three turns cover only s1, s2; the fourth (s3_1) brings the third session, so the
    # official effective_k is 4. Relevances per ranked turn: [1, 0, 1, 0] (s1_5 counts again):
    # DCG = 1 + 0 + 1/log2(3) + 0 = 1.63093. Ideal: both gold turns first, cut at 4 -> [1, 1]:
    # 1 + 1/log2(2) = 2. nDCG = 1.63093 / 2 = 0.81546.
    # (A de-duplicated session list [s1, s2, s3] against one gold session would give 1.0.)
    assert m["session:ndcg_any@3"] == pytest.approx((1 + 1 / LOG2_3) / 2)
    assert m["session:ndcg_any@3"] == pytest.approx(0.8154648767857288)
    assert m["session:recall_any@3"] == m["session:recall_all@3"] == 1.0


def test_session_ndcg_counts_each_gold_turn_of_a_session() -> None:
    # Answer sessions s1 and s4; gold turns s1_1, s1_5, s4_1 (three). Ranked user turns:
    # s2_1, s1_5, s1_1, s4_1 -> sessions s2, s1, s1, s4. k=3: the third distinct session (s4)
    # comes at turn 4, so effective_k = 4. Relevances [0, 1, 1, 1]:
    # DCG = 0 + 1/log2(2) + 1/log2(3) + 1/log2(4) = 1 + 0.63093 + 0.5 = 2.13093.
    # Ideal: three gold turns, cut at 4: 1 + 1 + 1/log2(3) = 2.63093. nDCG = 0.80996.
    ranked = [["s2_1", "s1_5"], ["s1_1"], ["s4_1"]]
    m = session_metrics(ranked, strip_turn_suffix, {"s1", "s4"}, HAS_ANSWER, USER_TURNS, ks=(3,))
    assert m["session:ndcg_any@3"] == pytest.approx((1.5 + 1 / LOG2_3) / (2 + 1 / LOG2_3))
    assert m["session:recall_all@3"] == 1.0


def test_session_ndcg_is_turn_ndcg_at_the_grown_cutoff() -> None:
    # A ranked turn is relevant exactly when it is a gold turn (an unmarked turn of an answer
    # session maps to its never-gold pseudo-session), so the session nDCG at k is the turn nDCG
    # at effective_k.
    ranked = [["s1_3"], ["s2_1"], ["s2_3"], ["s1_1"], ["s3_1"], ["s4_1"], ["s1_5"]]
    answer = {"s1", "s4"}
    metrics, cutoffs = session_evaluation(
        ranked, strip_turn_suffix, answer, HAS_ANSWER, USER_TURNS, ks=(1, 2, 3, 4, 5)
    )
    for k, cut in cutoffs.items():
        turn = turn_metrics(ranked, HAS_ANSWER, USER_TURNS, ks=(cut.effective_k,))
        assert metrics[f"session:ndcg_any@{k}"] == turn[f"turn:ndcg_any@{cut.effective_k}"]
    assert [cutoffs[k].effective_k for k in (1, 2, 3, 4, 5)] == [1, 2, 4, 5, 6]


def test_session_cutoffs_and_exhausted_rankings() -> None:
    # Ranked user turns: s1_1, s1_5, s2_1 -> sessions s1, s1, s2 (two distinct, three turns).
    ranked = [["s1_1", "s1_5"], ["s2_1"]]
    _, cutoffs = session_evaluation(
        ranked, strip_turn_suffix, {"s1"}, HAS_ANSWER, USER_TURNS, ks=(1, 2, 3, 10)
    )
    assert cutoffs[1] == SessionCutoff(
        k=1, effective_k=1, ranked_turns=3, ranked_sessions=2, corpus_turns=9
    )
    assert not cutoffs[1].exhausted
    # k=2: the second session comes at the third turn
    assert cutoffs[2].effective_k == 3 and not cutoffs[2].exhausted
    # k=3: the ranking never covers three sessions; the official loop grows k one past the
    # corpus (9 user turns): effective_k = 10, past the three ranked turns, with six corpus
    # turns unranked -> exhausted
    assert cutoffs[3].effective_k == 10 and cutoffs[3].exhausted
    # k=10 > corpus size: the official loop does not run, effective_k stays 10
    assert cutoffs[10].effective_k == 10 and cutoffs[10].exhausted


def test_a_ranking_of_the_whole_corpus_is_never_exhausted() -> None:
    ranked = [[t] for t in sorted(USER_TURNS)]
    _, cutoffs = session_evaluation(
        ranked, strip_turn_suffix, {"s1", "s4"}, HAS_ANSWER, USER_TURNS, ks=(5, 6, 7, 50)
    )
    # sessions s1, noans_s1, s1, s2, s2, s3, s3, s4, noans_s4: six distinct, first seen at
    # turns 1, 2, 4, 6, 8, 9
    assert cutoffs[5].effective_k == 8 and not cutoffs[5].exhausted
    assert cutoffs[6].effective_k == 9 and not cutoffs[6].exhausted
    # fewer than k sessions: effective_k runs one past the corpus (10), or stays at k > corpus
    assert cutoffs[7].effective_k == 10 and not cutoffs[7].exhausted
    assert cutoffs[50].effective_k == 50 and not cutoffs[50].exhausted


def test_empty_ranking_is_exhausted() -> None:
    metrics, cutoffs = session_evaluation(
        [], strip_turn_suffix, {"s1"}, HAS_ANSWER, USER_TURNS, ks=(1,)
    )
    assert metrics["session:ndcg_any@1"] == 0.0
    assert cutoffs[1].effective_k == 10 and cutoffs[1].exhausted


def test_gold_sessions_are_the_sessions_of_gold_turns() -> None:
    # s2 is listed as an answer session but none of its user turns is marked has_answer: as in
    # the official code (whose gold sessions come from the gold turns), it is not gold, so
    # recall_all needs s1 only; s2's turns map to its pseudo-session.
    ranked = [["s2_1"], ["s1_1"]]
    m = session_metrics(ranked, strip_turn_suffix, {"s1", "s2"}, HAS_ANSWER, USER_TURNS, ks=(2,))
    assert m["session:recall_all@2"] == 1.0
    # relevances [0, 1]: DCG 1; ideal: two gold turns (s1_1, s1_5) -> 2
    assert m["session:ndcg_any@2"] == pytest.approx(0.5)


def test_session_labels_keep_every_ranked_turn() -> None:
    labels = session_labels(SESSION_RANKED, strip_turn_suffix, {"s1", "s4"}, HAS_ANSWER, USER_TURNS)
    assert labels == ["noans_s1", "s2", "s2", "s1", "s3", "s4"]


def test_session_metrics_mapping_equals_function() -> None:
    mapping = {t: strip_turn_suffix(t) for t in USER_TURNS}
    args = ({"s1", "s4"}, HAS_ANSWER, USER_TURNS)
    assert session_metrics(SESSION_RANKED, mapping, *args) == session_metrics(
        SESSION_RANKED, strip_turn_suffix, *args
    )


def test_session_metrics_empty_prediction() -> None:
    m = session_metrics([], strip_turn_suffix, {"s1"}, HAS_ANSWER, USER_TURNS)
    assert all(value == 0.0 for value in m.values())
    assert set(m) == {
        f"session:{name}@{k}"
        for name in ("recall_any", "recall_all", "ndcg_any")
        for k in DEFAULT_KS
    }


def test_session_metrics_memory_with_two_sessions() -> None:
    # one memory spanning a marked turn of s4 and a turn of s2: s4 ranks first, s2 second
    m = session_metrics(
        [["s4_1", "s2_1"]], strip_turn_suffix, {"s4"}, HAS_ANSWER, USER_TURNS, ks=(1,)
    )
    assert m["session:recall_all@1"] == 1.0
    assert m["session:ndcg_any@1"] == pytest.approx(1.0)


# ---------------------------------------------------------------- judge prompts


def test_prompt_file_shape() -> None:
    with JUDGE_PROMPTS_FILE.open(encoding="utf-8") as fh:
        raw = json.load(fh)
    assert raw["version"] == "1"
    assert set(raw["prompts"]) == set(QUESTION_TYPES) | {"abstention"}
    version, prompts = judge_prompts()
    assert version == "1"
    for template in prompts.values():
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        assert fields == {"question", "answer", "response"}


@pytest.mark.parametrize("question_type", QUESTION_TYPES)
def test_build_judge_prompt_fills_placeholders(question_type: str) -> None:
    prompt = build_judge_prompt(question_type, "Q{x}?", "A {0}", "R }{", is_abstention=False)
    assert "Q{x}?" in prompt and "A {0}" in prompt and "R }{" in prompt
    assert "{question}" not in prompt
    assert "yes or no" in prompt


def test_type_specific_rules() -> None:
    def build(question_type: str) -> str:
        return build_judge_prompt(question_type, "q", "a", "r", is_abstention=False)

    assert "differ from the reference by exactly one" in build("temporal-reasoning")
    assert "differ from the reference" not in build("multi-session")
    assert "superseded" in build("knowledge-update")
    assert "preferences" in build("single-session-preference")


def test_abstention_template_overrides_type() -> None:
    prompt = build_judge_prompt("multi-session", "q", "never said", "r", is_abstention=True)
    assert "cannot be answered" in prompt and "never said" in prompt


def test_build_judge_prompt_unknown_type() -> None:
    with pytest.raises(ValueError):
        build_judge_prompt("abstention", "q", "a", "r", is_abstention=True)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("yes", True),
        ("No.", False),
        ("**Yes**", True),
        ("YES, the response matches.", True),
        ("no, yes", False),
        ("Yesterday", None),
        ("I cannot tell", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_judge_label(text: str | None, label: bool | None) -> None:
    assert parse_judge_label(text) is label


# ---------------------------------------------------------------- aggregation


def test_qa_summary() -> None:
    summary = qa_summary(
        [
            ("single-session-user", False, True),
            ("single-session-user", False, False),
            ("multi-session", False, True),
            ("multi-session", True, True),
            ("knowledge-update", True, False),
        ]
    )
    per_type = summary["per_type"]
    assert per_type["single-session-user"] == {"accuracy": 0.5, "count": 2}
    assert per_type["multi-session"] == {"accuracy": 1.0, "count": 2}
    assert per_type["knowledge-update"] == {"accuracy": 0.0, "count": 1}
    assert per_type["temporal-reasoning"] == {"accuracy": None, "count": 0}
    assert summary["task_averaged"] == {"accuracy": pytest.approx(0.5), "count": 5, "types": 3}
    assert summary["overall"] == {"accuracy": pytest.approx(0.6), "count": 5}
    assert summary["abstention"] == {"accuracy": 0.5, "count": 2}


def test_qa_summary_empty_and_unknown() -> None:
    summary = qa_summary([])
    assert summary["overall"] == {"accuracy": None, "count": 0}
    assert summary["task_averaged"]["accuracy"] is None
    with pytest.raises(ValueError):
        qa_summary([("open-domain", False, True)])
