"""Glasshouse v0.1: one synthetic life over 17 months in four nested haystack tiers.

``load``: the pinned files, tiers, question sets, evidence cross-checks and image modes;
``options``: the typed dataset options; ``metrics``: the dry-mode string rules (pure
functions); ``rules``: those rules on observations; ``report``: per-axis tables, STALE traps and
the tier view; ``export``: Glasshouse's own run-record format.
"""

from __future__ import annotations

from recallbench.benchmarks.base import Benchmark
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
from recallbench.score.metrics import MetricInfo, MetricKey

BENCHMARK = Benchmark(
    spec=SPEC,
    rules=GlasshouseRules(),
    report=GlasshouseReport(),
    options=GlasshouseOptions,
    default_k=(1, 5, 10),
    headline=(MetricKey(DRY, variant="weighted"), MetricKey(EVIDENCE)),
    metrics=(
        MetricInfo(DRY, True, "score", "Glasshouse dry-mode value (0, 0.5, 1, or a fraction)"),
        MetricInfo(EVIDENCE, True, "share", "any evidence came back (turn ids, or the gold)"),
        MetricInfo(GENERATED, None, "share", "an answer model wrote the answer"),
        MetricInfo(STALE_OLD, False, "share", "the old value given as current (a STALE trap)"),
        MetricInfo(STALE_REACHED, True, "share", "the new value came back (no trap)"),
        MetricInfo(CHARS_OK, True, "share", "a record's character claims check out"),
    ),
)
