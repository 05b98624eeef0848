"""Registered benchmarks by name, and loading a dataset reference from the command line.

A benchmark is one folder (``recallbench/benchmarks/<name>/``) and one line in
:data:`BUILTINS`, or a plugin's entry point in the group ``recallbench.benchmarks`` naming a
:class:`~recallbench.benchmarks.base.Benchmark`. Entries are imported only when used, so a run
imports the code of the benchmarks it runs and nothing else.

A reference is ``name``, ``name:variant`` or ``name@PATH`` (a local copy in that benchmark's
format, hashed and marked as not the pinned release). ``recallbench@PATH`` loads a folder in
recallbench's own format (see :mod:`recallbench.datasets.folder_format`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallbench.benchmarks.base import Benchmark
from recallbench.datasets import sample
from recallbench.datasets.dataset import (
    DatasetSpec,
    FileRecord,
    LoadedDataset,
    files_checksum,
    parse_dataset_ref,
)
from recallbench.datasets.fetch import local_file_record
from recallbench.datasets.folder_format import QUESTIONS_FILE, TURNS_FILE, load_native
from recallbench.errors import DatasetRefError, RegistryError
from recallbench.registry import Entry, Registry
from recallbench.score.metrics import MetricCatalogue

ENTRY_POINT_GROUP = "recallbench.benchmarks"
FOLDER_FORMAT = "recallbench"

SAMPLE = Benchmark(spec=sample.SPEC)
FOLDER = Benchmark(spec=dataclasses.replace(sample.SPEC, name=FOLDER_FORMAT, version="local"))
"""``recallbench@PATH``: retrieval only, like the sample (the spec names the format)."""

BUILTINS: dict[str, Entry] = {
    e.name: e
    for e in (
        Entry("sample", "recallbench.benchmarks:SAMPLE"),
        Entry("glasshouse-v0.1", "recallbench.benchmarks.glasshouse:BENCHMARK"),
        Entry("locomo", "recallbench.benchmarks.locomo:BENCHMARK"),
        Entry("longmemeval", "recallbench.benchmarks.longmemeval:BENCHMARK"),
        Entry("beam", "recallbench.benchmarks.beam:BENCHMARK"),
    )
}


def _is_benchmark(obj: Any) -> Benchmark:
    if not isinstance(obj, Benchmark):
        raise RegistryError(f"a registered benchmark must be a Benchmark, got {type(obj).__name__}")
    return obj


BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmark", lambda: BUILTINS, ENTRY_POINT_GROUP, _is_benchmark
)


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name`` (``recallbench`` for the folder format)."""
    if name == FOLDER_FORMAT:
        return FOLDER
    entries = BENCHMARKS.entries()
    if name not in entries:
        raise DatasetRefError(f"unknown dataset {name!r}; known: {', '.join(entries)}")
    return BENCHMARKS.load(name)


def benchmark_of(ds: LoadedDataset) -> Benchmark:
    return get_benchmark(ds.benchmark)


def dataset_specs() -> dict[str, DatasetSpec]:
    """Every registered benchmark's dataset spec (imports every benchmark)."""
    return {name: get_benchmark(name).spec for name in BENCHMARKS.entries()}


def metric_catalogue(names: Any = None) -> MetricCatalogue:
    """The generic metrics plus those of the named benchmarks (default: every one)."""
    catalogue = MetricCatalogue()
    for name in names if names is not None else BENCHMARKS.entries():
        catalogue.add(get_benchmark(name).metrics)
    return catalogue


def split_refs(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def local_key(path: Path, files: tuple[FileRecord, ...]) -> str:
    """The key of a local folder in recallbench's format: ``recallbench@<folder name>-<first 8
    hex digits of its checksum>``, e.g. ``recallbench@mydata-1a2b3c4d``. It names the data, not
    where it lies: no absolute path (no home directory) reaches a record, and the same files
    give the same key wherever they are. ``run.json`` keeps the reference as given (to resume);
    a folder written before this rule keeps the key it recorded."""
    return f"{FOLDER_FORMAT}@{path.resolve().name}-{files_checksum(files)[:8]}"


def load_dataset(
    ref: str,
    data_dir: Path,
    options: Mapping[str, Any] | None = None,
    *,
    predictions: bool = False,
) -> LoadedDataset:
    """Load and verify one dataset reference; raises with a clear message on any problem.

    ``options`` are the user's dataset options (``RunSpec.dataset_options``), typed by the
    benchmark; ``predictions`` loads for scoring a predictions file (a benchmark may then need
    less, e.g. Glasshouse's corpus only for its character checks).
    """
    name, variant, path = parse_dataset_ref(ref)
    if name == FOLDER_FORMAT:
        if path is None:
            raise DatasetRefError(
                f"{ref!r}: use recallbench@PATH for a folder in recallbench's format"
            )
        files = tuple(
            local_file_record(path / f) for f in (TURNS_FILE, QUESTIONS_FILE) if (path / f).exists()
        )
        ds = load_native(
            path,
            name=local_key(path, files),
            variant="",
            version="local",
            files=files,
            card_notes=("Local dataset, not a pinned release.",),
        )
        return _not_empty(_registered(ds, FOLDER, options), ref)
    bench = get_benchmark(name)
    spec = bench.spec
    if path is None:
        variant = variant or spec.default_variant
        if spec.variants and variant not in spec.variants:
            note = spec.variant_notes.get(variant)
            if note:
                raise DatasetRefError(f"{name}:{variant}: {note}")
            raise DatasetRefError(
                f"{name}: unknown variant {variant!r}; choose one of {', '.join(spec.variants)}"
            )
        if not spec.variants and variant:
            raise DatasetRefError(f"{name} has no variants (got {variant!r})")
    typed = bench.options.from_mapping(dict(options or {}))
    ds = spec.loader(spec, variant, data_dir, typed, path, predictions=predictions)
    return _not_empty(dataclasses.replace(ds, benchmark=name, default_k=bench.default_k), ref)


def _not_empty(ds: LoadedDataset, ref: str) -> LoadedDataset:
    """Refuse a dataset with no question: every figure would have a denominator of 0."""
    if not ds.questions:
        where = ", ".join(f.name for f in ds.files) or ref
        raise DatasetRefError(
            f"dataset {ref!r} ({where}) has 0 questions: nothing can be measured; check the "
            "files (or the question set chosen)"
        )
    return ds


def _registered(
    ds: LoadedDataset, bench: Benchmark, options: Mapping[str, Any] | None
) -> LoadedDataset:
    typed = bench.options.from_mapping(dict(options or {}))
    return dataclasses.replace(ds, benchmark=bench.name, default_k=bench.default_k, options=typed)
