"""Repeats and subsets in the summary (``run --repeats N``, ``--limit/--groups/--questions-from``).

The tables of a run with several repeats show repeat 0 (the records of a single run), and one
table per dataset shows the headline figures over every repeat: mean, median, standard
deviation and the reproduction tolerance (two standard deviations, from three repeats; below
that "not measured"), each row of ``metrics.jsonl`` (:mod:`recallbench.score.repeats`). A
subset run says so in the title of every table; every run says ``full`` or which subset in its
summary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from recallbench.contracts import ALL, MetricRow
from recallbench.report.tables import Table, fmt
from recallbench.results.scored import ScoredRun
from recallbench.score.repeats import REPEAT_STATS, TOLERANCE_MIN_REPEATS, is_repeat_row
from recallbench.spec import subset_label


def first_repeat(scored: ScoredRun) -> ScoredRun:
    """The run as the per-repeat tables read it: the verdicts and rows of repeat 0 (``scored``
    itself for a single run, whose records are all repeat 0)."""
    if scored.spec.repeats <= 1:
        return scored
    return dataclasses.replace(
        scored,
        verdicts=tuple(v for v in scored.verdicts if v.repeat == 0),
        metrics=tuple(r for r in scored.metrics if r.repeat == 0 and not is_repeat_row(r)),
    )


def scope_line(scored: ScoredRun) -> str:
    """``questions: full run`` or ``questions: subset: ...`` (with the questions asked), and
    the repeats when more than one."""
    spec = scored.spec
    asked = ", ".join(f"{d.key} {d.questions}" for d in scored.manifest.datasets)
    if getattr(spec, "subset", None) is None:
        line = f"questions: full run ({asked})"
    else:
        line = f"questions: {subset_label(spec)} ({asked}): not the benchmark's full score"
    if spec.repeats > 1:
        tolerance = (
            "reproduction tolerance: two standard deviations per slice"
            if spec.repeats >= TOLERANCE_MIN_REPEATS
            else f"reproduction tolerance not measured (fewer than {TOLERANCE_MIN_REPEATS})"
        )
        line += (
            f"; repeats: {spec.repeats} (tables show repeat 0; figures over the repeats in "
            f"the repeats table; {tolerance})"
        )
    return line


def label_titles(tables: Sequence[Table], scored: ScoredRun) -> list[Table]:
    """Every table title of a subset run followed by ``[subset: ...]``; unchanged otherwise."""
    if getattr(scored.spec, "subset", None) is None:
        return list(tables)
    label = subset_label(scored.spec)
    return [dataclasses.replace(t, title=f"{t.title} [{label}]") for t in tables]


def _figures(scored: ScoredRun, dataset_key: str) -> list[tuple[str, int | None]]:
    """The figures the repeats table shows: evidence recall at the largest k, then the rule
    set's answer figures (those the floor names), where the run has rows for them."""
    wanted: list[tuple[str, int | None]] = [("evidence_recall", scored.spec.k_max)]
    floor = scored.floors.get(dataset_key)
    if floor is not None:
        wanted += [(f.metric, None) for f in floor.figures]
    have = {(r.metric, r.k) for r in scored.metrics if r.dataset == dataset_key}
    return [w for w in dict.fromkeys(wanted) if (f"{w[0]}:repeat_mean", w[1]) in have]


def repeats_table(scored: ScoredRun, dataset_key: str) -> Table | None:
    """Per system, slice and headline figure: the figures over the run's repeats (None for a
    single run)."""
    n = scored.spec.repeats
    if n <= 1:
        return None
    idx: dict[tuple[str, str, str, int | None], MetricRow] = {
        (r.system, r.slice, r.metric, r.k): r for r in scored.metrics if r.dataset == dataset_key
    }
    slices = list(
        dict.fromkeys([ALL, *(r.slice for r in scored.metrics if r.dataset == dataset_key)])
    )
    rows: list[tuple[str, ...]] = []
    for metric, k in _figures(scored, dataset_key):
        label = metric if k is None else f"{metric}@{k}"
        for system in scored.systems:
            for s in slices:
                cells = [idx.get((system, s, f"{metric}:{stat}", k)) for stat in REPEAT_STATS]
                if cells[0] is None:
                    continue
                rows.append(
                    (
                        system,
                        s,
                        label,
                        *(fmt(c.value) if c is not None else "-" for c in cells),
                        str(cells[0].denominator),
                    )
                )
    if not rows:
        return None
    caption = (
        f"Over {n} repeats, each scored on its own (rows ':repeat_mean', ':repeat_median', "
        "':repeat_sd', ':repeat_tolerance' of metrics.jsonl); sd is the sample standard "
        "deviation; tolerance = 2 sd, null (not measured) below "
        f"{TOLERANCE_MIN_REPEATS} repeats; n = repeats with a value (a repeat where the "
        "figure is null is left out, never counted as 0)."
    )
    return Table(
        f"{dataset_key}: over {n} repeats",
        ("system", "slice", "figure", "mean", "median", "sd", "tolerance", "n"),
        tuple(rows),
        caption,
    )
