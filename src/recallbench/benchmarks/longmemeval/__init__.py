"""LongMemEval (Wu et al., ICLR 2025): 500 questions, each over its own haystack of sessions.

``load``: the published JSON files; ``metrics``: LongMemEval's turn and session retrieval
metrics and its judge prompts and label parsing (pure functions); ``rules``: those metrics on
observations; ``report``: tables by question type; ``prompts/``: recallbench's own judge prompts;
``answering``: LongMemEval's official reader prompts and judge, read from its pinned files.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.longmemeval.answering import make_instrument
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
from recallbench.contracts import RulesSource
from recallbench.score.metrics import MetricInfo, MetricKey
from recallbench.score.predictions import ANSWER, PredictionFormat

RULES_SOURCE = RulesSource(
    repository="xiaowu0162/LongMemEval",
    commit="9e0b455",
    files=("src/retrieval/eval_utils.py", "src/evaluation/evaluate_qa.py"),
)
"""LongMemEval's retrieval metrics (``eval_utils.py``) and its judge (``evaluate_qa.py``)."""

DEVIATIONS: tuple[str, ...] = (
    "the ranking scored is the memories a system returned (each memory's source turns in "
    "order, assistant turns dropped, each turn at its first appearance); the official "
    "evaluation ranks the whole corpus, so where the grown session cut-off runs past the "
    "returned ranking the verdict is flagged session:ranking_exhausted",
    "label needs a judge: null (no_judge) outside answer mode; in answer mode it is "
    "evaluate_qa.py's own prompt, settings and 'yes'-in-reply parsing (see the instrument's "
    "deviations in run.json); the prompts recallbench wrote itself "
    "(prompts/longmemeval_judge_v1.json) are not used by any run",
)

HYPOTHESES = PredictionFormat(
    name="longmemeval",
    id_field="question_id",
    fields={"hypothesis": ANSWER},
    description="LongMemEval's hypothesis lines, the fields its evaluate_qa.py reads",
)
"""``{"question_id": ..., "hypothesis": ...}``: what LongMemEval's run_generation.py writes."""

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=LongMemEvalRules(),
    report=LongMemEvalReport(),
    default_k=DEFAULT_KS,
    headline=(MetricKey(LABEL), MetricKey("session:recall_any", 5)),
    rules_source=RULES_SOURCE,
    deviations=DEVIATIONS,
    prediction_formats=(HYPOTHESES,),
    answering=make_instrument,
    metrics=(
        MetricInfo(
            LABEL,
            True,
            "share",
            "LongMemEval's judge (evaluate_qa.py get_anscheck_prompt, pinned "
            "gpt-4o-2024-08-06) on the reader's answer: 1 when 'yes' is in its reply",
        ),
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
