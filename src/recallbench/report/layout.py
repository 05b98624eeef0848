"""Tables that fit the console: a :class:`~recallbench.report.tables.Table` wider than the
console is split into parts that each fit, never cut.

A cell is never shortened: a part holds whole columns, each as wide as its widest cell or
header. Parts are cut at the table's ``breaks`` first (ranking columns apart from cost
columns), and at single columns only when a group alone is too wide. Every part repeats the
table's key columns (the row label), says which part it is, and the last one carries the
caption.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from recallbench.report.tables import Table

BORDER = 1
"""Characters of the vertical rule before each column (and one after the last)."""
PADDING = 2
"""Characters of padding around a cell's text (one each side)."""


def column_widths(t: Table) -> list[int]:
    """Each column's natural width: its widest cell or header line, in characters."""
    widths = [max((len(x) for x in c.split("\n")), default=0) for c in t.columns]
    for row in t.rows:
        for i, text in enumerate(row[: len(widths)]):
            widths[i] = max(widths[i], max((len(x) for x in text.split("\n")), default=0))
    return widths


def table_width(widths: Sequence[int]) -> int:
    """Characters a boxed table of columns this wide takes."""
    return sum(w + PADDING + BORDER for w in widths) + BORDER


def _keys(t: Table) -> list[int]:
    return list(range(max(1, min(t.key_columns, len(t.columns) - 1))))


def _groups(t: Table) -> list[list[int]]:
    """The columns after the key columns in groups, cut at ``t.breaks`` (one group when there
    are none)."""
    first = len(_keys(t))
    cuts = sorted({b for b in t.breaks if first < b < len(t.columns)})
    edges = [first, *cuts, len(t.columns)]
    return [list(range(a, b)) for a, b in zip(edges, edges[1:], strict=False) if a < b]


def plan_parts(t: Table, width: int) -> list[list[int]]:
    """Column indices of each part (each starting with the key columns) so that every part
    fits ``width`` where it can; a column too wide even beside the keys gets a part of its
    own."""
    widths = column_widths(t)
    if len(t.columns) <= 1 or table_width(widths) <= width:
        return [list(range(len(t.columns)))]
    keys = _keys(t)

    def fits(cols: Sequence[int]) -> bool:
        return table_width([*(widths[k] for k in keys), *(widths[c] for c in cols)]) <= width

    parts: list[list[int]] = []
    current: list[int] = []
    for group in _groups(t):
        if fits([*current, *group]):
            current.extend(group)
            continue
        if current and fits(group):
            parts.append(current)
            current = list(group)
            continue
        for c in group:  # the group alone is too wide: cut it at single columns
            if current and not fits([*current, c]):
                parts.append(current)
                current = []
            current.append(c)
    if current:
        parts.append(current)
    return [[*keys, *p] for p in parts]


def fit_to_width(t: Table, width: int) -> list[Table]:
    """``t`` as one table if it fits ``width`` characters, else as parts that do (see the
    module doc); ``(part i of n)`` ends each part's title and the caption goes on the last."""
    parts = plan_parts(t, width)
    if len(parts) == 1:
        return [t]
    out = []
    for i, cols in enumerate(parts, start=1):
        out.append(
            dataclasses.replace(
                t,
                title=f"{t.title} (part {i} of {len(parts)})",
                columns=tuple(t.columns[c] for c in cols),
                rows=tuple(tuple(row[c] for c in cols) for row in t.rows),
                caption=t.caption if i == len(parts) else "",
                breaks=(),
            )
        )
    return out
