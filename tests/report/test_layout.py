"""Tables split to fit a width: whole cells only, key columns repeated, breaks first."""

from __future__ import annotations

from recallbench.report.layout import column_widths, fit_to_width, table_width
from recallbench.report.tables import Table, in_order


def _wide(n: int = 12, breaks: tuple[int, ...] = ()) -> Table:
    columns = ("system", *(f"metric number {i}" for i in range(n)))
    rows = tuple(
        (name, *(f"0.{i:03d} (n=1547)" for i in range(n))) for name in ("bm25", "a-long-system")
    )
    return Table("wide", columns, rows, "the caption", breaks=breaks)


def _cells(parts: list[Table], keys: int = 1) -> list[list[str]]:
    """The rows of a split table joined back: keys once, then every part's other cells."""
    joined = [list(r) for r in parts[0].rows]
    for p in parts[1:]:
        for whole, row in zip(joined, p.rows, strict=True):
            assert whole[:keys] == list(row[:keys])
            whole.extend(row[keys:])
    return joined


def test_a_table_that_fits_is_left_alone() -> None:
    t = _wide(2)
    assert fit_to_width(t, 200) == [t]


def test_parts_fit_and_hold_every_cell_whole() -> None:
    t = _wide()
    assert table_width(column_widths(t)) > 80
    parts = fit_to_width(t, 80)
    assert len(parts) > 1
    for i, p in enumerate(parts, start=1):
        assert table_width(column_widths(p)) <= 80
        assert p.columns[0] == "system" and p.title == f"wide (part {i} of {len(parts)})"
        assert p.caption == ("the caption" if i == len(parts) else "")
    assert _cells(parts) == [list(r) for r in t.rows]
    assert ["system", *(c for p in parts for c in p.columns[1:])] == list(t.columns)


def test_breaks_are_cut_first() -> None:
    t = _wide(6, breaks=(4,))
    parts = fit_to_width(t, 80)
    assert [p.columns[1:] for p in parts] == [t.columns[1:4], t.columns[4:]]


def test_key_columns_repeat_and_a_too_wide_column_gets_its_own_part() -> None:
    rows = (("all", "dry plain", "x" * 70, "0.1"), ("all", "dry weighted", "y" * 70, "0.2"))
    t = Table("floor", ("slice", "figure", "long", "short"), rows, key_columns=2)
    parts = fit_to_width(t, 80)
    assert all(p.columns[:2] == ("slice", "figure") for p in parts)
    assert _cells(parts, keys=2) == [list(r) for r in rows]


def test_slices_follow_the_benchmark_s_order_then_the_rest() -> None:
    order = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")
    seen = ["temporal", "single-hop", "extra", "multi-hop", "temporal", "adversarial"]
    assert in_order(seen, order) == ["multi-hop", "temporal", "single-hop", "adversarial", "extra"]
    assert in_order(seen, ()) == ["temporal", "single-hop", "extra", "multi-hop", "adversarial"]
