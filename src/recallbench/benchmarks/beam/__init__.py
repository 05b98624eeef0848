"""BEAM ("Beyond a Million tokens"): long coherent conversations with probing questions.

``load``: the published ``chat.json`` and ``probing_questions.json``; ``metrics``: BEAM's rubric
grading and event-ordering score (pure functions, waiting for a judge); ``rules`` and
``report``; ``answering``: BEAM's own reader and judges, read from its repository at the pinned
commit (the default instrument); ``prompts/``: recallbench's own rubric prompt, the labelled
alternative ``recallbench prompts v1``; ``stats/``: checked-in descriptive statistics.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.beam.answering import build as build_instrument
from recallbench.benchmarks.beam.load import COMMIT, SPEC
from recallbench.benchmarks.beam.report import BeamReport
from recallbench.benchmarks.beam.rules import EVENT_ORDER, RUBRIC, BeamRules
from recallbench.contracts import RulesSource
from recallbench.score.metrics import MetricInfo, MetricKey

RULES_SOURCE = RulesSource(
    repository="mohammadtavakoli78/BEAM",
    commit=COMMIT,
    files=(
        "src/evaluation/compute_metrics.py",
        "src/evaluation/run_evaluation.py",
        "src/llm.py",
        "src/prompts.py",
    ),
)
"""BEAM's rubric and event-ordering scoring, and its judge prompts."""

DEVIATIONS: tuple[str, ...] = (
    "rubric and event_ordering need an LLM judge: null (no_judge) in retrieval mode; in answer "
    "mode BEAM's own instrument (answering.py) fills them with compute_metrics.py's own "
    "functions, and lists what it does not reproduce on every run",
    "event_ordering is tau_norm, (tau_b + 1) / 2, the figure BEAM's report_results.py reports "
    "for the ability; compute_metrics.py's final_score (tau_norm times the F1 of the mapped "
    "event sets) is not reported",
)

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=BeamRules(),
    report=BeamReport(),
    default_k=(1, 5, 10),
    headline=(MetricKey(RUBRIC), MetricKey("evidence_recall", 10)),
    rules_source=RULES_SOURCE,
    deviations=DEVIATIONS,
    answering=build_instrument,
    metrics=(
        MetricInfo(
            RUBRIC,
            True,
            "score",
            "compute_metrics.py's llm_judge_score: the judge's grades of the rubric items "
            "(int() of each grade but on event ordering, so 0.5 counts 0), averaged",
        ),
        MetricInfo(
            EVENT_ORDER,
            True,
            "score",
            "compute_metrics.py's tau_norm: (Kendall tau-b + 1) / 2 of the answer's event order",
        ),
    ),
)
