"""``report.md`` and ``report.html`` from a run's records: every figure is a row (or is counted
from the records, as its caption says), nulls stay null, the HTML is self-contained and every
text in it is escaped, and the same runs give the same bytes."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.report.document import REPORT_HTML, REPORT_MD, Report, part_of, write_report
from recallbench.report.records import ReportHints, read_run_records


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of each script."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parse(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    return parser


def _write(run_dirs: list[Path], out: Path, hints: ReportHints | None = None) -> tuple[str, str]:
    md, html = write_report([read_run_records(d) for d in run_dirs], out, hints)
    assert (md.name, html.name) == (REPORT_MD, REPORT_HTML)
    return md.read_text(encoding="utf-8"), html.read_text(encoding="utf-8")


def _metric(run_dir: Path, **match: object) -> dict:
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if all(row[k] == v for k, v in match.items()):
            return row
    raise AssertionError(f"no row {match}")


def test_the_markdown_carries_the_rows_their_intervals_and_provenance(
    sample_run: Path, tmp_path: Path
) -> None:
    md, _ = _write([sample_run], tmp_path)
    manifest = json.loads((sample_run / "run.json").read_text())
    assert manifest["run_id"] in md and manifest["started_at"] in md
    assert manifest["datasets"][0]["checksum"] in md
    row = _metric(sample_run, system="bm25", slice="fact", metric="evidence_recall", k=10)
    ci = f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    cell = f"{row['value']:.3f} {ci} (n={row['denominator']})"
    assert re.search(rf"\| fact \| [^\n]*{re.escape(cell)}", md)
    # naive ignores k: its @k figures are null with their reason, never 0
    assert "null (ignores_k)" in md
    # the k sweep: a point per k for bm25, one "all returned" point for naive
    assert re.search(r"\| bm25 \| 1 \| \d+ \| ", md) and re.search(r"\| bm25 \| 10 \| ", md)
    assert re.search(r"\| naive \| all returned \| 36\d{3} \| 1\.000", md)
    assert "### search latency (ms)" in md
    # every scored run has a card: the report embeds it whole
    card = (sample_run / "card.md").read_text(encoding="utf-8").rstrip("\n")
    assert "## results card of" in md and card in md


def test_the_html_is_self_contained(sample_run: Path, tmp_path: Path) -> None:
    _, html = _write([sample_run], tmp_path)
    page = _parse(html)
    for tag, attrs in page.tags:
        assert tag not in {"link", "img", "iframe", "object", "embed", "base", "form"}, tag
        assert "src" not in attrs and not any(a.startswith("on") for a in attrs), (tag, attrs)
        if tag == "a":
            assert (attrs.get("href") or "").startswith("#")
    assert [a.get("type") for t, a in page.tags if t == "script"] == ["application/json", None]
    assert re.findall(r"https?://[^\s\"'<>]+", html) == ["http://www.w3.org/2000/svg"] * len(
        re.findall(r"<svg ", html)
    )
    assert "url(" not in html and "@import" not in html and "fetch(" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert len(html) < 400_000  # the sample run, three systems, 50 questions


def test_the_same_runs_give_the_same_bytes(sample_run: Path, tmp_path: Path) -> None:
    first = _write([sample_run], tmp_path / "a")
    second = _write([sample_run], tmp_path / "b")
    assert first == second


def test_untrusted_text_is_escaped(
    hostile_run: Path, hostile_texts: tuple[str, str], tmp_path: Path
) -> None:
    hostile, hostile_slice = hostile_texts
    md, html = _write([hostile_run], tmp_path)
    page = _parse(html)
    assert [t for t, _ in page.tags].count("script") == 2
    assert not any(t == "img" or any(a.startswith("on") for a in attrs)
                   for t, attrs in page.tags)
    assert "window.__pwned" not in "".join(page.scripts[1:])
    data = json.loads(page.scripts[0])
    assert any(text.startswith("user: " + hostile) for text in data["texts"].values())
    assert hostile_slice in {row[3] for row in data["rows"]}
    assert hostile_slice not in html and "<svg onload" not in md and "<script>" not in md


def test_the_card_is_embedded_when_the_folder_has_one(sample_run: Path, tmp_path: Path) -> None:
    run = shutil.copytree(sample_run, tmp_path / "run")
    card = "---\noperator: <tester>\n---\n# results card\n\nlimitations: none measured\n"
    (run / "card.md").write_text(card, encoding="utf-8")
    md, html = _write([run], tmp_path / "out")
    assert card.rstrip("\n") in md
    assert '<pre class="card">---\noperator: &lt;tester&gt;' in html


def _as_tier(run: Path, dest: Path, variant: str) -> Path:
    """A copy of the sample run whose dataset reads as tier ``variant`` of a benchmark
    ``bench`` (its records renamed ``bench:<variant>``)."""
    folder = shutil.copytree(run, dest)
    key = f"bench:{variant}"
    for name in ("metrics.jsonl", "verdicts.jsonl", "observations.jsonl"):
        path = folder / name
        path.write_text(path.read_text().replace('"dataset":"sample"', f'"dataset":"{key}"'))
    manifest = json.loads((folder / "run.json").read_text())
    manifest["datasets"][0].update(key=key, name="bench", variant=variant)
    (folder / "run.json").write_text(json.dumps(manifest))
    return folder


def test_a_tier_curve_where_several_tiers_ran(sample_run: Path, tmp_path: Path) -> None:
    small = _as_tier(sample_run, tmp_path / "small", "small")
    core = _as_tier(sample_run, tmp_path / "core", "core")
    hints = ReportHints(variants={"bench": ("core", "small")})
    report = Report([read_run_records(small), read_run_records(core)], hints)
    curves = [c for c in report.tiers if report.series[c.series].system == "bm25"]
    assert curves and all([p.variant for p in c.points] == ["core", "small"] for c in curves)
    md, html = _write([small, core], tmp_path / "out", hints)
    assert "## bench: evidence recall@10 by tier" in md
    assert "bench: evidence recall@10 by tier" in html


def test_a_null_figure_is_not_drawn(sample_run: Path, tmp_path: Path) -> None:
    _, html = _write([sample_run], tmp_path)
    assert "null: ignores_k" in html and "null: no_evidence" in html


def test_an_answer_run_shows_answers_and_judgements(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(app, [
        "run", "-q", "--systems", "bm25", "--no-baselines", "--datasets", "sample", "--mode",
        "answer", "--reader", "mock-judge", "--judge", "mock-judge", "--same-model",
        "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    (run,) = out.iterdir()
    report = Report([read_run_records(run)])
    assert report.figures["sample"][0].key == "answer_correct"  # the judged metric comes first
    rows = report.questions["rows"]
    assert rows and all(r[6]["figure"] == "answer_correct" for r in rows)
    detail = rows[0][6]
    assert detail["answers"][0]["reader"] == "mock-judge"
    assert detail["judgements"][0]["judge"] == "mock-judge"
    assert detail["judgements"][0]["metric"] == "answer_correct"


def test_the_part_of_a_run_is_named(sample_run: Path) -> None:
    records = read_run_records(sample_run)
    assert part_of(records) == "full"
    # B's RunSpec.subset and .repeats, read by name until they are merged
    spec = SimpleNamespace(subset=SimpleNamespace(label="subset: limit 5 (seed 0)"), repeats=3)
    other = replace(records, manifest=SimpleNamespace(spec=spec))
    assert part_of(other) == "subset: limit 5 (seed 0), 3 repeats"
