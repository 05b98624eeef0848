"""Locate, download and verify pinned dataset files in the data directory.

Layout: ``<data dir>/<dataset name>/<file name as published>``. The data directory is
``--data-dir``, else ``$RECALLBENCH_DATA``, else a per-user cache folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from recallbench.datasets.dataset import FileRecord, FileSpec
from recallbench.errors import ChecksumMismatchError, DataFileError, DatasetFormatError

ENV_VAR = "RECALLBENCH_DATA"
CACHE_ENV = "RECALLBENCH_CACHE"
LOCK_NAME = "recallbench.lock.json"
PINNED_ON_FIRST_USE = "pinned on first use"


def default_data_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recallbench" / "data"


def default_cache_dir() -> Path:
    """The shared cache (embeddings, LLM replies, instrument files): ``$RECALLBENCH_CACHE``,
    else a per-user cache folder."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recallbench" / "cache"


def resolve_data_dir(explicit: Path | str | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else default_data_dir()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_lock(folder: Path) -> dict[str, str]:
    lock = folder / LOCK_NAME
    if not lock.exists():
        return {}
    return dict(json.loads(lock.read_text(encoding="utf-8")))


def _write_lock(folder: Path, entries: dict[str, str]) -> None:
    lock = folder / LOCK_NAME
    lock.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def download(url: str, dest: Path, timeout: float = 60.0) -> None:
    """Download ``url`` to ``dest`` through a ``.part`` file (never leaves a partial file)."""
    import urllib.request  # here, not at the top: most runs never download, and it is slow

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, part.open("wb") as out:
            shutil.copyfileobj(resp, out, 1 << 20)
    except Exception as exc:  # network errors, HTTP errors
        part.unlink(missing_ok=True)
        raise DataFileError(f"could not download {url} to {dest}: {exc}") from exc
    part.replace(dest)


def ensure_file(
    dataset: str, spec: FileSpec, data_dir: Path, *, allow_download: bool = True
) -> tuple[Path, FileRecord]:
    """Return the verified local path of a pinned file, downloading it if missing.

    Raises :class:`ChecksumMismatchError` naming the file and both hashes on a mismatch, and
    :class:`DataFileError` when the file is absent and cannot be downloaded.
    """
    folder = data_dir / dataset
    path = folder / spec.name
    if not path.exists():
        if not (allow_download and spec.url):
            where = f" from {spec.url}" if spec.url else ""
            raise DataFileError(
                f"{path} is missing: dataset {dataset!r} needs {spec.name}{where}. Download it "
                f"there, or point --data-dir / ${ENV_VAR} at a folder holding "
                f"{dataset}/{spec.name}."
            )
        download(spec.url, path)
        actual = sha256_file(path)
        expected = spec.sha256 or actual
        if actual != expected:
            bad = path.with_name(path.name + ".rejected")
            path.replace(bad)
            raise ChecksumMismatchError(bad, expected, actual)
    actual = sha256_file(path)
    if spec.sha256 is not None:
        if actual != spec.sha256:
            raise ChecksumMismatchError(path, spec.sha256, actual)
        return path, FileRecord(spec.name, actual, pinned=True)
    lock = _read_lock(folder)
    recorded = lock.get(spec.name)
    if recorded is None:
        lock[spec.name] = actual
        _write_lock(folder, lock)
    elif recorded != actual:
        raise ChecksumMismatchError(path, recorded, actual)
    return path, FileRecord(spec.name, actual, pinned=False, note=PINNED_ON_FIRST_USE)


def local_file_record(path: Path) -> FileRecord:
    """A user's own file (``name@PATH``): hashed and marked as not the pinned release."""
    return FileRecord(
        path.name, sha256_file(path), pinned=False, note="local file, not the pinned release"
    )


def read_json(path: Path) -> Any:
    """A JSON file's content; invalid JSON is a DatasetFormatError naming the file and line."""
    try:
        return json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None


def json_file(
    dataset: str, spec: FileSpec | None, data_dir: Path, local_path: Path | None, usage: str
) -> tuple[Any, FileRecord, Path]:
    """The content, record and path of a benchmark's one JSON file: the user's copy (``name@PATH``,
    hashed, not pinned) or the pinned file from the data directory (fetched and verified)."""
    if local_path is not None:
        if not local_path.is_file():
            raise DatasetFormatError(local_path, None, f"file not found ({usage})")
        return read_json(local_path), local_file_record(local_path), local_path
    if spec is None:
        raise DataFileError(f"{dataset}: no pinned file to read ({usage})")
    path, record = ensure_file(dataset, spec, data_dir)
    return read_json(path), record, path
