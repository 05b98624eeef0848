"""Retrieval metrics computed from gold evidence turn ids and the memories a system returned.

Never from a system's own scores. k counts returned memories (whatever the ingest unit); a memory
covers the evidence turns among its source turns. With E the evidence turns of a question and
C_k the evidence turns covered by the top k memories:

- ``evidence_hit@k``: 1 if C_k is non-empty.
- ``evidence_recall@k``: |C_k| / |E|.
- ``all_evidence@k``: 1 if C_k = E.
- ``mrr@k``: 1 / rank of the first memory covering any evidence turn (0 if none in the top k).
- ``ndcg@k``: gain at rank i = number of evidence turns first covered at rank i, discounted by
  log2(i + 1); normalised by the ideal DCG of min(|E|, k) single-turn hits; capped at 1 (a
  chunk covering several evidence turns at once cannot beat the ideal). With one turn per memory
  this is standard binary nDCG.
- ``evidence_recall_all_returned``: |C| / |E| over every memory returned, whatever k: what a
  reader handed everything would see (the figure that matters for ``naive``, which ignores k).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

METRICS: tuple[str, ...] = ("evidence_hit", "evidence_recall", "all_evidence", "mrr", "ndcg")
ALL_RETURNED = "evidence_recall_all_returned"


def metric_key(metric: str, k: int) -> str:
    return f"{metric}@{k}"


def retrieval_metrics(
    ranked: Sequence[Sequence[str]], evidence: Sequence[str], ks: Sequence[int]
) -> dict[str, float]:
    """Every retrieval metric at every k, for one question with non-empty evidence."""
    gold = set(evidence)
    if not gold:
        raise ValueError("retrieval metrics need at least one evidence turn")
    n_gold = len(gold)
    covered: set[str] = set()
    first_hit: int | None = None
    dcg_at: list[float] = []
    covered_at: list[int] = []
    dcg = 0.0
    for rank, turns in enumerate(ranked[: max(ks)], start=1):
        new = (gold & set(turns)) - covered
        if gold & set(turns) and first_hit is None:
            first_hit = rank
        if new:
            covered |= new
            dcg += len(new) / math.log2(rank + 1)
        dcg_at.append(dcg)
        covered_at.append(len(covered))
    out: dict[str, float] = {}
    for k in ks:
        n = min(k, len(ranked))
        c = covered_at[n - 1] if n else 0
        d = dcg_at[n - 1] if n else 0.0
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(n_gold, k) + 1))
        out[metric_key("evidence_hit", k)] = 1.0 if c else 0.0
        out[metric_key("evidence_recall", k)] = c / n_gold
        out[metric_key("all_evidence", k)] = 1.0 if c == n_gold else 0.0
        out[metric_key("mrr", k)] = 1.0 / first_hit if first_hit and first_hit <= k else 0.0
        out[metric_key("ndcg", k)] = min(1.0, d / ideal)
    everything = set().union(*ranked) if ranked else set()
    out[ALL_RETURNED] = len(gold & everything) / n_gold
    return out


def zero_metrics(ks: Sequence[int]) -> dict[str, float]:
    return {metric_key(m, k): 0.0 for m in METRICS for k in ks} | {ALL_RETURNED: 0.0}


def null_metrics(ks: Sequence[int]) -> dict[str, None]:
    return {metric_key(m, k): None for m in METRICS for k in ks} | {ALL_RETURNED: None}
