"""Dataset specs (what a dataset is and where its pinned files come from) and loaded datasets.

What a user asks of a dataset (image mode, question set, ...) arrives as a typed
:class:`DatasetOptions` (a benchmark may extend it); what the loader found out is in typed fields
of :class:`LoadedDataset` (``default_k``, ``image_resolver``, ``turn_chars``) or, when nothing
reads it back, in ``facts``, a descriptive record written to ``run.json``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.contracts import HaystackKind, Question, Session, sha256_text
from recallbench.errors import OptionError
from recallbench.spec import DEFAULT_K

IMAGE_MODES: tuple[str, ...] = ("native", "caption", "skip")
"""native: image references handed to systems that accept images; caption: described in the turn
text by a named caption model; skip: no image to anyone."""


@dataclass(frozen=True, slots=True)
class DatasetOptions:
    """What the user chose for a dataset (``RunSpec.dataset_options``), validated and typed.

    Every dataset accepts ``image_mode``; a benchmark with more choices extends this class and
    names it in its registration. Keys another benchmark uses are ignored, as the command line
    passes one set of options to every dataset of a run.
    """

    image_mode: str = "native"

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> DatasetOptions:
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in options.items() if k in known and v is not None}
        return cls(**kw)

    def record(self) -> dict[str, Any]:
        """The options as written to ``run.json`` (unset values left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }


def check_image_mode(name: str, mode: str) -> str:
    mode = str(mode or "native").strip().lower()
    if mode not in IMAGE_MODES:
        raise OptionError(
            f"{name}: unknown image mode {mode!r}; choose one of {', '.join(IMAGE_MODES)}"
        )
    return mode


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
    """A registered dataset. ``variant_files`` maps a variant ("" when none) and the options to
    the files it reads; ``loader(spec, variant, data_dir, options, local_path, predictions=False)``
    loads it (``options`` typed; ``predictions``: for scoring a predictions file)."""

    name: str
    version: str
    description: str
    license: str
    haystack: HaystackKind
    variants: tuple[str, ...]
    default_variant: str
    loader: Callable[..., LoadedDataset]
    variant_files: Callable[..., tuple[FileSpec, ...]]
    """``variant_files(variant, options=None)``: the files a variant reads under the options."""
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
    benchmark: str = ""
    """The registered benchmark whose rules and report score this dataset."""
    load_report: tuple[str, ...] = ()
    card_notes: tuple[str, ...] = ()
    options: DatasetOptions = field(default_factory=DatasetOptions)
    default_k: tuple[int, ...] = DEFAULT_K
    """The benchmark's own retrieval depths, used when ``--k`` is not given."""
    image_resolver: Callable[[LoadedDataset], Mapping[str, str]] | None = None
    """Local files for the turns' image references (native image mode); raises naming a
    missing file. Called only when a system that accepts images runs."""
    turn_chars: Mapping[str, int] | None = field(default=None, repr=False)
    """Characters of each corpus turn, when a predictions file's character claims are checked."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """What the loader found (question file, corpus read, ...): recorded, never read back."""
    slice_order: tuple[str, ...] = ()
    """The benchmark's own order of its slices (LoCoMo's categories 1-5, LongMemEval's
    question types, BEAM's abilities), which every table follows; empty: the order in which
    the question file first shows them (Glasshouse's axes)."""

    @property
    def key(self) -> str:
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @property
    def checksum(self) -> str:
        """One SHA-256 over the SHA-256 of every file read (sorted by name)."""
        return files_checksum(self.files)

    @property
    def version_label(self) -> str:
        return f"{self.key}@{self.version}"

    @property
    def pinned(self) -> bool:
        return all(f.pinned for f in self.files)

    def options_record(self) -> dict[str, Any]:
        """``options`` in ``run.json``: the user's choices, then the loader's facts."""
        return {**self.options.record(), **self.facts, "default_k": list(self.default_k)}


def benchmark_dataset(
    spec: DatasetSpec,
    variant: str,
    local_path: Path | None,
    *,
    files: Sequence[FileRecord],
    groups: Sequence[HaystackGroup],
    questions: Sequence[Question],
    load_report: Sequence[str],
    card_notes: Sequence[str],
    options: DatasetOptions,
    **fields: Any,
) -> LoadedDataset:
    """The common end of a benchmark loader. A user's local copy (``name@PATH``) is versioned
    ``local`` and its card says it is not the pinned release. ``fields`` are further
    :class:`LoadedDataset` fields (``facts``, ``image_resolver``, ``turn_chars``)."""
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
        benchmark=spec.name,
        load_report=tuple(load_report),
        card_notes=tuple(notes),
        options=options,
        **fields,
    )


def count_by_axis(questions: Sequence[Question], order: Sequence[str]) -> dict[str, int]:
    """Questions per axis (type, category, ability), known axes first in ``order``, zeros kept."""
    counts = dict.fromkeys(order, 0)
    for q in questions:
        counts[q.axis] = counts.get(q.axis, 0) + 1
    return counts


def files_checksum(files: Sequence[FileRecord]) -> str:
    """One SHA-256 over the SHA-256 of every file (sorted by name): a dataset's checksum."""
    return sha256_text("\n".join(sorted(f"{f.name} {f.sha256}" for f in files)))


def parse_dataset_ref(ref: str) -> tuple[str, str, Path | None]:
    """``name``, ``name:variant`` or ``name@PATH`` -> (name, variant, path)."""
    ref = ref.strip()
    if "@" in ref:
        name, _, path = ref.partition("@")
        return name.strip(), "", Path(path).expanduser()
    name, _, variant = ref.partition(":")
    return name.strip(), variant.strip(), None
