"""BEAM ("Beyond a Million tokens"): long coherent conversations with probing questions.

``load``: the published ``chat.json`` and ``probing_questions.json``; ``metrics``: BEAM's rubric
grading and event-ordering score (pure functions, waiting for a judge); ``rules`` and
``report``; ``prompts/``: the rubric prompt; ``stats/``: checked-in descriptive statistics.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.beam.load import COMMIT, SPEC
from recallbench.benchmarks.beam.report import BeamReport
from recallbench.benchmarks.beam.rules import EVENT_ORDER, RUBRIC, BeamRules
from recallbench.contracts import RulesSource
from recallbench.score.metrics import MetricInfo, MetricKey

RULES_SOURCE = RulesSource(
    repository="mohammadtavakoli78/BEAM",
    commit=COMMIT,
    files=("src/evaluation/compute_metrics.py", "src/prompts.py"),
)
"""BEAM's rubric and event-ordering scoring, and its judge prompts."""

DEVIATIONS: tuple[str, ...] = (
    "rubric and event_ordering need an LLM judge and are null (no_judge) until one is "
    "configured; the rubric prompt recallbench holds (prompts/beam_rubric_v1.json) is its own "
    "wording and gives the judge the question, which the official prompt leaves unfilled",
    "event_ordering is (tau_b + 1) / 2; compute_metrics.py multiplies it by the F1 of the "
    "mapped event sets",
)

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=BeamRules(),
    report=BeamReport(),
    default_k=(1, 5, 10),
    headline=(MetricKey(RUBRIC), MetricKey("evidence_recall", 10)),
    rules_source=RULES_SOURCE,
    deviations=DEVIATIONS,
    metrics=(
        MetricInfo(RUBRIC, True, "score", "mean 0/0.5/1 judge grade over the rubric items"),
        MetricInfo(EVENT_ORDER, True, "score", "(Kendall tau-b + 1) / 2 of the event order"),
    ),
)
