"""LongMemEval (Wu et al., ICLR 2025): 500 questions, each over its own haystack of sessions.

``load``: the published JSON files; ``metrics``: LongMemEval's turn and session retrieval
metrics and its judge prompts and label parsing (pure functions); ``rules``: those metrics on
observations; ``report``: tables by question type; ``prompts/``: the judge prompts.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.longmemeval.load import SPEC
from recallbench.benchmarks.longmemeval.metrics import DEFAULT_KS
from recallbench.benchmarks.longmemeval.report import LongMemEvalReport
from recallbench.benchmarks.longmemeval.rules import (
    GRANULARITIES,
    LABEL,
    MEASURES,
    RANKING_EXHAUSTED,
    LongMemEvalRules,
)
from recallbench.score.metrics import MetricInfo, MetricKey

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=LongMemEvalRules(),
    report=LongMemEvalReport(),
    default_k=DEFAULT_KS,
    headline=(MetricKey(LABEL), MetricKey("session:recall_any", 5)),
    metrics=(
        MetricInfo(LABEL, True, "share", "the LLM judge's yes/no verdict on the answer"),
        *(
            MetricInfo(f"{g}:{m}", True, "score", f"LongMemEval {g}-level {m}, cut at k")
            for g in GRANULARITIES
            for m in MEASURES
        ),
        MetricInfo(
            RANKING_EXHAUSTED,
            None,
            "share",
            "the session cut at k grew past the system's ranking with corpus turns unranked "
            "(the official value assumes a full-corpus ranking)",
        ),
    ),
)
