"""Tables as data (title, columns, rows, caption), and the few ways a figure becomes a cell.

The console, ``summary.md`` (and later HTML) render the same :class:`Table` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from recallbench.contracts import ALL, MetricRow

RowIndex = Mapping[tuple[str, str, str, int | None], MetricRow]
"""Metric rows of one dataset by (system, slice, metric, k)."""


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    breaks: tuple[int, ...] = ()
    """Column indices where a new group of columns starts (the retrieval table's cost columns
    after its ranking ones): a table too wide for the console is split there first
    (:func:`recallbench.report.layout.fit_to_width`)."""
    key_columns: int = 1
    """Leading columns that name a row (``slice`` and ``figure`` in a floor table): every part
    of a split table repeats them."""


def fmt(value: float | None, digits: int = 3) -> str:
    return "null" if value is None else f"{value:.{digits}f}"


def cell(row: MetricRow | None, excluded: str = "excl.") -> str:
    """``value (n=denominator)``, with ``+m <excluded>`` when questions were left out."""
    if row is None:
        return "-"
    text = f"{fmt(row.value)} (n={row.denominator})"
    if row.n_excluded:
        text += f" +{row.n_excluded} {excluded}"
    return text


def in_order(slices: Iterable[str], order: Sequence[str]) -> list[str]:
    """``slices`` once each: those the benchmark orders (``order``, its own order of its
    slices, e.g. LoCoMo's categories 1-5) first, in that order, then the rest as they came."""
    present = list(dict.fromkeys(slices))
    known = set(order)
    return [s for s in order if s in present] + [s for s in present if s not in known]


def index_rows(rows: Iterable[MetricRow], dataset_key: str) -> dict[tuple, MetricRow]:
    """One dataset's rows by (system, slice, metric, k)."""
    return {(r.system, r.slice, r.metric, r.k): r for r in rows if r.dataset == dataset_key}


def exclusion_caption(
    idx: RowIndex, systems: Sequence[str], metric: str, k: int | None, lead: str
) -> str:
    """``lead``, then each system's exclusion rules for ``metric`` over every question."""
    parts = [lead]
    for s in systems:
        row = idx.get((s, ALL, metric, k))
        if row is not None and row.exclusion_rule:
            parts.append(f"{s}: {row.exclusion_rule}")
    return "; ".join(parts) + "."


def markdown_table(t: Table) -> str:
    """A table as Markdown: a ``###`` title, the pipe table, then its caption."""
    lines = [
        f"### {t.title}",
        "",
        "| " + " | ".join(t.columns) + " |",
        "|" + "|".join("---" for _ in t.columns) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in t.rows]
    if t.caption:
        lines += ["", t.caption]
    return "\n".join(lines) + "\n"
