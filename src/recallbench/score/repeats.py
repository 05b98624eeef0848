"""Figures over the repeats of a run (``run --repeats N``), derived from the per-repeat rows.

Each repeat of a run is scored on its own: its verdicts and metric rows carry ``repeat`` (0 to
N-1). For every figure (dataset, system, slice, metric, k) of a run with N above 1, four rows
over the repeats follow, named by a suffix of the metric:

- ``<metric>:repeat_mean``, ``<metric>:repeat_median``: over the repeats where the figure has a
  value (denominator ``repeats``, the number of such repeats; a repeat where it is null is
  excluded and named under the rule ``null_in_repeat``, never counted as 0);
- ``<metric>:repeat_sd``: the sample standard deviation (n - 1), null with a reason below two
  measured repeats;
- ``<metric>:repeat_tolerance``: the reproduction tolerance, two standard deviations, stated
  only with at least :data:`TOLERANCE_MIN_REPEATS` measured repeats; with fewer it is null
  with the reason ``not measured: ...``.

A row over the repeats holds no interval (``ci_low``/``ci_high`` null): its spread is the
standard deviation. Its ``repeat`` is 0 (left out of the JSON): the suffix says what it is.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from recallbench.contracts import MetricRow

REPEAT_STATS: tuple[str, ...] = ("repeat_mean", "repeat_median", "repeat_sd", "repeat_tolerance")
"""The suffixes of the rows over repeats, in the order they are written."""

TOLERANCE_MIN_REPEATS = 3
"""Measured repeats needed before a reproduction tolerance (two standard deviations) is stated."""

DENOMINATOR = "repeats"
NULL_IN_REPEAT = "null_in_repeat"

RowKey = tuple[str, str, str, str, int | None]


def repeat_metric(metric: str, stat: str) -> str:
    """``evidence_recall`` and ``repeat_sd`` -> ``evidence_recall:repeat_sd``."""
    return f"{metric}:{stat}"


def split_repeat_metric(metric: str) -> tuple[str, str | None]:
    """``evidence_recall:repeat_sd`` -> (``evidence_recall``, ``repeat_sd``); a metric that is
    not over repeats -> (metric, None)."""
    head, sep, tail = metric.rpartition(":")
    if sep and tail in REPEAT_STATS:
        return head, tail
    return metric, None


def is_repeat_row(row: MetricRow) -> bool:
    """True for a row over the repeats (``:repeat_mean`` and the others)."""
    return split_repeat_metric(row.metric)[1] is not None


def _key(row: MetricRow) -> RowKey:
    return (row.dataset, row.system, row.slice, row.metric, row.k)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def repeat_rows(rows: Sequence[MetricRow], repeats: int) -> list[MetricRow]:
    """The rows over ``repeats`` repeats of every figure among the per-repeat ``rows`` (in the
    order each figure first appears); ``[]`` for a single run."""
    if repeats <= 1:
        return []
    by_key: dict[RowKey, dict[int, MetricRow]] = {}
    for r in rows:
        if is_repeat_row(r):
            continue
        by_key.setdefault(_key(r), {}).setdefault(r.repeat, r)
    out: list[MetricRow] = []
    for per_repeat in by_key.values():
        out.extend(_stats_rows(per_repeat, repeats))
    return out


def _stats_rows(per_repeat: dict[int, MetricRow], repeats: int) -> list[MetricRow]:
    first = per_repeat[min(per_repeat)]
    measured = {i: r.value for i, r in sorted(per_repeat.items()) if r.value is not None}
    values = list(measured.values())
    unmeasured = [i for i in range(repeats) if i not in measured]
    rule = (
        f"{NULL_IN_REPEAT}: repeat(s) {', '.join(str(i) for i in unmeasured)}"
        if unmeasured
        else None
    )
    reason_none = _why_null(per_repeat, repeats)
    n = len(values)
    mean = statistics.fmean(values) if values else None
    median = statistics.median(values) if values else None
    sd = statistics.stdev(values) if n >= 2 else None
    sd_reason = None if n >= 2 else reason_none or f"one measured repeat of {repeats}: no spread"
    if n >= TOLERANCE_MIN_REPEATS and sd is not None:
        tolerance, tol_reason = 2 * sd, None
    else:
        tolerance = None
        tol_reason = (
            f"not measured: {n} measured repeat(s), a reproduction tolerance (two standard "
            f"deviations) needs at least {TOLERANCE_MIN_REPEATS}"
        )
    figures = (
        ("repeat_mean", mean, None if values else reason_none),
        ("repeat_median", median, None if values else reason_none),
        ("repeat_sd", sd, sd_reason),
        ("repeat_tolerance", tolerance, tol_reason),
    )
    return [
        dataclasses.replace(
            first,
            metric=repeat_metric(first.metric, stat),
            value=_round(value) if value is None or math.isfinite(value) else None,
            denominator_name=DENOMINATOR,
            denominator=n,
            n_excluded=len(unmeasured),
            exclusion_rule=rule,
            null_reason=None if value is not None else reason,
            ci_low=None,
            ci_high=None,
            repeat=0,
        )
        for stat, value, reason in figures
    ]


def _why_null(per_repeat: dict[int, MetricRow], repeats: int) -> str | None:
    """Why no repeat has a value: the first repeat's own null reason (or that the figure is
    missing from a repeat); None when some repeat has one."""
    if any(r.value is not None for r in per_repeat.values()):
        return None
    first = per_repeat[min(per_repeat)]
    reason = first.null_reason or "null"
    return f"not measured in any of {repeats} repeat(s): {reason}"
