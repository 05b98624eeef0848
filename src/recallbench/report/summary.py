"""The human-readable summary of a scored run: tables for the console and ``summary.md``.

Every figure of a system is a row of ``metrics.jsonl`` (a benchmark's cross-dataset tables say
when they are computed from ``verdicts.jsonl`` instead); every table says its denominator. Each
dataset's floor (its do-nothing controls, :mod:`recallbench.report.floor`) is shown beside the
systems and labelled a control: a row of the retrieval table for a retrieval-only dataset, a
table of its own for a dataset whose rules score answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recallbench.contracts import ALL, MetricRow
from recallbench.report.answering import answering_lines, answering_table
from recallbench.report.floor import floor_table
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.repeats import first_repeat, label_titles, repeats_table, scope_line
from recallbench.report.speed import speed_table
from recallbench.report.tables import Table, fmt, in_order, markdown_table
from recallbench.results.scored import Floor, ScoredRun

Reports = Mapping[str, BenchmarkReport]
"""The report hooks of each dataset of a run, by dataset key (handed in by the pipeline)."""


def _index(rows: Sequence[MetricRow]) -> dict[tuple[str, str, str, str, int | None], MetricRow]:
    return {(r.dataset, r.system, r.slice, r.metric, r.k): r for r in rows}


RETRIEVAL_FLOOR_NOTE = (
    "{label} is a control, not a system: a search that returns nothing for every question, "
    "scored by the same scorer over the same questions (computed from the dataset's "
    "questions, not a row of metrics.jsonl)."
)


def _retrieval_cells(
    label: str, rows: Sequence[MetricRow], spec_k: Sequence[int], kmax: int
) -> tuple[list[str], MetricRow | None]:
    """One line of the retrieval table from one system's (or control's) rows over all
    questions, and its ``evidence_hit@kmax`` row."""
    by_key = {(r.metric, r.k): r for r in rows if r.slice == ALL}

    def get(metric: str, k: int | None = None) -> MetricRow | None:
        return by_key.get((metric, k))

    hit = get("evidence_hit", kmax)
    cells = [label, f"{hit.denominator}" if hit else "0"]
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
    return cells, hit


def _retrieval_columns(spec_k: Sequence[int], kmax: int) -> tuple[str, ...]:
    columns = ["system", "n"]
    columns += [f"hit@{k}" for k in spec_k]
    columns += [f"recall@{kmax}", f"all@{kmax}", f"MRR@{kmax}", f"nDCG@{kmax}"]
    columns += ["recall(all ret.)", "errors", "empty", "chars/q", "p50 ms", "ingest ms"]
    return tuple(columns)


def _retrieval_breaks(columns: Sequence[str], kmax: int) -> tuple[int, ...]:
    """Where the retrieval table splits first when too wide: hits | the other ranking
    figures | the cost columns (errors, empty, characters, latency, ingest)."""
    return (columns.index(f"recall@{kmax}"), columns.index("errors"))


def retrieval_floor_table(floor: Floor, ks: Sequence[int]) -> Table:
    """A retrieval floor alone, in the columns of the retrieval table at depths ``ks``
    (``recallbench controls`` on a retrieval-only dataset)."""
    kmax = max(ks)
    rows = [tuple(_retrieval_cells(c.label, c.metrics, ks, kmax)[0]) for c in floor.controls]
    notes = " ".join(RETRIEVAL_FLOOR_NOTE.format(label=c.label) for c in floor.controls)
    columns = _retrieval_columns(ks, kmax)
    return Table(
        f"{floor.dataset}: retrieval floor (the {floor.rules} rules score no answer)",
        columns,
        tuple(rows),
        "n = questions scored for retrieval; errors and empty are out of all questions asked. "
        + notes,
        breaks=_retrieval_breaks(columns, kmax),
    )


def system_table(scored: ScoredRun, dataset_key: str) -> Table:
    """The retrieval table of one dataset: a line per system, then the floor line of a
    retrieval-only dataset (labelled a control in the caption)."""
    spec_k = scored.spec.k
    kmax = scored.spec.k_max
    columns = _retrieval_columns(spec_k, kmax)
    rows = []
    caption = ""
    mine = [r for r in scored.metrics if r.dataset == dataset_key]
    ignoring = {s.name for s in scored.manifest.systems if (s.capabilities or {}).get("ignores_k")}
    for system in scored.systems:
        cells, hit = _retrieval_cells(system, [r for r in mine if r.system == system], spec_k, kmax)
        if hit and hit.n_excluded and system not in ignoring:
            caption = f"Excluded from retrieval: {hit.exclusion_rule}."
        rows.append(tuple(cells))
    floor = scored.floors.get(dataset_key)
    if floor is not None and not floor.scores_answers:
        for control in floor.controls:
            cells, _ = _retrieval_cells(control.label, control.metrics, spec_k, kmax)
            rows.append(tuple(cells))
            caption += " " + RETRIEVAL_FLOOR_NOTE.format(label=control.label)
    cap = (
        "n = questions scored for retrieval (failed searches count as misses); "
        "recall(all ret.) counts every memory returned, whatever k; "
        "errors and empty are out of all questions asked; p50 ms over usable searches only. "
        + caption.strip()
        + "".join(f" {note}" for note in ignores_k_notes(scored))
    )
    return Table(
        f"{dataset_key}: retrieval from gold evidence ids",
        tuple(columns),
        tuple(rows),
        cap.strip(),
        breaks=_retrieval_breaks(columns, kmax),
    )


def ignores_k_notes(scored: ScoredRun) -> list[str]:
    """One line per system that ignores k: why its @k cells are null, and its budget."""
    notes = []
    for record in scored.manifest.systems:
        if not (record.capabilities or {}).get("ignores_k"):
            continue
        budget = (record.settings or {}).get("char_budget")
        within = f", up to its budget of {budget:,} characters" if budget is not None else ""
        notes.append(
            f"{record.name} ignores k: its @k figures are null (ignores_k); recall(all ret.) is "
            f"over everything it returned{within}."
        )
    return notes


def slice_table(scored: ScoredRun, dataset_key: str, metric: str, k: int | None) -> Table | None:
    idx = _index(scored.metrics)
    systems = scored.systems
    order = next((ds.slice_order for ds in scored.datasets if ds.key == dataset_key), ())
    slices = in_order(
        (
            r.slice
            for r in scored.metrics
            if r.dataset == dataset_key and r.metric == metric and r.k == k and r.slice != ALL
        ),
        order,
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
    """Every table of a run: per dataset the generic ones, the benchmark's own and its answer
    floor (when its rules score answers and some control figure has a value, so not for a
    benchmark whose answer figures all wait for a judge), then the tables each benchmark draws
    across its datasets. A run of several repeats shows repeat 0 in these tables and its
    figures over the repeats in a table of their own; a subset run's titles name the subset."""
    every_repeat = scored
    scored = first_repeat(scored)
    kmax = scored.spec.k_max
    out: list[Table] = []
    for ds in scored.datasets:
        out.append(system_table(scored, ds.key))
        over_repeats = repeats_table(every_repeat, ds.key)
        if over_repeats:
            out.append(over_repeats)
        speed = speed_table(scored, ds.key)
        if speed:
            out.append(speed)
        by_slice = slice_table(scored, ds.key, "evidence_recall", kmax)
        if by_slice:
            out.append(by_slice)
        judged = answering_table(scored, ds.key)
        if judged:
            out.append(judged)
        out.extend(reports[ds.key].summary_tables(scored, ds))
        floor = scored.floors.get(ds.key)
        if floor is not None and floor.scores_answers and floor.measured:
            out.append(floor_table(floor, order=ds.slice_order))
    by_report: dict[int, tuple[BenchmarkReport, list]] = {}
    for ds in scored.datasets:
        report = reports[ds.key]
        by_report.setdefault(id(report), (report, []))[1].append(ds)
    for report, datasets in by_report.values():
        out.extend(report.cross_dataset_tables(scored, datasets))
    return label_titles(out, scored)


CHECKSUM_IS = "the dataset checksum: SHA-256 over its files' SHA-256"
"""How a dataset checksum is labelled wherever it is printed beside the files' own SHA-256."""


def checksum_lines(
    label: str, files: Sequence[Mapping[str, object]], checksum: str, pinned: bool
) -> list[str]:
    """The SHA-256 of each data file a dataset was read from (what the docs pin, what
    ``sha256sum`` prints), then the dataset checksum metric rows carry, each labelled."""
    lines = [
        f"dataset {label}: file {f.get('name')} sha256 {f.get('sha256')}"
        f"{'' if f.get('pinned') else ' (NOT the pinned file)'}"
        for f in files
    ]
    lines.append(
        f"dataset {label}: checksum {checksum} ({CHECKSUM_IS})"
        f"{'' if pinned else ' (NOT the pinned release)'}"
    )
    return lines


def provenance_lines(scored: ScoredRun) -> list[str]:
    """What every printed figure carries: run id and date, full run or subset (and repeats),
    dataset versions, the SHA-256 of each data file and the dataset checksum."""
    m = scored.manifest
    lines = [f"run {m.run_id} ({m.started_at})"]
    if scored.predictions is None:
        lines.append(scope_line(scored))
    for d in m.datasets:
        lines += checksum_lines(d.version_label, d.files, d.checksum, d.pinned)
    return lines


def failure_lines(scored: ScoredRun) -> list[str]:
    """One line per system, dataset and kind (searches, ingests) with failed calls, naming
    each cause with its count (``ScoredRun.failures``), then, when they fail the run, a line
    saying so and at which threshold; ``[]`` when nothing failed."""
    found = scored.failures
    lines = [f"FAILED: {f.line()}" if f.fails_run else f"errors: {f.line()}" for f in found]
    if any(f.fails_run for f in found):
        rate = scored.manifest.max_failure_rate
        lines.append(
            f"run failed: a system failed every call of a kind, or more than {rate:g} of them "
            "(--max-failure-rate); its figures above count those calls as misses"
        )
    return lines


def timing_lines(scored: ScoredRun) -> list[str]:
    """Per dataset and system whose ingest has a ``finish_ingest`` wait: the ingest time split
    into add time and index wait (rows ``ingest_add_ms_total``, ``ingest_index_wait_ms_total``)."""
    rows = {(r.dataset, r.system, r.metric): r for r in scored.metrics if r.slice == ALL}
    out = []
    for (dataset, system, metric), r in rows.items():
        if metric != "ingest_index_wait_ms_total" or r.value is None:
            continue
        add = rows.get((dataset, system, "ingest_add_ms_total"))
        out.append(
            f"ingest timing, {system} on {dataset}: add {fmt(add.value if add else None, 1)} ms, "
            f"index wait (finish_ingest) {fmt(r.value, 1)} ms, over {r.denominator} haystack "
            "group(s)"
        )
    return out


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
    if scored.manifest.answering.get("mode") == "memory":
        return "- answers: none written (memory mode): the judge read the returned memories"
    if scored.answers_generated == 0:
        return (
            "- answers: none generated (no answer model): retrieval figures come from gold ids; "
            "any answer-level string score shown reads the returned memories joined, a "
            "development ruler, not a reported score"
        )
    return (
        f"- answers: {scored.answers_generated} of {scored.observations} observations carry an "
        "answer written by a reader model"
    )


def render_summary(scored: ScoredRun, reports: Reports) -> str:
    every_repeat = scored
    scored = first_repeat(scored)
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
        f"- {scope_line(scored)}",
        answers_line(scored),
        *answering_lines(scored),
        "",
    ]
    for d in m.datasets:
        pinned = "pinned release" if d.pinned else "NOT the pinned release"
        lines.append(
            f"- dataset {d.version_label}: {d.questions} questions, "
            f"{d.groups} haystack group(s) ({d.haystack}); checksum "
            f"{d.checksum} ({CHECKSUM_IS}; {pinned})"
        )
        lines.extend(
            f"  - file {f.get('name')} sha256 {f.get('sha256')}"
            f"{'' if f.get('pinned') else ' (NOT the pinned file)'}"
            for f in d.files
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
    lines.extend(f"- {line}" for line in failure_lines(scored))
    lines.extend(f"- {line}" for line in timing_lines(scored))
    lines.append("")
    for t in tables(every_repeat, reports):
        lines.append(markdown_table(t))
    lines.append(
        "Every figure of a system is a row of metrics.jsonl, recomputable from verdicts.jsonl "
        "(unless its table says otherwise); floor figures are controls, recomputable with "
        "`recallbench controls`."
    )
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
