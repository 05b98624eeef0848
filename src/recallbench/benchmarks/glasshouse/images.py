"""Glasshouse's photographs: native mode (verified files for systems that accept images) and
caption mode (each photograph described in its turn's text by a named caption model)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from recallbench.benchmarks.glasshouse.files import HASHES, NAME, _Files, file_spec
from recallbench.contracts import Turn
from recallbench.datasets.dataset import FileRecord, LoadedDataset
from recallbench.datasets.fetch import ensure_file, sha256_file
from recallbench.datasets.jsonl import read_jsonl, require
from recallbench.errors import ChecksumMismatchError, DataFileError, DatasetFormatError


def _safe_name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", model.strip())


def _apply_captions(turns: list[Turn], files: _Files, model: str) -> tuple[list[Turn], FileRecord]:
    """``caption`` mode: each photograph described in its turn's text, no image handed over."""
    path = files.folder / "captions" / f"{_safe_name(model)}.jsonl"
    if not path.exists():
        raise DataFileError(
            f"image mode caption with caption model {model!r} needs the captions of the "
            f"Glasshouse photographs made by that model in {path} (one JSON object per line: "
            '{"image": "img/img01.png", "caption": "..."}). Write them there, or use '
            "--image-mode skip."
        )
    captions: dict[str, str] = {}
    for line, obj in read_jsonl(path):
        captions[str(require(path, line, obj, "image"))] = str(require(path, line, obj, "caption"))
    needed = sorted({t.image for t in turns if t.image})
    missing = [ref for ref in needed if ref not in captions]
    if missing:
        raise DataFileError(
            f"{path}: no caption for {len(missing)} photograph(s) of the corpus: "
            f"{', '.join(missing[:5])}"
        )
    out = []
    for t in turns:
        if t.image:
            text = f"{t.text}\n[photo: {captions[t.image]}]"
            out.append(Turn(t.turn_id, t.session_id, t.speaker, text, t.date, None))
        else:
            out.append(t)
    record = FileRecord(
        f"captions/{path.name}", sha256_file(path), pinned=False, note=f"captions by {model}"
    )
    return out, record


@dataclass(frozen=True, slots=True)
class ImageFiles:
    """The image resolver of a loaded tier: its photographs' folder, and whether it is the
    data directory (pinned files, fetched and verified) or a user's local copy."""

    root: Path
    pinned: bool

    def __call__(self, ds: LoadedDataset) -> dict[str, str]:
        return image_files(ds, self.root, self.pinned)


def image_files(ds: LoadedDataset, root: Path | None, pinned: bool = True) -> dict[str, str]:
    """Local paths of the photographs referenced by the dataset's turns, verified.

    Called by the runner only when a system that accepts images runs in ``native`` mode; a
    missing or damaged file is a clear error naming it.
    """
    refs = sorted({t.image for g in ds.groups for s in g.sessions for t in s.turns if t.image})
    if not refs:
        return {}
    if not root:
        raise DataFileError(f"{ds.key}: image files are not available in this image mode")
    folder = Path(root)
    out: dict[str, str] = {}
    for ref in refs:
        if ref not in HASHES:
            raise DatasetFormatError(folder / ref, None, "not a published Glasshouse image")
        spec = file_spec(ref)
        if not pinned:
            path = folder / ref
            if not path.exists():
                raise DataFileError(
                    f"image mode native: {path} is missing (a system that accepts images "
                    f"runs); published at {spec.url}"
                )
            out[ref] = str(path.resolve())
            continue
        try:
            path, _ = ensure_file(NAME, spec, folder.parent)
        except ChecksumMismatchError:
            raise
        except DataFileError as exc:
            raise DataFileError(
                f"image mode native: a system that accepts images runs, so the Glasshouse "
                f"photographs are needed; {folder / ref} is missing and could not be fetched "
                f"from {spec.url} ({exc}). Put the 50 files in {folder / 'img'}, or use "
                "--image-mode skip (or caption)."
            ) from exc
        out[ref] = str(path.resolve())
    return out
