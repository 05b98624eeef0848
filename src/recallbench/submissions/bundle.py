"""Open a results bundle sent by someone else (a folder, a ``.zip``, a ``.tar.gz`` / ``.tgz`` /
``.tar``) into a temporary folder, treating every byte of it as hostile.

Nothing is extracted by a library's own ``extract``: each member is checked first (its name, its
type, its declared size) and then written by this module, byte by byte with a running count,
under the temporary root only. Refused (:class:`BundleError`, naming the member): an absolute
path, a drive letter or backslash, a ``..`` component, a NUL byte, a name seen twice, a symlink,
a hardlink, a device, FIFO or socket, more than :attr:`Limits.members` members, more than
:attr:`Limits.total_bytes` uncompressed (declared or actually read, whichever is larger), a
member larger than :attr:`Limits.member_bytes`, or an archive whose uncompressed size is more
than :attr:`Limits.ratio` times its size on disk (an archive bomb). A folder bundle is held to
the same rules (links and special files inside it are refused, not followed) and copied, so the
checks that re-score it never write into the sender's folder.
"""

from __future__ import annotations

import gzip
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from recallbench.errors import UserError
from recallbench.results import store

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
CHUNK = 1 << 16


class BundleError(UserError):
    """A bundle refused as unsafe or unreadable (the message names the member and the rule)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a bundle may hold. The defaults are far above an honest results folder (a Glasshouse
    core+medium run with baselines is tens of MB) and far below what would hurt the machine."""

    members: int = 10_000
    member_bytes: int = 1 << 30
    total_bytes: int = 2 << 30
    ratio: float = 200.0
    """Uncompressed bytes per byte of archive, over the whole archive (JSONL compresses about
    10 to 30 times; a deflate bomb about 1,000)."""


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def safe_member_name(name: str) -> PurePosixPath:
    """The relative path a member may be written to, or :class:`BundleError`."""
    if not name or "\x00" in name:
        raise BundleError(f"member {name!r}: empty name or NUL byte")
    if "\\" in name:
        raise BundleError(f"member {name!r}: backslash in a name (a Windows path)")
    if name.startswith("/") or (len(name) >= 2 and name[1] == ":"):
        raise BundleError(f"member {name!r}: absolute path")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleError(f"member {name!r}: path traversal ('..')")
    if not parts:
        raise BundleError(f"member {name!r}: names no file")
    return PurePosixPath(*parts)


@dataclass(frozen=True, slots=True)
class _Member:
    name: PurePosixPath
    is_dir: bool
    size: int


class _Budget:
    """Counts members and bytes against the limits as they are declared and as they are read."""

    def __init__(self, limits: Limits, archive_bytes: int | None) -> None:
        self.limits = limits
        self.archive_bytes = archive_bytes
        self.members = 0
        self.declared = 0
        self.read = 0
        self.names: set[PurePosixPath] = set()

    def _total_cap(self) -> int:
        cap = self.limits.total_bytes
        if self.archive_bytes is not None:
            cap = min(cap, int(max(self.archive_bytes, 1024) * self.limits.ratio))
        return cap

    def _refuse_total(self, total: int) -> None:
        lim = self.limits
        if total > lim.total_bytes:
            raise BundleError(
                f"bundle: more than {lim.total_bytes:,} bytes uncompressed (limit total_bytes)"
            )
        raise BundleError(
            f"bundle: {total:,}+ bytes uncompressed from a {self.archive_bytes:,}-byte archive "
            f"(ratio above {lim.ratio:g}): refused as an archive bomb"
        )

    def declare(self, m: _Member) -> None:
        self.members += 1
        if self.members > self.limits.members:
            raise BundleError(f"bundle: more than {self.limits.members:,} members (limit members)")
        if m.name in self.names:
            raise BundleError(f"member {str(m.name)!r}: appears twice")
        self.names.add(m.name)
        if m.size < 0 or m.size > self.limits.member_bytes:
            raise BundleError(
                f"member {str(m.name)!r}: {m.size:,} bytes (limit member_bytes "
                f"{self.limits.member_bytes:,})"
            )
        self.declared += m.size
        if self.declared > self._total_cap():
            self._refuse_total(self.declared)

    def consume(self, name: PurePosixPath, n: int, written: int) -> None:
        self.read += n
        if written > self.limits.member_bytes:
            raise BundleError(f"member {str(name)!r}: more bytes than its limit while reading")
        if self.read > self._total_cap():
            self._refuse_total(self.read)


def _write(src: IO[bytes], dest: Path, m: _Member, budget: _Budget) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(dest, "xb") as out:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            budget.consume(m.name, len(chunk), written)
            out.write(chunk)


def _target(root: Path, name: PurePosixPath) -> Path:
    dest = root.joinpath(*name.parts)
    if not dest.resolve().is_relative_to(root.resolve()):  # belt and braces
        raise BundleError(f"member {str(name)!r}: resolves outside the bundle")
    return dest


def _zip_member(info: zipfile.ZipInfo) -> _Member:
    name = safe_member_name(info.filename)
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix type recorded (plain file)
    if kind == stat.S_IFLNK:
        raise BundleError(f"member {info.filename!r}: a symlink")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise BundleError(f"member {info.filename!r}: a device, FIFO or other special file")
    if info.flag_bits & 0x1:
        raise BundleError(f"member {info.filename!r}: encrypted")
    return _Member(name, info.is_dir(), 0 if info.is_dir() else info.file_size)


def _extract_zip(path: Path, root: Path, limits: Limits) -> None:
    budget = _Budget(limits, path.stat().st_size)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            members = [_zip_member(i) for i in infos]  # every name checked before any write
            for m in members:
                budget.declare(m)
            for info, m in zip(infos, members, strict=True):
                dest = _target(root, m.name)
                if m.is_dir:
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as src:
                    _write(src, dest, m, budget)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise BundleError(f"{path}: not a readable zip archive ({exc})") from None


def _tar_member(info: tarfile.TarInfo) -> _Member:
    name = safe_member_name(info.name)
    if info.issym() or info.islnk():
        kind = "symlink" if info.issym() else "hardlink"
        raise BundleError(f"member {info.name!r}: a {kind} (to {info.linkname!r})")
    if not (info.isreg() or info.isdir()):
        raise BundleError(f"member {info.name!r}: a device, FIFO or other special file")
    return _Member(name, info.isdir(), 0 if info.isdir() else info.size)


class _CappedReader:
    """A file's bytes, decompressed if gzip, refused past a cap: bounds everything tarfile reads
    (headers and long-name records included), not only the members' declared sizes."""

    def __init__(self, raw: IO[bytes], cap: int, budget: _Budget) -> None:
        self._raw = raw
        self._cap = cap
        self._budget = budget
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n if n is not None and n >= 0 else CHUNK)
        self.read_bytes += len(data)
        if self.read_bytes > self._cap:
            self._budget._refuse_total(self.read_bytes)
        return data


def _extract_tar(path: Path, root: Path, limits: Limits) -> None:
    budget = _Budget(limits, path.stat().st_size)
    gz = not path.name.lower().endswith(".tar")
    # the whole stream may be a little over the members' bytes: 512-byte headers, padding
    cap = budget._total_cap() + 2048 * limits.members + (1 << 20)
    try:
        # stream mode: one pass, each member checked before its bytes are read
        with (
            (gzip.open(path, "rb") if gz else open(path, "rb")) as raw,
            tarfile.open(fileobj=_CappedReader(raw, cap, budget), mode="r|") as tf,  # type: ignore[arg-type]
        ):
            for info in tf:
                m = _tar_member(info)
                budget.declare(m)
                dest = _target(root, m.name)
                if m.is_dir:
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                src = tf.extractfile(info)
                assert src is not None  # a regular file
                _write(src, dest, m, budget)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, FileExistsError):
            raise BundleError(f"{path}: a member written twice ({exc.filename})") from None
        raise BundleError(f"{path}: not a readable tar archive ({exc})") from None


def _copy_folder(src_root: Path, root: Path, limits: Limits) -> None:
    budget = _Budget(limits, None)
    for dirpath, dirnames, filenames in os.walk(src_root, followlinks=False):
        here = Path(dirpath)
        for name in sorted([*dirnames, *filenames]):
            p = here / name
            rel = PurePosixPath(p.relative_to(src_root).as_posix())
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                raise BundleError(f"member {str(rel)!r}: a symlink")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise BundleError(f"member {str(rel)!r}: a device, FIFO or other special file")
            if st.st_nlink > 1:
                raise BundleError(f"member {str(rel)!r}: a hardlink ({st.st_nlink} names)")
            m = _Member(rel, False, st.st_size)
            if rel.name == store.LOCK_FILE:
                continue
            budget.declare(m)
            with open(p, "rb") as f:
                _write(f, _target(root, rel), m, budget)


def _run_folder(root: Path) -> Path:
    """The folder holding ``run.json``: the root, or its one top-level folder."""
    if (root / store.RUN_JSON).is_file():
        return root
    subs = [p for p in root.iterdir() if p.is_dir()]
    files = [p for p in root.iterdir() if not p.is_dir()]
    if len(subs) == 1 and not files and (subs[0] / store.RUN_JSON).is_file():
        return subs[0]
    raise BundleError(
        "bundle: no run.json at its top level or in its one top-level folder (a bundle is one "
        "recallbench results folder)"
    )


@contextmanager
def opened_bundle(path: Path, limits: Limits | None = None) -> Iterator[Path]:
    """The bundle's results folder, unpacked or copied into a temporary folder that is
    removed on exit. :class:`BundleError` before anything unsafe is written."""
    limits = limits or Limits()
    if not path.exists():
        raise BundleError(f"{path}: no such file or folder")
    if path.is_symlink():
        raise BundleError(f"{path}: a symlink; give the bundle itself")
    tmp = Path(tempfile.mkdtemp(prefix="recallbench-bundle-"))
    try:
        root = tmp / "bundle"
        root.mkdir()
        if path.is_dir():
            _copy_folder(path, root, limits)
        elif zipfile.is_zipfile(path) and path.suffix.lower() == ".zip":
            _extract_zip(path, root, limits)
        elif is_archive(path):
            _extract_tar(path, root, limits)
        else:
            raise BundleError(
                f"{path}: not a results folder or an archive ({', '.join(ARCHIVE_SUFFIXES)})"
            )
        yield _run_folder(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
