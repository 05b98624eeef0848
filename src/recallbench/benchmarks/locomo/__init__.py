"""LoCoMo (Maharana et al., ACL 2024): ten long two-person conversations, 1,986 questions.

``load``: the published ``locomo10.json`` into groups and questions, with a load report;
``metrics``: LoCoMo's own F1, category rules and evidence parsing (pure functions);
``rules``: those metrics on observations; ``report``: per-category tables and notes;
``stats/``: checked-in descriptive statistics, recomputed by a test.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.locomo.load import SPEC
from recallbench.benchmarks.locomo.report import LocomoReport
from recallbench.benchmarks.locomo.rules import EVIDENCE_RECALL, F1, LocomoRules
from recallbench.score.metrics import MetricInfo, MetricKey

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=LocomoRules(),
    report=LocomoReport(),
    default_k=(1, 5, 10),
    headline=(MetricKey(F1), MetricKey(EVIDENCE_RECALL)),
    metrics=(
        MetricInfo(F1, True, "score", "LoCoMo token F1 of the answer, with its category rules"),
        # evidence_recall (no k: over every memory returned) shares the generic entry's name
        # and direction; the name predates the catalogue and is kept for the results format.
    ),
)
