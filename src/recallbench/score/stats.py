"""Uncertainty that respects the data: seeded bootstrap intervals and paired comparisons.

Questions of one haystack group (one conversation) are correlated, so a dataset with at least
:data:`MIN_GROUPS` groups is resampled by group (a cluster bootstrap: every draw takes whole
groups, with replacement, and the figure is the mean over the questions they hold); a dataset
with fewer (every Glasshouse tier is one global haystack, LoCoMo has 10 conversations) is
resampled by question, stratified by slice (each slice keeps its size in every draw). The unit,
the number of draws and the seed are returned with every interval, so a row can name them.

Two systems on the same questions are compared paired: :func:`paired_difference` resamples the
per-question differences with the same unit (the same draws as the intervals), and
:func:`mcnemar` is the exact (binomial) McNemar test for 0/1 outcomes; :func:`holm` corrects
the p-values of one table for multiple comparisons. Everything is pure (numpy, no scipy) and
seeded: the same inputs give the same numbers, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recallbench.contracts import sha256_text

ITERATIONS = 1000
"""Bootstrap draws of every interval recallbench writes."""
LEVEL = 0.95
"""Coverage of every interval (a percentile interval: 2.5th and 97.5th percentiles)."""
MIN_GROUPS = 20
"""A dataset with at least this many haystack groups is resampled by group."""
UNIT_GROUPS = "groups"
UNIT_SLICES = "questions by slice"
TEST_MCNEMAR = "exact McNemar"
TEST_BOOTSTRAP = "paired bootstrap"
TEST_BOTH = "exact McNemar and paired bootstrap (the larger p)"


@dataclass(frozen=True, slots=True)
class Interval:
    """A bootstrap interval and how it was drawn (``unit``: :data:`UNIT_GROUPS` or
    :data:`UNIT_SLICES`)."""

    low: float
    high: float
    unit: str
    iterations: int
    seed: int


@dataclass(frozen=True, slots=True)
class PairedResult:
    """System B minus system A over the questions both scored: the mean difference, its paired
    bootstrap interval, the test that decides significance and its p-value (before any
    correction). ``discordant`` is ``(A right and B wrong, A wrong and B right)`` for 0/1
    outcomes, None otherwise."""

    n: int
    difference: float
    interval: Interval | None
    test: str
    p_value: float
    discordant: tuple[int, int] | None = None


def resampling_unit(groups: Sequence[str]) -> str:
    """:data:`UNIT_GROUPS` when ``groups`` (one group id per question of the dataset) name at
    least :data:`MIN_GROUPS` distinct groups, else :data:`UNIT_SLICES`."""
    return UNIT_GROUPS if len(set(groups)) >= MIN_GROUPS else UNIT_SLICES


def seed_of(label: str) -> int:
    """The seed of a figure: the first 32 bits of the SHA-256 of its label (dataset, system,
    slice, metric), so every row has its own stream and the same row always the same one."""
    return int(sha256_text(label)[:8], 16)


def _codes(labels: Sequence[str]) -> tuple[np.ndarray, int]:
    order = {g: i for i, g in enumerate(dict.fromkeys(labels))}
    return np.asarray([order[g] for g in labels], dtype=np.int64), len(order)


def _boot_means(
    values: np.ndarray,
    groups: Sequence[str],
    slices: Sequence[str],
    unit: str,
    iterations: int,
    seed: int,
) -> np.ndarray:
    """The ``iterations`` bootstrap means of ``values``: whole groups drawn with replacement
    (:data:`UNIT_GROUPS`; the mean over the questions of the groups drawn), or questions drawn
    with replacement within each slice (each slice keeps its size). The draws depend only on
    the groups, slices and seed, never on the values, so two systems get the same draws."""
    rng = np.random.default_rng(seed)
    if unit == UNIT_GROUPS:
        codes, g = _codes(groups)
        sums = np.bincount(codes, weights=values, minlength=g)
        counts = np.bincount(codes, minlength=g).astype(np.float64)
        picks = rng.integers(0, g, size=(iterations, g))
        return sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    codes, s = _codes(slices)
    total = np.zeros(iterations, dtype=np.float64)
    for stratum in range(s):
        members = values[codes == stratum]
        picks = rng.integers(0, len(members), size=(iterations, len(members)))
        total += members[picks].sum(axis=1)
    return total / len(values)


def _check(values: Sequence[float], groups: Sequence[str], slices: Sequence[str]) -> None:
    if not len(values) == len(groups) == len(slices):
        raise ValueError(
            f"values, groups and slices differ in length ({len(values)}, {len(groups)}, "
            f"{len(slices)}): one of each per question"
        )


def _interval(means: np.ndarray, unit: str, iterations: int, seed: int) -> Interval:
    tail = (1.0 - LEVEL) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return Interval(round(float(lo), 6), round(float(hi), 6), unit, iterations, seed)


def bootstrap_interval(
    values: Sequence[float],
    groups: Sequence[str],
    slices: Sequence[str],
    *,
    iterations: int = ITERATIONS,
    seed: int,
    unit: str | None = None,
) -> Interval | None:
    """The 95% percentile bootstrap interval of the mean of ``values`` (one per question, with
    its haystack group and slice); ``unit`` defaults to :func:`resampling_unit` of ``groups``
    (pass the dataset's unit to use one unit for every row of a dataset). None with fewer than
    two values, or when the unit is groups and only one group is present (no spread to draw
    from)."""
    _check(values, groups, slices)
    unit = unit or resampling_unit(groups)
    if len(values) < 2 or (unit == UNIT_GROUPS and len(set(groups)) < 2):
        return None
    means = _boot_means(np.asarray(values, dtype=float), groups, slices, unit, iterations, seed)
    return _interval(means, unit, iterations, seed)


def _binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def _clustered(groups: Sequence[str]) -> bool:
    return len(set(groups)) < len(groups)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    groups: Sequence[str],
    slices: Sequence[str],
    *,
    iterations: int = ITERATIONS,
    seed: int,
    unit: str | None = None,
) -> PairedResult:
    """B minus A on the same questions (``a[i]`` and ``b[i]`` are one question's values).

    The interval resamples the per-question differences like :func:`bootstrap_interval`. The
    p-value depends on the data:

    * 0/1 outcomes of independent questions (resampled by question, or by groups of one
      question): the exact McNemar test (:func:`mcnemar`);
    * graded values (F1, MRR...): the paired bootstrap's two-sided test, the mean difference
      over its bootstrap standard error read on the normal curve (a share of draws past 0
      could not go below 1/1,000, which no table corrected for many comparisons could use);
    * 0/1 outcomes resampled by whole groups of several questions: the larger of the two
      (McNemar is exact for few discordant questions but assumes independent ones; the
      bootstrap error accounts for the groups but is approximate for few), so neither
      weakness makes a gap look real."""
    _check(a, groups, slices)
    _check(b, groups, slices)
    unit = unit or resampling_unit(groups)
    n = len(a)
    if n == 0:
        raise ValueError("no question scored by both systems: nothing to compare")
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    mean = float(diff.mean())
    interval: Interval | None = None
    boot_p = 1.0
    if n >= 2 and not (unit == UNIT_GROUPS and len(set(groups)) < 2):
        means = _boot_means(diff, groups, slices, unit, iterations, seed)
        interval = _interval(means, unit, iterations, seed)
        boot_p = _normal_p(mean, float(np.std(means, ddof=1)))
    binary = _binary(a) and _binary(b)
    discordant = None
    if binary:
        discordant = (
            int(sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)),
            int(sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)),
        )
    rounded = round(mean, 6)
    if not binary:
        return PairedResult(n, rounded, interval, TEST_BOOTSTRAP, boot_p)
    exact = mcnemar(a, b)
    if unit == UNIT_GROUPS and _clustered(groups):
        return PairedResult(n, rounded, interval, TEST_BOTH, max(exact, boot_p), discordant)
    return PairedResult(n, rounded, interval, TEST_MCNEMAR, exact, discordant)


def _normal_p(mean: float, se: float) -> float:
    """Two-sided p-value of ``mean`` against 0 with standard error ``se`` on the normal
    curve; with no spread at all, 1 for no difference and 0 for any."""
    if se <= 0 or not math.isfinite(se):
        return 1.0 if abs(mean) < 1e-12 else 0.0
    return min(1.0, math.erfc(abs(mean) / (se * math.sqrt(2.0))))


def mcnemar(a: Sequence[float], b: Sequence[float]) -> float:
    """The exact two-sided McNemar p-value of paired 0/1 outcomes: with ``r`` questions A got
    right and B wrong and ``s`` the other way, twice the binomial(r + s, 1/2) tail at
    ``min(r, s)``, at most 1 (1 when no question differs). Raises on a value other than 0
    or 1."""
    if len(a) != len(b):
        raise ValueError(f"a and b differ in length ({len(a)}, {len(b)}): one pair per question")
    if not (_binary(a) and _binary(b)):
        raise ValueError("McNemar's test needs 0/1 outcomes")
    r = sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)
    s = sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)
    m = r + s
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, i) for i in range(min(r, s) + 1))
    return min(1.0, float(2 * tail / 2**m))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of one family of p-values (the comparisons of one table),
    in the order given: the i-th smallest is multiplied by ``m - i`` (i from 0), made no smaller
    than the one before it, and capped at 1. A gap is significant at level alpha when its
    adjusted p-value is below alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
