"""Dataset specs (what a dataset is and where its pinned files come from) and loaded datasets."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.contracts import HaystackKind, Question, Session, sha256_text


@dataclass(frozen=True, slots=True)
class FileSpec:
    """One published file: its name as published, pinned SHA-256 and download URL.

    ``sha256=None`` means no hash is published: the first verified download is recorded in a
    lock file and results say "pinned on first use" until a hash is added here.
    """

    name: str
    sha256: str | None
    url: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """A registered dataset. ``variant_files`` maps a variant ("" when none) to its files."""

    name: str
    version: str
    description: str
    license: str
    haystack: HaystackKind
    variants: tuple[str, ...]
    default_variant: str
    loader: Callable[..., LoadedDataset]
    variant_files: Callable[[str, Mapping[str, Any]], tuple[FileSpec, ...]]
    source: str = ""
    variant_notes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A file a run actually read, with the SHA-256 measured on disk."""

    name: str
    sha256: str
    pinned: bool
    note: str | None = None


@dataclass(frozen=True, slots=True)
class HaystackGroup:
    """Sessions a system ingests after one reset, and the questions asked of them."""

    group_id: str
    sessions: tuple[Session, ...]
    question_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoadedDataset:
    """A dataset ready to run: groups of sessions, questions, and everything the card needs."""

    name: str
    variant: str
    version: str
    haystack: HaystackKind
    files: tuple[FileRecord, ...]
    groups: tuple[HaystackGroup, ...]
    questions: tuple[Question, ...]
    scoring: str = "retrieval"
    load_report: tuple[str, ...] = ()
    card_notes: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @property
    def checksum(self) -> str:
        """One SHA-256 over the SHA-256 of every file read (sorted by name)."""
        lines = sorted(f"{f.name} {f.sha256}" for f in self.files)
        return sha256_text("\n".join(lines))

    @property
    def version_label(self) -> str:
        return f"{self.key}@{self.version}"

    @property
    def pinned(self) -> bool:
        return all(f.pinned for f in self.files)


def benchmark_dataset(
    spec: DatasetSpec,
    variant: str,
    local_path: Path | None,
    *,
    scoring: str,
    files: Sequence[FileRecord],
    groups: Sequence[HaystackGroup],
    questions: Sequence[Question],
    load_report: Sequence[str],
    card_notes: Sequence[str],
    options: Mapping[str, Any],
    default_k: Sequence[int],
) -> LoadedDataset:
    """The common end of a benchmark loader. A user's local copy (``name@PATH``) is versioned
    ``local`` and its card says it is not the pinned release."""
    notes = list(card_notes)
    if local_path is not None:
        notes.append(f"Local copy {local_path}: not the pinned release.")
    return LoadedDataset(
        name=spec.name,
        variant=variant,
        version=spec.version if local_path is None else "local",
        haystack=spec.haystack,
        files=tuple(files),
        groups=tuple(groups),
        questions=tuple(questions),
        scoring=scoring,
        load_report=tuple(load_report),
        card_notes=tuple(notes),
        options={**dict(options), "default_k": tuple(default_k)},
    )


def count_by_axis(questions: Sequence[Question], order: Sequence[str]) -> dict[str, int]:
    """Questions per axis (type, category, ability), known axes first in ``order``, zeros kept."""
    counts = dict.fromkeys(order, 0)
    for q in questions:
        counts[q.axis] = counts.get(q.axis, 0) + 1
    return counts


def parse_dataset_ref(ref: str) -> tuple[str, str, Path | None]:
    """``name``, ``name:variant`` or ``name@PATH`` -> (name, variant, path)."""
    ref = ref.strip()
    if "@" in ref:
        name, _, path = ref.partition("@")
        return name.strip(), "", Path(path).expanduser()
    name, _, variant = ref.partition(":")
    return name.strip(), variant.strip(), None
