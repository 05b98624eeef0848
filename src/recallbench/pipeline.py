"""Start, resume and re-score runs: load and verify datasets first (so bad input never leaves a
partial results folder), write ``run.json``, execute the systems, then score from disk.

The pipeline is where a dataset meets its benchmark: it looks each benchmark up once and hands
its rule set to the scorer and its report hooks to the report. Scoring calls no system, and
running it twice on the same observations gives byte-identical ``verdicts.jsonl`` and
``metrics.jsonl``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.contracts import (
    AppliedRules,
    IngestRecord,
    MetricRow,
    Observation,
    Verdict,
    ingest_from_dict,
)
from recallbench.controls import run_floors
from recallbench.datasets.dataset import LoadedDataset, parse_dataset_ref
from recallbench.errors import OptionError, RunFolderError, SystemConfigError
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.predictions import predictions_tables, render_predictions_summary
from recallbench.report.summary import render_summary
from recallbench.report.summary import tables as report_tables
from recallbench.report.tables import Table
from recallbench.results import store
from recallbench.results.manifest import (
    DatasetRecord,
    RunManifest,
    SystemRecord,
    now_rfc3339,
    read_manifest,
    write_manifest,
)
from recallbench.results.scored import ScoredRun
from recallbench.run.runner import Progress, Runner, image_paths
from recallbench.score.aggregate import aggregate
from recallbench.score.predictions import (
    PREDICTIONS_SYSTEM,
    PredictionsScore,
    per_question_lines,
    score_predictions,
)
from recallbench.score.scorer import score_dataset
from recallbench.spec import RunSpec
from recallbench.systems.options import check_options
from recallbench.systems.registry import available_systems, capabilities_for, system_factory

CACHE_ENV = "RECALLBENCH_CACHE"

__all__ = [
    "RunFolderError",
    "ScoredFile",
    "ScoredRun",
    "applied_rules",
    "check_spec",
    "check_systems",
    "load_run_datasets",
    "read_logs",
    "read_manifest",
    "reports_of",
    "resume_run",
    "score_file",
    "score_run",
    "start_run",
    "tables",
]


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recallbench" / "cache"


def check_systems(
    names: Sequence[str],
    configs: Mapping[str, Mapping[str, Any]] | None = None,
    source: str = "--config",
) -> list[str]:
    """Fail before any work (no folder exists yet) if a system is unknown, its extra is not
    installed, a section of ``configs`` (read from ``source``) names no system of the run, or a
    section breaks what its system declares in ``options`` (an unknown key, a wrong type, a
    value out of range; see :mod:`recallbench.systems.options`).

    Returns notes for systems that declare no options (their sections pass unchecked)."""
    configs = configs or {}
    stray = [section for section in configs if section not in names]
    if stray:
        raise SystemConfigError(
            f"{source}: section [{stray[0]}] names no system of the run "
            f"(systems: {', '.join(names)}); remove it or add {stray[0]!r} to --systems"
        )
    notes = []
    for name in names:
        factory = system_factory(name)
        section = configs.get(name, {})
        if not isinstance(section, Mapping):
            raise SystemConfigError(f"{source} [{name}]: expected a table of options")
        note = check_options(name, factory, section, source)
        if note:
            notes.append(note)
    return notes


def check_spec(spec: RunSpec) -> None:
    """The run's own numbers, checked before any folder exists: ``timeout_s`` a finite number
    of seconds above 0, ``concurrency`` and every ``k`` integers of at least 1."""
    timeout = spec.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise OptionError(f"--timeout must be a number of seconds, got {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise OptionError(f"--timeout must be a finite number of seconds above 0, got {timeout!r}")
    if isinstance(spec.concurrency, bool) or not isinstance(spec.concurrency, int):
        raise OptionError(f"--concurrency must be an integer, got {spec.concurrency!r}")
    if spec.concurrency < 1:
        raise OptionError(f"--concurrency must be at least 1, got {spec.concurrency}")
    if not spec.k or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in spec.k):
        raise OptionError(f"--k values must be positive integers, got {list(spec.k)!r}")


def load_datasets(spec: RunSpec, data_dir: Path) -> list[LoadedDataset]:
    return [load_dataset(ref, data_dir, spec.dataset_options) for ref in spec.datasets]


def _declared(spec: RunSpec) -> dict[str, Any]:
    """Each system's capabilities for the run's config (None when only an instance says)."""
    out = {}
    for name in spec.systems:
        config = spec.system_configs.get(name, {})
        out[name] = capabilities_for(system_factory(name), config).capabilities
    return out


def check_images(spec: RunSpec, datasets: Sequence[LoadedDataset]) -> None:
    """Before any folder exists: image files must be present if a system will be handed them."""
    if any(caps is not None and caps.accepts_images for caps in _declared(spec).values()):
        for ds in datasets:
            if ds.options.image_mode == "native":
                image_paths(ds)  # raises naming the missing file


def system_records(spec: RunSpec) -> list[SystemRecord]:
    entries = available_systems()
    declared = _declared(spec)
    return [
        SystemRecord(
            name=name,
            source=entries[name].source if name in entries else None,
            capabilities=None if declared[name] is None else dataclasses.asdict(declared[name]),
        )
        for name in spec.systems
    ]


def applied_rules(datasets: Sequence[LoadedDataset]) -> dict[str, AppliedRules]:
    """The rules each dataset is scored by (official source, deviations), by dataset key."""
    return {ds.key: benchmark_of(ds).applied_rules for ds in datasets}


def new_manifest(spec: RunSpec, datasets: Sequence[LoadedDataset]) -> RunManifest:
    records = []
    for ds in datasets:
        bench = benchmark_of(ds)
        records.append(DatasetRecord.of(ds, bench.rules.name, bench.applied_rules))
    return RunManifest.new(spec, records, system_records(spec))


def _finish(run_dir: Path, manifest: RunManifest, runner: Runner) -> None:
    for record in manifest.systems:  # the capabilities each built system declared
        if record.name in runner.capabilities:
            record.capabilities = runner.capabilities[record.name]
        if record.name in runner.settings:
            record.settings = runner.settings[record.name]
    shutil.rmtree(run_dir / "work", ignore_errors=True)  # systems' private state, not a record
    manifest.ended_at = now_rfc3339()
    manifest.status = "complete"
    write_manifest(run_dir, manifest)


def start_run(
    spec: RunSpec,
    data_dir: Path,
    out_dir: Path,
    progress: Progress | None = None,
    cache_dir: Path | None = None,
    datasets: Sequence[LoadedDataset] | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
) -> ScoredRun:
    check_spec(spec)
    check_systems(spec.systems, spec.system_configs)
    loaded = list(datasets) if datasets is not None else load_datasets(spec, data_dir)
    check_images(spec, loaded)
    manifest = new_manifest(spec, loaded)
    manifest.extra.update(extra_manifest or {})
    run_dir = out_dir / manifest.run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    write_manifest(run_dir, manifest)
    cache = cache_dir or default_cache_dir()
    runner = Runner(spec, loaded, run_dir, manifest.run_id, progress, cache)
    runner.execute()
    _finish(run_dir, manifest, runner)
    return score_run(run_dir, data_dir, loaded)


def resume_run(
    run_dir: Path, data_dir: Path, progress: Progress | None = None, cache_dir: Path | None = None
) -> ScoredRun:
    """Continue an interrupted run under the same run id: nothing lost, nothing duplicated."""
    manifest = read_manifest(run_dir)
    spec = manifest.spec
    check_systems(spec.systems)
    loaded = load_run_datasets(manifest, data_dir)
    manifest.resumed_at.append(now_rfc3339())
    manifest.status = "running"
    write_manifest(run_dir, manifest)
    cache = cache_dir or default_cache_dir()
    runner = Runner(spec, loaded, run_dir, manifest.run_id, progress, cache)
    runner.execute()
    _finish(run_dir, manifest, runner)
    return score_run(run_dir, data_dir, loaded)


# ----------------------------------------------------------------------------- scoring


def load_run_datasets(manifest: RunManifest, data_dir: Path) -> list[LoadedDataset]:
    """Reload the datasets of a run and check they are the same bytes the run used."""
    spec = manifest.spec
    out = []
    for ref, recorded in zip(spec.datasets, manifest.datasets, strict=True):
        ds = load_dataset(ref, data_dir, spec.dataset_options)
        if ds.checksum != recorded.checksum:
            raise RunFolderError(
                f"dataset {ds.key}: files changed since the run (checksum {recorded.checksum} "
                f"in run.json, {ds.checksum} now)"
            )
        out.append(ds)
    return out


def read_logs(run_dir: Path) -> tuple[list[Observation], list[IngestRecord]]:
    obs = store.read_observations(run_dir)
    ing = [ingest_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.INGEST)]
    return obs, ing


def ignores_k(manifest: RunManifest) -> frozenset[str]:
    """Systems whose recorded capabilities say they ignore k (their @k figures are null)."""
    return frozenset(s.name for s in manifest.systems if (s.capabilities or {}).get("ignores_k"))


def reports_of(datasets: Sequence[LoadedDataset]) -> dict[str, BenchmarkReport]:
    """Each dataset's report hooks, by dataset key."""
    return {ds.key: benchmark_of(ds).report for ds in datasets}


def tables(scored: ScoredRun) -> list[Table]:
    """Every table of a scored run, as the console and ``summary.md`` show them."""
    return report_tables(scored, reports_of(scored.datasets))


def score_run(
    run_dir: Path, data_dir: Path, datasets: Sequence[LoadedDataset] | None = None
) -> ScoredRun:
    """Re-score a results folder from its logs: verdicts, metrics, exports and summary.

    The summary also shows each dataset's floor (:func:`recallbench.controls.run_floors` at the
    run's depths), computed here from the questions and written to no log."""
    manifest = read_manifest(run_dir)
    spec = manifest.spec
    loaded = list(datasets) if datasets is not None else load_run_datasets(manifest, data_dir)
    observations, ingests = read_logs(run_dir)
    verdicts: list[Verdict] = []
    metrics: list[MetricRow] = []
    missing: dict[str, dict[str, int]] = {}
    ignoring = ignores_k(manifest)
    for ds in loaded:
        bench = benchmark_of(ds)
        v, miss = score_dataset(
            ds, observations, spec.k, spec.systems, bench.rules, ignores_k=ignoring
        )
        verdicts.extend(v)
        metrics.extend(
            aggregate(
                ds,
                v,
                observations,
                ingests,
                spec.systems,
                manifest.run_id,
                bench.rules.weighted_metrics,
            )
        )
        if miss:
            missing[ds.key] = miss
        bench.report.write_exports(run_dir, ds, observations, v)
    store.write_jsonl(run_dir / store.VERDICTS, verdicts)
    store.write_jsonl(run_dir / store.METRICS, metrics)
    scored = ScoredRun(
        run_dir,
        manifest,
        tuple(loaded),
        tuple(verdicts),
        tuple(metrics),
        missing,
        observations=len(observations),
        answers_generated=sum(1 for o in observations if o.answer_generated),
        floors=run_floors(loaded, spec.k),
        rules=applied_rules(loaded),
    )
    store.write_text(run_dir / store.SUMMARY, render_summary(scored, reports_of(loaded)))
    return scored


# ------------------------------------------------------------------ predictions files


@dataclasses.dataclass(frozen=True)
class ScoredFile:
    """A scored predictions file: what reading it found (``result``), the run-like view the
    report draws from (``scored``), the tables shown, and the folder written."""

    result: PredictionsScore
    scored: ScoredRun
    dataset: LoadedDataset
    tables: tuple[Table, ...]
    folder: Path
    mode: str | None = None
    """The answer scoring mode applied, where the benchmark has a choice (else None)."""


def predictions_run(
    result: PredictionsScore,
    ds: LoadedDataset,
    ref: str,
    ks: Sequence[int],
    folder: Path,
    options: Mapping[str, Any],
) -> ScoredRun:
    """The :class:`ScoredRun` of a predictions file, for the report: one system (the file's
    name for it), one dataset, no clock time (so its summary is the same bytes every time)."""
    bench = benchmark_of(ds)
    spec = RunSpec(
        systems=(result.system,),
        datasets=(ref,),
        k=tuple(ks),
        chunking="",
        dataset_options=dict(options),
    )
    manifest = RunManifest(
        run_id=result.run_id,
        spec=spec,
        spec_hash=spec.spec_hash,
        concurrency=1,
        datasets=[DatasetRecord.of(ds, bench.rules.name, bench.applied_rules)],
        systems=[SystemRecord(name=result.system, source="predictions file", capabilities=None)],
        started_at="",
        status="complete",
    )
    return ScoredRun(
        folder,
        manifest,
        (ds,),
        result.verdicts,
        result.metrics,
        {},
        observations=len(result.verdicts),
        answers_generated=result.answers_generated,
        rules={ds.key: bench.applied_rules},
        predictions=result.path,
    )


def score_file(
    path: Path,
    ref: str,
    data_dir: Path,
    *,
    options: Mapping[str, Any] | None = None,
    mode: str | None = None,
    ks: Sequence[int] | None = None,
    results_dir: Path | None = None,
    out: Path | None = None,
    format_name: str | None = None,
    system: str = PREDICTIONS_SYSTEM,
    unknown_turns: str = "refuse",
) -> ScoredFile:
    """Score a predictions file against dataset ``ref`` by its benchmark's rules and write
    ``verdicts.jsonl``, ``metrics.jsonl`` and ``summary.md`` to ``results_dir`` (default
    ``FILE.scored/`` beside the file), and ``out`` (one line per question) when given.

    ``ks`` default to the dataset's own depths; ``format_name``, ``system`` and
    ``unknown_turns`` are those of :func:`~recallbench.score.predictions.score_predictions`.
    Everything is checked before anything is written.
    """
    opts = dict(options or {})
    bench = get_benchmark(parse_dataset_ref(ref)[0])
    bench.rules.check_mode(mode)
    ds = load_dataset(ref, data_dir, opts, predictions=True)
    if opts.get("errata") and not getattr(ds.options, "errata", None):
        raise OptionError(
            f"--errata {opts['errata']} applies to datasets that offer errata (locomo); "
            f"{ds.key} does not"
        )
    depths = tuple(ks) if ks else tuple(ds.default_k)
    result = score_predictions(
        path,
        ds,
        depths,
        bench.rules,
        mode,
        formats=bench.accepted_formats,
        format_name=format_name,
        system=system,
        unknown_turns=unknown_turns,
    )
    folder = results_dir or path.with_name(path.stem + ".scored")
    scored = predictions_run(result, ds, ref, depths, folder, opts)
    shown = tuple(predictions_tables(scored, bench.report, bench.headline))
    folder.mkdir(parents=True, exist_ok=True)
    store.write_jsonl(folder / store.VERDICTS, result.verdicts)
    store.write_jsonl(folder / store.METRICS, result.metrics)
    notes = bench.report.summary_notes(ds)
    shown_mode = mode if bench.rules.answer_modes is not None else None
    summary = render_predictions_summary(result, scored, shown, notes, shown_mode)
    store.write_text(folder / store.SUMMARY, summary)
    if out is not None:
        store.write_jsonl(out, per_question_lines(result, ds, bench.rules))
    return ScoredFile(result, scored, ds, shown, folder, shown_mode)
