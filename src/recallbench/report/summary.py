"""The human-readable summary of a scored run: tables for the console and ``summary.md``.

Every figure shown is a row of ``metrics.jsonl``; every table says its denominator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recallbench.contracts import ALL, MetricRow
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, fmt
from recallbench.results.scored import ScoredRun

Reports = Mapping[str, BenchmarkReport]
"""The report hooks of each dataset of a run, by dataset key (handed in by the pipeline)."""


def _index(rows: Sequence[MetricRow]) -> dict[tuple[str, str, str, str, int | None], MetricRow]:
    return {(r.dataset, r.system, r.slice, r.metric, r.k): r for r in rows}


def system_table(scored: ScoredRun, dataset_key: str) -> Table:
    spec_k = scored.spec.k
    kmax = scored.spec.k_max
    idx = _index(scored.metrics)
    systems = scored.systems
    columns = ["system", "n"]
    columns += [f"hit@{k}" for k in spec_k]
    columns += [f"recall@{kmax}", f"all@{kmax}", f"MRR@{kmax}", f"nDCG@{kmax}"]
    columns += ["recall(all ret.)", "errors", "empty", "chars/q", "p50 ms", "ingest ms"]
    rows = []
    caption = ""
    for system in systems:

        def get(metric: str, k: int | None = None, system: str = system) -> MetricRow | None:
            return idx.get((dataset_key, system, ALL, metric, k))

        hit = get("evidence_hit", kmax)
        n = f"{hit.denominator}" if hit else "0"
        if hit and hit.n_excluded:
            caption = f"Excluded from retrieval: {hit.exclusion_rule}."
        cells = [system, n]
        cells += [fmt(getattr(get("evidence_hit", k), "value", None)) for k in spec_k]
        for m in ("evidence_recall", "all_evidence", "mrr", "ndcg"):
            cells.append(fmt(getattr(get(m, kmax), "value", None)))
        cells.append(fmt(getattr(get("evidence_recall_all_returned"), "value", None)))
        for m in ("error_rate", "unusable_rate"):
            r = get(m)
            cells.append(f"{round((r.value or 0) * r.denominator)}/{r.denominator}" if r else "-")
        cells.append(fmt(getattr(get("chars_returned_mean"), "value", None), 0))
        cells.append(fmt(getattr(get("latency_ms_p50"), "value", None), 2))
        ing = get("ingest_ms_total")
        cells.append(fmt(ing.value if ing else None, 1))
        rows.append(tuple(cells))
    cap = (
        "n = questions scored for retrieval (failed searches count as misses); "
        "recall(all ret.) counts every memory returned, whatever k; "
        "errors and empty are out of all questions asked; p50 ms over usable searches only. "
        + caption
    )
    return Table(
        f"{dataset_key}: retrieval from gold evidence ids", tuple(columns), tuple(rows), cap.strip()
    )


def slice_table(scored: ScoredRun, dataset_key: str, metric: str, k: int | None) -> Table | None:
    idx = _index(scored.metrics)
    systems = scored.systems
    slices = list(
        dict.fromkeys(
            r.slice
            for r in scored.metrics
            if r.dataset == dataset_key and r.metric == metric and r.k == k and r.slice != ALL
        )
    )
    if not slices:
        return None
    rows = []
    for s in slices:
        cells = [s]
        for system in systems:
            r = idx.get((dataset_key, system, s, metric, k))
            cells.append("-" if r is None else f"{fmt(r.value)} (n={r.denominator})")
        rows.append(tuple(cells))
    label = f"{metric}@{k}" if k is not None else metric
    return Table(f"{dataset_key}: {label} by slice", ("slice", *systems), tuple(rows))


def tables(scored: ScoredRun, reports: Reports) -> list[Table]:
    """Every table of a run: per dataset the generic ones then the benchmark's own, then the
    tables each benchmark draws across its datasets."""
    kmax = scored.spec.k_max
    out: list[Table] = []
    for ds in scored.datasets:
        out.append(system_table(scored, ds.key))
        by_slice = slice_table(scored, ds.key, "evidence_recall", kmax)
        if by_slice:
            out.append(by_slice)
        out.extend(reports[ds.key].summary_tables(scored, ds))
    by_report: dict[int, tuple[BenchmarkReport, list]] = {}
    for ds in scored.datasets:
        report = reports[ds.key]
        by_report.setdefault(id(report), (report, []))[1].append(ds)
    for report, datasets in by_report.values():
        out.extend(report.cross_dataset_tables(scored, datasets))
    return out


def _markdown_table(t: Table) -> str:
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


def provenance_lines(scored: ScoredRun) -> list[str]:
    """What every printed figure carries: run id and date, dataset versions and checksums."""
    m = scored.manifest
    lines = [f"run {m.run_id} ({m.started_at})"]
    lines += [
        f"dataset {d.version_label} sha256 {d.checksum}"
        f"{'' if d.pinned else ' (NOT the pinned release)'}"
        for d in m.datasets
    ]
    return lines


def rules_lines(scored: ScoredRun) -> list[str]:
    """The rules each dataset was scored by: the official source and every known deviation
    (``ScoredRun.rules``), as plain lines for the console."""
    out: list[str] = []
    for ds in scored.datasets:
        applied = scored.rules.get(ds.key)
        if applied is not None:
            out.extend(applied.lines(ds.key))
    return out


def _markdown_rules(scored: ScoredRun) -> list[str]:
    return [
        f"  - {line.strip()}" if line.startswith(" ") else f"- {line}"
        for line in rules_lines(scored)
    ]


def answers_line(scored: ScoredRun) -> str:
    """How the answers were made, counted from the observations' ``answer_generated``."""
    if scored.answers_generated == 0:
        return (
            "- answers: none generated (no answer model): retrieval figures come from gold ids; "
            "any answer-level string score shown reads the returned memories joined, a "
            "development ruler, not a reported score"
        )
    return (
        f"- answers: {scored.answers_generated} of {scored.observations} observations carry an "
        "answer written by an answer model"
    )


def render_summary(scored: ScoredRun, reports: Reports) -> str:
    m = scored.manifest
    spec = m.spec
    git = m.environment.get("git") or {}
    lines = [
        f"# recallbench run {m.run_id}",
        "",
        f"- run date: {m.started_at} (ended {m.ended_at or 'not finished'})",
        f"- recallbench {m.environment.get('recallbench_version')}, format {m.format_version}, "
        f"git {(git.get('commit') or 'unknown')[:12]}"
        f"{' (dirty)' if git.get('dirty') else ''}",
        f"- systems: {', '.join(spec.systems)}",
        f"- k: {', '.join(str(k) for k in spec.k)}; chunking: {spec.chunking}; "
        f"seed: {spec.seed}; concurrency: {spec.concurrency}; "
        f"timeout: {spec.timeout_s:g} s",
        answers_line(scored),
        "",
    ]
    for d in m.datasets:
        pinned = "pinned release" if d.pinned else "NOT the pinned release"
        lines.append(
            f"- dataset {d.version_label}: {d.questions} questions, "
            f"{d.groups} haystack group(s) ({d.haystack}); sha256 "
            f"{d.checksum} ({pinned})"
        )
        lines.extend(f"  - note: {n}" for n in d.card_notes)
        if d.load_report:
            lines.append(f"  - load report: {len(d.load_report)} defect(s), see run.json")
    for ds in scored.datasets:
        lines.extend(f"  - {ds.key}: {n}" for n in reports[ds.key].summary_notes(ds))
    lines.extend(_markdown_rules(scored))
    for key, miss in scored.missing.items():
        for system, n in miss.items():
            lines.append(
                f"- INCOMPLETE: {system} on {key}: {n} question(s) have no observation "
                "(resume the run to finish it)"
            )
    lines.append("")
    for t in tables(scored, reports):
        lines.append(_markdown_table(t))
    lines.append("Every figure is a row of metrics.jsonl, recomputable from verdicts.jsonl.")
    return "\n".join(lines) + "\n"


def metric_table(rows: Sequence[MetricRow], dataset_key: str, slice_: str = ALL) -> Table:
    """Every metric of one slice, one row per (system, metric, k), with its denominator."""
    out = []
    for r in rows:
        if r.dataset != dataset_key or r.slice != slice_:
            continue
        label = r.metric if r.k is None else f"{r.metric}@{r.k}"
        out.append(
            (
                r.system,
                label,
                fmt(r.value),
                f"{r.denominator}",
                f"{r.n_excluded}",
                r.exclusion_rule or r.null_reason or "",
            )
        )
    return Table(
        f"{dataset_key}: {slice_}",
        ("system", "metric", "value", "n", "excluded", "rule"),
        tuple(out),
    )
