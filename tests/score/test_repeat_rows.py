"""Rows over repeats: mean, median, sample sd and the two-sd tolerance from the per-repeat rows;
null repeats left out and named, never 0; fewer than three repeats: tolerance not measured."""

from __future__ import annotations

import statistics

import pytest

from recallbench.contracts import MetricRow, to_json_dict
from recallbench.score.repeats import (
    TOLERANCE_MIN_REPEATS,
    is_repeat_row,
    repeat_rows,
    split_repeat_metric,
)


def _row(repeat: int, value: float | None, slice_: str = "all", reason: str | None = None):
    return MetricRow(
        run_id="r", dataset="sample", dataset_version="sample@1.0", dataset_sha256="abc",
        system="bm25", slice=slice_, metric="evidence_recall", k=10, value=value,
        denominator_name="questions", denominator=40, n_excluded=0,
        null_reason=reason, ci_low=0.1 if value is not None else None,
        ci_high=0.9 if value is not None else None, repeat=repeat,
    )  # fmt: skip


def _stats(rows: list[MetricRow]) -> dict[str, MetricRow]:
    return {split_repeat_metric(r.metric)[1]: r for r in rows}  # type: ignore[misc]


def test_a_single_run_has_no_rows_over_repeats() -> None:
    assert repeat_rows([_row(0, 0.5)], 1) == []


def test_mean_median_sd_and_tolerance_of_three_repeats() -> None:
    values = [0.5, 0.6, 0.9]
    got = _stats(repeat_rows([_row(i, v) for i, v in enumerate(values)], 3))
    assert set(got) == {"repeat_mean", "repeat_median", "repeat_sd", "repeat_tolerance"}
    assert got["repeat_mean"].value == pytest.approx(statistics.fmean(values), abs=1e-6)
    assert got["repeat_median"].value == 0.6
    sd = statistics.stdev(values)
    assert got["repeat_sd"].value == pytest.approx(sd, abs=1e-6)
    assert got["repeat_tolerance"].value == pytest.approx(2 * sd, abs=1e-6)
    for r in got.values():
        assert r.denominator_name == "repeats" and r.denominator == 3 and r.n_excluded == 0
        assert r.ci_low is None and r.ci_high is None  # the spread is the sd
        assert r.k == 10 and r.slice == "all" and r.system == "bm25"
        assert "repeat" not in to_json_dict(r)  # over every repeat: the suffix says so
        assert is_repeat_row(r)


def test_below_three_repeats_the_tolerance_is_not_measured() -> None:
    assert TOLERANCE_MIN_REPEATS == 3
    got = _stats(repeat_rows([_row(0, 0.5), _row(1, 0.7)], 2))
    assert got["repeat_sd"].value is not None
    assert got["repeat_tolerance"].value is None
    assert got["repeat_tolerance"].null_reason.startswith("not measured")


def test_a_null_repeat_is_left_out_and_named_never_zero() -> None:
    rows = [_row(0, 0.5), _row(1, None, reason="ingest failed"), _row(2, 0.7), _row(3, 0.9)]
    got = _stats(repeat_rows(rows, 4))
    assert got["repeat_mean"].value == pytest.approx(0.7, abs=1e-6)  # not (0.5+0+0.7+0.9)/4
    assert got["repeat_mean"].denominator == 3 and got["repeat_mean"].n_excluded == 1
    assert got["repeat_mean"].exclusion_rule == "null_in_repeat: repeat(s) 1"


def test_a_figure_null_in_every_repeat_stays_null_with_its_reason() -> None:
    rows = [_row(i, None, reason="evidence_unknown: no ids") for i in range(3)]
    got = _stats(repeat_rows(rows, 3))
    for stat in ("repeat_mean", "repeat_median", "repeat_sd"):
        assert got[stat].value is None
        assert "evidence_unknown: no ids" in got[stat].null_reason
    assert got["repeat_mean"].denominator == 0


def test_one_group_of_rows_per_figure_and_slice_in_first_seen_order() -> None:
    rows = [_row(r, 0.1 * (r + 1), s) for r in range(3) for s in ("all", "fact")]
    out = repeat_rows(rows, 3)
    assert [(r.slice, split_repeat_metric(r.metric)[1]) for r in out][:5] == [
        ("all", "repeat_mean"), ("all", "repeat_median"), ("all", "repeat_sd"),
        ("all", "repeat_tolerance"), ("fact", "repeat_mean"),
    ]  # fmt: skip
    assert repeat_rows(out + rows, 3) == out  # rows over repeats are never summarised again


def test_split_repeat_metric() -> None:
    assert split_repeat_metric("gh_dry:weighted:repeat_sd") == ("gh_dry:weighted", "repeat_sd")
    assert split_repeat_metric("gh_dry:weighted") == ("gh_dry:weighted", None)
