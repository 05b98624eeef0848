"""Repeats and subsets in the report layer: the tables and figures read repeat 0, the table
over repeats reads the rows over repeats, and a subset run's titles name the subset."""

from __future__ import annotations

from pathlib import Path

from recallbench.pipeline import start_run, tables
from recallbench.report.records import read_run_records
from recallbench.report.repeats import first_repeat, scope_line
from recallbench.spec import RunSpec, SubsetSpec


def test_tables_and_figures_read_repeat_zero_and_name_the_subset(tmp_path: Path) -> None:
    spec = RunSpec(
        systems=("bm25", "random"), datasets=("sample",), k=(1, 5), repeats=2,
        subset=SubsetSpec(kind="limit", limit=8, seed=0),
    )  # fmt: skip
    scored = start_run(spec, tmp_path / "data", tmp_path / "out")
    assert {r.repeat for r in scored.metrics} == {0, 1}
    view = first_repeat(scored)
    assert {v.repeat for v in view.verdicts} == {0} and len(view.verdicts) == 16
    assert all(":repeat_" not in r.metric and r.repeat == 0 for r in view.metrics)
    shown = tables(scored)
    assert all(t.title.endswith("[subset: limit 8 (seed 0)]") for t in shown)
    over = [t for t in shown if t.title.startswith("sample: over 2 repeats")]
    assert over and {row[0] for row in over[0].rows} == {"bm25", "random"}
    assert scope_line(scored).startswith("questions: subset: limit 8 (seed 0) (sample 8)")
    assert "reproduction tolerance not measured" in scope_line(scored)
    records = read_run_records(scored.run_dir)
    assert records.metrics == view.metrics  # the report's figures: repeat 0, as the tables
    assert len(records.verdicts) == 32  # the per-question table keeps every repeat
