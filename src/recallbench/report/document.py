"""``recallbench report RUN...``: ``report.md`` and one self-contained ``report.html``.

Both are drawn from the records of the runs (:mod:`recallbench.report.records`) through the
same figures (:mod:`recallbench.report.figures`): per-slice bars with intervals for every
system, the tier curve where several tiers of a benchmark ran, evidence recall against the
characters returned per question (a point per k), latency distributions, each run's results
card, and (in the HTML) a table of every question with filters that opens each one.

The HTML makes no request of any kind: charts are pre-rendered inline SVG
(:mod:`recallbench.report.svg`), the style and the small filter script are inline, and a
Content-Security-Policy forbids anything else. Every text of a run (memories, answers, judge
replies, names) is untrusted: it reaches the page escaped, or as JSON the script writes with
``textContent``. Neither file holds the time it was written: the same runs give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from recallbench.contracts import MetricRow
from recallbench.report import svg
from recallbench.report.figures import (
    Latency,
    Series,
    SliceFigure,
    dataset_keys,
    figures_of,
    latencies,
    series_of,
    slice_figures,
    sweeps,
    tier_curves,
)
from recallbench.report.questions import VERDICTS, question_data, verdict_counts
from recallbench.report.records import ReportHints, RunRecords
from recallbench.report.tables import fmt
from recallbench.results.store import write_text

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
NO_ROW = "not measured"
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""No fetch, image, font, frame or form can leave the page, even one a bug let through."""


class Report:
    """The figures of one report, computed once and rendered twice."""

    def __init__(self, runs: Sequence[RunRecords], hints: ReportHints | None = None) -> None:
        hints = hints or ReportHints()
        self.runs = tuple(runs)
        self.series: list[Series] = series_of(runs)
        self.labels = [s.label for s in self.series]
        self.datasets = dataset_keys(runs)
        self.figures = {k: figures_of(runs, k, hints) for k in self.datasets}
        self.slices = slice_figures(runs, self.series, hints)
        self.sweeps = sweeps(runs, self.series)
        self.tiers = tier_curves(runs, self.series, hints)
        self.latencies = latencies(runs, self.series)
        self.questions = question_data(runs, self.series, self.figures)
        self.counts = verdict_counts(self.questions["rows"])


def interval(row: MetricRow | None) -> str:
    """``value [low, high] (n=N)``, ``null (reason)``, or ``not measured`` for no row (the
    run did not compute that figure)."""
    if row is None:
        return NO_ROW
    if row.value is None:
        return f"null ({reason_code(row.null_reason)})"
    ci = f" [{fmt(row.ci_low)}, {fmt(row.ci_high)}]" if row.ci_low is not None else ""
    return f"{fmt(row.value)}{ci} (n={row.denominator})"


def reason_code(reason: str | None) -> str:
    """The code of a null reason (``ignores_k`` of ``ignores_k: naive returns...``), which
    tables show; the whole sentence is in the row and in the HTML's tooltips."""
    if not reason:
        return "no reason recorded"
    return reason.split(":", 1)[0].strip()


def _tip(label: str, row: MetricRow | None) -> str:
    if row is None:
        return f"{label}: no row"
    why = f" ({row.null_reason})" if row.value is None and row.null_reason else ""
    return f"{label}: {interval(row)}{why}; run {row.run_id}; {row.dataset_version}"


def provenance(runs: Sequence[RunRecords]) -> list[tuple[str, ...]]:
    """A row per run and dataset: run id, run date, status, dataset, version and checksum."""
    out = []
    for run in runs:
        m = run.manifest
        for d in m.datasets:
            pinned = "" if d.pinned else " (NOT the pinned release)"
            out.append((m.run_id, m.started_at, m.status, d.version_label,
                        f"{d.checksum}{pinned}", f"{d.questions}", part_of(run),
                        ", ".join(m.spec.systems)))
    return out


def part_of(run: RunRecords) -> str:
    """``full``, or the subset's label (``subset: limit 50 (seed 0)``), and the repeats."""
    spec = run.manifest.spec
    subset = getattr(spec, "subset", None)
    repeats = int(getattr(spec, "repeats", 1) or 1)
    part = "full" if subset is None else str(getattr(subset, "label", "subset"))
    return part if repeats == 1 else f"{part}, {repeats} repeats"


PROVENANCE_COLUMNS = (
    "run", "run date", "status", "dataset", "sha256", "questions", "part", "systems",
)  # fmt: skip
"""``sha256`` is the dataset checksum ``run.json`` records for the data the run read."""


def slice_caption(fig: SliceFigure) -> str:
    return (
        f"{fig.figure.label} ({fig.figure.key}) per slice, from metrics.jsonl: each bar is a row, "
        "with its bootstrap interval as a whisker where the row carries one and its denominator "
        "(n); null rows are written, not drawn."
    )


SWEEP_CAPTION = (
    "evidence recall@k (metrics.jsonl, over all questions) against the characters of the first "
    "k memories' texts, averaged over every question asked (counted from observations.jsonl); "
    "a system that ignores k is one point: everything it returned (chars_returned) against "
    "evidence_recall_all_returned."
)
TIER_CAPTION = (
    "the first figure over all questions of each tier (rows of metrics.jsonl); tiers hold "
    "different question sets, the benchmark's tier view over the questions they share is in "
    "summary.md."
)
VERDICT_CAPTION = (
    "each question's verdict is read from the first figure charted above that its verdict "
    "holds (right 1, wrong 0, partial between, unscored null, failed: the search failed, "
    "scored as a miss); every question is in report.html and verdicts.jsonl."
)
LATENCY_CAPTION = (
    "search latency over usable searches (observations.jsonl): whiskers min to max, box p25 to "
    "p75, black bar the median, coloured tick p95; a run with a speed sample (--speed-sample) "
    "also shows the searches of that sample, made alone. Wall-clock figures: they differ "
    "between two runs of one spec."
)


# ---------------------------------------------------------------- Markdown


def _md_cell(text: str) -> str:
    """A table cell: HTML escaped (a Markdown viewer renders raw HTML, and names and slices
    come from untrusted data), pipes escaped, one line."""
    return svg.esc(text).replace("|", "\\|").replace("\n", " ")


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(_md_cell(c) for c in columns) + " |",
           "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def render_markdown(report: Report) -> str:
    lines = ["# recallbench report", ""]
    lines += _md_table(PROVENANCE_COLUMNS, provenance(report.runs))
    for key in report.datasets:
        lines += [f"## {key}", ""]
        for fig in (f for f in report.slices if f.dataset == key):
            labels = [report.labels[c.series] for c in fig.cells[0]]
            lines += [f"### {fig.figure.label} by slice", "", slice_caption(fig), ""]
            rows = [
                [s, *(interval(c.row) for c in cells)] for s, cells in zip(
                    fig.slices, fig.cells, strict=True)
            ]
            lines += _md_table(["slice", *labels], rows)
        sweeps = [s for s in report.sweeps if s.dataset == key]
        if sweeps:
            lines += ["### evidence recall against characters returned", "", SWEEP_CAPTION, ""]
            rows = [
                [report.labels[s.series], "all returned" if p.k is None else str(p.k),
                 fmt(p.chars, 0), interval(p.row)]
                for s in sweeps for p in s.points
            ]
            lines += _md_table(["system", "k", "chars/q", "evidence recall"], rows)
        lat = [x for x in report.latencies if x.dataset == key]
        if lat:
            lines += ["### search latency (ms)", "", LATENCY_CAPTION, ""]
            rows = [
                [_latency_label(report, x), str(x.n), *(fmt(v, 2) for v in
                 (x.low, x.q1, x.median, x.q3, x.p95, x.high))]
                for x in lat
            ]
            lines += _md_table(["system", "n", "min", "p25", "p50", "p75", "p95", "max"], rows)
        counts = [(i, c) for (d, i), c in sorted(report.counts.items()) if d == key and i >= 0]
        if counts:
            lines += ["### verdicts per question", "", VERDICT_CAPTION, ""]
            rows = [[report.labels[i], *(str(c[v]) for v in VERDICTS), str(sum(c.values()))]
                    for i, c in counts]
            lines += _md_table(["system", *VERDICTS, "questions"], rows)
    for curve_name in dict.fromkeys(c.name for c in report.tiers):
        curves = [c for c in report.tiers if c.name == curve_name]
        lines += [f"## {curve_name}: {curves[0].figure.label} by tier", "", TIER_CAPTION, ""]
        tiers = [p.variant for p in curves[0].points]
        rows = [[report.labels[c.series], *(interval(p.row) for p in c.points)] for c in curves]
        lines += _md_table(["system", *tiers], rows)
    for run in report.runs:
        lines += [f"## results card of {run.run_id}", ""]
        if run.card is None:
            lines += ["not written: this folder has no card.md", ""]
        else:
            lines += [run.card.rstrip("\n"), ""]
    lines.append(
        "Every figure is a row of the named run's metrics.jsonl or is counted from its "
        "observations.jsonl, as its caption says; nothing here was typed in."
    )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- HTML


def _h(text: object) -> str:
    return svg.esc(text)


def _html_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_h(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _slice_svg(report: Report, fig: SliceFigure) -> str:
    groups = []
    for s, cells in zip(fig.slices, fig.cells, strict=True):
        bars = tuple(
            svg.Bar(
                c.series,
                c.row.value if c.row else None,
                c.row.ci_low if c.row else None,
                c.row.ci_high if c.row else None,
                _tip(f"{report.labels[c.series]}, {s}", c.row),
                NO_ROW if c.row is None else f"null: {reason_code(c.row.null_reason)}",
            )
            for c in cells
        )
        n = next((c.row.denominator for c in cells if c.row is not None), None)
        groups.append(svg.BarGroup(s if n is None else f"{s} (n={n})", bars))
    hi = max([1.0] + [c.row.ci_high or c.row.value or 0.0 for cs in fig.cells for c in cs
                      if c.row is not None])
    return svg.bar_chart(f"{fig.dataset}: {fig.figure.label} by slice", report.labels, groups,
                         fig.figure.key, (0.0, hi))


def _sweep_svg(report: Report, key: str) -> str:
    lines = []
    for s in (x for x in report.sweeps if x.dataset == key):
        points = tuple(
            svg.Point(p.chars, p.row.value if p.row else None,
                      p.row.ci_low if p.row else None, p.row.ci_high if p.row else None,
                      "all" if p.k is None else f"k={p.k}",
                      f"{report.labels[s.series]}, k={p.k or 'all'}: {fmt(p.chars, 0)} chars/q, "
                      f"{interval(p.row)}")
            for p in s.points
        )
        lines.append(svg.Line(s.series, points))
    return svg.line_chart(f"{key}: evidence recall against characters returned", report.labels,
                          lines, "characters returned per question", "evidence recall",
                          x_log=True)


def _tier_svg(report: Report, name: str) -> str:
    curves = [c for c in report.tiers if c.name == name]
    tiers = list(dict.fromkeys(p.variant for c in curves for p in c.points))
    lines = [
        svg.Line(c.series, tuple(
            svg.Point(float(tiers.index(p.variant)), p.row.value if p.row else None,
                      p.row.ci_low if p.row else None, p.row.ci_high if p.row else None,
                      "", f"{report.labels[c.series]}, {p.variant}: {interval(p.row)}")
            for p in c.points
        ))
        for c in curves
    ]
    return svg.line_chart(f"{name}: {curves[0].figure.label} by tier", report.labels, lines,
                          "tier", curves[0].figure.key,
                          x_ticks=[(float(i), t) for i, t in enumerate(tiers)])


def _latency_label(report: Report, x: Latency) -> str:
    return report.labels[x.series] + (f" ({x.part})" if x.part else "")


def _latency_svg(report: Report, key: str) -> str:
    boxes = [
        svg.Box(x.series, _latency_label(report, x), x.low, x.q1, x.median, x.q3, x.high, x.p95,
                f"{_latency_label(report, x)}: n={x.n}, p50 {fmt(x.median, 2)} ms, "
                f"p95 {fmt(x.p95, 2)} ms, max {fmt(x.high, 2)} ms")
        for x in report.latencies if x.dataset == key
    ]
    return svg.box_chart(f"{key}: search latency", report.labels, boxes, "ms")


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{_h(caption)}</figcaption></figure>"


def script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` can close it or open
    a comment, whatever the texts hold."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for ch, sub in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, sub)
    return text


def _asset(name: str) -> str:
    return resources.files("recallbench.report").joinpath("assets", name).read_text("utf-8")


def render_html(report: Report) -> str:
    parts = [
        "<h1>recallbench report</h1>",
        _html_table(PROVENANCE_COLUMNS, provenance(report.runs)),
    ]
    nav = []
    for key in report.datasets:
        anchor = f"ds-{report.datasets.index(key)}"
        nav.append(f'<a href="#{anchor}">{_h(key)}</a>')
        parts.append(f'<h2 id="{anchor}">{_h(key)}</h2>')
        for fig in (f for f in report.slices if f.dataset == key):
            parts.append(_figure(_slice_svg(report, fig), slice_caption(fig)))
        if any(s.dataset == key for s in report.sweeps):
            parts.append(_figure(_sweep_svg(report, key), SWEEP_CAPTION))
        if any(x.dataset == key for x in report.latencies):
            parts.append(_figure(_latency_svg(report, key), LATENCY_CAPTION))
    for name in dict.fromkeys(c.name for c in report.tiers):
        parts.append(f"<h2>{_h(name)}: by tier</h2>")
        parts.append(_figure(_tier_svg(report, name), TIER_CAPTION))
    for run in report.runs:
        parts.append(f"<h2>results card of {_h(run.run_id)}</h2>")
        parts.append(
            "<p>not written: this folder has no card.md</p>" if run.card is None
            else f'<pre class="card">{_h(run.card)}</pre>'
        )
    parts.append(
        '<h2 id="questions">every question</h2><p>Filter, then click a line to open the '
        f"question: what came back, the answer, the judge's verdict; {_h(VERDICT_CAPTION)}</p>"
        '<div id="filters"></div><p id="shown"></p><table id="q"><thead><tr><th>dataset</th>'
        "<th>question</th><th>system</th><th>slice</th><th>verdict</th><th>value</th></tr>"
        "</thead><tbody></tbody></table>"
        "<noscript><p>The question table is drawn by the page's inline script: allow it, or "
        "read verdicts.jsonl.</p></noscript>"
    )
    nav.append('<a href="#questions">every question</a>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>recallbench report</title>"
        f"<style>{_asset('report.css')}</style></head><body>"
        f"<nav>{' · '.join(nav)}</nav><main>{''.join(parts)}</main>"
        '<script type="application/json" id="data">'
        f"{script_json(report.questions)}</script>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def write_report(
    runs: Sequence[RunRecords], out_dir: Path, hints: ReportHints | None = None
) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` of ``runs`` into ``out_dir``; their paths."""
    report = Report(runs, hints)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, html = out_dir / REPORT_MD, out_dir / REPORT_HTML
    write_text(md, render_markdown(report))
    write_text(html, render_html(report))
    return md, html

