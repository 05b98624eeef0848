"""LoCoMo (Maharana et al., ACL 2024): ten long two-person conversations, 1,986 questions.

``load``: the published ``locomo10.json`` into groups and questions, with a load report;
``metrics``: LoCoMo's own F1, category rules and evidence parsing (pure functions);
``rules``: those metrics on observations; ``report``: per-category tables and notes;
``options``: the typed dataset options; ``errata``: the third-party locomo-audit overlay
(parsing and mapping); ``stats/``: checked-in descriptive statistics, recomputed by a test.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.locomo.load import SPEC
from recallbench.benchmarks.locomo.options import LocomoOptions
from recallbench.benchmarks.locomo.report import LocomoReport
from recallbench.benchmarks.locomo.rules import CEILING, EVIDENCE_RECALL, F1, LocomoRules
from recallbench.score.metrics import MetricInfo, MetricKey

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=LocomoRules(),
    report=LocomoReport(),
    options=LocomoOptions,
    default_k=(1, 5, 10),
    headline=(MetricKey(F1), MetricKey(EVIDENCE_RECALL)),
    metrics=(
        MetricInfo(F1, True, "score", "LoCoMo token F1 of the answer, with its category rules"),
        MetricInfo(
            CEILING,
            None,
            "share",
            "questions of categories 1-4 whose answer key third-party errata leave standing (1) "
            "rather than flag wrong (0): where a right answer meets a right key",
        ),
        # evidence_recall (no k: over every memory returned) shares the generic entry's name
        # and direction; the name predates the catalogue and is kept for the results format.
        # f1:errata and evidence_recall:errata are variants: their entries are f1's and
        # evidence_recall's.
    ),
)
