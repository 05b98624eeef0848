"""``sample``: recallbench's own small bundled dataset (written by the project, Apache-2.0).

A fictional life told over 30 dated sessions, with questions of the kinds memory benchmarks ask.
It is a smoke test and a demo, not a benchmark. See ``sample/CARD.md``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    FileRecord,
    FileSpec,
    LoadedDataset,
)
from recallbench.datasets.fetch import sha256_file
from recallbench.datasets.folder_format import QUESTIONS_FILE, TURNS_FILE, load_native
from recallbench.errors import ChecksumMismatchError

SAMPLE_DIR = Path(__file__).parent
FILES = (
    FileSpec(TURNS_FILE, "b2a79c23be83749df33698af548031c2a9ffeae9d60bd73e0e5c2c42866abab4"),
    FileSpec(QUESTIONS_FILE, "7d033a7b06e6daabf22b0f1a8994d8c383adf77b8333bc5b0d4bfe3f67e2262a"),
)


def _files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    return FILES


def load(
    spec: DatasetSpec,
    variant: str,
    data_dir: Path,
    options: DatasetOptions,
    local_path: Path | None = None,
    predictions: bool = False,
) -> LoadedDataset:
    folder = local_path or SAMPLE_DIR
    records = []
    for f in FILES:
        path = folder / f.name
        actual = sha256_file(path) if path.exists() else "missing"
        if local_path is None and actual != f.sha256:
            raise ChecksumMismatchError(path, str(f.sha256), actual)
        records.append(FileRecord(f.name, actual, pinned=local_path is None))
    notes = ["Bundled sample written by the recallbench authors: a demo, not a benchmark."]
    if local_path is not None:  # sample@PATH: a local copy, not the bundled files
        notes.append(f"Local copy {local_path}: not the bundled sample.")
    ds = load_native(
        folder,
        name=spec.name,
        variant=variant,
        version=spec.version if local_path is None else "local",
        files=tuple(records),
        card_notes=tuple(notes),
    )
    return dataclasses.replace(ds, options=options)


SPEC = DatasetSpec(
    name="sample",
    version="1.0",
    description="Bundled fictional life over 30 sessions with 50 questions (smoke test / demo).",
    license="Apache-2.0",
    haystack="global",
    variants=(),
    default_variant="",
    loader=load,
    variant_files=_files,
    source="bundled with recallbench (src/recallbench/datasets/sample/)",
)
