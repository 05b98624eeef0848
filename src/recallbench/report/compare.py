"""``recallbench compare``: several systems (of one or several results folders) side by side on
the same questions, per slice, with intervals, and which gaps are real.

Every figure is recomputed from the per-question verdicts, never read from ``metrics.jsonl``
and never from a system's own scores: a side's value and interval are those
:func:`recallbench.score.aggregate.aggregate` writes for the same verdicts (same resampling
unit, draws and seed). Each side after the first is compared with the first, paired over the
questions both scored (:func:`recallbench.score.stats.paired_difference`), and the p-values of
one table (every slice of every pair) are corrected together with Holm's method; a gap whose
corrected p-value is not below ``alpha`` is marked ``n.s.``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recallbench.contracts import ALL
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.instrument import LOUD, Change, instrument_changes, unrecorded
from recallbench.report.sides import Side
from recallbench.report.tables import Table, fmt
from recallbench.score.aggregate import Resampling
from recallbench.score.metrics import MetricKey
from recallbench.score.stats import PairedResult, holm, paired_difference, seed_of

ALPHA = 0.05
"""Default significance level of a gap, after Holm's correction."""
CORRECTION = "Holm"
NOT_SIGNIFICANT = "n.s."


def slice_order(dataset: LoadedDataset) -> list[str]:
    """``all``, then the dataset's slices in the order its questions give them."""
    order = [ALL, *dict.fromkeys(q.axis or ALL for q in dataset.questions)]
    return list(dict.fromkeys(order))


def letters(n: int) -> list[str]:
    """``A``, ``B``, ... (``S27`` and on past 26), the column names of the sides."""
    return [chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(n)]


@dataclass(frozen=True)
class Figure:
    """One side's mean of one metric over one slice, with its bootstrap interval."""

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    ci_unit: str | None = None
    ci_iterations: int | None = None
    ci_seed: int | None = None


@dataclass(frozen=True)
class Gap:
    """Side ``b`` minus side ``a`` on one slice (``result`` None: no question both scored),
    with the Holm-corrected p-value of its table."""

    a: int
    b: int
    result: PairedResult | None
    p_holm: float | None = None
    significant: bool | None = None


@dataclass(frozen=True)
class SliceLine:
    slice: str
    figures: tuple[Figure, ...]
    gaps: tuple[Gap, ...]


@dataclass(frozen=True)
class Comparison:
    """One table of ``compare``: one dataset, one metric, every slice."""

    dataset: LoadedDataset
    metric: str
    sides: tuple[Side, ...]
    lines: tuple[SliceLine, ...]
    alpha: float
    unit: str
    changes: tuple[tuple[Change, ...], ...] = ()
    """For each side after the first, the instrument fields that differ from the first's."""
    unchecked: tuple[str, ...] = ()
    """Sides whose instrument could not be checked (predictions files: no ``run.json``)."""
    null_reasons: tuple[tuple[int, str], ...] = ()
    """``(side, reason)`` for each side whose metric is null on some question (why)."""


def figure(side: Side, key: str, slice_: str, resampling: Resampling) -> Figure:
    """``side``'s mean of ``key`` over ``slice_``, with the interval ``aggregate`` writes for
    it (same verdicts, unit, draws and seed)."""
    values = side.values(key)
    chosen = {v.question_id: v for v in side.verdicts if slice_ == ALL or v.slice == slice_}
    scored = [chosen[q] for q in chosen if q in values]
    if not scored:
        return Figure(None, 0)
    xs = [values[v.question_id] for v in scored]
    label = f"{side.dataset.key}|{side.system}|{slice_}|{key}"
    ci = resampling.interval(scored, xs, label)
    mean = round(sum(xs) / len(xs), 6)
    if ci is None:
        return Figure(mean, len(xs))
    return Figure(mean, len(xs), ci.low, ci.high, ci.unit, ci.iterations, ci.seed)


def paired(
    a: Side, b: Side, key_a: str, key_b: str, slice_: str, resampling: Resampling
) -> PairedResult | None:
    """``b``'s ``key_b`` minus ``a``'s ``key_a`` over the questions of ``slice_`` both scored,
    in dataset order (None when there is none)."""
    va, vb = a.values(key_a), b.values(key_b)
    order = [
        q for q in a.dataset.questions
        if (slice_ == ALL or (q.axis or ALL) == slice_) and q.id in va and q.id in vb
    ]  # fmt: skip
    if not order:
        return None
    groups = [resampling.group_of.get(q.id, q.id) for q in order]
    slices = [q.axis or ALL for q in order]
    label = f"{a.dataset.key}|{a.system}|{b.system}|{slice_}|{key_a}|{key_b}|paired"
    return paired_difference(
        [va[q.id] for q in order], [vb[q.id] for q in order], groups, slices,
        seed=seed_of(label), unit=resampling.unit,
    )  # fmt: skip


def correct(gaps: Sequence[Gap], alpha: float) -> list[Gap]:
    """``gaps`` with Holm-corrected p-values over the family of those measured."""
    measured = [i for i, g in enumerate(gaps) if g.result is not None]
    adjusted = holm([gaps[i].result.p_value for i in measured])  # type: ignore[union-attr]
    out = list(gaps)
    for i, p in zip(measured, adjusted, strict=True):
        out[i] = Gap(gaps[i].a, gaps[i].b, gaps[i].result, round(p, 6), p < alpha)
    return out


def check_sides(sides: Sequence[Side]) -> None:
    """Refuses sides that are not on the same questions: another dataset, or another version
    or checksum of it (then no question is "the same")."""
    if len(sides) < 2:
        raise ValueError("compare needs at least two systems (give two results folders, or "
                         "one folder of a run with two systems)")
    first = sides[0].dataset
    for s in sides[1:]:
        if s.dataset.key != first.key or s.dataset.checksum != first.checksum:
            raise ValueError(
                f"{s.name} is on {s.dataset.version_label} (sha256 {s.dataset.checksum}), "
                f"{sides[0].name} on {first.version_label} (sha256 {first.checksum}): not the "
                "same questions, so no paired comparison; compare runs of one dataset version"
            )


def pairs_of(n: int, all_pairs: bool) -> list[tuple[int, int]]:
    """``(a, b)`` side indices compared: each later side against the first, or every pair."""
    if all_pairs:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [(0, j) for j in range(1, n)]


def compare(
    sides: Sequence[Side], metric: str, alpha: float = ALPHA, *, all_pairs: bool = False
) -> Comparison:
    """The comparison of ``sides`` (all on one dataset, checked) on ``metric``: each side's
    figure per slice, and each later side against the first (``all_pairs``: every pair),
    corrected together over the table."""
    check_sides(sides)
    ds = sides[0].dataset
    resampling = Resampling.of(ds)
    raw: list[tuple[str, tuple[Figure, ...], list[Gap]]] = []
    for slice_ in slice_order(ds):
        figs = tuple(figure(s, metric, slice_, resampling) for s in sides)
        if all(f.n == 0 for f in figs) and slice_ != ALL:
            continue
        gaps = [
            Gap(i, j, paired(sides[i], sides[j], metric, metric, slice_, resampling))
            for i, j in pairs_of(len(sides), all_pairs)
        ]
        raw.append((slice_, figs, gaps))
    flat = correct([g for _, _, gaps in raw for g in gaps], alpha)
    lines, i = [], 0
    for slice_, figs, gaps in raw:
        lines.append(SliceLine(slice_, figs, tuple(flat[i : i + len(gaps)])))
        i += len(gaps)
    changes = tuple(tuple(instrument_changes(sides[0], s)) for s in sides[1:])
    unchecked = tuple(dict.fromkeys(n for s in sides[1:] for n in unrecorded(sides[0], s)))
    return Comparison(ds, metric, tuple(sides), tuple(lines), alpha, resampling.unit, changes,
                      unchecked, tuple(null_reasons(sides, metric)))  # fmt: skip


def null_reasons(sides: Sequence[Side], metric: str) -> list[tuple[int, str]]:
    """Each side's null rules for ``metric`` (the part of a null reason before its colon) and
    how many questions each left out, e.g. ``no_evidence (7)``."""
    out = []
    for i, s in enumerate(sides):
        counts: dict[str, int] = {}
        for v in s.verdicts:
            if metric in v.metrics and v.metrics[metric] is None:
                reason = v.null_reasons.get(metric, "unspecified").split(":", 1)[0]
                counts[reason] = counts.get(reason, 0) + 1
        out += [(i, f"{reason} ({n})") for reason, n in sorted(counts.items())]
    return out


def instrument_lines(c: Comparison) -> list[str]:
    """The loud note for each side whose instrument differs from A's (none when all match)."""
    names = letters(len(c.sides))
    lines = []
    for j, changes in enumerate(c.changes, start=1):
        if changes:
            lines.append(
                f"{LOUD} ({names[j]} against {names[0]}: "
                f"{', '.join(ch.field for ch in changes)}): the gap {names[j]}-{names[0]} is "
                "NOT the systems' alone, it also measures the change of instrument"
            )
            lines += [f"  {ch.field}: {names[0]} {ch.a} | {names[j]} {ch.b}" for ch in changes]
    if c.unchecked:
        lines.append(f"instrument not checked for {', '.join(c.unchecked)} (a predictions file "
                     "records no run.json: only the dataset version and checksum match)")
    return lines


def interval_text(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{fmt(low)}, {fmt(high)}]"


def signed(value: float) -> str:
    return f"{value:+.3f}"


def gap_cells(gap: Gap) -> tuple[str, str]:
    """The difference cell (``+0.120 [0.050, 0.190]``) and the p cell (``0.003`` or
    ``0.412 n.s.``) of one gap."""
    r = gap.result
    if r is None:
        return "no common question", "-"
    ci = r.interval
    diff = signed(r.difference) + ("" if ci is None else f" [{signed(ci.low)}, {signed(ci.high)}]")
    mark = "" if gap.significant else f" {NOT_SIGNIFICANT}"
    return diff, f"{fmt(gap.p_holm)}{mark}"


def legend(sides: Sequence[Side]) -> str:
    """``A = bm25 (run id, date); B = ...``."""
    return "; ".join(
        f"{letter} = {s.name}, {s.run_date}"
        for letter, s in zip(letters(len(sides)), sides, strict=True)
    )


def comparison_table(c: Comparison) -> Table:
    """One row per slice: each side's value [interval] (n), then each gap (B-A, ...) and its
    corrected p-value."""
    names = letters(len(c.sides))
    columns = ["slice", *names]
    for gap in c.lines[0].gaps if c.lines else ():
        columns += [f"{names[gap.b]}-{names[gap.a]}", "p (Holm)"]
    rows = []
    for line in c.lines:
        cells = [line.slice]
        cells += [
            f"{fmt(f.value)}{interval_text(f.ci_low, f.ci_high)} n={f.n}" for f in line.figures
        ]
        for gap in line.gaps:
            cells += list(gap_cells(gap))
        rows.append(tuple(cells))
    tests = sorted({g.result.test for line in c.lines for g in line.gaps if g.result})
    nulls = "".join(f" {names[i]}: null, {why}." for i, why in c.null_reasons)
    caption = (
        f"{legend(c.sides)}. Dataset {c.dataset.version_label} sha256 {c.dataset.checksum}. "
        f"95% bootstrap intervals ({c.unit}, 1,000 draws); gaps paired over the questions both "
        f"scored ({', '.join(tests) or 'no test'}), p-values Holm-corrected over this table; "
        f"{NOT_SIGNIFICANT}: not significant at {c.alpha}.{nulls}"
    )
    return Table(f"{c.dataset.key}: {c.metric} per slice", tuple(columns), tuple(rows), caption)


def figure_dict(f: Figure) -> dict[str, Any]:
    return {
        "value": f.value, "n": f.n, "ci_low": f.ci_low, "ci_high": f.ci_high,
        "ci_unit": f.ci_unit, "ci_iterations": f.ci_iterations, "ci_seed": f.ci_seed,
    }  # fmt: skip


def gap_dict(gap: Gap, names: Sequence[str]) -> dict[str, Any]:
    r = gap.result
    out: dict[str, Any] = {"a": names[gap.a], "b": names[gap.b]}
    if r is None:
        return {**out, "n": 0, "difference": None, "null_reason": "no question scored by both"}
    ci = r.interval
    return {
        **out, "n": r.n, "difference": r.difference,
        "ci_low": ci.low if ci else None, "ci_high": ci.high if ci else None,
        "ci_unit": ci.unit if ci else None, "ci_iterations": ci.iterations if ci else None,
        "ci_seed": ci.seed if ci else None, "test": r.test, "p_value": round(r.p_value, 6),
        "p_holm": gap.p_holm, "significant": gap.significant,
        "discordant": list(r.discordant) if r.discordant else None,
    }  # fmt: skip


def side_dict(letter: str, s: Side) -> dict[str, Any]:
    return {"side": letter, "system": s.system, "run_id": s.run_id, "run_date": s.run_date,
            "folder": str(s.folder)}  # fmt: skip


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON (no clock time: the same folders give the same bytes)."""
    names = letters(len(c.sides))
    return {
        "dataset": c.dataset.key,
        "dataset_version": c.dataset.version_label,
        "dataset_sha256": c.dataset.checksum,
        "metric": c.metric,
        "sides": [side_dict(n, s) for n, s in zip(names, c.sides, strict=True)],
        "correction": CORRECTION,
        "alpha": c.alpha,
        "resampling_unit": c.unit,
        "instrument_changes": {
            names[j]: [{"field": ch.field, "a": ch.a, "b": ch.b} for ch in changes]
            for j, changes in enumerate(c.changes, start=1)
        },
        "instrument_unchecked": list(c.unchecked),
        "null_reasons": [{"side": names[i], "reason": why} for i, why in c.null_reasons],
        "slices": [
            {
                "slice": line.slice,
                "figures": {n: figure_dict(f) for n, f in zip(names, line.figures, strict=True)},
                "gaps": [gap_dict(g, names) for g in line.gaps],
            }
            for line in c.lines
        ],
    }


def default_metric(sides: Sequence[Side], headline: Sequence[MetricKey]) -> str:
    """The first headline figure that every side measured on some question (a value, not
    only nulls: LoCoMo's F1 is null in a retrieval run), else the first metric key every side
    measured, else the first they share; raises when they share none."""
    shared = set(sides[0].keys()).intersection(*(s.keys() for s in sides[1:]))
    if not shared:
        raise ValueError("the systems share no metric: nothing to compare")
    measured = {k for k in shared if all(s.values(k) for s in sides)}
    for pool in (measured, shared):
        for key in headline:
            if str(key) in pool:
                return str(key)
    return sorted(measured or shared)[0]
