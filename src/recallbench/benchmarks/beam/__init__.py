"""BEAM ("Beyond a Million tokens"): long coherent conversations with probing questions.

``load``: the published ``chat.json`` and ``probing_questions.json``; ``metrics``: BEAM's rubric
grading and event-ordering score (pure functions, waiting for a judge); ``rules`` and
``report``; ``prompts/``: the rubric prompt; ``stats/``: checked-in descriptive statistics.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.beam.load import SPEC
from recallbench.benchmarks.beam.report import BeamReport
from recallbench.benchmarks.beam.rules import EVENT_ORDER, RUBRIC, BeamRules
from recallbench.score.metrics import MetricInfo, MetricKey

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=BeamRules(),
    report=BeamReport(),
    default_k=(1, 5, 10),
    headline=(MetricKey(RUBRIC), MetricKey("evidence_recall", 10)),
    metrics=(
        MetricInfo(RUBRIC, True, "score", "mean 0/0.5/1 judge grade over the rubric items"),
        MetricInfo(EVENT_ORDER, True, "score", "(Kendall tau-b + 1) / 2 of the event order"),
    ),
)
