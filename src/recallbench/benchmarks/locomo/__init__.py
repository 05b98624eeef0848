"""LoCoMo (Maharana et al., ACL 2024): ten long two-person conversations, 1,986 questions.

``load``: the published ``locomo10.json`` into groups and questions, with a load report;
``metrics``: LoCoMo's own F1, category rules and evidence parsing (pure functions);
``rules``: those metrics on observations; ``report``: per-category tables and notes;
``options``: the typed dataset options; ``errata``: the third-party locomo-audit overlay
(parsing and mapping); ``answering``: LoCoMo's own reader (``task_eval/evaluate_gpts.py``) and
the labelled mem0 J judge variant; ``stats/``: checked-in descriptive statistics, recomputed by a
test.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.locomo.answering import MEM0_J, MEM0_J_LABEL, locomo_instrument
from recallbench.benchmarks.locomo.load import SPEC
from recallbench.benchmarks.locomo.options import LocomoOptions
from recallbench.benchmarks.locomo.report import LocomoReport
from recallbench.benchmarks.locomo.rules import CEILING, EVIDENCE_RECALL, F1, LocomoRules
from recallbench.contracts import RulesSource
from recallbench.score.metrics import MetricInfo, MetricKey

RULES_SOURCE = RulesSource(
    repository="snap-research/LoCoMo",
    commit="9228632",
    files=("task_eval/evaluation.py",),
    note="branch code",
)
"""LoCoMo's scorer: ``eval_question_answering`` (F1 by category, evidence recall)."""

DEVIATIONS: tuple[str, ...] = (
    "f1 is null (no_answer) when no answer was generated: the returned memories are never "
    "scored as an answer, where evaluation.py always scores a prediction",
    "evidence_recall is computed over the source turns of every memory returned (not cut at "
    "k), against evidence ids repaired on load (malformed entries split, a stray colon and "
    "zero padding fixed, ids naming no turn dropped, each in the load report); evaluation.py "
    "matches the raw evidence strings",
    "a question with an empty evidence list has null retrieval (evidence_unknown); "
    "evaluation.py counts its recall as 1",
)

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=LocomoRules(),
    report=LocomoReport(),
    options=LocomoOptions,
    default_k=(1, 5, 10),
    headline=(MetricKey(F1), MetricKey(EVIDENCE_RECALL)),
    rules_source=RULES_SOURCE,
    deviations=DEVIATIONS,
    answering=locomo_instrument,
    metrics=(
        MetricInfo(F1, True, "score", "LoCoMo token F1 of the answer, with its category rules"),
        MetricInfo(
            CEILING,
            None,
            "share",
            "questions of categories 1-4 whose answer key third-party errata leave standing (1) "
            "rather than flag wrong (0): where a right answer meets a right key",
        ),
        MetricInfo(
            MEM0_J,
            True,
            "share",
            f"{MEM0_J_LABEL}: 1 when mem0's judge labels the answer CORRECT, else 0; "
            "category 5 skipped, as mem0's evaluation does",
        ),
        # evidence_recall (no k: over every memory returned) shares the generic entry's name
        # and direction; the name predates the catalogue and is kept for the results format.
        # f1:errata and evidence_recall:errata are variants: their entries are f1's and
        # evidence_recall's.
    ),
)
