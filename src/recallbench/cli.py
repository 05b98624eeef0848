"""The ``recallbench`` command line: run, score, compare, diff, controls, systems, datasets,
verify, validate, leaderboard."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import sys
import tomllib
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from recallbench import __version__
from recallbench.chunking import CHUNKINGS
from recallbench.console import PhaseBar as _Bar
from recallbench.console import console, err, fit_consoles, print_table
from recallbench.datasets.fetch import resolve_data_dir
from recallbench.errors import USER_ERROR_EXIT, UserError
from recallbench.report.tables import Table
from recallbench.spec import DEFAULT_K, AnsweringSpec, ModelChoice, RunSpec, SubsetSpec
from recallbench.systems.registry import BASELINES

if TYPE_CHECKING:
    from recallbench.results.scored import ScoredRun
    from recallbench.score.speed import SpeedSettings
    from recallbench.spec import SpeedSpec

app = typer.Typer(
    help="recallbench: measure the long-term memory of LLM systems, reproducibly.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from recallbench.contracts import FORMAT_VERSION

        console.print(
            f"recallbench {__version__} (results format {FORMAT_VERSION})",
            highlight=False,
            markup=False,
        )
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """recallbench: measure the long-term memory of LLM systems, reproducibly."""
    fit_consoles(sys.stdout, sys.stderr)  # $COLUMNS honoured, also when piped


INTERNAL_ERROR_EXIT = 1
FAILED_RUN_EXIT = 3
"""``recallbench run``: the run finished and was scored, but a system failed every call of a
kind, or more than ``--max-failure-rate`` of them (``run.json`` status ``failed``)."""
SIGINT_EXIT = 130
SIGTERM_EXIT = 143


class RunInterrupted(Exception):  # noqa: N818 (what happened, not an error of the program)
    """A run stopped by Ctrl-C (SIGINT) or SIGTERM; :func:`main` prints one line and exits
    with ``code`` (130 or 143). ``folder`` is the run folder to resume, None if none exists."""

    def __init__(self, folder: Path | None, code: int) -> None:
        super().__init__(f"interrupted ({folder})")
        self.folder = folder
        self.code = code

    def message(self) -> str:
        what = "SIGTERM" if self.code == SIGTERM_EXIT else "Ctrl-C"
        if self.folder is None:
            return f"interrupted ({what}) before a results folder was written: run it again"
        return (
            f"interrupted ({what}): nothing measured so far is lost; continue with: "
            f"recallbench run --resume {self.folder}"
        )


def _disk_full(exc: OSError, folder: Path | None) -> typer.Exit:
    where = f" writing {exc.filename}" if exc.filename else ""
    then = (
        f"free some space, then continue with: recallbench run --resume {folder}"
        if folder is not None
        else "free some space and run the command again"
    )
    return fail(f"the disk is full{where} ({exc.strerror or 'no space left on device'}); {then}")


@contextlib.contextmanager
def interrupt_guard(folder_of: Callable[[], Path | None]) -> Iterator[None]:
    """Around a run: SIGTERM stops it like Ctrl-C (the pipeline's ``sigterm_as_exit``, which
    also marks ``run.json`` interrupted); either becomes :class:`RunInterrupted` naming the
    folder to resume (``folder_of()``), and a full disk (``ENOSPC``) a one-line error saying
    how to resume once space is freed."""
    from recallbench.pipeline import sigterm_as_exit

    try:
        with sigterm_as_exit():
            yield
    except KeyboardInterrupt:
        raise RunInterrupted(folder_of(), SIGINT_EXIT) from None
    except SystemExit as exc:
        if exc.code == SIGTERM_EXIT:
            raise RunInterrupted(folder_of(), SIGTERM_EXIT) from None
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise _disk_full(exc, folder_of()) from None
        raise


def fail(message: str, code: int = USER_ERROR_EXIT) -> typer.Exit:
    # escape: a path or id such as "x[draft]" must reach the user as written, not as markup
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise fail(f"--k takes integers joined by commas, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise fail(f"--k values must be positive integers, got {text!r}")
    return ks


def read_config(path: Path | None) -> dict[str, dict[str, Any]]:
    """System options from a JSON or TOML file: ``{system name: {option: value}}``."""
    if path is None:
        return {}
    if not path.exists():
        raise fail(f"config file {path} not found")
    if not path.is_file():
        raise fail(f"config file {path} is not a file (a folder?): give a JSON or TOML file")
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise fail(f"config file {path} cannot be read: {exc.strerror}") from None
    try:
        body = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(
            f"config file {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "save it as UTF-8"
        ) from None
    try:
        data = tomllib.loads(body) if path.suffix == ".toml" else json.loads(body)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise fail(f"config file {path}: {exc}") from None
    except RecursionError:
        raise fail(f"config file {path}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise fail(f"config file {path}: expected a mapping of system name -> options")
    for section, value in data.items():
        if not isinstance(value, dict):
            raise fail(
                f"config file {path}: section [{section}] must be a table of options, got {value!r}"
            )
    return data


def system_list(systems: str, no_baselines: bool) -> tuple[str, ...]:
    chosen = [s.strip() for s in systems.split(",") if s.strip()]
    if not no_baselines:
        chosen = [b for b in BASELINES if b not in chosen] + chosen
    if not chosen:
        raise fail("no system to run (--no-baselines with an empty --systems)")
    return tuple(dict.fromkeys(chosen))


DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data folder (default: $RECALLBENCH_DATA, else a user cache)."),
]
ErrataOpt = Annotated[
    str | None,
    typer.Option(
        help="Third-party errata scored beside the official figures (LoCoMo: locomo-audit)."
    ),
]


def dataset_options(**values: Any) -> dict[str, Any]:
    """A command's dataset options (``RunSpec.dataset_options``): the values given, unset ones
    left out."""
    return {name: value for name, value in values.items() if value}


def dataset_ref(dataset: str, tier: str | None) -> str:
    """``--dataset`` and ``--tier`` as one reference (``name:tier``)."""
    return f"{dataset}:{tier}" if tier else dataset


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def check_resume_flags(ctx: typer.Context, folder: Path, stored: RunSpec, **flags: Any) -> None:
    """Refuse a flag given beside ``--resume`` that differs from the spec the run was started
    with (``run.json``): a resumed run keeps its spec. A flag with the stored value is fine."""
    from recallbench.benchmarks import split_refs

    def conflict(flag: str, value: Any, recorded: Any) -> typer.Exit:
        return fail(
            f"{flag} {value} conflicts with the run being resumed ({folder / 'run.json'} has "
            f"{recorded}): a resumed run keeps the spec it was started with; drop {flag}, "
            "or start a new run"
        )

    def show(values: Sequence[Any]) -> str:
        return ",".join(str(v) for v in values) or '""'

    if given(ctx, "systems") or given(ctx, "no_baselines"):
        chosen = system_list(flags["systems"], flags["no_baselines"])
        if chosen != stored.systems:
            raise conflict("--systems", show(chosen), f"systems {show(stored.systems)}")
    if given(ctx, "datasets"):
        refs = tuple(split_refs(flags["datasets"]))
        if refs != stored.datasets:
            raise conflict("--datasets", show(refs), f"datasets {show(stored.datasets)}")
    if given(ctx, "k") and flags["k"] is not None:
        ks = parse_ks(flags["k"])
        if ks != stored.k:
            raise conflict("--k", show(ks), f"k {show(stored.k)}")
    for name, attr in (
        ("chunking", "chunking"),
        ("concurrency", "concurrency"),
        ("timeout", "timeout_s"),
        ("seed", "seed"),
    ):
        if given(ctx, name) and flags[name] != getattr(stored, attr):
            raise conflict(f"--{name}", flags[name], f"{attr} {getattr(stored, attr)}")
    if given(ctx, "config") and read_config(flags["config"]) != dict(stored.system_configs):
        raise conflict(
            "--config", flags["config"], f"system_configs {json.dumps(stored.system_configs)}"
        )
    defaults = {"image_mode": "native"}
    for name in ("questions", "image_mode", "caption_model", "errata"):
        recorded = stored.dataset_options.get(name, defaults.get(name))
        if given(ctx, name) and flags[name] != recorded:
            raise conflict(f"--{name.replace('_', '-')}", flags[name], f"{name} {recorded}")
    if given(ctx, "out") and flags["out"].resolve() != folder.resolve().parent:
        raise conflict("--out", flags["out"], f"its folder in {folder.resolve().parent}")
    if given(ctx, "repeats") and flags["repeats"] != stored.repeats:
        raise conflict("--repeats", flags["repeats"], f"repeats {stored.repeats}")
    subset_flags = ("limit", "groups", "questions_from")
    if any(given(ctx, name) for name in subset_flags):
        asked = run_subset(
            flags["limit"], flags["groups"], flags["questions_from"], stored.seed
        )
        if asked != stored.subset:
            recorded = "a full run" if stored.subset is None else stored.subset.label
            raise conflict("the subset", "asked" if asked is None else asked.label, recorded)


def run_subset(
    limit: int | None, groups: str | None, questions_from: Path | None, seed: int
) -> SubsetSpec | None:
    """The run's subset from ``--limit``, ``--groups`` and ``--questions-from`` (at most one;
    None: a full run). ``--limit`` samples with the run's ``--seed``; ``--questions-from``
    reads the file now and records its SHA-256 and ids."""
    from recallbench.datasets.subset import questions_subset

    chosen = [
        flag
        for flag, value in (
            ("--limit", limit), ("--groups", groups), ("--questions-from", questions_from),
        )
        if value is not None
    ]  # fmt: skip
    if len(chosen) > 1:
        raise fail(f"{' and '.join(chosen)}: give one way of choosing a subset, not several")
    if limit is not None:
        if limit < 1:
            raise fail(f"--limit must be at least 1, got {limit}")
        return SubsetSpec(kind="limit", limit=limit, seed=seed)
    if groups is not None:
        ids = tuple(dict.fromkeys(g.strip() for g in groups.split(",") if g.strip()))
        if not ids:
            raise fail(f"--groups {groups!r} names no haystack group: give ids joined by commas")
        return SubsetSpec(kind="groups", groups=ids)
    if questions_from is not None:
        try:
            return questions_subset(questions_from)
        except UserError as exc:
            raise fail(str(exc)) from None
    return None


def check_out_dir(out: Path) -> None:
    """Before any work, creating nothing: ``--out`` must be a folder, or a path recallbench can
    create a folder at, in a folder it can write in."""
    if out.exists() and not out.is_dir():
        raise fail(f"--out {out} is a file, not a folder: give a folder for the results")
    existing = out
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise fail(f"--out {out}: {existing} is a file, so no folder can be made there")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise fail(f"--out {out}: {existing} is not writable; give a folder you can write in")


ModeOpt = Annotated[
    str,
    typer.Option(
        help="retrieval (no LLM, the default) | dry (Glasshouse's string rules) | memory (a judge "
        "reads the returned memories) | answer (a reader answers from them, a judge grades)."
    ),
]
ReaderOpt = Annotated[
    str | None,
    typer.Option(help="Reader model (answer mode); default: the benchmark's pinned reader. "
                 "mock: the shipped mock provider, offline."),
]
JudgeOpt = Annotated[
    str | None,
    typer.Option(help="Judge model; default: the benchmark's pinned judge. mock-judge: the "
                 "shipped mock provider, offline."),
]
UrlOpt = Annotated[
    str | None, typer.Option(help="OpenAI-compatible base URL (ending in /v1) of that model.")
]
KeyEnvOpt = Annotated[
    str | None,
    typer.Option(help="Name of the environment variable holding that endpoint's API key "
                 "(the key itself is never written anywhere)."),
]


def answering_spec(
    mode: str,
    reader: str | None,
    reader_url: str | None,
    reader_key_env: str | None,
    judge: str | None,
    judge_url: str | None,
    judge_key_env: str | None,
    condition: str | None,
    prompts: str,
    reader_preset: str | None,
    judge_variant: str | None,
    same_model: bool,
    llm_concurrency: int,
) -> AnsweringSpec | None:
    """The run's answering options (None in retrieval mode), checked before any work."""
    from recallbench.answers import check_answering

    if mode == "retrieval" and not any((reader, judge, condition)):
        return None

    def choice(model: str | None, url: str | None, key_env: str | None, what: str):
        if model is None:
            if url or key_env:
                raise fail(f"--{what}-url and --{what}-key-env need --{what} MODEL")
            return None
        return ModelChoice(model, url.rstrip("/") if url else None, key_env)

    spec = AnsweringSpec(
        mode=mode,
        reader=choice(reader, reader_url, reader_key_env, "reader"),
        judge=choice(judge, judge_url, judge_key_env, "judge"),
        conditions=tuple(c.strip() for c in (condition or "").split(",") if c.strip()),
        prompts=prompts,
        reader_preset=reader_preset,
        judge_variant=judge_variant,
        same_model=same_model,
        llm_concurrency=llm_concurrency,
    )
    try:
        check_answering(spec)
    except UserError as exc:
        raise fail(str(exc)) from None
    return spec


ANSWERING_FLAGS = (
    "mode", "reader", "reader_url", "reader_key_env", "judge", "judge_url", "judge_key_env",
    "condition", "prompts", "reader_preset", "judge_variant", "same_model", "llm_concurrency",
)  # fmt: skip
"""``run`` options that shape the answering spec (a resumed run keeps its own)."""

SPEED_CAPABILITY_DEFAULTS = {"retrieval_alone": True, "per_call_timing": True, "batch_only": False}
"""Capabilities for speed (N4-N6) that ``recallbench systems`` shows only when declared
otherwise than these defaults (no built-in system does)."""

LlmTtftOpt = Annotated[
    float,
    typer.Option(
        "--llm-ttft",
        help="Speed: the paired model's time to first token (ms); the speed target is "
        "max(50, 1000 - this).",
    ),
]
SpeedWeightOpt = Annotated[
    float | None,
    typer.Option(
        "--speed-weight",
        help="Speed: also print accuracy + weight x speed (Glasshouse's total) beside the "
        "figures; without it speed stays its own column.",
    ),
]
NetworkFilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--network",
        help="Speed: a network.json (recallbench network); repeat it for files from other "
        "locations (N2: round trips within 10 ms of each other).",
    ),
]
CdnRangesOpt = Annotated[
    Path | None,
    typer.Option(
        "--cdn-ranges",
        help="Speed: a file of CDN IP ranges (one CIDR a line); a server inside one is N1.",
    ),
]


def run_speed_spec(
    llm_ttft: float,
    speed_weight: float | None,
    network: Sequence[Path] | None = None,
    cdn_ranges: Path | None = None,
    speed_sample: int | None = None,
) -> SpeedSpec | None:
    """The run's speed options, or None when all are at their defaults (the spec, and so its
    hash, is then what it always was). The codes decided before measuring (N1 from
    ``--cdn-ranges``, N2 from ``--network`` files of two or more locations) are fixed here,
    when the run starts. Refuses a TTFT or weight below 0, and a speed sample below 1."""
    from recallbench.score.speed import settings_from_files
    from recallbench.spec import SpeedSpec

    try:
        settings = settings_from_files(
            llm_ttft_ms=llm_ttft, weight=speed_weight, network_paths=network or (),
            cdn_ranges_path=cdn_ranges,
        )
    except UserError as exc:
        raise fail(str(exc)) from None
    before = tuple(settings.before)
    if speed_sample is not None and speed_sample < 1:
        raise fail(f"--speed-sample must be at least 1, got {speed_sample}")
    if llm_ttft == 500.0 and speed_weight is None and not before and speed_sample is None:
        return None
    return SpeedSpec(
        llm_ttft_ms=llm_ttft, weight=speed_weight, before=before, sample=speed_sample
    )


OutputFormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="Output: table (for people, fitted to the width) | markdown | csv | json (every "
        "metric row with its denominator, run id, dataset version and SHA-256).",
    ),
]


def check_output_format(value: str) -> None:
    """Refuse a ``--format`` that is not an output format, naming those there are."""
    from recallbench.report.formats import OUTPUT_FORMATS

    if value not in OUTPUT_FORMATS:
        raise fail(f"--format must be one of {', '.join(OUTPUT_FORMATS)}, got {value!r}")


def show_results(
    scored: ScoredRun, shown: Sequence[Table], lines: Sequence[str], output_format: str
) -> Callable[[str], None]:
    """Print a scored run in ``output_format``: tables then ``lines`` (table, markdown), or
    one CSV or JSON document of its metric rows on stdout with ``lines`` on stderr. Returns
    the function later notes go through (stdout for people, stderr beside a document)."""
    from recallbench.report.formats import (
        MACHINE_FORMATS,
        markdown_tables,
        metrics_csv,
        metrics_json,
    )

    def to_err(line: str) -> None:
        err.print(line, highlight=False, markup=False, soft_wrap=True)

    def to_out(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    if output_format in MACHINE_FORMATS:
        body = metrics_csv(scored.metrics) if output_format == "csv" else metrics_json(scored)
        sys.stdout.write(body)
        sys.stdout.flush()
        for line in lines:
            to_err(line)
        return to_err
    if output_format == "markdown":
        sys.stdout.write(markdown_tables(shown) + "\n")
        sys.stdout.flush()
    else:
        for t in shown:
            print_table(t)
    for line in lines:
        to_out(line)
    return to_out


def export_files(run_dir: Path, data: Path, format_name: str) -> list[Path]:
    """:func:`recallbench.pipeline.export_run`, a user error printed as one line."""
    from recallbench.pipeline import export_run

    try:
        return export_run(run_dir, data, format_name)
    except UserError as exc:
        raise fail(str(exc)) from None


@app.command()
def run(
    ctx: typer.Context,
    systems: Annotated[str, typer.Option(help="Systems to run, joined by commas.")] = "",
    datasets: Annotated[
        str, typer.Option(help="Datasets: name, name:variant or name@PATH, joined by commas.")
    ] = "sample",
    k: Annotated[
        str | None,
        typer.Option(
            "--k",
            help="Retrieval depths, joined by commas (default: each dataset's own, else "
            + ",".join(str(x) for x in DEFAULT_K)
            + ").",
        ),
    ] = None,
    chunking: Annotated[str, typer.Option(help=f"Ingest unit: {'|'.join(CHUNKINGS)}.")] = "pair",
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    data_dir: DataDirOpt = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Shared cache (embeddings, ...); default $RECALLBENCH_CACHE or a user cache."
        ),
    ] = None,
    no_baselines: Annotated[
        bool, typer.Option("--no-baselines", help="Do not add random, bm25 and naive.")
    ] = False,
    concurrency: Annotated[
        int, typer.Option(help="Concurrent searches (within one haystack group).", min=1)
    ] = 1,
    group_concurrency: Annotated[
        int,
        typer.Option(
            help="Haystack groups ingested and searched at once, each by its own system "
            "instance (an execution setting: results do not depend on it).",
            min=1,
        ),
    ] = 1,
    max_failure_rate: Annotated[
        float,
        typer.Option(
            help="Exit 3 (run.json status failed) when a system failed more than this share "
            "of its searches or ingests on a dataset, or all of them.",
            min=0.0,
            max=1.0,
        ),
    ] = 0.5,
    network: Annotated[
        list[Path] | None,
        typer.Option(
            "--network",
            help="A network.json from `recallbench network` (repeatable): each search of a "
            "system calling that host:port records the round trip and the latency with one "
            "round trip removed (the first matching file is subtracted).",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-call timeout in seconds.")] = 60.0,
    seed: Annotated[int, typer.Option(help="Seed for random choices.")] = 0,
    config: Annotated[
        Path | None, typer.Option(help="JSON or TOML file: {system: {option: value}}.")
    ] = None,
    questions: Annotated[
        str | None,
        typer.Option(help="Question set, where the dataset has several (e.g. tier|xling|probes)."),
    ] = None,
    image_mode: Annotated[str, typer.Option(help="native|caption|skip.")] = "native",
    caption_model: Annotated[
        str | None, typer.Option(help="Caption model named by --image-mode caption.")
    ] = None,
    errata: ErrataOpt = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue an interrupted run folder under the same run id.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    mode: ModeOpt = "retrieval",
    reader: ReaderOpt = None,
    reader_url: UrlOpt = None,
    reader_key_env: KeyEnvOpt = None,
    judge: JudgeOpt = None,
    judge_url: UrlOpt = None,
    judge_key_env: KeyEnvOpt = None,
    condition: Annotated[
        str | None,
        typer.Option(help="Also run no-memory (the reader gets nothing: the floor) and/or "
                     "oracle (the gold evidence turns: the ceiling), joined by commas."),
    ] = None,
    prompts: Annotated[
        str, typer.Option(help="official (the benchmark's own) | recallbench-v1 (labelled).")
    ] = "official",
    reader_preset: Annotated[
        str | None, typer.Option(help="Reader prompt preset (LongMemEval's templates).")
    ] = None,
    judge_variant: Annotated[
        str | None, typer.Option(help="Judge variant: mem0-j (LoCoMo, labelled).")
    ] = None,
    same_model: Annotated[
        bool, typer.Option("--same-model", help="Allow the reader to be the judge (labelled).")
    ] = False,
    cdn_ranges: CdnRangesOpt = None,
    llm_ttft: LlmTtftOpt = 500.0,
    speed_weight: SpeedWeightOpt = None,
    speed_sample: Annotated[
        int | None,
        typer.Option(
            help="Speed: search N seeded questions per dataset alone, one at a time after the "
            "rest of their group, and score speed on those only (for runs with "
            "--concurrency or --group-concurrency above 1).",
        ),
    ] = None,
    llm_concurrency: Annotated[
        int, typer.Option(help="LLM calls in flight per endpoint.", min=1)
    ] = 8,
    repeats: Annotated[
        int,
        typer.Option(
            help="Run each system N times (repeat r gives systems seed + r, and LLM calls cache "
            "sample r); per slice the mean, median and standard deviation over the repeats, "
            "and with N >= 3 a reproduction tolerance of two standard deviations.",
        ),
    ] = 1,
    limit: Annotated[
        int | None,
        typer.Option(
            help="Subset: a seeded sample (--seed) of N questions per dataset, stratified by "
            "slice; every row and table says subset.",
        ),
    ] = None,
    groups: Annotated[
        str | None,
        typer.Option(help="Subset: the haystack groups with these ids, joined by commas."),
    ] = None,
    questions_from: Annotated[
        Path | None,
        typer.Option(
            "--questions-from",
            help="Subset: the question ids in FILE, one a line (its SHA-256 is recorded).",
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")
    ] = False,
    prices: Annotated[
        Path | None,
        typer.Option(help="Price table (TOML or JSON: model -> USD per 1M tokens) for cost."),
    ] = None,
    operator: Annotated[
        str | None,
        typer.Option(
            help="Who runs it (a name or team, one line): recorded in run.json and the card "
            "(card.md); not part of the spec, so it does not change the run id."
        ),
    ] = None,
    output_format: OutputFormatOpt = "table",
    export: Annotated[
        str | None,
        typer.Option(
            "--export",
            help="Also write interop files in this format at the end (glasshouse: "
            "Glasshouse's run records); the same as `recallbench export RUN --format NAME`.",
        ),
    ] = None,
) -> None:
    """Run memory systems (beside the baselines) on datasets and score retrieval, and in memory
    or answer mode their answers, with each benchmark's official reader and judge.

    Exit codes: 0 the run is complete; 2 a user error (nothing run); 3 the run finished but a
    system failed every call, or more than --max-failure-rate of them (each system's failures
    are printed by cause; run.json says failed); 1 a bug; 130 / 143 interrupted (resumable)."""
    from recallbench.benchmarks import load_dataset, split_refs
    from recallbench.pipeline import (
        LLMOptions,
        check_errata_used,
        check_spec,
        check_systems,
        export_formats,
        read_manifest,
        resume_run,
        start_run,
        tables,
    )

    check_output_format(output_format)
    data = resolve_data_dir(data_dir)
    bar = _Bar(enabled=not quiet)
    llm = LLMOptions(use_cache=not no_cache, prices=prices)
    try:
        if resume is not None:
            for name in ANSWERING_FLAGS:
                if given(ctx, name):
                    raise fail(
                        f"--{name.replace('_', '-')} cannot change a resumed run (it keeps the "
                        f"answering options in {resume / 'run.json'}); drop it, or re-judge a "
                        "finished run with `recallbench score RUN --judge MODEL`"
                    )
            manifest = read_manifest(resume)
            for name, value, recorded in (
                ("group_concurrency", group_concurrency, manifest.group_concurrency),
                ("max_failure_rate", max_failure_rate, manifest.max_failure_rate),
            ):
                if given(ctx, name) and value != recorded:
                    flag = f"--{name.replace('_', '-')}"
                    raise fail(
                        f"{flag} {value} conflicts with the run being resumed "
                        f"({resume / 'run.json'} has {name} {recorded} under execution): a "
                        f"resumed run keeps its execution settings; drop {flag}, or start a "
                        "new run"
                    )
            if operator is not None and operator.strip() != manifest.operator:
                raise fail(
                    f"--operator {operator!r} conflicts with the run being resumed "
                    f"({resume / 'run.json'} records operator {manifest.operator!r}): a resumed "
                    "run keeps who started it; drop --operator"
                )
            check_resume_flags(
                ctx,
                resume,
                manifest.spec,
                systems=systems,
                no_baselines=no_baselines,
                datasets=datasets,
                k=k,
                chunking=chunking,
                concurrency=concurrency,
                timeout=timeout,
                seed=seed,
                config=config,
                questions=questions,
                image_mode=image_mode,
                caption_model=caption_model,
                errata=errata,
                out=out,
                repeats=repeats,
                limit=limit,
                groups=groups,
                questions_from=questions_from,
            )
            with interrupt_guard(lambda: resume), bar.progress:
                scored = resume_run(resume, data, bar.callbacks(), cache_dir, llm)
        else:
            if chunking not in CHUNKINGS:
                raise fail(f"--chunking must be one of {', '.join(CHUNKINGS)}, got {chunking!r}")
            answering = answering_spec(
                mode, reader, reader_url, reader_key_env, judge, judge_url, judge_key_env,
                condition, prompts, reader_preset, judge_variant, same_model, llm_concurrency,
            )
            options = dataset_options(
                image_mode=image_mode,
                questions=questions,
                caption_model=caption_model,
                errata=errata,
            )
            chosen = system_list(systems, no_baselines)
            ks = parse_ks(k) if k else None
            subset = run_subset(limit, groups, questions_from, seed)
            check_spec(
                RunSpec(
                    systems=chosen,
                    datasets=(),
                    k=ks or DEFAULT_K,
                    timeout_s=timeout,
                    concurrency=concurrency,
                    repeats=repeats,
                )
            )
            configs = read_config(config)
            for note in check_systems(chosen, configs, f"config file {config}"):
                err.print(note, highlight=False, markup=False)
            refs = tuple(split_refs(datasets))
            if not refs:
                raise fail(f"--datasets {datasets!r} names no dataset: give at least one name")
            check_out_dir(out)
            loaded = [load_dataset(ref, data, options) for ref in refs]
            check_errata_used(errata, loaded)
            if export is not None and export not in export_formats(loaded):
                known = ", ".join(export_formats(loaded)) or "none"
                raise fail(
                    f"--export {export}: no dataset of this run can be exported in that format "
                    f"(formats for these datasets: {known})"
                )
            if ks is None:  # the datasets' own depths (e.g. LongMemEval's 1,3,5,10,30,50)
                ks = tuple(sorted({int(x) for ds in loaded for x in ds.default_k}))
            spec = RunSpec(
                systems=chosen,
                datasets=refs,
                k=ks,
                chunking=chunking,
                seed=seed,
                timeout_s=timeout,
                concurrency=concurrency,
                system_configs=configs,
                dataset_options=options,
                answering=answering,
                speed=run_speed_spec(llm_ttft, speed_weight, network, cdn_ranges, speed_sample),
                subset=subset,
                repeats=repeats,
            )
            folder: list[Path] = []  # told by start_run once the folder exists
            with interrupt_guard(lambda: folder[0] if folder else None), bar.progress:
                scored = start_run(
                    spec,
                    data,
                    out,
                    bar.callbacks(),
                    cache_dir,
                    datasets=loaded,
                    on_folder=folder.append,
                    llm=llm,
                    group_concurrency=group_concurrency,
                    max_failure_rate=max_failure_rate,
                    extra_manifest=network_extra(network),
                    operator=operator,
                )
    except UserError as exc:
        raise fail(str(exc)) from None
    from recallbench.report.summary import failure_lines, provenance_lines, rules_lines

    say = show_results(
        scored, tables(scored), [*provenance_lines(scored), *rules_lines(scored)], output_format
    )
    for line in failure_lines(scored):
        err.print(line, highlight=False, markup=False, soft_wrap=True)
    if export is not None:
        written = export_files(scored.run_dir, data, export)
        say(f"exports ({export}): {len(written)} file(s) in {scored.run_dir / 'exports' / export}")
    say(f"results: {scored.run_dir}")
    if scored.manifest.status == "failed":
        raise typer.Exit(FAILED_RUN_EXIT)


FILE_ONLY_FLAGS: tuple[str, ...] = (
    "dataset", "tier", "questions", "mode", "out", "results_dir", "format_name", "name",
    "unknown_turns", "errata",
)  # fmt: skip
"""``score`` options that apply to a predictions file only."""


def check_score_dir_flags(
    ctx: typer.Context, folder: Path, k: str | None, output_format: bool = False
) -> None:
    """``score DIR`` re-scores a run as it was run: ``--k`` must match the stored depths and
    an option for predictions files is refused, naming it (``--format`` only when it names a
    predictions shape, not an output format: ``output_format``)."""
    from recallbench.pipeline import read_manifest

    for name in FILE_ONLY_FLAGS:
        if name == "format_name" and output_format:
            continue
        if given(ctx, name):
            flag = "--format" if name == "format_name" else "--" + name.replace("_", "-")
            raise fail(
                f"{flag} applies to a predictions file; {folder} is a results folder, "
                "re-scored with the spec in its run.json: drop it"
            )
    if k is None:
        return
    try:
        stored = read_manifest(folder).spec.k
    except UserError as exc:
        raise fail(str(exc)) from None
    ks = parse_ks(k)
    if ks != stored:
        shown = ",".join(map(str, stored))
        raise fail(
            f"--k {','.join(map(str, ks))} conflicts with the run being re-scored "
            f"({folder / 'run.json'} has k {shown}): a results folder is scored at the depths "
            "it was run with; drop --k, or start a new run with --k"
        )


@app.command()
def score(
    ctx: typer.Context,
    target: Annotated[
        Path,
        typer.Argument(
            help="A results folder (re-scored from disk) or a JSONL file of predictions."
        ),
    ],
    dataset: Annotated[
        str | None,
        typer.Option(help="Dataset the predictions answer (name, name:variant or name@PATH)."),
    ] = None,
    tier: Annotated[str | None, typer.Option(help="Variant (tier) of the dataset.")] = None,
    questions: Annotated[str | None, typer.Option(help="Question set of the dataset.")] = None,
    mode: Annotated[str, typer.Option(help="Answer scoring mode (dry: string rules).")] = "dry",
    k: Annotated[
        str | None, typer.Option("--k", help="Retrieval depths, joined by commas.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write one JSON line per question here (prediction files).")
    ] = None,
    results_dir: Annotated[
        Path | None,
        typer.Option(help="Folder for verdicts.jsonl and metrics.jsonl (prediction files)."),
    ] = None,
    data_dir: DataDirOpt = None,
    format_name: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Output: table | markdown | csv | json (as for run). For a predictions file "
            "it may instead name the shape of its lines: recallbench, or the benchmark's own "
            "(longmemeval, glasshouse); default: detected from the fields.",
        ),
    ] = None,
    name: Annotated[
        str, typer.Option("--name", help="The system the predictions file is from.")
    ] = "external",
    unknown_turns: Annotated[
        str,
        typer.Option(
            help="A retrieved turn id that names no turn: refuse (the default) or warn "
            "(score it as an id that is not evidence, counted and reported)."
        ),
    ] = "refuse",
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    errata: ErrataOpt = None,
    incomplete: Annotated[
        bool,
        typer.Option(
            "--incomplete",
            help="Score a run some of whose questions were never asked (killed, not resumed): "
            "they are excluded under the rule not_asked and every row says incomplete.",
        ),
    ] = False,
    judge: Annotated[
        str | None,
        typer.Option(help="Re-judge a memory- or answer-mode run with this judge (no system or "
                     "reader is called), or judge a predictions file's answers."),
    ] = None,
    judge_url: UrlOpt = None,
    judge_key_env: KeyEnvOpt = None,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Shared cache; default $RECALLBENCH_CACHE or a user cache.")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")
    ] = False,
    prices: Annotated[
        Path | None, typer.Option(help="Price table (TOML or JSON) for the judge's cost.")
    ] = None,
    llm_ttft: LlmTtftOpt = 500.0,
    speed_weight: SpeedWeightOpt = None,
    network: NetworkFilesOpt = None,
    cdn_ranges: CdnRangesOpt = None,
) -> None:
    """Re-score a run from disk without calling any system, re-judge it with another judge, or
    score a predictions file (lines carrying latency_ms also get the Glasshouse speed score)."""
    from recallbench.pipeline import LLMOptions, rejudge_run, score_run, tables
    from recallbench.report.formats import OUTPUT_FORMATS
    from recallbench.report.summary import rules_lines

    output_format = "table"
    if format_name in OUTPUT_FORMATS:
        output_format, format_name = format_name, None
    data = resolve_data_dir(data_dir)
    if (judge_url or judge_key_env) and judge is None:
        raise fail("--judge-url and --judge-key-env need --judge MODEL")
    if target.is_dir():
        # format_name is None: not given, or it named an output format
        check_score_dir_flags(ctx, target, k, output_format=format_name is None)
        try:
            if judge is not None:
                choice = ModelChoice(judge, judge_url.rstrip("/") if judge_url else None,
                                     judge_key_env)
                bar = _Bar(enabled=not quiet)
                with bar.progress:
                    scored = rejudge_run(target, data, choice, bar.callbacks(), cache_dir,
                                         LLMOptions(use_cache=not no_cache, prices=prices))
            else:
                scored = score_run(target, data, incomplete=incomplete)
        except UserError as exc:
            raise fail(str(exc)) from None
        for key, miss in scored.missing.items():
            for system, n in miss.items():
                err.print(
                    f"INCOMPLETE: {system} on {key}: {n} question(s) never asked, excluded "
                    "(not_asked) from every figure",
                    highlight=False,
                    markup=False,
                )
        say = show_results(
            scored, [] if quiet else tables(scored), rules_lines(scored), output_format
        )
        say(f"scored: {target}")
        return
    if not target.exists():
        raise fail(f"{target} does not exist")
    if dataset is None:
        raise fail("scoring a predictions file needs --dataset")
    if out is not None and out.resolve() == target.resolve():
        raise fail(
            f"--out {out} is the predictions file being scored: it would be overwritten; "
            "give another file for the per-question lines"
        )
    if out is not None and out.is_dir():
        raise fail(f"--out {out} is a folder: give a file for the per-question lines")
    ref = dataset_ref(dataset, tier)
    options = dataset_options(questions=questions, errata=errata)
    ks = parse_ks(k) if k else None
    judging = None
    if judge is not None:
        judging = AnsweringSpec(
            "answer", judge=ModelChoice(judge, judge_url.rstrip("/") if judge_url else None,
                                        judge_key_env)
        )
    from recallbench.score.speed import settings_from_files

    try:
        speed = settings_from_files(
            llm_ttft_ms=llm_ttft, weight=speed_weight, network_paths=network or (),
            cdn_ranges_path=cdn_ranges,
        )  # fmt: skip
    except UserError as exc:
        raise fail(str(exc)) from None
    score_file(
        target, ref, options, mode, ks, out, results_dir, data, quiet,
        format_name, name, unknown_turns, judging, cache_dir, not no_cache, prices, speed,
        output_format,
    )  # fmt: skip


def score_file(
    target: Path,
    ref: str,
    options: dict[str, Any],
    mode: str,
    ks: tuple[int, ...] | None,
    out: Path | None,
    results_dir: Path | None,
    data: Path,
    quiet: bool,
    format_name: str | None = None,
    name: str = "external",
    unknown_turns: str = "refuse",
    judging: AnsweringSpec | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    prices: Path | None = None,
    speed: SpeedSettings | None = None,
    output_format: str = "table",
) -> None:
    """``recallbench score FILE``: score (and with ``judging`` judge the answers), write, then
    print the tables (unless ``quiet``), the notes on how the file was read (stderr), what the
    figures carry and the rules applied, in ``output_format`` (:func:`show_results`)."""
    from recallbench import pipeline
    from recallbench.report.predictions import predictions_header
    from recallbench.report.summary import rules_lines

    try:
        done = pipeline.score_file(
            target,
            ref,
            data,
            options=options,
            mode=mode,
            ks=ks,
            results_dir=results_dir,
            out=out,
            format_name=format_name,
            system=name.strip(),
            unknown_turns=unknown_turns,
            judging=judging,
            cache_dir=cache_dir,
            llm=pipeline.LLMOptions(use_cache=use_cache, prices=prices),
            speed=speed,
        )
    except UserError as exc:
        raise fail(str(exc)) from None
    header = predictions_header(done.result, done.scored, done.mode)
    say = show_results(
        done.scored, [] if quiet else done.tables, [*header, *rules_lines(done.scored)],
        output_format,
    )  # fmt: skip
    for note in done.result.notes():
        err.print(note, highlight=False, markup=False)
    say(f"verdicts, metrics and summary: {done.folder}")


@app.command("judge-check")
def judge_check_cmd(
    dataset: Annotated[str, typer.Option(help="Dataset (name, name:variant or name@PATH).")],
    judge: JudgeOpt = None,
    judge_url: UrlOpt = None,
    judge_key_env: KeyEnvOpt = None,
    tier: Annotated[str | None, typer.Option(help="Variant (tier) of the dataset.")] = None,
    questions: Annotated[str | None, typer.Option(help="Question set of the dataset.")] = None,
    mode: Annotated[str, typer.Option(help="memory | answer: the judge prompt checked.")] = (
        "answer"
    ),
    prompts: Annotated[str, typer.Option(help="official | recallbench-v1.")] = "official",
    judge_variant: Annotated[str | None, typer.Option(help="Judge variant (mem0-j).")] = None,
    per_type: Annotated[
        int | None, typer.Option(help="Keep the first N cases of each case type.", min=1)
    ] = None,
    llm_concurrency: Annotated[int, typer.Option(help="Judge calls in flight.", min=1)] = 8,
    cache_dir: Annotated[Path | None, typer.Option(help="Shared cache.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the result (JSON) here.")] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """How well a judge grades cases whose right verdict the benchmark's own rules give (the
    gold verbatim, an accepted alternative, a plausible wrong answer, "I don't know" on each
    axis, ...): accuracy per case type. Stored, and shown on the card of every run that uses
    that judge on that dataset."""
    from recallbench import answers
    from recallbench.benchmarks import load_dataset
    from recallbench.pipeline import default_cache_dir, progress_ticker
    from recallbench.results import store

    data = resolve_data_dir(data_dir)
    spec = answering_spec(mode, None, None, None, judge, judge_url, judge_key_env, None,
                          prompts, None, judge_variant, False, llm_concurrency)
    assert spec is not None
    if mode not in ("memory", "answer"):
        raise fail(f"--mode must be memory or answer, got {mode!r}")
    cache = cache_dir or default_cache_dir()
    bar = _Bar(enabled=True)
    try:
        ds = load_dataset(dataset_ref(dataset, tier), data, dataset_options(questions=questions))
        with bar.progress:
            tick = progress_ticker(bar.callbacks(), f"judge-check {ds.key}")
            check = answers.judge_check(
                ds, spec, cache, answers.call_factory(cache, not no_cache), progress=tick
            )
        inst = answers.instrument_for(ds, spec, cache, 0)
        key = answers.judge_check_key(ds, inst, mode, check.judge)
        path = answers.store_judge_check(check, key, cache)
    except UserError as exc:
        raise fail(str(exc)) from None
    rows = []
    for name, t in sorted(check.by_type.items()):
        acc = f"{t['correct'] / t['judged']:.3f}" if t["judged"] else "n/a"
        rows.append((name, str(t["cases"]), acc, str(t["unparsed"]), str(t["errors"])))
    print_table(
        Table(
            f"judge check: {check.judge} on {ds.key} ({check.instrument}, {mode} mode)",
            ("case type", "cases", "accuracy", "unparsed", "judge errors"),
            tuple(rows),
            "accuracy over cases judged (judge errors excluded); expected verdicts from the "
            "benchmark's own scoring rules",
        )
    )
    console.print(check.summary(), highlight=False, markup=False)
    if out is not None:
        store.write_json(out, check.to_dict())
    console.print(f"stored: {path}", highlight=False, markup=False)


@app.command("controls")
def controls_cmd(
    dataset: Annotated[str, typer.Option(help="Dataset (name, name:variant or name@PATH).")],
    tier: Annotated[str | None, typer.Option(help="Variant (tier) of the dataset.")] = None,
    questions: Annotated[str | None, typer.Option(help="Question set of the dataset.")] = None,
    answer: Annotated[
        list[str] | None,
        typer.Option("--answer", help="A further fixed answer to score (repeatable)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write the figures here, one JSON line per figure.")
    ] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """What saying nothing scores: fixed answers ("", "I don't know.", ...) with nothing
    retrieved, scored by the benchmark's own rules, per slice and overall."""
    from recallbench.controls import dataset_controls, floor_lines
    from recallbench.report.floor import floor_table
    from recallbench.report.summary import checksum_lines, retrieval_floor_table
    from recallbench.results import store

    data = resolve_data_dir(data_dir)
    ref = dataset_ref(dataset, tier)
    options = dataset_options(questions=questions)
    try:
        ds, floor = dataset_controls(ref, data, options, answer or ())
    except UserError as exc:
        raise fail(str(exc)) from None
    pinned = "" if ds.pinned else " (NOT the pinned release)"

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    say(f"dataset {ds.version_label}: {len(ds.questions)} questions{pinned}")
    files = [dataclasses.asdict(f) for f in ds.files]
    for line in checksum_lines(ds.version_label, files, ds.checksum, ds.pinned):
        say(line)
    if not floor.scores_answers:
        say(
            f"{ds.key}: retrieval only: the {floor.rules} rules score no answer, so a fixed "
            "answer has nothing to be scored on; the floor is a system that returns nothing, "
            "which scores 0 on every retrieval metric over the same denominator."
        )
        print_table(retrieval_floor_table(floor, ds.default_k))
    else:
        title = f"{ds.version_label}: controls (fixed answers, nothing retrieved)"
        print_table(floor_table(floor, title, order=ds.slice_order))
        if not floor.measured:
            figures = {f.metric for f in floor.figures}
            rows = [r for c in floor.controls for r in c.metrics if r.metric in figures]
            reasons = sorted({r.null_reason for r in rows if r.null_reason})
            say(
                f"{ds.key}: every figure is null, no fixed answer can be scored here: "
                + "; ".join(reasons)
            )
    for c in floor.controls:
        say(f"control {c.label!r}: run id {c.run_id}")
    if out is not None:
        store.write_jsonl(out, floor_lines(floor))
        say(f"figures: {out}")


@app.command("systems")
def systems_cmd() -> None:
    """List registered systems, where they come from and whether they can run here."""
    from recallbench.systems.options import declared_options, describe
    from recallbench.systems.registry import (
        SYSTEMS,
        available_systems,
        capabilities_for,
        resolve_target,
    )

    t = RichTable(title="registered systems", title_justify="left")
    for c in ("name", "source", "available", "capabilities", "options (--config)"):
        t.add_column(c, overflow="fold")
    for name, entry in available_systems().items():
        opts = "-"
        try:
            target = resolve_target(entry.target)
            declared_opts = declared_options(target)
            opts = (
                "undeclared (passed unchecked)"
                if declared_opts is None
                else describe(declared_opts)
            )
            declared = capabilities_for(target, {})
            avail = "yes"
            caps = declared.capabilities
            cap = (
                "-"
                if caps is None
                else ", ".join(
                    f"{key}={value}"
                    for key, value in dataclasses.asdict(caps).items()
                    if SPEED_CAPABILITY_DEFAULTS.get(key, not value) != value
                )
            )
            if declared.depends_on_config:
                cap += " (default config; depends on --config)"
        except ImportError:
            avail = f'no: pip install "recallbench[{entry.extra}]"' if entry.extra else "no"
            cap = "-"
        except UserError as exc:  # capabilities the default config cannot declare
            avail, cap = "yes", f"depends on --config ({exc})"
        t.add_row(*(escape(x) for x in (name, entry.source, avail, cap, opts)))
    console.print(t)
    for e in SYSTEMS.shadowed:
        err.print(
            f"note: plugin {e.name!r} ({e.source}, {e.target}) is ignored: a built-in system "
            "has that name",
            highlight=False,
            markup=False,
        )


@app.command("datasets")
def datasets_cmd(data_dir: DataDirOpt = None) -> None:
    """List registered datasets, their variants and whether their files are here."""
    from recallbench.benchmarks import dataset_specs

    data = resolve_data_dir(data_dir)
    rows = []
    for name, spec in dataset_specs().items():
        files = {f.name for v in (spec.variants or ("",)) for f in spec.variant_files(v)}
        if name == "sample":
            here = f"{len(files)}/{len(files)} (bundled)"
        else:
            here = f"{sum((data / name / f).exists() for f in files)}/{len(files)}"
        cells = (name, spec.version, "|".join(spec.variants) or "-", spec.license, spec.haystack)
        rows.append((*cells, here))
    print_table(
        Table(
            f"registered datasets (data dir: {data})",
            ("name", "version", "variants", "licence", "haystack", "local files"),
            tuple(rows),
        )
    )


@app.command()
def repair(
    run_dir: Annotated[Path, typer.Argument(help="A results folder.")],
) -> None:
    """Drop duplicate records from a run folder, keeping the first of each key."""
    from recallbench.pipeline import repair_run

    try:
        dropped = repair_run(run_dir)
    except UserError as exc:
        raise fail(str(exc)) from None
    console.print(
        f"repaired {run_dir}: dropped {dropped} duplicate record(s), kept the first of each",
        highlight=False,
        markup=False,
    )


@app.command()
def report(
    runs: Annotated[
        list[Path], typer.Argument(help="Scored results folders (one or more, compared).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for report.md and report.html (default: the first run's)."),
    ] = None,
) -> None:
    """Write report.md and a self-contained report.html (no network request) from the records
    of one or more scored runs: per-slice bars with intervals, tier curve, k sweep, latency,
    the results card and every question with filters."""
    from recallbench.pipeline import report_hints
    from recallbench.report.document import write_report
    from recallbench.report.records import read_run_records

    for run_dir in runs:
        if not run_dir.is_dir():
            raise fail(f"{run_dir}: not a folder; give results folders (results/<run id>)")
    if out is not None and out.exists() and not out.is_dir():
        raise fail(f"--out {out}: a file is in the way; give a folder for the two reports")
    try:
        records = [read_run_records(run_dir) for run_dir in runs]
        written = write_report(records, out or runs[0], report_hints(records))
    except UserError as exc:
        raise fail(str(exc)) from None
    for path in written:
        console.print(f"wrote {path} ({path.stat().st_size:,} bytes)", highlight=False,
                      markup=False)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A scored results folder.")],
    format_name: Annotated[
        str,
        typer.Option(
            "--format",
            help="Interop format: glasshouse (Glasshouse's run records, "
            "exports/glasshouse/<system>/<tier>-<question set>.jsonl).",
        ),
    ],
    data_dir: DataDirOpt = None,
) -> None:
    """Write a run's records in another harness's format, from its observations and verdicts
    (nothing is re-run or re-scored; the files are the same bytes each time)."""
    written = export_files(run_dir, resolve_data_dir(data_dir), format_name)
    for path in written:
        console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"exports ({format_name}): {len(written)} file(s) in {run_dir / 'exports' / format_name}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@app.command()
def verify(
    system: Annotated[str | None, typer.Option(help="Check only this system.")] = None,
    config: Annotated[Path | None, typer.Option(help="JSON/TOML options for the system.")] = None,
    data_dir: DataDirOpt = None,
    check_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds one call to a system may take in the conformance kit.",
            min=0.001,
        ),
    ] = 10.0,
) -> None:
    """Self-check: systems keep the protocol, the scorer is deterministic, data matches."""
    from recallbench import verify as selfcheck

    if config is not None and system is None:
        raise fail("--config needs --system: it holds that system's options")
    options: dict[str, Any] = {}
    if system is not None:
        from recallbench.pipeline import check_systems

        configs = read_config(config)
        configs = {system: configs[system]} if system in configs else {}
        try:
            for note in check_systems([system], configs, f"config file {config}"):
                err.print(note, highlight=False, markup=False)
        except UserError as exc:
            raise fail(str(exc)) from None
        options = dict(configs.get(system, {}))
    checks = selfcheck.check_systems(system, options, timeout_s=check_timeout)
    if system is None:
        checks += selfcheck.check_scorer_determinism()
        checks += selfcheck.check_datasets(resolve_data_dir(data_dir))
    t = RichTable(title="recallbench verify", title_justify="left")
    for c in ("area", "subject", "check", "status", "detail"):
        t.add_column(c, overflow="fold")  # wrapped at a narrow width, never cut
    style = {"pass": "green", "fail": "bold red", "skip": "yellow"}
    for c in checks:
        t.add_row(
            escape(c.area),
            escape(c.subject),
            escape(c.check),
            f"[{style[c.status]}]{c.status}[/]",
            escape(c.detail),
        )
    console.print(t)
    failures = [c for c in checks if c.status == "fail"]
    counts = {s: sum(c.status == s for c in checks) for s in ("pass", "fail", "skip")}
    console.print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    for c in failures:
        err.print(
            f"FAIL {c.area} {c.subject}: {c.check}: {c.detail}", highlight=False, markup=False
        )
    if failures:
        raise typer.Exit(1)


VALIDATE_FAILED_EXIT = 1
"""``recallbench validate``: a check failed (the bundle is not accepted)."""


@app.command("validate")
def validate_cmd(
    bundle: Annotated[
        Path,
        typer.Argument(help="A results folder, or a .zip / .tar.gz / .tgz / .tar archive of one."),
    ],
    data_dir: DataDirOpt = None,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Shared cache (instrument files, ...).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the checks as one JSON object.")
    ] = False,
) -> None:
    """Check a results bundle someone sent: hashes, reader and judge pins, every verdict and
    aggregate re-scored from the per-question records, no unmeasured cell filled.

    The bundle is untrusted: path traversal, absolute paths, links, special files, absurd sizes
    and archive bombs are refused before anything is written, and it is opened in a
    temporary copy. Exit codes: 0 every check passed (or was skipped); 1 a check failed."""
    from recallbench.pipeline import default_cache_dir
    from recallbench.submissions.validate import FAIL, validate

    v = validate(bundle, resolve_data_dir(data_dir), cache_dir or default_cache_dir())
    if as_json:
        doc = {
            "bundle": str(bundle),
            "run_id": v.manifest.run_id if v.manifest else None,
            "valid": v.ok,
            "checks": [dataclasses.asdict(c) for c in v.checks],
        }
        typer.echo(json.dumps(doc, indent=1))
    else:
        run = f" (run {v.manifest.run_id})" if v.manifest else ""
        t = RichTable(title=escape(f"recallbench validate {bundle}{run}"), title_justify="left")
        for c in ("check", "status", "detail"):
            t.add_column(c)
        style = {"pass": "green", "fail": "bold red", "skip": "yellow"}
        for c in v.checks:
            t.add_row(escape(c.name), f"[{style[c.status]}]{c.status}[/]", escape(c.detail))
        console.print(t)
        counts = {s: sum(c.status == s for c in v.checks) for s in ("pass", "fail", "skip")}
        verdict = "valid" if v.ok else "NOT valid"
        console.print(
            f"{verdict}: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skip']} skipped",
            highlight=False,
        )
        for c in v.checks:
            if c.status == FAIL:
                err.print(f"FAIL {c.name}: {c.detail}", highlight=False, markup=False)
    if not v.ok:
        raise typer.Exit(VALIDATE_FAILED_EXIT)


@app.command("leaderboard")
def leaderboard_cmd(
    folder: Annotated[
        Path, typer.Argument(help="A folder of bundles (results folders and archives).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write leaderboard.md and leaderboard.html (default: FOLDER)."),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            help="Metric ranked (name or name@k); default: the judge's metric in memory and "
            "answer mode, else evidence_recall@10."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Shared cache (instrument files, ...).")
    ] = None,
) -> None:
    """Rank the bundles of a folder that pass `validate` (Markdown and self-contained HTML),
    with the run date and conditions on each row; invalid bundles are listed as excluded."""
    from recallbench.pipeline import default_cache_dir
    from recallbench.results import store
    from recallbench.submissions import leaderboard as lb_mod

    if not folder.is_dir():
        raise fail(f"{folder}: not a folder (give the folder holding the bundles)")
    try:
        lb = lb_mod.build(
            folder, resolve_data_dir(data_dir), cache_dir or default_cache_dir(), metric
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    target = out or folder
    target.mkdir(parents=True, exist_ok=True)
    md, page = (target / name for name in lb_mod.OUTPUTS)
    store.write_text(md, lb_mod.render_markdown(lb))
    store.write_text(page, lb_mod.render_html(lb))
    typer.echo(lb_mod.render_markdown(lb))
    err.print(
        f"{len(lb.entries)} row(s) from valid bundles, {len(lb.excluded)} bundle(s) excluded; "
        f"wrote {md} and {page}",
        highlight=False,
        markup=False,
    )


def network_extra(paths: Sequence[Path] | None) -> dict[str, Any]:
    """``{"network": [record, ...]}`` for ``run.json`` from ``--network`` files (read and
    checked), or ``{}`` without any."""
    if not paths:
        return {}
    from recallbench.systems.http.network import read_network

    return {"network": [read_network(p) for p in paths]}


@app.command("network")
def network_cmd(
    target: Annotated[str, typer.Argument(metavar="HOST[:PORT]", help="The host to time.")],
    location: Annotated[
        str | None, typer.Option(help="Where this machine is (a label, e.g. 'seoul').")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help="http: a warmed no-op GET on a kept-alive connection; connect: a TCP connect "
            "(completes in the kernel)."
        ),
    ] = "http",
    samples: Annotated[int, typer.Option(help="Timed samples.", min=1)] = 20,
    warmup: Annotated[int, typer.Option(help="Unrecorded requests first (http).", min=0)] = 3,
    path: Annotated[str, typer.Option(help="Path of the no-op request (http).")] = "/v1/ping",
    out: Annotated[Path, typer.Option(help="Where to write the network file.")] = Path(
        "network.json"
    ),
) -> None:
    """Time the round trip to HOST[:PORT] (default port 80) and write network.json (host,
    resolved IP, samples, median, min, max, location, time) for `recallbench run --network`."""
    from recallbench.systems.http.network import measure, write_network

    try:
        if method not in ("http", "connect"):
            raise fail(f"--method must be http or connect, got {method!r}")
        record = measure(
            target,
            location=location,
            method=method,  # type: ignore[arg-type]
            samples=samples,
            warmup=warmup,
            path=path,
        )
        write_network(record, out)
    except UserError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    console.print(
        f"{record['host']}:{record['port']} ({record['ip']}, {method}): median "
        f"{record['median_ms']:.3f} ms, min {record['min_ms']:.3f}, max "
        f"{record['max_ms']:.3f} over {record['n']} samples; wrote {out}",
        highlight=False,
        markup=False,
    )


@app.command("serve-memory")
def serve_memory(
    host: Annotated[
        str, typer.Option(help="Address to bind (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).", min=0)] = 8765,
    delay_ms: Annotated[
        float, typer.Option(help="Fixed processing delay per request, in ms.", min=0.0)
    ] = 0.0,
    fail_rate: Annotated[
        float,
        typer.Option(help="Share of requests that fail (429 or 503), seeded.", min=0.0, max=1.0),
    ] = 0.0,
    fail_seed: Annotated[int, typer.Option(help="Seed of the failure schedule.")] = 0,
    write_config: Annotated[
        Path | None, typer.Option(help="Write the matching `http` system config (TOML) here.")
    ] = None,
) -> None:
    """Serve the reference memory server (the built-in BM25 system over HTTP) until Ctrl-C or
    SIGTERM (either prints "stopped" and exits 0)."""
    import signal
    import threading

    from recallbench.systems.http.reference import FailureSchedule, ReferenceServer

    failures = FailureSchedule(rate=fail_rate, seed=fail_seed) if fail_rate > 0 else None
    server = ReferenceServer(host=host, port=port, delay_ms=delay_ms, failures=failures)

    stop = threading.Event()

    def on_term(signum: int, frame: object) -> None:
        stop.set()  # no exception: a print it interrupts is not disturbed

    previous = {  # before anything is printed
        sig: signal.signal(sig, on_term) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        try:
            server.start()
        except OSError as exc:
            raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        if write_config is not None:
            try:
                write_config.write_text(server.config_text(), encoding="utf-8")
            except OSError as exc:
                raise fail(f"cannot write {write_config}: {exc.strerror or exc}") from None
            err.print(f"wrote {write_config}", highlight=False, markup=False)
        err.print(
            f"reference memory server on {server.base_url} (Ctrl-C stops it)",
            highlight=False,
            markup=False,
        )
        while not stop.wait(0.5):
            pass
        err.print("stopped", highlight=False, markup=False)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()


COMPARE_FORMATS = ("table", "markdown", "json")
CompareFormatOpt = Annotated[
    str, typer.Option("--format", help="Output: table (the console), markdown or json.")
]
AlphaOpt = Annotated[
    float, typer.Option(help="Significance level of a gap, after Holm's correction.")
]


def check_compare_options(format_name: str, alpha: float) -> None:
    """``compare``/``diff``: ``--format`` is one of :data:`COMPARE_FORMATS` and ``--alpha`` a
    level between 0 and 1."""
    if format_name not in COMPARE_FORMATS:
        raise fail(f"--format must be one of {', '.join(COMPARE_FORMATS)}, got {format_name!r}")
    if not 0 < alpha < 1:
        raise fail(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")


def show_tables(tables: Sequence[Table], format_name: str) -> None:
    """``tables`` on the console, or as Markdown (``--format markdown``)."""
    from recallbench.report.formats import markdown_tables

    if format_name == "markdown":
        sys.stdout.write(markdown_tables(tables) + "\n")
        sys.stdout.flush()
        return
    for t in tables:
        print_table(t)


def say(line: str) -> None:
    console.print(line, highlight=False, markup=False, soft_wrap=True)


def split_names(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


@app.command("compare")
def compare_cmd(
    targets: Annotated[
        list[Path],
        typer.Argument(
            help="Scored results folders (runs, or the FILE.scored folders of `recallbench "
            "score FILE`), or scored predictions files; one run with several systems is enough."
        ),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="Metric key to compare (repeatable; default: the "
                     "benchmark's headline figure), e.g. evidence_hit@10 or f1."),
    ] = None,
    systems: Annotated[
        str | None, typer.Option(help="Only these systems of each folder, joined by commas.")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(help="The dataset to compare (of a run of several), or that a predictions "
                     "folder was scored against (default: the key its verdicts record)."),
    ] = None,
    all_pairs: Annotated[
        bool,
        typer.Option("--all-pairs", help="Compare every pair of systems, not only each with "
                     "the first (all pairs' p-values are corrected together)."),
    ] = False,
    alpha: AlphaOpt = 0.05,
    format_name: CompareFormatOpt = "table",
    data_dir: DataDirOpt = None,
) -> None:
    """Several systems side by side on the same questions, per slice, with 95% bootstrap
    intervals; each later system is compared with the first (paired), the p-values of a table
    are Holm-corrected, and gaps that are not significant are marked n.s."""
    from recallbench.pipeline import headline_of, read_sides
    from recallbench.report.compare import (
        compare,
        comparison_dict,
        comparison_table,
        default_metric,
        instrument_lines,
    )

    check_compare_options(format_name, alpha)
    data = resolve_data_dir(data_dir)
    try:
        sides = [
            s for t in targets
            for s in read_sides(t, data, dataset=dataset, systems=split_names(systems),
                                memories=False)
        ]  # fmt: skip
    except UserError as exc:
        raise fail(str(exc)) from None
    by_dataset: dict[str, list[Any]] = {}
    for s in sides:
        by_dataset.setdefault(s.dataset.key, []).append(s)
    comparisons = []
    try:
        for key, group in by_dataset.items():
            if len(group) < 2:
                err.print(f"{key}: only {group[0].name} has verdicts on it: nothing to compare",
                          highlight=False, markup=False)  # fmt: skip
                continue
            for m in metric or [default_metric(group, headline_of(group[0].dataset))]:
                comparisons.append(compare(group, m, alpha, all_pairs=all_pairs))
    except ValueError as exc:
        raise fail(str(exc)) from None
    if not comparisons:
        raise fail("nothing to compare: give at least two systems on one dataset")
    loud = [line for c in comparisons for line in instrument_lines(c)]
    if format_name == "json":
        for line in loud:
            err.print(line, highlight=False, markup=False, soft_wrap=True)
        say(json.dumps([comparison_dict(c) for c in comparisons], indent=2, ensure_ascii=False))
        return
    for line in loud:
        if line.startswith("INSTRUMENT"):
            console.print(f"[bold red]{escape(line)}[/]", highlight=False, soft_wrap=True)
        else:
            say(line)
    show_tables([comparison_table(c) for c in comparisons], format_name)


@app.command("diff")
def diff_cmd(
    a: Annotated[Path, typer.Argument(help="The first scored results folder (or predictions "
                                          "file): A, the reference.")],
    b: Annotated[Path, typer.Argument(help="The second: B, compared with A.")],
    system: Annotated[
        str | None,
        typer.Option(help="The system to diff (both folders), or A's,B's names joined by a "
                     "comma; default: the one system both hold."),
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(help="The dataset to diff (of runs of several).")
    ] = None,
    max_questions: Annotated[
        int, typer.Option(help="Changed questions a table shows (json holds all).")
    ] = 50,
    alpha: AlphaOpt = 0.05,
    format_name: CompareFormatOpt = "table",
    data_dir: DataDirOpt = None,
) -> None:
    """What changed from A to B: a loud note when the instrument changed (dataset version or
    checksum, options, k, chunking, mode, reader, judge, prompts, rules, subset: then a
    difference is not the system's), the metric deltas with paired intervals, and the
    questions whose verdict changed, with what each side returned."""
    from recallbench.pipeline import read_sides
    from recallbench.report.diff import (
        delta_table,
        diff,
        diff_dict,
        instrument_lines,
        question_table,
    )

    check_compare_options(format_name, alpha)
    if max_questions < 0:
        raise fail(f"--max-questions must be 0 or more, got {max_questions}")
    data = resolve_data_dir(data_dir)
    names = split_names(system) or []
    if len(names) > 2:
        raise fail(f"--system takes one name, or two joined by a comma, got {system!r}")
    try:
        sa = read_sides(a, data, dataset=dataset, systems=names[:1] or None)
        sb = read_sides(b, data, dataset=dataset, systems=names[-1:] or None)
    except UserError as exc:
        raise fail(str(exc)) from None
    keys = [k for k in dict.fromkeys(s.dataset.key for s in sa)
            if k in {s.dataset.key for s in sb}]  # fmt: skip
    if not keys:
        raise fail(f"{a} and {b} share no dataset: nothing to diff")
    if len(keys) > 1:
        raise fail(f"{a} and {b} share datasets {', '.join(keys)}: choose one with --dataset")
    sa = [s for s in sa if s.dataset.key == keys[0]]
    sb = [s for s in sb if s.dataset.key == keys[0]]
    if not names:
        common = [s.system for s in sa if s.system in {x.system for x in sb}]
        if len(common) == 1:
            sa = [s for s in sa if s.system == common[0]]
            sb = [s for s in sb if s.system == common[0]]
    if len(sa) != 1 or len(sb) != 1:
        raise fail(
            f"choose the system with --system NAME (or A,B): A holds "
            f"{', '.join(s.system for s in sa)}, B holds {', '.join(s.system for s in sb)}"
        )
    try:
        d = diff(sa[0], sb[0], alpha)
    except ValueError as exc:
        raise fail(str(exc)) from None
    lines = instrument_lines(d)
    if format_name == "json":
        if d.instrument:
            err.print(lines[0], highlight=False, markup=False, soft_wrap=True)
        say(json.dumps(diff_dict(d), indent=2, ensure_ascii=False))
        return
    for i, line in enumerate(lines):
        if d.instrument and i == 0:
            console.print(f"[bold red]{escape(line)}[/]", highlight=False, soft_wrap=True)
        else:
            say(line)
    show_tables([delta_table(d), question_table(d, max_questions)], format_name)


def main() -> None:
    """The console entry point: a user error is one line and exit 2 (raised inside the
    commands); anything else is a bug, shown with its traceback, exit 1."""
    try:
        app()
    except RunInterrupted as exc:
        err.print(exc.message(), highlight=False, markup=False, soft_wrap=True)
        sys.exit(exc.code)
    except KeyboardInterrupt:  # outside a run (Typer usually turns it into exit 130 itself)
        err.print("interrupted", highlight=False, markup=False)
        sys.exit(SIGINT_EXIT)
    except UserError as exc:  # one that escaped a command's own handler
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(USER_ERROR_EXIT)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            _internal(exc)
        err.print(
            f"error: the disk is full (writing {exc.filename or '?'}): free some space and run "
            "the command again",
            highlight=False,
            markup=False,
        )
        sys.exit(USER_ERROR_EXIT)
    except Exception as exc:
        _internal(exc)


def _internal(exc: BaseException) -> NoReturn:
    """Print a bug's traceback and exit 1."""
    traceback.print_exc()
    err.print(
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in recallbench or in a "
        "plugin it ran, not a problem with your input: please report it with the traceback "
        "above.",
        highlight=False,
        markup=False,
    )
    sys.exit(INTERNAL_ERROR_EXIT)


if __name__ == "__main__":
    main()
