"""The report of a scored predictions file (``recallbench score FILE``): the benchmark's own
tables as a run shows them, every metric row with the headline first, and ``summary.md``.

The benchmark's tables are drawn by its :class:`~recallbench.report.hooks.BenchmarkReport` from a
:class:`~recallbench.results.scored.ScoredRun` built for the file, so a run and a file share the
table code. A predictions file records no timing recallbench measured: there are no latency or
ingest rows to show. ``summary.md`` holds no clock time and no absolute path, so the same file,
dataset and options give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from recallbench import __version__
from recallbench.contracts import MetricRow
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.summary import _markdown_rules, metric_table
from recallbench.report.tables import Table, markdown_table
from recallbench.results.scored import ScoredRun
from recallbench.score.metrics import MetricKey
from recallbench.score.predictions import PredictionsScore


def ordered_metric_rows(
    rows: Sequence[MetricRow], headline: Sequence[MetricKey]
) -> list[MetricRow]:
    """``rows`` for display: the headline metrics first, in ``headline`` order, then every other
    metric in the order it first appears; a metric's rows by numeric k (the row without k
    first). The order of ``metrics.jsonl`` itself is not changed."""
    first_seen: dict[str, int] = {}
    for r in rows:
        first_seen.setdefault(r.metric, len(first_seen))
    rank = {(key.metric, key.k): i for i, key in enumerate(headline)}

    def order(r: MetricRow) -> tuple[int, int, int]:
        head = rank.get((r.metric, r.k), len(rank))
        return head, first_seen[r.metric], -1 if r.k is None else r.k

    return sorted(rows, key=order)


def predictions_tables(
    scored: ScoredRun, report: BenchmarkReport, headline: Sequence[MetricKey]
) -> list[Table]:
    """The benchmark's tables for the file's one dataset, then every metric row over all
    questions (headline first, k in numeric order)."""
    (ds,) = scored.datasets
    out = list(report.summary_tables(scored, ds))
    out.append(metric_table(ordered_metric_rows(scored.metrics, headline), ds.key))
    return out


def predictions_header(
    result: PredictionsScore, scored: ScoredRun, mode: str | None = None
) -> list[str]:
    """What every figure of the file carries: the file and its SHA-256, the system name, the
    shape it was read in, the dataset version and checksum (and the answer scoring ``mode``,
    where the benchmark has a choice)."""
    fmt = result.format
    (record,) = scored.manifest.datasets
    pinned = "pinned release" if record.pinned else "NOT the pinned release"
    return [
        f"predictions file {result.path.name} sha256 {result.sha256}",
        f"system: {result.system}",
        f"format: {fmt.name} ({fmt.description}); fields in the file: "
        + ", ".join(result.fields_seen),
        f"dataset {record.version_label} sha256 {record.checksum} ({pinned})",
        *([f"answer scoring mode: {mode}"] if mode else []),
        "timing: none (a predictions file records no timing recallbench measured)",
    ]


def render_predictions_summary(
    result: PredictionsScore,
    scored: ScoredRun,
    tables: Sequence[Table],
    notes: Sequence[str] = (),
    mode: str | None = None,
) -> str:
    """``summary.md`` of a scored predictions file; ``notes`` are the benchmark's report notes,
    ``mode`` the answer scoring mode where the benchmark has a choice."""
    spec = scored.spec
    (record,) = scored.manifest.datasets
    lines = [
        f"# recallbench score of predictions file {result.path.name}",
        "",
        *(f"- {line}" for line in predictions_header(result, scored, mode)),
        f"- k: {', '.join(str(k) for k in spec.k)}; recallbench {__version__}; run id "
        f"{scored.manifest.run_id} (from the file's SHA-256)",
        f"- dataset {record.version_label}: {record.questions} questions, {record.groups} "
        f"haystack group(s) ({record.haystack})",
        *(f"  - note: {n}" for n in record.card_notes),
        *(f"  - {record.key}: {n}" for n in notes),
        *_markdown_rules(scored),
        *(f"- {n}" for n in result.notes()),
        "",
    ]
    lines += [markdown_table(t) for t in tables]
    lines.append("Every figure is a row of metrics.jsonl, recomputable from verdicts.jsonl.")
    return "\n".join(lines) + "\n"
