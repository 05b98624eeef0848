"""The results folder on disk: append-only JSONL logs and the deterministic derived files.

``observations.jsonl`` (with ``texts.jsonl``) and ``ingest.jsonl`` are appended one flushed line
per record, so a run killed at any moment loses at most the line being written;
:func:`read_jsonl_tolerant` drops such a torn last line (and :func:`repair_torn_tail` cuts it
off before a resume appends). Lines are split on ``\n`` only: U+2028, U+2029 and U+0085 are
valid inside a JSON string and never end a line.

Every writer refuses a non-finite float (NaN, Infinity) with :class:`NonFiniteValueError`
naming the file and the field, before writing anything: such a value is not JSON, and a value
that could not be measured is null with a reason, never NaN. The derived files are written to a
temporary name, synced, renamed over the old file and the folder synced, so a crash leaves the
old file or the new one, never a mix; :meth:`AppendLog.sync` syncs a log (the runner calls it at
every haystack group boundary and when it finishes).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from recallbench.contracts import (
    Observation,
    canonical_json,
    observation_from_dict,
    sha256_text,
    to_json_dict,
)
from recallbench.datasets.fetch import sha256_file
from recallbench.errors import RunFolderError, RunLockedError

RUN_JSON = "run.json"
OBSERVATIONS = "observations.jsonl"
TEXTS = "texts.jsonl"
TEXT_KEY_CHARS = 16  # the first 64 bits of a text's SHA-256 name it in texts.jsonl
LISTS = "lists.jsonl"
"""Memory lists stored once by SHA-256 (format 4): an observation names its list with
``memories_sha256`` instead of holding ``memories``."""
INGEST = "ingest.jsonl"
ANSWERS = "answers.jsonl"
JUDGEMENTS = "judgements.jsonl"
VERDICTS = "verdicts.jsonl"
METRICS = "metrics.jsonl"
SUMMARY = "summary.md"
LOCK_FILE = "run.lock"
"""An empty file whose ``flock`` the one process writing the folder holds (the file stays; the
lock goes with the process, so a killed run never leaves a stale lock)."""
CARD = "card.md"
LOGS: tuple[str, ...] = (OBSERVATIONS, TEXTS, LISTS, INGEST, ANSWERS, JUDGEMENTS)
"""The logs a run is scored from (what ``run.json``'s ``scored_from`` hashes)."""
DERIVED: tuple[str, ...] = (VERDICTS, METRICS, SUMMARY, CARD)
"""The files scoring writes from the logs, byte-identical every time they are re-derived."""


def log_hashes(run_dir: Path) -> dict[str, str]:
    """``{log name: SHA-256 of its bytes}`` for each of :data:`LOGS` present in ``run_dir``
    (``answers.jsonl`` and ``judgements.jsonl`` exist in memory and answer modes only)."""
    return {name: sha256_file(run_dir / name) for name in LOGS if (run_dir / name).is_file()}


@contextmanager
def lock_folder(run_dir: Path) -> Iterator[None]:
    """Hold the exclusive lock of a results folder for the ``with`` block.

    Raises :class:`~recallbench.errors.RunLockedError` at once (it never waits) when another
    process, or another ``with`` in this one, holds it."""
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunLockedError(
            f"{run_dir} is being written by another recallbench process (a run, resume, score "
            "or repair of this folder); wait for it to finish, or stop it and resume"
        ) from None
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def drop_duplicates(path: Path, key_fields: tuple[str, ...]) -> int:
    """Rewrite a log keeping the first line of each key (``key_fields`` values); returns the
    number of lines dropped. The kept lines are the same bytes, in their order; a torn last
    line is cut first. Nothing is rewritten when there is no duplicate."""
    if not path.exists():
        return 0
    repair_torn_tail(path)
    kept: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    dropped = 0
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        record = json.loads(line)
        key = tuple(record.get(f) for f in key_fields)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(line + "\n")
    if dropped:
        _write_atomic(path, "".join(kept))
    return dropped


class NonFiniteValueError(ValueError):
    """A record holding NaN or an infinity: not JSON, and never written (a bug, not user input)."""


def _non_finite(obj: Any, where: str) -> str | None:
    """The path (``a.b[2]``) of the first non-finite float in ``obj``, or None."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else where or "value"
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = _non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            found = _non_finite(v, f"{where}[{i}]")
            if found:
                return found
    return None


def _finite(obj: Any, path: Path) -> Any:
    """``obj`` as a JSON dict, refused with :class:`NonFiniteValueError` if it holds NaN/inf."""
    data = to_json_dict(obj)
    found = _non_finite(data, "")
    if found is not None:
        raise NonFiniteValueError(
            f"{path}: refusing to write a non-finite number (NaN or infinity) at {found}; "
            "JSON has no such value, and what cannot be measured is null with a reason"
        )
    return data


def _dumps_line(obj: Any, path: Path) -> str:
    return canonical_json(_finite(obj, path)) + "\n"


def fsync_dir(folder: Path) -> None:
    """Sync a folder, so that a name just created or renamed in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AppendLog:
    """One JSON object per line, flushed after each record; :meth:`sync` makes it durable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] = path.open("a", encoding="utf-8")

    def append(self, record: Any) -> None:
        self._fh.write(_dumps_line(record, self.path))
        self._fh.flush()

    def sync(self) -> None:
        """Flush and ``fsync`` the log: every line appended so far survives a machine crash."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
        self._fh.close()


def repair_torn_tail(path: Path) -> int:
    """Truncate a partial last line (no newline) left by a killed writer; returns bytes cut."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as f:
        f.truncate(keep)
    return len(data) - keep


def read_jsonl_tolerant(path: Path) -> Iterator[dict[str, Any]]:
    """Read a log, skipping a torn last line; a bad line elsewhere is an error."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # torn tail from a killed writer
                return
            raise RunFolderError(f"{path}:{i + 1}: not valid JSON") from None


def _write_atomic(path: Path, text: str) -> None:
    """``text`` to ``path`` via a synced temporary file, a rename and a synced folder."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


def write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """Write a derived file atomically in canonical, deterministic JSON (non-finite refused)."""
    _write_atomic(path, "".join(_dumps_line(r, path) for r in records))


def write_json(path: Path, obj: Any) -> None:
    """Write one indented JSON document atomically (non-finite floats refused)."""
    data = _finite(obj, path)
    _write_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically."""
    _write_atomic(path, text)


class ObservationLog:
    """``observations.jsonl`` with memory texts stored once, by SHA-256, in ``texts.jsonl``, and
    each memory list stored once, by SHA-256, in ``lists.jsonl`` (format 4).

    A full-context system returns the same thousands of chunks for every question of a haystack
    (the naive baseline); storing each text once keeps a run folder the size of its corpus, and
    each list once keeps it from growing with questions x memories. A list is the memories'
    JSON with texts replaced by their ``text_sha256``; an observation whose list is not empty
    names it by ``memories_sha256`` (an empty list stays inline as ``"memories": []``). A text
    line is always flushed before the list naming it, and a list line before the first
    observation naming it, so a killed run never references a missing text or list.
    """

    def __init__(self, run_dir: Path) -> None:
        texts_path = run_dir / TEXTS
        lists_path = run_dir / LISTS
        repair_torn_tail(texts_path)
        repair_torn_tail(lists_path)
        self._seen = {t["sha256"] for t in read_jsonl_tolerant(texts_path)}
        self._lists_seen = {x["sha256"] for x in read_jsonl_tolerant(lists_path)}
        self._texts = AppendLog(texts_path)
        self._lists = AppendLog(lists_path)
        self._obs = AppendLog(run_dir / OBSERVATIONS)

    def append(self, obs: Observation) -> None:
        record = to_json_dict(obs)
        for m in record["memories"]:
            text = m.pop("text")
            digest = sha256_text(text)[:TEXT_KEY_CHARS]
            if digest not in self._seen:
                self._texts.append({"sha256": digest, "text": text})
                self._seen.add(digest)
            m["text_sha256"] = digest
        memories = record.pop("memories")
        if memories:
            key = sha256_text(canonical_json(memories))[:TEXT_KEY_CHARS]
            if key not in self._lists_seen:
                self._lists.append({"sha256": key, "memories": memories})
                self._lists_seen.add(key)
            record["memories_sha256"] = key
        else:
            record["memories"] = []
        self._obs.append(record)

    def sync(self) -> None:
        """Sync the logs (texts, then lists, then observations, so a synced observation never
        names a lost list or text)."""
        self._texts.sync()
        self._lists.sync()
        self._obs.sync()

    def close(self) -> None:
        self._texts.close()
        self._lists.close()
        self._obs.close()


def read_observation_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The lines of ``observations.jsonl`` as dicts with ``memories`` in full: each list
    restored from ``lists.jsonl`` (format 4) and each text from ``texts.jsonl``. Reads format-3
    folders too (lists inline, no ``lists.jsonl``); a missing list or text is an error naming
    the damaged file."""
    texts = {t["sha256"]: t["text"] for t in read_jsonl_tolerant(run_dir / TEXTS)}
    lists = {x["sha256"]: x["memories"] for x in read_jsonl_tolerant(run_dir / LISTS)}
    for number, d in enumerate(read_jsonl_tolerant(run_dir / OBSERVATIONS), start=1):
        if "memories_sha256" in d:
            key = d.pop("memories_sha256")
            if key not in lists:
                raise RunFolderError(
                    f"{run_dir / OBSERVATIONS}: observation {number} names memory list {key}, "
                    f"which {run_dir / LISTS} does not hold: the folder was damaged; "
                    "restore lists.jsonl from a copy, or run again"
                )
            d["memories"] = [dict(m) for m in lists[key]]
        for m in d.get("memories", ()):
            if "text_sha256" in m:
                digest = m.pop("text_sha256")
                if digest not in texts:
                    raise RunFolderError(
                        f"{run_dir / OBSERVATIONS}: observation {number} names text {digest}, "
                        f"which {run_dir / TEXTS} does not hold: the folder was damaged; "
                        "restore texts.jsonl from a copy, or run again"
                    )
                m["text"] = texts[digest]
        yield d


def read_observations(run_dir: Path) -> list[Observation]:
    """Observations with their memory lists and texts restored
    (:func:`read_observation_records`)."""
    return [observation_from_dict(d) for d in read_observation_records(run_dir)]
