"""Retrieval metrics against an independent implementation (ir_measures / pytrec_eval) and by hand.

The oracle gets every ranking as strictly decreasing scores, because trec_eval otherwise breaks
ties by document id and would reorder the ranking the system returned.
"""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
from ir_measures import RR, R, Success, nDCG

from recallbench.score.retrieval import (
    ALL_RETURNED,
    METRICS,
    metric_key,
    null_metrics,
    retrieval_metrics,
    zero_metrics,
)

KS = (1, 3, 5, 10)
N_DOCS = 30
N_CASES = 200
ORACLE = {
    "evidence_hit": Success,
    "evidence_recall": R,
    "mrr": RR,
    "ndcg": nDCG,
}


def _random_cases(seed: int = 20250106) -> list[tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    docs = [f"t{i:02d}" for i in range(N_DOCS)]
    cases = []
    for _ in range(N_CASES):
        evidence = rng.sample(docs, rng.randint(1, 5))
        ranking = rng.sample(docs, rng.randint(0, 20))
        if rng.random() < 0.3 and ranking:
            # make hits likely near the top in some cases, not only by chance
            for e in evidence[: rng.randint(1, len(evidence))]:
                if e not in ranking:
                    ranking.insert(rng.randint(0, len(ranking)), e)
            ranking = ranking[:20]
        cases.append((evidence, ranking))
    return cases


def _oracle(cases: list[tuple[list[str], list[str]]]) -> dict[tuple[str, str, int], float]:
    """Per-query figures from trec_eval (through ir_measures' pytrec_eval provider)."""
    qrels = []
    for i, (evidence, _) in enumerate(cases):
        qrels.extend(ir_measures.Qrel(f"q{i}", doc, 1) for doc in evidence)

    def run_cut(depth: int) -> list[ir_measures.ScoredDoc]:
        run = []
        for i, (_, ranking) in enumerate(cases):
            top = ranking[:depth]
            # strictly decreasing scores: rank 1 gets the highest
            run.extend(
                ir_measures.ScoredDoc(f"q{i}", doc, float(len(top) - pos))
                for pos, doc in enumerate(top)
            )
        return run

    out: dict[tuple[str, str, int], float] = {}
    full = run_cut(max(len(r) for _, r in cases))
    cut_measures = {m @ k: (name, k) for name, m in ORACLE.items() if m is not RR for k in KS}
    for metric in ir_measures.pytrec_eval.iter_calc(list(cut_measures), qrels, full):
        name, k = cut_measures[metric.measure]
        out[(metric.query_id, name, k)] = metric.value
    # trec_eval's recip_rank has no cutoff (the provider silently ignores RR@k and maps every
    # RR@k to the same key), so RR@k is plain RR over the run cut at depth k.
    for k in KS:
        for metric in ir_measures.pytrec_eval.iter_calc([RR], qrels, run_cut(k)):
            out[(metric.query_id, "mrr", k)] = metric.value
    return out


def test_metrics_equal_trec_eval_on_random_rankings() -> None:
    cases = _random_cases()
    oracle = _oracle(cases)
    # the oracle answered for every query with a non-empty ranking, for every measure and k
    answered = {(q, name, k) for q, name, k in oracle}
    asked = {(f"q{i}", n, k) for i, (_, r) in enumerate(cases) if r for n in ORACLE for k in KS}
    assert asked <= answered
    n_empty = sum(1 for _, r in cases if not r)
    n_hits = 0
    for i, (evidence, ranking) in enumerate(cases):
        qid = f"q{i}"
        got = retrieval_metrics([(doc,) for doc in ranking], evidence, KS)
        for k in KS:
            expected = {
                name: oracle.get((qid, name, k), 0.0)  # an empty ranking may drop the query
                for name in ORACLE
            }
            for name, value in expected.items():
                assert got[metric_key(name, k)] == pytest.approx(value, abs=1e-9), (
                    f"case {i}: {name}@{k} evidence={evidence} ranking={ranking}"
                )
            assert got[metric_key("all_evidence", k)] == (
                1.0 if expected["evidence_recall"] == pytest.approx(1.0) else 0.0
            ), f"case {i}: all_evidence@{k}"
            n_hits += got[metric_key("evidence_hit", k)] > 0
        # recall over everything returned, whatever k
        assert got[ALL_RETURNED] == pytest.approx(len(set(ranking) & set(evidence)) / len(evidence))
    # the random cases exercise both hits and misses, and empty rankings
    assert n_empty > 0
    assert 0 < n_hits < len(cases) * len(KS)


def test_every_metric_and_k_is_reported() -> None:
    got = retrieval_metrics([("a",)], ["a"], (1, 5))
    assert set(got) == {metric_key(m, k) for m in METRICS for k in (1, 5)} | {ALL_RETURNED}
    assert set(zero_metrics((1, 5))) == set(got)
    assert all(v == 0.0 for v in zero_metrics((1, 5)).values())
    assert all(v is None for v in null_metrics((1, 5)).values())


def test_empty_evidence_is_rejected() -> None:
    with pytest.raises(ValueError):
        retrieval_metrics([("a",)], [], (1,))


def test_empty_ranking_is_all_zero() -> None:
    got = retrieval_metrics([], ["a", "b"], KS)
    assert got == zero_metrics(KS)


def test_chunk_covering_two_evidence_turns() -> None:
    # one memory (a user/assistant pair) covers both evidence turns at rank 2
    ranked = [("x1", "x2"), ("a", "b"), ("c",)]
    got = retrieval_metrics(ranked, ["a", "b"], (1, 2, 3))
    assert got["evidence_hit@1"] == 0.0
    assert got["evidence_hit@2"] == 1.0
    assert got["evidence_recall@1"] == 0.0
    assert got["evidence_recall@2"] == 1.0
    assert got["all_evidence@2"] == 1.0
    assert got["mrr@1"] == 0.0
    assert got["mrr@2"] == 0.5
    # gain 2 at rank 2; ideal is two single-turn hits at ranks 1 and 2
    ideal = 1.0 + 1.0 / math.log2(3)
    assert got["ndcg@2"] == pytest.approx((2 / math.log2(3)) / ideal)
    assert got["ndcg@3"] == pytest.approx((2 / math.log2(3)) / ideal)


def test_ndcg_is_capped_at_one() -> None:
    # a chunk at rank 1 covering both evidence turns beats the single-turn ideal: capped
    got = retrieval_metrics([("a", "b")], ["a", "b"], (1, 2, 5))
    for k in (1, 2, 5):
        assert got[metric_key("ndcg", k)] == 1.0
        assert got[metric_key("evidence_recall", k)] == 1.0
        assert got[metric_key("all_evidence", k)] == 1.0
        assert got[metric_key("mrr", k)] == 1.0


def test_partial_chunk_coverage() -> None:
    ranked = [("a", "z"), ("y",), ("b", "c")]
    got = retrieval_metrics(ranked, ["a", "b", "c"], (1, 3))
    assert got["evidence_recall@1"] == pytest.approx(1 / 3)
    assert got["all_evidence@1"] == 0.0
    assert got["evidence_recall@3"] == 1.0
    assert got["all_evidence@3"] == 1.0
    assert got["mrr@3"] == 1.0
    dcg = 1.0 + 2.0 / math.log2(4)
    ideal = 1.0 + 1.0 / math.log2(3) + 1.0 / math.log2(4)
    assert got["ndcg@3"] == pytest.approx(dcg / ideal)


def test_duplicate_memories_count_once() -> None:
    # the same evidence turn returned twice: covered once, no second gain
    ranked = [("a",), ("a",), ("b",)]
    got = retrieval_metrics(ranked, ["a", "b"], (2, 3))
    assert got["evidence_recall@2"] == 0.5
    assert got["all_evidence@2"] == 0.0
    assert got["evidence_recall@3"] == 1.0
    ideal2 = 1.0 + 1.0 / math.log2(3)
    assert got["ndcg@2"] == pytest.approx(1.0 / ideal2)
    assert got["ndcg@3"] == pytest.approx((1.0 + 1.0 / math.log2(4)) / ideal2)
    assert got["mrr@3"] == 1.0


def test_duplicate_turn_ids_in_evidence_and_in_a_memory() -> None:
    # evidence listed twice is one evidence turn; a memory naming a turn twice covers it once
    got = retrieval_metrics([("a", "a")], ["a", "a"], (1,))
    assert got["evidence_recall@1"] == 1.0
    assert got["ndcg@1"] == 1.0
    assert got["all_evidence@1"] == 1.0


def test_k_larger_than_ranking() -> None:
    got = retrieval_metrics([("x",), ("a",)], ["a"], (1, 10))
    assert got["evidence_hit@1"] == 0.0
    assert got["evidence_hit@10"] == 1.0
    assert got["mrr@10"] == 0.5
    assert got["ndcg@10"] == pytest.approx(1.0 / math.log2(3))


def test_memory_beyond_k_does_not_count() -> None:
    ranked = [("x",)] * 5 + [("a",)]
    got = retrieval_metrics(ranked, ["a"], (5, 6))
    assert got["evidence_hit@5"] == 0.0
    assert got["mrr@5"] == 0.0
    assert got["ndcg@5"] == 0.0
    assert got["mrr@6"] == pytest.approx(1 / 6)


def test_recall_over_all_returned_ignores_k() -> None:
    ranked = [("x",)] * 11 + [("a", "b")]
    got = retrieval_metrics(ranked, ["a", "b", "c", "d"], (1, 5))
    assert got["evidence_recall@5"] == 0.0
    assert got[ALL_RETURNED] == 0.5
    assert retrieval_metrics([], ["a"], (1,))[ALL_RETURNED] == 0.0
