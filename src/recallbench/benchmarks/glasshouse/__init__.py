"""Glasshouse v0.1: one synthetic life over 17 months in four nested haystack tiers.

``load``: the pinned files, tiers, question sets, evidence cross-checks and image modes;
``options``: the typed dataset options; ``metrics``: the dry-mode string rules (pure
functions); ``rules``: those rules on observations; ``report``: per-axis tables, STALE traps and
the tier view; ``export``: Glasshouse's own run-record format; ``answering``: the official
reader and judge (memory and answer modes), run from Glasshouse's own ``judge.py``.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
from recallbench.benchmarks.glasshouse.answering import ANSWER, MEMORY, glasshouse_answering
from recallbench.benchmarks.glasshouse.export import RUN_RECORDS
from recallbench.benchmarks.glasshouse.files import COMMIT
from recallbench.benchmarks.glasshouse.load import SPEC
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.benchmarks.glasshouse.report import GlasshouseReport
from recallbench.benchmarks.glasshouse.rules import (
    CHARS_OK,
    DRY,
    EVIDENCE,
    GENERATED,
    STALE_OLD,
    STALE_REACHED,
    GlasshouseRules,
)
from recallbench.contracts import RulesSource
from recallbench.score.metrics import MetricInfo, MetricKey

RULES_SOURCE = RulesSource(
    repository="wontopos/glasshouse",
    commit=COMMIT,
    files=("glasshouse-v0.1/score.py", "glasshouse-v0.1/ci_score.py"),
)
"""Glasshouse's scorer (dry mode) and the CI checks of a submitted record."""

DEVIATIONS: tuple[str, ...] = (
    "the memory and answer modes run Glasshouse's own judge.py (pinned on first use) through "
    "recallbench's LLM client; the steps it does not reproduce are the instrument's own "
    "deviations (recallbench.benchmarks.glasshouse.answering)",
    "an XLING_QUERY question asked in English is scored null (void_axis) and reported; "
    "Glasshouse does not accept such a run",
    "cross-language rows carry no evidence turns in the release: recallbench borrows them from "
    "the tier's question file through source_id where it can and leaves the rest unknown "
    "(null)",
    "recallbench score FILE refuses a field outside the run-record fields; Glasshouse's scorer "
    "ignores extra keys",
)

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=GlasshouseRules(),
    report=GlasshouseReport(),
    options=GlasshouseOptions,
    default_k=(1, 5, 10),
    headline=(MetricKey(DRY, variant="weighted"), MetricKey(EVIDENCE)),
    rules_source=RULES_SOURCE,
    deviations=DEVIATIONS,
    prediction_formats=(RUN_RECORDS,),
    answering=glasshouse_answering,
    metrics=(
        MetricInfo(DRY, True, "score", "Glasshouse dry-mode value (0, 0.5, 1, or a fraction)"),
        MetricInfo(EVIDENCE, True, "share", "any evidence came back (turn ids, or the gold)"),
        MetricInfo(GENERATED, None, "share", "an answer model wrote the answer"),
        MetricInfo(STALE_OLD, False, "share", "the old value given as current (a STALE trap)"),
        MetricInfo(STALE_REACHED, True, "share", "the new value came back (no trap)"),
        MetricInfo(CHARS_OK, True, "share", "a record's character claims check out"),
        MetricInfo(
            MEMORY,
            True,
            "score",
            "Glasshouse memory mode: the judge's verdict on the returned "
            "memories (FULL 1, PARTIAL 0.5, WRONG 0)",
        ),
        MetricInfo(
            ANSWER,
            True,
            "score",
            "Glasshouse answer mode: the judge's verdict on the reader's "
            "answer (FULL 1, PARTIAL 0.5, WRONG 0)",
        ),
    ),
)
