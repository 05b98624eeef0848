"""The report's SVG renderer: well-formed, escaped, stable bytes, nulls never drawn as 0."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from recallbench.report import svg

NS = "{http://www.w3.org/2000/svg}"


def _bars() -> str:
    groups = [
        svg.BarGroup("all (n=4)", (svg.Bar(0, 0.5, 0.25, 0.75, "a: 0.5"), svg.Bar(1, None,
                                                                                 note="null: x"))),
        svg.BarGroup("<b>slice</b>", (svg.Bar(0, 1.0), svg.Bar(1, 0.0))),
    ]
    return svg.bar_chart("t <script>", ["sys & co", "two"], groups, "metric")


def test_bar_chart_is_well_formed_and_escaped() -> None:
    text = _bars()
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "<b>slice</b>" in labels and "sys & co" in labels  # escaped in the bytes, text here
    assert "<b>" not in text and "<script>" not in text


def test_a_null_bar_is_a_note_not_a_bar() -> None:
    root = ET.fromstring(_bars())
    rects = [r for r in root.iter(f"{NS}rect") if r.get("fill-opacity")]
    assert len(rects) == 3  # four bars, one null
    assert "null: x" in [t.text for t in root.iter(f"{NS}text")]


def test_same_input_same_bytes() -> None:
    assert _bars() == _bars()


def test_line_and_box_charts_are_well_formed() -> None:
    line = svg.Line(0, (svg.Point(66.0, 0.2, 0.1, 0.3, "k=1"), svg.Point(1679.0, 0.6, None, None,
                                                                          "k=20")))
    ET.fromstring(svg.line_chart("sweep", ["bm25"], [line], "chars", "recall", x_log=True))
    tiers = svg.line_chart("tiers", ["bm25"], [line], "tier", "recall",
                           x_ticks=[(66.0, "core"), (1679.0, "small")])
    assert "core" in [t.text for t in ET.fromstring(tiers).iter(f"{NS}text")]
    box = svg.Box(0, "bm25", 0.1, 0.2, 0.3, 0.5, 40.0, 9.0, "tip")
    assert "(log scale)" in svg.box_chart("latency", ["bm25"], [box], "ms")


def test_log_ticks_are_powers_of_ten() -> None:
    assert svg.Scale(50.0, 2000.0, log=True).ticks() == [100.0, 1000.0]
    assert svg.nice_step(0.17) == 0.2
