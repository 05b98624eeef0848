"""Download and verify a benchmark's instrument files (its authors' prompts and scorers).

A file is named by repository, commit and path, and pinned by SHA-256 where recallbench knows
the hash; otherwise its hash is recorded in the cache's lock file on first download and
labelled "pinned on first use", and any later copy must match it. Files are cached under
``<cache dir>/instruments/<owner>+<name>/<commit>/<path>`` and never committed.

Where they come from, in order: the cache; ``$RECALLBENCH_INSTRUMENTS`` (a folder laid out
``<name>/<path>``, like ``../shared/instruments``), copied into the cache after the same check;
``$RECALLBENCH_INSTRUMENTS_URL`` (a URL template with ``{repo}``, ``{commit}``, ``{path}`` and
``{name}``), else GitHub's raw file URL at the commit.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from recallbench.datasets.fetch import PINNED_ON_FIRST_USE, download, sha256_file
from recallbench.errors import ChecksumMismatchError, DataFileError
from recallbench.instruments.protocol import InstrumentFileRecord

DIR_ENV = "RECALLBENCH_INSTRUMENTS"
URL_ENV = "RECALLBENCH_INSTRUMENTS_URL"
DEFAULT_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
LOCK_NAME = "instruments.lock.json"

_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class InstrumentFile:
    """One published file: ``name`` is the benchmark's folder in a local copy
    (``glasshouse``), ``repo`` ``owner/name`` on GitHub, ``sha256`` None when recallbench pins it
    by commit only (its hash is then recorded on first use)."""

    name: str
    repo: str
    commit: str
    path: str
    sha256: str | None

    @property
    def key(self) -> str:
        return f"{self.repo}@{self.commit}:{self.path}"

    def url(self) -> str:
        template = os.environ.get(URL_ENV) or DEFAULT_URL
        return template.format(repo=self.repo, commit=self.commit, path=self.path, name=self.name)


@dataclass(frozen=True, slots=True)
class LoadedInstrument:
    file: InstrumentFile
    path: Path
    text: str
    record: InstrumentFileRecord


def _root(cache_dir: Path) -> Path:
    return cache_dir / "instruments"


def cached_path(f: InstrumentFile, cache_dir: Path) -> Path:
    return _root(cache_dir) / f.repo.replace("/", "+") / f.commit / f.path


def _read_lock(root: Path) -> dict[str, str]:
    path = root / LOCK_NAME
    if not path.exists():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _write_lock(root: Path, entries: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / (LOCK_NAME + ".tmp")
    tmp.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(root / LOCK_NAME)


def _obtain(f: InstrumentFile, dest: Path) -> str:
    """Put the file at ``dest``; say where it came from."""
    local = os.environ.get(DIR_ENV)
    if local:
        src = Path(local).expanduser() / f.name / f.path
        if src.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(dest.name + ".part")
            shutil.copyfile(src, part)
            part.replace(dest)
            return str(src)
    url = f.url()
    try:
        download(url, dest)
    except DataFileError as exc:
        hint = (
            f"; or set ${DIR_ENV} to a folder holding {f.name}/{f.path}"
            if not local
            else f" (and ${DIR_ENV}={local} has no {f.name}/{f.path})"
        )
        raise DataFileError(
            f"instrument file {f.path} of {f.repo} at {f.commit} is not cached and could not be "
            f"downloaded from {url}: {exc.__cause__ or exc}{hint}"
        ) from exc
    return url


def fetch_instrument(f: InstrumentFile, cache_dir: Path) -> LoadedInstrument:
    """The verified text of an instrument file, downloading it into the cache if needed.

    A byte-pinned file whose hash differs is refused (:class:`ChecksumMismatchError`, naming
    both hashes; a fresh download that fails the check is kept beside as ``.rejected``); a file
    pinned by commit only must match the hash recorded in the lock file on first use.
    """
    root = _root(cache_dir)
    path = cached_path(f, cache_dir)
    with _LOCK:
        if not path.exists():
            _obtain(f, path)
            actual = sha256_file(path)
            if f.sha256 is not None and actual != f.sha256:
                bad = path.with_name(path.name + ".rejected")
                path.replace(bad)
                raise ChecksumMismatchError(bad, f.sha256, actual)
        actual = sha256_file(path)
        if f.sha256 is not None:
            if actual != f.sha256:
                raise ChecksumMismatchError(path, f.sha256, actual)
            record = InstrumentFileRecord(f.repo, f.commit, f.path, actual, pinned=True)
        else:
            lock = _read_lock(root)
            recorded = lock.get(f.key)
            if recorded is None:
                lock[f.key] = actual
                _write_lock(root, lock)
            elif recorded != actual:
                raise ChecksumMismatchError(path, recorded, actual)
            record = InstrumentFileRecord(
                f.repo, f.commit, f.path, actual, pinned=False, note=PINNED_ON_FIRST_USE
            )
    return LoadedInstrument(f, path, path.read_text(encoding="utf-8"), record)
