"""Memory and answer modes in the report: one table per dataset of the judged figures beside
what they cost to measure, and the lines that say how the answers were made and judged."""

from __future__ import annotations

from collections.abc import Sequence

from recallbench.contracts import ALL, MetricRow
from recallbench.report.tables import Table, fmt
from recallbench.results.scored import ScoredRun

ACCOUNTING = (
    ("judge_unparsed_rate", "unparsed (official rule applied)"),
    ("judge_error_count", "judge errors"),
    ("reader_error_count", "reader errors"),
    ("llm_retry_count", "retries"),
    ("memory_tokens_mean", "memory tokens"),
    ("memory_chars_mean", "memory chars"),
    ("cost_per_usable_answer_usd", "USD / usable answer"),
)


def _cell(r: MetricRow | None) -> str:
    if r is None:
        return "-"
    if r.value is None:
        return "null"
    return f"{fmt(r.value)} (n={r.denominator})"


def answering_table(scored: ScoredRun, dataset_key: str) -> Table | None:
    """The judged figures of a dataset, one line per system, and the accounting columns."""
    info = (scored.manifest.answering.get("datasets") or {}).get(dataset_key)
    if not info:
        return None
    metrics: Sequence[str] = info.get("metrics", ())
    weighted = [f"{m}:weighted" for m in info.get("weighted_metrics", ())]
    rule_metrics = [m for m in info.get("rule_metrics", ()) if m not in metrics]
    shown = [*metrics, *weighted, *rule_metrics]
    idx = {
        (r.system, r.metric): r
        for r in scored.metrics
        if r.dataset == dataset_key and r.slice == ALL and r.k is None
    }
    rows = []
    for system in scored.systems:
        cells = [system]
        cells += [_cell(idx.get((system, m))) for m in shown]
        for name, _ in ACCOUNTING:
            r = idx.get((system, name))
            cells.append("-" if r is None else ("null" if r.value is None else fmt(r.value)))
        rows.append(tuple(cells))
    mode = scored.manifest.answering.get("mode", "")
    caption = [
        f"{mode} mode, instrument {info.get('instrument')}; judge "
        f"{(info.get('judge') or {}).get('model', 'none')}"
        + (f"; reader {(info.get('reader') or {}).get('model')}" if info.get("reader") else ""),
        "judge and reader errors are null and out of n; a failed search is a miss (0, in n); "
        "unparsed replies were scored by the benchmark's own default"
        + (f"; {', '.join(rule_metrics)}: the benchmark's own rules on the reader's answer"
           if rule_metrics else ""),
    ]
    caption += [f"NON-STANDARD: {label}" for label in info.get("non_standard", ())]
    caption += list(info.get("notes", ()))
    return Table(
        f"{dataset_key}: judged ({mode} mode)",
        ("system", *shown, *(label for _, label in ACCOUNTING)),
        tuple(rows),
        ". ".join(caption) + ".",
    )


def answering_lines(scored: ScoredRun) -> list[str]:
    """How the answers were made and judged, for the summary's header."""
    a = scored.manifest.answering
    if not a:
        return []
    lines = [f"- mode: {a.get('mode')} (judges recorded: {', '.join(a.get('judges', []))})"]
    for key, info in (a.get("datasets") or {}).items():
        reader = info.get("reader")
        lines.append(
            f"- {key}: instrument {info.get('instrument')}"
            f"{' (official)' if info.get('official') else ''}; judge "
            f"{(info.get('judge') or {}).get('model', 'none')}"
            + (f"; reader {reader.get('model')}" if reader else "")
        )
        for f in info.get("files", ()):
            pin = "pinned" if f.get("pinned") else (f.get("note") or "not pinned")
            lines.append(
                f"  - instrument file {f.get('repo')}@{f.get('commit')}:{f.get('path')} "
                f"sha256 {f.get('sha256')} ({pin})"
            )
        lines += [f"  - deviation: {d}" for d in info.get("deviations", ())]
        lines += [f"  - NON-STANDARD: {label}" for label in info.get("non_standard", ())]
        lines += [f"  - note: {n}" for n in info.get("notes", ())]
        check = info.get("judge_check")
        if check:
            lines.append(f"  - judge check: {check}")
    return lines
