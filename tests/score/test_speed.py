"""The Glasshouse speed score and the codes N1..N8 (recallbench.score.speed)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from recallbench.instruments import extract
from recallbench.score import speed as sp

GRID = [
    -5.0, 0.0, 0.5, 1.0, 10.0, 100.0, 249.9, 250.0, 250.1, 300.0, 400.0, 499.0, 500.0, 501.0,
    600.0, 750.0, 1000.0, 1500.0, 1999.0, 2000.0, 2001.0, 5000.0, 1e6,
]
TARGETS = [500.0, 50.0, 200.0, 0.0, -1.0]


def _official_speed_points():  # type: ignore[no-untyped-def]
    """Glasshouse's own ``speed_points``, extracted mechanically from the shared copy of
    ``glasshouse-v0.1/score.py`` (skips when that copy is absent)."""
    root = os.environ.get("RECALLBENCH_INSTRUMENTS")
    path = Path(root or "/nonexistent") / "glasshouse" / "glasshouse-v0.1" / "score.py"
    if not path.is_file():
        pytest.skip("glasshouse-v0.1/score.py is not in the shared instruments")
    module = extract.parse(path.read_text(encoding="utf-8"), str(path))
    code = extract.compile_statements([extract.function(module, "speed_points", str(path))], "sp")
    return extract.run(code, {"math": math})["speed_points"]


def test_speed_points_match_glasshouse_score_py() -> None:
    official = _official_speed_points()
    for target in TARGETS:
        for latency in [*GRID, None]:
            assert sp.speed_points(latency, target) == official(latency, target), (latency, target)


def test_speed_points_formula_as_the_issue_states_it() -> None:
    t = 500.0
    assert sp.speed_points(250.0, t) == 1.0  # r = 0.5
    assert sp.speed_points(100.0, t) == 1.0
    assert sp.speed_points(500.0, t) == 0.0  # r = 1
    assert sp.speed_points(2000.0, t) == -1.0  # r = 4
    assert sp.speed_points(9000.0, t) == -1.0
    assert sp.speed_points(1000.0, t) == pytest.approx(-0.5)  # slow side halved: -log2(2)/2
    assert sp.speed_points(353.5533905932738, t) == pytest.approx(0.5)  # fast side: -log2(r)
    for latency in GRID:
        p = sp.speed_points(latency, t)
        assert p is None or -1.0 <= p <= 1.0


def test_target_is_flow_limit_minus_ttft_with_a_floor() -> None:
    assert sp.speed_target() == 500.0
    assert sp.speed_target(1000.0, 800.0) == 200.0
    assert sp.speed_target(1000.0, 990.0) == 50.0
    assert sp.SpeedSettings(llm_ttft_ms=300.0).target_ms == 700.0
    assert sp.SpeedSettings(target_override_ms=120.0).target_ms == 120.0


def test_round_trip_is_subtracted_and_lifted_to_one_ms() -> None:
    s = sp.question_speed(320.0, 100.0, 500.0)
    assert s.remainder_ms == 220.0 and s.points == 1.0 and s.reason is None
    s = sp.question_speed(1100.0, 100.0, 500.0)
    assert s.remainder_ms == 1000.0 and s.points == pytest.approx(-0.5)
    # without a round trip the whole latency is the remainder
    assert sp.question_speed(1000.0, None, 500.0).remainder_ms == 1000.0


def test_remainder_below_zero_is_null_not_on_the_list() -> None:
    s = sp.question_speed(90.0, 100.0, 500.0)
    assert s.points is None
    assert s.reason is not None and s.reason.startswith("not on the list: remainder below zero")


def test_n3_round_trip_ninety_percent_of_total() -> None:
    s = sp.question_speed(100.0, 90.0, 500.0)
    assert s.points is None and s.rule == "N3"
    assert sp.question_speed(100.0, 89.0, 500.0).points == 1.0


def test_n5_no_latency_and_failed_counted_apart() -> None:
    assert sp.question_speed(None, None, 500.0).rule == "N5"
    failed = sp.question_speed(None, None, 500.0, failed=True)
    assert failed.points is None and failed.rule == "failed"


def test_n8_from_the_queued_flag() -> None:
    s = sp.question_speed(150.0, 10.0, 500.0, flags=("queued: saw HTTP 429",))
    assert s.points is None and s.rule == "N8"
    other = sp.question_speed(150.0, 10.0, 500.0, flags=("source_text_absent: x",))
    assert other.points == 1.0


def test_codes_before_measuring_n4_n5_n6_n7() -> None:
    assert sp.codes_before_measuring(in_process=True) == ("N7",)
    assert sp.codes_before_measuring(in_process=False) == ()
    assert sp.codes_before_measuring(in_process=False, retrieval_alone=False) == ("N4",)
    assert sp.codes_before_measuring(in_process=False, per_call_timing=False) == ("N5",)
    assert sp.codes_before_measuring(in_process=False, batch_only=True) == ("N6",)
    s = sp.question_speed(100.0, 1.0, 500.0, before=("N7",))
    assert s.points is None and s.rule == "N7"


def _net(tmp_path: Path, name: str, **data: object) -> sp.NetworkFile:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return sp.read_network_file(p)


def test_n1_cdn_ranges_file(tmp_path: Path) -> None:
    ranges = tmp_path / "cdn.txt"
    ranges.write_text("# a CDN\n104.16.0.0/13\n\n2606:4700::/32  # v6\n", encoding="utf-8")
    cdn = sp.read_cdn_ranges(ranges)
    edge = _net(tmp_path, "a.json", host="api.x", ip="104.18.2.3", location="seoul", median_ms=9)
    own = _net(tmp_path, "b.json", host="api.y", ip="203.0.113.7", location="seoul", median_ms=9)
    assert sp.codes_before_measuring(in_process=False, network_files=[edge], cdn_ranges=cdn) == (
        "N1",
    )
    assert sp.codes_before_measuring(in_process=False, network_files=[own], cdn_ranges=cdn) == ()
    bad = tmp_path / "bad.txt"
    bad.write_text("not a range\n", encoding="utf-8")
    with pytest.raises(sp.SpeedInputError, match="bad.txt:1"):
        sp.read_cdn_ranges(bad)


def test_n2_two_locations_barely_differ(tmp_path: Path) -> None:
    seoul = _net(tmp_path, "s.json", host="h", ip="198.51.100.1", location="seoul", median_ms=8.0)
    ohio = _net(tmp_path, "o.json", host="h", ip="198.51.100.1", location="ohio", median_ms=12.0)
    far = _net(tmp_path, "f.json", host="h", ip="198.51.100.1", location="ohio", median_ms=180.0)
    assert sp.codes_before_measuring(in_process=False, network_files=[seoul, ohio]) == ("N2",)
    assert sp.codes_before_measuring(in_process=False, network_files=[seoul, far]) == ()
    # one location twice decides nothing
    again = _net(tmp_path, "s2.json", host="h", location="seoul", median_ms=8.5)
    assert sp.codes_before_measuring(in_process=False, network_files=[seoul, again]) == ()


def test_network_file_without_median_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(sp.SpeedInputError, match="median"):
        _net(tmp_path, "x.json", host="h")


def test_summary_averages_never_sums_and_labels_codes() -> None:
    speeds = [
        sp.question_speed(100.0, None, 500.0),  # +1
        sp.question_speed(1000.0, None, 500.0),  # -0.5
        sp.question_speed(None, None, 500.0, failed=True),
        sp.question_speed(100.0, 95.0, 500.0),  # N3
    ]
    s = sp.summarise(speeds, 500.0)
    assert s.score == pytest.approx(0.25) and s.scored == 2 and s.failed == 1
    assert s.questions == 4 and s.not_measurable == {"N3": 1}
    assert s.label == "+0.25 (n=2)"
    only_n3 = sp.summarise([sp.question_speed(100.0, 95.0, 500.0)] * 3, 500.0)
    assert only_n3.score is None and only_n3.label == "speed not measurable, N3"
    assert sp.combined(40.0, 0.25, 5.0) == 41.25
    assert sp.combined(40.0, None, 5.0) is None


def test_every_code_has_a_test_that_produces_it() -> None:
    produced = {
        sp.codes_before_measuring(in_process=False, retrieval_alone=False)[0],
        sp.codes_before_measuring(in_process=False, per_call_timing=False)[0],
        sp.codes_before_measuring(in_process=False, batch_only=True)[0],
        sp.codes_before_measuring(in_process=True)[0],
        sp.question_speed(100.0, 95.0, 500.0).rule,
        sp.question_speed(100.0, 1.0, 500.0, flags=("queued: overlapped",)).rule,
    }
    # N1 and N2 need files: test_n1_cdn_ranges_file, test_n2_two_locations_barely_differ
    assert produced | {"N1", "N2"} == set(sp.CODES)


def _obs(qid: str, latency: float | None, network: float | None = None, **kw: object):  # type: ignore[no-untyped-def]
    from recallbench.contracts import Observation

    fields: dict[str, object] = dict(
        run_id="r", dataset="sample", dataset_version="sample@1", group="g", question_id=qid,
        system="mymem", k=10, attempt=1, observed_at="", latency_ms=latency, memories=(),
        chars_returned=0, outcome="usable", network_ms=network,
    )  # fmt: skip
    fields.update(kw)
    return Observation(**fields)  # type: ignore[arg-type]


def test_speed_rows_from_observations_n3_n8_negative_failed() -> None:
    from types import SimpleNamespace

    ds = SimpleNamespace(key="sample", version_label="sample@1", checksum="c")
    observations = [
        _obs("q1", 320.0, 100.0),  # +1
        _obs("q2", 1100.0, 100.0),  # -0.5
        _obs("q3", 100.0, 95.0),  # N3
        _obs("q4", 150.0, 10.0, flags=("queued: saw HTTP 429",)),  # N8
        _obs("q5", 90.0, 100.0),  # remainder below zero
        _obs("q6", None, None, outcome="error"),  # failed, apart
    ]
    settings = {"mymem": sp.SpeedSettings()}
    (row,) = sp.speed_rows(ds, observations, ["mymem"], "r", settings)  # type: ignore[arg-type]
    assert row.metric == sp.SPEED and row.value == pytest.approx(0.25)
    assert row.denominator == 2 and row.denominator_name == sp.SPEED_DENOMINATOR
    assert row.n_excluded == 4
    assert row.exclusion_rule == "N3 1, N8 1, not on the list 1, failed 1"
    assert sp.row_label(row) == "+0.25 (n=2)"
    only_n8 = sp.speed_rows(
        ds, [_obs("q", 10.0, 1.0, flags=("queued: overlapped another call to h:1",))],  # type: ignore[arg-type]
        ["mymem"], "r", settings,
    )[0]  # fmt: skip
    assert only_n8.value is None and sp.row_label(only_n8) == "speed not measurable, N8"
