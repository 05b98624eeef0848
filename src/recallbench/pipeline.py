"""Start, resume and re-score runs: load and verify datasets first (so bad input never leaves a
partial results folder), write ``run.json``, execute the systems, then score from disk.

The pipeline is where a dataset meets its benchmark: it looks each benchmark up once and hands
its rule set to the scorer and its report hooks to the report. Scoring calls no system, and
running it twice on the same observations gives byte-identical ``verdicts.jsonl`` and
``metrics.jsonl``.

One process writes a results folder at a time: a run, a resume, a re-score and a repair hold
the folder's lock (:func:`lock_run_folder`) from their first write to their last, and a second
writer is refused (:class:`RunLockedError`) before it changes anything. ``run.json`` says
``running`` while systems run, ``scoring`` while the derived files are written, ``complete``
after, ``failed`` instead when a system failed every call of a kind on a dataset, or more than
the run's ``max_failure_rate`` of them (:mod:`recallbench.results.failures`; the derived files
are written all the same), and ``interrupted`` when Ctrl-C (or SIGTERM, under
:func:`sigterm_as_exit`) stopped it.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from recallbench import answers
from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.contracts import (
    ALL,
    AnswerFigure,
    AppliedRules,
    IngestRecord,
    MetricRow,
    Observation,
    Verdict,
    ingest_from_dict,
    verdict_from_dict,
)
from recallbench.controls import run_floors
from recallbench.datasets.dataset import LoadedDataset, parse_dataset_ref
from recallbench.datasets.fetch import default_cache_dir
from recallbench.datasets.subset import select
from recallbench.errors import (
    DuplicateObservationError,
    IncompleteRunError,
    OptionError,
    RunFolderError,
    RunLockedError,
    SystemConfigError,
    UserError,
)
from recallbench.report.card import write_card
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.predictions import predictions_tables, render_predictions_summary
from recallbench.report.records import ReportHints, RunRecords
from recallbench.report.sides import NOT_RECORDED, Side
from recallbench.report.summary import render_summary
from recallbench.report.summary import tables as report_tables
from recallbench.report.tables import Table
from recallbench.results import store
from recallbench.results.failures import DEFAULT_MAX_FAILURE_RATE, failed_run, failures
from recallbench.results.manifest import (
    DatasetRecord,
    RunManifest,
    SystemRecord,
    now_rfc3339,
    read_manifest,
    write_manifest,
)
from recallbench.results.scored import ScoredRun
from recallbench.run.answering import read_answers, read_judgements
from recallbench.run.runner import Progress, Runner, image_paths
from recallbench.score.aggregate import NOT_ASKED, aggregate, answering_rows, mark_incomplete
from recallbench.score.metrics import MetricKey
from recallbench.score.predictions import (
    PREDICTIONS_SYSTEM,
    PredictionsScore,
    per_question_lines,
    score_predictions,
)
from recallbench.score.repeats import repeat_rows
from recallbench.score.rules import ScoringContext
from recallbench.score.scorer import Answering, score_dataset
from recallbench.score.speed import CODES, SpeedSettings, codes_before_measuring, speed_rows
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec, SpeedSpec, subset_label
from recallbench.systems.options import check_options
from recallbench.systems.registry import available_systems, capabilities_for, system_factory

LOCK_FILE = store.LOCK_FILE

__all__ = [
    "LOCK_FILE",
    "DuplicateObservationError",
    "IncompleteRunError",
    "Progress",
    "RunFolderError",
    "RunLockedError",
    "lock_run_folder",
    "repair_run",
    "sigterm_as_exit",
    "ScoredFile",
    "ScoredRun",
    "applied_rules",
    "check_execution",
    "check_spec",
    "check_errata_used",
    "check_systems",
    "export_formats",
    "export_run",
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
    of seconds above 0, ``concurrency``, ``repeats`` and every ``k`` integers of at least 1,
    and a subset's ``limit`` at least 1."""
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
    repeats = spec.repeats
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise OptionError(f"--repeats must be an integer of at least 1, got {repeats!r}")
    subset = spec.subset
    if subset is not None and subset.kind == "limit" and (subset.limit or 0) < 1:
        raise OptionError(f"--limit must be at least 1, got {subset.limit!r}")
    if spec.answering is not None:
        answers.check_answering(spec.answering)


def check_execution(group_concurrency: int, max_failure_rate: float) -> None:
    """``group_concurrency`` an integer of at least 1; ``max_failure_rate`` a share in [0, 1]."""
    if isinstance(group_concurrency, bool) or not isinstance(group_concurrency, int):
        raise OptionError(f"--group-concurrency must be an integer, got {group_concurrency!r}")
    if group_concurrency < 1:
        raise OptionError(f"--group-concurrency must be at least 1, got {group_concurrency}")
    if (
        isinstance(max_failure_rate, bool)
        or not isinstance(max_failure_rate, int | float)
        or not 0.0 <= max_failure_rate <= 1.0
    ):
        raise OptionError(
            f"--max-failure-rate must be a share between 0 and 1, got {max_failure_rate!r}"
        )


OPERATOR_MAX_CHARS = 200


def check_operator(operator: str | None) -> str | None:
    """``--operator``: a name of 1 to 200 printable characters on one line (surrounding space
    dropped), or None when not given. It goes into ``run.json`` and the card as written, so it
    must not be empty or break a line of either."""
    if operator is None:
        return None
    name = operator.strip()
    if not name:
        raise OptionError("--operator must name who ran the run, got an empty name")
    if len(name) > OPERATOR_MAX_CHARS or not name.isprintable():
        raise OptionError(
            f"--operator must be one line of at most {OPERATOR_MAX_CHARS} printable characters, "
            f"got {operator!r}"
        )
    return name


def check_mode_datasets(spec: RunSpec, datasets: Sequence[LoadedDataset]) -> None:
    """``--mode dry`` scores Glasshouse's string rules: refuse it when no dataset has them."""
    if spec.mode == "dry" and not any(benchmark_of(ds).rules.answer_modes for ds in datasets):
        raise OptionError(
            "--mode dry applies Glasshouse's string rules; none of the datasets "
            f"({', '.join(ds.key for ds in datasets)}) has them: use --mode memory or answer"
        )


def answering_record(
    spec: RunSpec, planned: Sequence[answers.DatasetAnswering], cache_dir: Path | None = None
) -> dict[str, Any]:
    """``run.json``'s ``answering``: per dataset its instrument, roles, pins and labels, and
    the judge whose judgements are scored (``judge``) among those recorded (``judges``)."""
    assert spec.answering is not None
    datasets = {}
    for item in planned:
        rec = item.record()
        metrics = item.instrument.judge_metrics.get(spec.answering.mode, ())
        rec["metrics"] = list(metrics)
        rec["rule_metrics"] = [
            f.metric for f in benchmark_of(item.dataset).rules.answer_figures
            if spec.answering.mode == "answer"
        ]
        rec["weighted_metrics"] = [m for m in item.instrument.weighted_metrics if m in metrics]
        rec["judge_label"] = item.judge.label if item.judge else None
        if cache_dir is not None and item.judge is not None:
            key = answers.judge_check_key(item.dataset, item.instrument, spec.answering.mode,
                                          item.judge.label)
            rec["judge_check"] = answers.stored_judge_check(key, cache_dir) or (
                f"not measured: run `recallbench judge-check --judge {item.judge.choice.model} "
                f"--dataset {item.dataset.key}`"
            )
        datasets[item.dataset.key] = rec
    judges = sorted({item.judge.label for item in planned if item.judge is not None})
    return {"mode": spec.answering.mode, "datasets": datasets, "judges": judges}


def load_datasets(spec: RunSpec, data_dir: Path) -> list[LoadedDataset]:
    """The run's datasets, each cut to the run's subset (``spec.subset``) if it has one."""
    return [
        select(load_dataset(ref, data_dir, spec.dataset_options), spec.subset)
        for ref in spec.datasets
    ]


def check_unique_datasets(refs: Sequence[str], datasets: Sequence[LoadedDataset]) -> None:
    """Refuse a dataset given twice (the same reference, or two that load the same key): its
    questions would be asked twice and the folder would hold two observations per question."""
    for what, values in (("reference", list(refs)), ("dataset", [ds.key for ds in datasets])):
        seen: set[str] = set()
        for v in values:
            if v in seen:
                raise OptionError(f"--datasets: {what} {v} given more than once")
            seen.add(v)


def lock_run_folder(run_dir: Path) -> AbstractContextManager[None]:
    """The results folder's exclusive lock (``run.lock``, an ``flock``) for a ``with`` block;
    :class:`RunLockedError` at once if another writer holds it. The OS drops the lock when the
    holder exits, however it exits, so no lock is ever stale."""
    return store.lock_folder(run_dir)


@contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(128 + SIGTERM)`` in the main thread, so a
    terminated run takes the same path as Ctrl-C: ``run.json`` is marked ``interrupted``, the
    lock released, and the process exits 143. The previous handler is restored on exit. For
    the command line's ``run`` (call it around :func:`start_run` / :func:`resume_run`)."""

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a signal handler
        return

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interruptible(
    run_dir: Path, manifest: RunManifest, work: Callable[[], ScoredRun]
) -> ScoredRun:
    """Run ``work``; on KeyboardInterrupt or SystemExit mark ``run.json`` ``interrupted`` and
    re-raise (the folder resumes as after a kill)."""
    try:
        return work()
    except (KeyboardInterrupt, SystemExit):
        manifest.status = "interrupted"
        write_manifest(run_dir, manifest)
        raise


def _new_run_dir(out_dir: Path, manifest: RunManifest) -> Path:
    """Create the run's folder; a run id already taken (two runs of one spec started in the
    same second) gets the suffix ``-2``, ``-3``, ... and ``manifest.run_id`` says so."""
    base = manifest.run_id
    n = 1
    while True:
        run_dir = out_dir / manifest.run_id
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
            return run_dir
        except FileExistsError:
            n += 1
            manifest.run_id = f"{base}-{n}"


def _declared(spec: RunSpec) -> dict[str, Any]:
    """Each system's capabilities for the run's config (None when only an instance says)."""
    out = {}
    for name in spec.systems:
        config = spec.system_configs.get(name, {})
        out[name] = capabilities_for(system_factory(name), config).capabilities
    return out


def check_images(
    spec: RunSpec, datasets: Sequence[LoadedDataset], declared: Mapping[str, Any] | None = None
) -> None:
    """Before any folder exists: image files must be present if a system will be handed them.
    ``declared``: the systems' capabilities (:func:`_declared`), when the caller has them."""
    declared = _declared(spec) if declared is None else declared
    if any(caps is not None and caps.accepts_images for caps in declared.values()):
        for ds in datasets:
            if ds.options.image_mode == "native":
                image_paths(ds)  # raises naming the missing file


def system_records(
    spec: RunSpec, declared: Mapping[str, Any] | None = None
) -> list[SystemRecord]:
    entries = available_systems()
    declared = _declared(spec) if declared is None else declared
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


def new_manifest(
    spec: RunSpec, datasets: Sequence[LoadedDataset], declared: Mapping[str, Any] | None = None
) -> RunManifest:
    records = []
    for ds in datasets:
        bench = benchmark_of(ds)
        records.append(DatasetRecord.of(ds, bench.rules.name, bench.applied_rules))
    return RunManifest.new(spec, records, system_records(spec, declared))


def check_errata_used(errata: str | None, datasets: Sequence[LoadedDataset]) -> None:
    """Refuse ``--errata`` when no dataset of the command takes it (it would change nothing)."""
    if errata and not any(getattr(ds.options, "errata", None) for ds in datasets):
        raise OptionError(
            f"--errata {errata} applies to datasets that offer errata (locomo); none was given "
            f"({', '.join(ds.key for ds in datasets)})"
        )


def _finish(run_dir: Path, manifest: RunManifest, runner: Runner) -> None:
    for record in manifest.systems:  # the capabilities each built system declared
        if record.name in runner.capabilities:
            record.capabilities = runner.capabilities[record.name]
        if record.name in runner.settings:
            record.settings = runner.settings[record.name]
    shutil.rmtree(run_dir / "work", ignore_errors=True)  # systems' private state, not a record
    manifest.ended_at = now_rfc3339()
    manifest.status = "scoring"
    write_manifest(run_dir, manifest)


def _score_and_complete(
    run_dir: Path, data_dir: Path, manifest: RunManifest, loaded: Sequence[LoadedDataset]
) -> ScoredRun:
    """Write the derived files, then (only then) mark ``run.json`` ``complete``, or ``failed``
    when a system's failures fail the run."""
    scored = _score_run(run_dir, data_dir, loaded)
    status = "failed" if failed_run(scored.failures) else "complete"
    manifest.status = status
    manifest.scored_from = dict(scored.manifest.scored_from)
    write_manifest(run_dir, manifest)
    scored.manifest.status = status
    return scored


@dataclasses.dataclass(frozen=True)
class LLMOptions:
    """How the answer step reaches its models: the response cache (``use_cache``), a price
    table file, and a factory replacing the HTTP client (tests)."""

    use_cache: bool = True
    prices: Path | None = None
    call_factory: answers.CallFactory | None = None


def progress_ticker(progress: Progress | None, description: str) -> Callable[[int, int], None]:
    """A ``(done, total)`` callback drawing one progress task: ``done == 0`` starts it, every
    later call advances it by one."""
    started = False

    def tick(done: int, total: int) -> None:
        nonlocal started
        if progress is None:
            return
        if not started:
            progress.start_task(description, total)
            started = True
        if done:
            progress.advance(1)

    return tick


def _answer_step(
    run_dir: Path,
    manifest: RunManifest,
    loaded: Sequence[LoadedDataset],
    progress: Progress | None,
    cache: Path,
    llm: LLMOptions,
    judge: str | None = None,
) -> None:
    """Write the answers and judgements the run lacks (memory and answer modes only)."""
    spec = manifest.spec
    if spec.answering is None or spec.mode not in answers.LLM_MODES:
        return
    observations = store.read_observations(run_dir)
    observations = answers.add_condition_observations(
        run_dir, manifest.run_id, spec, loaded, observations, now_rfc3339()
    )
    planned = answers.plan(spec, loaded, cache)
    make_call = llm.call_factory or answers.call_factory(cache, llm.use_cache, llm.prices)
    for item in planned:
        answers.run_step(run_dir, manifest.run_id, spec, [item], observations, make_call,
                         phases=progress.phase if progress is not None else None)


def _execute(
    run_dir: Path,
    data_dir: Path,
    manifest: RunManifest,
    loaded: Sequence[LoadedDataset],
    progress: Progress | None,
    cache_dir: Path | None,
    llm: LLMOptions | None = None,
) -> ScoredRun:
    """Run the systems, write answers and judgements (memory and answer modes), finish the
    manifest and score; ``run.json`` says ``interrupted`` if Ctrl-C (or SIGTERM under
    :func:`sigterm_as_exit`) stops it. The caller holds the lock."""

    def work() -> ScoredRun:
        cache = cache_dir or default_cache_dir()
        runner = Runner(
            manifest.spec, loaded, run_dir, manifest.run_id, progress, cache,
            group_concurrency=manifest.group_concurrency,
            network=manifest.extra.get("network") or (),
        )  # fmt: skip
        runner.execute()
        _answer_step(run_dir, manifest, loaded, progress, cache, llm or LLMOptions())
        _finish(run_dir, manifest, runner)
        return _score_and_complete(run_dir, data_dir, manifest, loaded)

    return _interruptible(run_dir, manifest, work)


def start_run(
    spec: RunSpec,
    data_dir: Path,
    out_dir: Path,
    progress: Progress | None = None,
    cache_dir: Path | None = None,
    datasets: Sequence[LoadedDataset] | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
    on_folder: Callable[[Path], None] | None = None,
    llm: LLMOptions | None = None,
    group_concurrency: int = 1,
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE,
    operator: str | None = None,
) -> ScoredRun:
    """Check everything, create the run's folder (``<UTC start>-<spec hash>``, suffixed ``-2``,
    ``-3``, ... if taken), run every system and score, holding the folder's lock throughout.
    ``on_folder`` is told the folder as soon as it exists (the command line names it when a
    run is interrupted). ``group_concurrency`` and ``max_failure_rate`` are execution settings
    (checked by :func:`check_execution`), recorded in ``run.json`` and kept on resume;
    ``operator`` (``--operator``, checked by :func:`check_operator`) is recorded there too."""
    check_spec(spec)
    check_execution(group_concurrency, max_failure_rate)
    operator = check_operator(operator)
    check_systems(spec.systems, spec.system_configs)
    check_unique_datasets(spec.datasets, [])
    if datasets is not None:  # loaded whole by the caller: cut to the subset here
        loaded = [select(ds, spec.subset) for ds in datasets]
    else:
        loaded = load_datasets(spec, data_dir)
    check_unique_datasets(spec.datasets, loaded)
    declared = _declared(spec)
    check_images(spec, loaded, declared)
    check_mode_datasets(spec, loaded)
    manifest = new_manifest(spec, loaded, declared)
    if spec.answering is not None and spec.mode in answers.LLM_MODES:
        planned = answers.plan(spec, loaded, cache_dir or default_cache_dir())
        manifest.answering = answering_record(spec, planned, cache_dir or default_cache_dir())
    manifest.extra.update(extra_manifest or {})
    manifest.group_concurrency = group_concurrency
    manifest.max_failure_rate = max_failure_rate
    manifest.operator = operator
    run_dir = _new_run_dir(out_dir, manifest)
    if on_folder is not None:
        on_folder(run_dir)
    with store.lock_folder(run_dir):
        write_manifest(run_dir, manifest)
        return _execute(run_dir, data_dir, manifest, loaded, progress, cache_dir, llm)


def resume_run(
    run_dir: Path,
    data_dir: Path,
    progress: Progress | None = None,
    cache_dir: Path | None = None,
    llm: LLMOptions | None = None,
) -> ScoredRun:
    """Continue an interrupted run under the same run id: nothing lost, nothing duplicated.

    Every check (the folder's lock, its manifest, the systems, the datasets' bytes) passes
    before ``run.json`` is touched, so a refused resume leaves the folder as it was."""
    read_manifest(run_dir)  # a folder that is no run is refused before a lock file is made
    with store.lock_folder(run_dir):
        manifest = read_manifest(run_dir)  # read again under the lock
        spec = manifest.spec
        check_systems(spec.systems)
        loaded = load_run_datasets(manifest, data_dir)
        manifest.resumed_at.append(now_rfc3339())
        manifest.status = "running"
        write_manifest(run_dir, manifest)
        return _execute(run_dir, data_dir, manifest, loaded, progress, cache_dir, llm)


def rejudge_run(
    run_dir: Path,
    data_dir: Path,
    judge: ModelChoice,
    progress: Progress | None = None,
    cache_dir: Path | None = None,
    llm: LLMOptions | None = None,
) -> ScoredRun:
    """Judge a finished memory- or answer-mode run again with another judge, without calling
    any system or the reader: the new judgements join ``judgements.jsonl`` (keyed by judge, so
    the old ones stay), ``run.json`` names the judge now scored, and the run is re-scored. The
    run's spec (and so its id) is unchanged. Holds the folder's lock."""
    read_manifest(run_dir)
    with store.lock_folder(run_dir):
        manifest = read_manifest(run_dir)
        spec = manifest.spec
        if spec.answering is None or spec.mode not in answers.LLM_MODES:
            raise OptionError(
                f"--judge: {run_dir} is a {spec.mode} run; only memory- and answer-mode runs "
                "have judgements to redo"
            )
        loaded = load_run_datasets(manifest, data_dir)
        cache = cache_dir or default_cache_dir()
        judged = answers.with_judge(spec, judge)
        planned = answers.plan(judged, loaded, cache)
        options = llm or LLMOptions()
        make_call = options.call_factory or answers.call_factory(
            cache, options.use_cache, options.prices
        )
        observations = store.read_observations(run_dir)
        for item in planned:
            answers.run_step(
                run_dir, manifest.run_id, judged, [item], observations, make_call,
                judge_only=True, phases=progress.phase if progress is not None else None,
            )
        record = answering_record(judged, planned, cache)
        record["judges"] = sorted({*manifest.answering.get("judges", ()), *record["judges"]})
        manifest.answering = record
        write_manifest(run_dir, manifest)
        return _score_run(run_dir, data_dir, loaded)


def repair_run(run_dir: Path) -> int:
    """Drop duplicate records a run folder may hold (two writers before folders were locked):
    keep the first observation of each (dataset, system, question, repeat) and the first ingest
    record of each (dataset, system, group, repeat); returns how many lines were dropped. Holds
    the lock."""
    read_manifest(run_dir)
    with store.lock_folder(run_dir):
        dropped = store.drop_duplicates(
            run_dir / store.OBSERVATIONS, ("dataset", "system", "question_id", "repeat")
        )
        dropped += store.drop_duplicates(
            run_dir / store.INGEST, ("dataset", "system", "group", "repeat")
        )
        return dropped


# ----------------------------------------------------------------------------- scoring


def load_run_datasets(manifest: RunManifest, data_dir: Path) -> list[LoadedDataset]:
    """Reload the datasets of a run (cut to its subset) and check they are the same bytes the
    run used."""
    spec = manifest.spec
    out = []
    for ref, recorded in zip(spec.datasets, manifest.datasets, strict=True):
        ds = load_dataset(ref, data_dir, spec.dataset_options)
        if ds.checksum != recorded.checksum:
            raise RunFolderError(
                f"dataset {ds.key}: files changed since the run (checksum {recorded.checksum} "
                f"in run.json, {ds.checksum} now)"
            )
        if ds.key != recorded.key:  # same bytes, keyed as the run recorded it (an older
            # recallbench keyed a local folder by its absolute path)
            ds = dataclasses.replace(ds, name=recorded.name, variant=recorded.variant)
        out.append(select(ds, spec.subset))
    return out


def export_formats(datasets: Sequence[LoadedDataset]) -> list[str]:
    """The interop formats some dataset of ``datasets`` can be exported in, sorted."""
    return sorted({f for ds in datasets for f in benchmark_of(ds).report.export_formats})


def export_run(run_dir: Path, data_dir: Path, format_name: str) -> list[Path]:
    """Write a scored run's interop files in ``format_name`` (``glasshouse``: Glasshouse's run
    records, ``exports/glasshouse/<system>/<tier>-<question set>.jsonl``) for every dataset
    whose benchmark writes that format, from the observations and ``verdicts.jsonl``; returns
    the files under ``exports/<format>/``, sorted. Refuses an unknown format, a run none of
    whose datasets has it, and a run not scored yet. Holds the folder's lock while it writes."""
    manifest = read_manifest(run_dir)
    loaded = load_run_datasets(manifest, data_dir)
    chosen = [ds for ds in loaded if format_name in benchmark_of(ds).report.export_formats]
    if not chosen:
        known = export_formats(loaded)
        offer = f"formats for this run: {', '.join(known)}" if known else "its datasets have none"
        raise UserError(
            f"--format {format_name}: no dataset of {run_dir} can be exported in that format "
            f"({offer})"
        )
    if not (run_dir / store.VERDICTS).exists():
        raise UserError(
            f"{run_dir} has not been scored (no {store.VERDICTS}): run `recallbench score "
            f"{run_dir}` first"
        )
    with store.lock_folder(run_dir):
        # other harnesses' formats know no repeats: the first repeat's records
        observations = [o for o in store.read_observations(run_dir) if o.repeat == 0]
        verdicts = [
            v
            for v in map(verdict_from_dict, store.read_jsonl_tolerant(run_dir / store.VERDICTS))
            if v.repeat == 0
        ]
        for ds in chosen:
            mine = [v for v in verdicts if v.dataset == ds.key]
            benchmark_of(ds).report.write_exports(run_dir, ds, observations, mine)
    return sorted(p for p in (run_dir / "exports" / format_name).rglob("*") if p.is_file())


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
    run_dir: Path,
    data_dir: Path,
    datasets: Sequence[LoadedDataset] | None = None,
    *,
    incomplete: bool = False,
) -> ScoredRun:
    """Re-score a results folder from its logs: verdicts, metrics and summary (interop exports
    are written on request, by :func:`export_run`).

    The summary also shows each dataset's floor (:func:`recallbench.controls.run_floors` at the
    run's depths), computed here from the questions and written to no log.

    A run some of whose questions have no observation (killed, not resumed) is refused with
    :class:`IncompleteRunError` naming how many, before anything is written, unless
    ``incomplete``: then every metric row of a system with unasked questions counts them in
    ``n_excluded`` under the rule ``not_asked`` and its denominator name says ``incomplete``.
    Holds the folder's lock while it writes."""
    read_manifest(run_dir)
    with store.lock_folder(run_dir):
        return _score_run(run_dir, data_dir, datasets, incomplete=incomplete)


def _not_asked(
    ds: LoadedDataset, verdicts: Sequence[Verdict], systems: Sequence[str]
) -> dict[str, dict[str, int]]:
    """``{system: {slice: questions without an observation}}`` (slice ``all`` included)."""
    asked = {(v.system, v.question_id) for v in verdicts}
    out: dict[str, dict[str, int]] = {}
    for system in systems:
        counts: dict[str, int] = {}
        for q in ds.questions:
            if (system, q.id) not in asked:
                counts[ALL] = counts.get(ALL, 0) + 1
                if (q.axis or ALL) != ALL:
                    counts[q.axis] = counts.get(q.axis, 0) + 1  # type: ignore[index]
        if counts:
            out[system] = counts
    return out


def answering_of(
    manifest: RunManifest, ds: LoadedDataset, judge: str | None = None
) -> Answering | None:
    """What the scorer needs of a memory- or answer-mode run for one dataset (None otherwise):
    the judge scored is ``judge`` if given, else the one ``run.json`` names."""
    info = (manifest.answering.get("datasets") or {}).get(ds.key)
    if not info:
        return None
    return Answering(
        mode=str(manifest.answering["mode"]),
        judge=judge or str(info.get("judge_label") or ""),
        metrics=tuple(info.get("metrics", ())),
        instrument=str(info.get("instrument", "")),
        reader=(info.get("reader") or {}).get("label") or (info.get("reader") or {}).get("model"),
        non_standard=tuple(info.get("non_standard", ())),
    )


def _index_answering(
    base: Answering | None, ds: LoadedDataset, run_dir: Path, repeat: int = 0
) -> Answering | None:
    if base is None:
        return None
    return Answering.of(
        ds.key, base.mode, base.judge, base.metrics, read_answers(run_dir),
        read_judgements(run_dir), repeat=repeat, instrument=base.instrument, reader=base.reader,
        non_standard=base.non_standard,
    )


def _stated(
    rows: Sequence[MetricRow],
    mode: str,
    non_standard: Sequence[str],
    run_date: str,
    repeat: int = 0,
) -> list[MetricRow]:
    """Every row with the run's mode, the dataset's non-standard labels (a subset's label
    among them), the run's date and the repeat it aggregates."""
    return [
        dataclasses.replace(
            r, mode=mode, non_standard=tuple(non_standard), run_date=run_date, repeat=repeat
        )
        for r in rows
    ]


def _provenance(verdicts: Sequence[Verdict], ds: LoadedDataset, run_date: str) -> list[Verdict]:
    """Every verdict with the dataset's checksum and the run's date (``run.json``'s
    ``started_at``: fixed when the run starts, so re-scoring writes the same bytes; ``""``,
    left out of the JSON, for a predictions file, which has no run date)."""
    return [
        dataclasses.replace(v, dataset_sha256=ds.checksum, run_date=run_date) for v in verdicts
    ]


def _subset_labels(spec: RunSpec) -> tuple[str, ...]:
    """``(subset label,)`` for a subset run, ``()`` for a full run (its rows are unchanged)."""
    return () if getattr(spec, "subset", None) is None else (subset_label(spec),)


def speed_of(manifest: RunManifest) -> dict[str, SpeedSettings]:
    """Each system's speed settings: the run's speed options (``spec.speed``, defaults when
    absent) with the codes decided before measuring: the run's own (N1, N2, fixed at its start)
    and the system's from its recorded capabilities (``retrieval_alone`` false: N4,
    ``per_call_timing`` false: N5, ``batch_only``: N6, ``in_process``: N7; a system recorded
    without capabilities counts as in-process)."""
    opts = manifest.spec.speed or SpeedSpec()
    out: dict[str, SpeedSettings] = {}
    for s in manifest.systems:
        caps = s.capabilities or {}
        own = codes_before_measuring(
            in_process=bool(caps.get("in_process", True)),
            retrieval_alone=bool(caps.get("retrieval_alone", True)),
            per_call_timing=bool(caps.get("per_call_timing", True)),
            batch_only=bool(caps.get("batch_only", False)),
        )
        before = tuple(c for c in CODES if c in {*opts.before, *own})
        out[s.name] = SpeedSettings(
            flow_limit_ms=opts.flow_limit_ms,
            llm_ttft_ms=opts.llm_ttft_ms,
            weight=opts.weight,
            before=before,
            sampled=opts.sample is not None,
        )
    return out


def _score_run(
    run_dir: Path,
    data_dir: Path,
    datasets: Sequence[LoadedDataset] | None = None,
    *,
    incomplete: bool = False,
) -> ScoredRun:
    manifest = read_manifest(run_dir)
    spec = manifest.spec
    loaded = list(datasets) if datasets is not None else load_run_datasets(manifest, data_dir)
    observations, ingests = read_logs(run_dir)
    missing: dict[str, dict[str, int]] = {}
    ignoring = ignores_k(manifest)
    systems = answers.scored_systems(spec)
    context = ScoringContext(run_mode=spec.mode)
    repeats = range(max(1, spec.repeats))
    per_dataset: list[tuple[LoadedDataset, int, list[Verdict], Answering | None]] = []
    for ds in loaded:
        bench = benchmark_of(ds)
        for repeat in repeats:
            answering = _index_answering(answering_of(manifest, ds), ds, run_dir, repeat)
            v, miss = score_dataset(
                ds, observations, spec.k, systems, bench.rules, context, ignores_k=ignoring,
                answering=answering, repeat=repeat,
            )
            per_dataset.append((ds, repeat, v, answering))
            for system, n in miss.items():
                counts = missing.setdefault(ds.key, {})
                counts[system] = counts.get(system, 0) + n
    if missing and not incomplete:
        total = sum(n for miss in missing.values() for n in miss.values())
        where = "; ".join(
            f"{system} on {key}: {n}" for key, miss in missing.items() for system, n in miss.items()
        )
        raise IncompleteRunError(
            f"{run_dir}: the run is incomplete: {total} question(s) were never asked ({where}); "
            f"finish it with `recallbench run --resume {run_dir}`, or score what there is with "
            f"`recallbench score {run_dir} --incomplete` (the missing questions are then "
            f"excluded by the rule {NOT_ASKED})"
        )
    verdicts: list[Verdict] = []
    metrics: list[MetricRow] = []
    subset = _subset_labels(spec)
    for ds, repeat, v, answering in per_dataset:
        bench = benchmark_of(ds)
        v = _provenance(v, ds, manifest.started_at)
        verdicts.extend(v)
        obs = [o for o in observations if o.repeat == repeat]
        ing = [i for i in ingests if i.repeat == repeat]
        info = (manifest.answering.get("datasets") or {}).get(ds.key) or {}
        weighted = (*bench.rules.weighted_metrics, *info.get("weighted_metrics", ()))
        unasked = _not_asked(ds, v, systems) if ds.key in missing else {}
        rows = aggregate(
            ds,
            v,
            obs,
            ing,
            systems,
            manifest.run_id,
            weighted,
            not_asked=unasked or None,
        )
        if answering is not None:
            rows.extend(answering_rows(ds, v, systems, manifest.run_id))
        rows.extend(
            mark_incomplete(r, unasked[r.system].get(ALL, 0)) if r.system in unasked else r
            for r in speed_rows(ds, obs, systems, manifest.run_id, speed_of(manifest))
        )
        non_standard = (*(answering.non_standard if answering else ()), *subset)
        stated = _stated(rows, spec.mode, non_standard, manifest.started_at, repeat)
        metrics.extend(stated)
        if repeat == 0:  # submission manifests in other harnesses' formats know no repeats
            bench.report.write_submission(run_dir, manifest, ds, v, stated)
        if repeat == repeats[-1]:
            metrics.extend(repeat_rows([r for r in metrics if r.dataset == ds.key], len(repeats)))
    store.write_jsonl(run_dir / store.VERDICTS, verdicts)
    store.write_jsonl(run_dir / store.METRICS, metrics)
    manifest.scored_from = store.log_hashes(run_dir)
    write_manifest(run_dir, manifest)
    scored = ScoredRun(
        run_dir,
        manifest,
        tuple(loaded),
        tuple(verdicts),
        tuple(metrics),
        missing,
        observations=len(observations),
        answers_generated=sum(1 for o in observations if o.answer_generated)
        + sum(1 for v in verdicts if v.answering.get("answer_outcome") == "answered"),
        floors=run_floors(loaded, spec.k),
        rules=applied_rules(loaded),
        failures=failures(observations, ingests, manifest.max_failure_rate),
    )
    store.write_text(run_dir / store.SUMMARY, render_summary(scored, reports_of(loaded)))
    write_card(run_dir, scored)
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


PREDICTIONS_READER = "predictions file"


def _file_judge(
    ds: LoadedDataset,
    ref: str,
    system: str,
    folder: Path,
    judging: AnsweringSpec,
    cache_dir: Path | None,
    llm: LLMOptions,
) -> Callable[[Sequence[Observation]], Answering]:
    """The judging of a predictions file's answers, planned (and refused if impossible) now,
    run when the scorer hands over the file's observations."""
    cache = cache_dir or default_cache_dir()
    spec = RunSpec(systems=(system,), datasets=(ref,), answering=judging)
    check_spec(spec)
    inst = answers.instrument_for(ds, judging, cache, 0)
    if not inst.judge_metrics.get(judging.mode):
        raise OptionError(f"--judge: {inst.name} scores {ds.key} answers without a judge")
    judge = answers.resolve_role("judge", judging.judge, inst.judge_pin,
                                 judging.llm_concurrency, ds.key)
    inst = inst.with_models(None, judge.choice.model)
    non_standard, notes = answers.labels(ds, inst, judging, None, judge)
    if inst.reader is not None:
        notes = (*notes, f"answers from a predictions file: the reader is not "
                         f"{inst.reader.model}, or not known to be")
    item = answers.DatasetAnswering(ds, inst, None, judge, non_standard, notes)
    make_call = llm.call_factory or answers.call_factory(cache, llm.use_cache, llm.prices)

    def judge_answers(observations: Sequence[Observation]) -> Answering:
        folder.mkdir(parents=True, exist_ok=True)
        for name in (store.ANSWERS, store.JUDGEMENTS):  # the file's answers, judged afresh
            (folder / name).unlink(missing_ok=True)
        run_id = observations[0].run_id if observations else "external"
        log = store.AppendLog(folder / store.ANSWERS)
        try:
            for o in observations:
                log.append(answers.file_answer(o, run_id, judging.mode, inst.name,
                                               PREDICTIONS_READER))
        finally:
            log.close()
        answers.run_step(folder, run_id, spec, [item], observations, make_call,
                         judge_only=True)
        return Answering.of(
            ds.key, judging.mode, judge.label, inst.judge_metrics[judging.mode],
            read_answers(folder), read_judgements(folder), instrument=inst.name,
            reader=PREDICTIONS_READER, non_standard=non_standard,
        )

    return judge_answers


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
    judging: AnsweringSpec | None = None,
    cache_dir: Path | None = None,
    llm: LLMOptions | None = None,
    speed: SpeedSettings | None = None,
) -> ScoredFile:
    """Score a predictions file against dataset ``ref`` by its benchmark's rules and write
    ``verdicts.jsonl``, ``metrics.jsonl`` and ``summary.md`` to ``results_dir`` (default
    ``FILE.scored/`` beside the file), and ``out`` (one line per question) when given.

    ``ks`` default to the dataset's own depths; ``format_name``, ``system`` and
    ``unknown_turns`` are those of :func:`~recallbench.score.predictions.score_predictions`.
    ``judging`` (``--judge``): the file's answers are also judged by the benchmark's official
    judge (or the one named), written as ``answers.jsonl`` and ``judgements.jsonl`` in the
    results folder, and scored like a run's. ``speed``: how lines carrying ``latency_ms`` are
    speed-scored (:class:`~recallbench.score.speed.SpeedSettings`; default target 500 ms).
    Everything is checked before anything is written.
    """
    opts = dict(options or {})
    bench = get_benchmark(parse_dataset_ref(ref)[0])
    bench.rules.check_mode(mode)
    ds = load_dataset(ref, data_dir, opts, predictions=True)
    check_errata_used(opts.get("errata"), [ds])
    depths = tuple(ks) if ks else tuple(ds.default_k)
    folder = results_dir or path.with_name(path.stem + ".scored")
    judged = None
    if judging is not None:
        judged = _file_judge(ds, ref, system, folder, judging, cache_dir, llm or LLMOptions())
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
        judged=judged,
        speed=speed,
    )
    scored = predictions_run(result, ds, ref, depths, folder, opts)
    shown = tuple(predictions_tables(scored, bench.report, bench.headline))
    folder.mkdir(parents=True, exist_ok=True)
    store.write_jsonl(folder / store.VERDICTS, _provenance(result.verdicts, ds, ""))
    store.write_jsonl(folder / store.METRICS, result.metrics)
    notes = bench.report.summary_notes(ds)
    shown_mode = mode if bench.rules.answer_modes is not None else None
    summary = render_predictions_summary(result, scored, shown, notes, shown_mode)
    store.write_text(folder / store.SUMMARY, summary)
    if out is not None:
        store.write_jsonl(out, per_question_lines(result, ds, bench.rules))
    return ScoredFile(result, scored, ds, shown, folder, shown_mode)


# ------------------------------------------------------------------ compare and diff


def _scored_folder(target: Path) -> Path:
    """The results folder behind ``target``: the folder itself, or for a predictions file the
    ``FILE.scored/`` folder ``recallbench score FILE`` wrote beside it."""
    if target.is_dir():
        return target
    if not target.exists():
        raise RunFolderError(f"{target} does not exist: give a results folder or a scored "
                             "predictions file")  # fmt: skip
    folder = target.with_name(target.stem + ".scored")
    if not (folder / store.VERDICTS).exists():
        raise RunFolderError(
            f"{target} is a file with no scored folder beside it ({folder}): score it first "
            f"with `recallbench score {target} --dataset NAME`"
        )
    return folder


def _read_verdicts(folder: Path) -> list[Verdict]:
    path = folder / store.VERDICTS
    if not path.exists():
        raise RunFolderError(
            f"{folder} holds no {store.VERDICTS}: score it first with `recallbench score {folder}`"
        )
    return [verdict_from_dict(d) for d in store.read_jsonl_tolerant(path)]


def _predictions_dataset(
    folder: Path, verdicts: Sequence[Verdict], data_dir: Path, ref: str | None
) -> LoadedDataset:
    """The dataset a scored predictions folder answers: ``ref`` (``--dataset``), else the key
    its verdicts record; its checksum must be the one its metric rows carry."""
    keys = sorted({v.dataset for v in verdicts})
    if ref is None and len(keys) != 1:
        raise RunFolderError(f"{folder}: verdicts of {len(keys)} datasets ({', '.join(keys)}); "
                             "give --dataset")  # fmt: skip
    ds = load_dataset(ref or keys[0], data_dir, predictions=True)
    sums = {
        str(d.get("dataset_sha256")) for d in store.read_jsonl_tolerant(folder / store.METRICS)
    }
    if sums and ds.checksum not in sums:
        raise RunFolderError(
            f"{folder}: scored against dataset sha256 {', '.join(sorted(sums))}, but "
            f"{ds.version_label} is {ds.checksum} now: give the --dataset it was scored with"
        )
    return ds


def read_sides(
    target: Path,
    data_dir: Path,
    *,
    dataset: str | None = None,
    systems: Sequence[str] | None = None,
    memories: bool = True,
) -> list[Side]:
    """Each system of each dataset of one scored results folder (a run, or the folder of a
    scored predictions file, which may be named by the file) as ``compare`` and ``diff`` read
    it: its stored verdicts (never re-scored here), memories and answers. ``systems`` keeps
    those systems, in that order (an unknown one is refused); ``dataset`` names the dataset of
    a predictions folder (default: the key its verdicts record) or picks one of a run.
    ``memories=False`` leaves the observations unread (``compare`` needs only the verdicts;
    the observations of a full-context baseline are most of a folder's bytes)."""
    folder = _scored_folder(target)
    verdicts = _read_verdicts(folder)
    if (folder / store.RUN_JSON).exists():
        manifest: RunManifest | None = read_manifest(folder)
        assert manifest is not None
        loaded = load_run_datasets(manifest, data_dir)
        observations = store.read_observations(folder) if memories else []
        answers_of = {(a.system, a.question_id): a.answer for a in read_answers(folder)
                      if a.answer is not None}  # fmt: skip
        run_id, run_date = manifest.run_id, manifest.started_at
    else:
        manifest, observations, answers_of = None, [], {}
        loaded = [_predictions_dataset(folder, verdicts, data_dir, dataset)]
        run_id, run_date = (verdicts[0].run_id if verdicts else folder.name), NOT_RECORDED
    if dataset is not None and manifest is not None:
        loaded = [ds for ds in loaded if dataset in (ds.key, ds.name)]
        if not loaded:
            raise OptionError(f"{folder}: no dataset {dataset!r} in this run")
    present = list(dict.fromkeys(v.system for v in verdicts))
    chosen = list(systems) if systems else present
    unknown = [s for s in chosen if s not in present]
    if unknown:
        raise OptionError(f"{folder}: no system {', '.join(unknown)} (it holds "
                          f"{', '.join(present) or 'none'})")  # fmt: skip
    sides = []
    for ds in loaded:
        for system in chosen:
            mine = tuple(v for v in verdicts if v.system == system and v.dataset == ds.key)
            if not mine:
                continue
            obs = {o.question_id: o for o in observations
                   if o.system == system and o.dataset == ds.key
                   and getattr(o, "repeat", 0) == 0}  # fmt: skip
            answered = {o.question_id: o.answer for o in obs.values() if o.answer is not None}
            answered.update({q: a for (s, q), a in answers_of.items() if s == system})
            sides.append(Side(folder, run_id, system, ds, mine, manifest, obs, run_date,
                              answered))  # fmt: skip
    if not sides:
        raise RunFolderError(f"{folder}: no verdict of the systems and datasets chosen")
    return sides


def headline_of(ds: LoadedDataset) -> tuple[MetricKey, ...]:
    """The figures the benchmark of ``ds`` leads with (``compare``'s default metric)."""
    return benchmark_of(ds).headline


def report_hints(runs: Sequence[RunRecords]) -> ReportHints:
    """What ``recallbench report`` needs from the benchmarks of the runs' datasets (their
    answer figures and variant order); a dataset of no registered benchmark gets none."""
    figures: dict[str, tuple[AnswerFigure, ...]] = {}
    variants: dict[str, tuple[str, ...]] = {}
    for run in runs:
        for record in run.manifest.datasets:
            try:
                benchmark = get_benchmark(record.name)
            except UserError:
                continue
            figures[record.name] = tuple(benchmark.rules.answer_figures)
            variants[record.name] = tuple(benchmark.spec.variants)
    return ReportHints(figures, variants)
