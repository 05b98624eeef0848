"""The floor in tables: what the do-nothing controls of a dataset score, beside the systems.

An answer floor is one table per dataset: a column per control (fixed answer), a row per answer
figure of the rule set and slice, then over all questions. A retrieval floor is one row of the
generic retrieval table (see :mod:`recallbench.report.summary`). Either is labelled a control:
its figures are computed from the dataset's questions at scoring time and are no rows of
``verdicts.jsonl`` or ``metrics.jsonl``.
"""

from __future__ import annotations

from collections.abc import Sequence

from recallbench.contracts import ALL, MetricRow
from recallbench.report.tables import Table, fmt, in_order
from recallbench.results.scored import Control, Floor

CONTROL_NOTE = (
    "A control, not a system: each column gives one fixed answer to every question, as an "
    "answer model's answer with nothing retrieved, scored by the {rules} rules through the one "
    "scorer (as `recallbench score` scores a predictions file); computed from the dataset's "
    "questions, written to no verdicts.jsonl or metrics.jsonl. n = questions scored; "
    "+m excl. = questions left out with a reason"
)


def control_cell(row: MetricRow | None) -> str:
    """``value (percent, n=denominator)``, ``+m excl.`` when questions were left out, ``null``
    when nothing could be scored, ``-`` when the figure does not exist for the control. The
    percent is the three-decimal value times 100 (``0.013 (1.3%, ...)``), so the two agree."""
    if row is None:
        return "-"
    if row.value is None:
        text = f"null (n={row.denominator})"
    else:
        shown = fmt(row.value)
        text = f"{shown} ({100 * float(shown):.1f}%, n={row.denominator})"
    if row.n_excluded:
        text += f" +{row.n_excluded} excl."
    return text


def _row(control: Control, slice_: str, metric: str) -> MetricRow | None:
    for r in control.metrics:
        if r.slice == slice_ and r.metric == metric and r.k is None:
            return r
    return None


def floor_table(floor: Floor, title: str | None = None, order: Sequence[str] = ()) -> Table:
    """An answer floor as a table: per slice (the benchmark's ``order`` first, then the rows'
    order) each per-slice figure, then
    every figure over all questions; the caption names the rules and every reason a figure over
    all questions is null or leaves questions out (by rule and count)."""
    controls = floor.controls
    metrics = {f.metric for f in floor.figures}
    slices = in_order(
        (
            r.slice
            for c in controls
            for r in c.metrics
            if r.metric in metrics and r.slice != ALL and r.k is None
        ),
        order,
    )
    rows: list[tuple[str, ...]] = []
    for slice_ in slices:
        for fig in floor.figures:
            if fig.per_slice:
                cells = tuple(control_cell(_row(c, slice_, fig.metric)) for c in controls)
                rows.append((slice_, fig.label, *cells))
    notes: list[str] = []
    for fig in floor.figures:
        found = [_row(c, ALL, fig.metric) for c in controls]
        rows.append((ALL, fig.label, *(control_cell(r) for r in found)))
        for r in found:
            if r is None:
                continue
            note = (
                f"{fig.label} null: {r.null_reason}"
                if r.value is None and r.null_reason
                else f"{fig.label} leaves out: {r.exclusion_rule}"
                if r.exclusion_rule
                else None
            )
            if note and note not in notes:
                notes.append(note)
    caption = "; ".join([CONTROL_NOTE.format(rules=floor.rules), *notes]) + "."
    return Table(
        title or f"{floor.dataset}: floor (says nothing): fixed answers, nothing retrieved",
        ("slice", "figure", *(c.label for c in controls)),
        tuple(rows),
        caption,
        key_columns=2,
    )
