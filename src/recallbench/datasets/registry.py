"""Registered datasets by name, and loading a dataset reference from the command line.

A reference is ``name``, ``name:variant`` or ``name@PATH`` (a local copy in that benchmark's
format, hashed and marked as not the pinned release). ``recallbench@PATH`` loads a folder in
recallbench's own format (see :mod:`recallbench.datasets.native`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallbench.datasets.fetch import local_file_record
from recallbench.datasets.native import QUESTIONS_FILE, TURNS_FILE, load_native
from recallbench.datasets.spec import DatasetSpec, LoadedDataset, parse_dataset_ref

# Modules that define a ``SPEC``; listed here so adding a benchmark is one line.
SPEC_MODULES: tuple[str, ...] = (
    "recallbench.datasets.sample",
    "recallbench.datasets.glasshouse",
    "recallbench.datasets.locomo",
    "recallbench.datasets.longmemeval",
    "recallbench.datasets.beam",
)
NATIVE = "recallbench"


class DatasetRefError(ValueError):
    pass


def dataset_specs() -> dict[str, DatasetSpec]:
    specs: dict[str, DatasetSpec] = {}
    for module_name in SPEC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        spec: DatasetSpec = module.SPEC
        specs[spec.name] = spec
    return specs


def split_refs(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def load_dataset(
    ref: str, data_dir: Path, options: Mapping[str, Any] | None = None
) -> LoadedDataset:
    """Load and verify one dataset reference; raises with a clear message on any problem."""
    options = dict(options or {})
    name, variant, path = parse_dataset_ref(ref)
    if name == NATIVE:
        if path is None:
            raise DatasetRefError(
                f"{ref!r}: use recallbench@PATH for a folder in recallbench's format"
            )
        files = tuple(
            local_file_record(path / f) for f in (TURNS_FILE, QUESTIONS_FILE) if (path / f).exists()
        )
        return load_native(
            path,
            name=f"{NATIVE}@{path}",
            variant="",
            version="local",
            files=files,
            card_notes=("Local dataset, not a pinned release.",),
        )
    specs = dataset_specs()
    if name not in specs:
        raise DatasetRefError(f"unknown dataset {name!r}; known: {', '.join(specs)}")
    spec = specs[name]
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
    return spec.loader(spec, variant, data_dir, options, path)
