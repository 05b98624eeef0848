"""The results folder on disk: append-only JSONL logs and the deterministic derived files.

``observations.jsonl`` and ``ingest.jsonl`` are appended one flushed line per record, so a run
killed at any moment loses at most the line being written; :func:`read_jsonl_tolerant` drops such
a torn last line (and :func:`repair_torn_tail` cuts it off before a resume appends).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from recallbench.contracts import canonical_json, to_json_dict

RUN_JSON = "run.json"
OBSERVATIONS = "observations.jsonl"
INGEST = "ingest.jsonl"
VERDICTS = "verdicts.jsonl"
METRICS = "metrics.jsonl"
SUMMARY = "summary.md"


class AppendLog:
    """One JSON object per line, flushed after each record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] = path.open("a", encoding="utf-8")

    def append(self, record: Any) -> None:
        self._fh.write(canonical_json(to_json_dict(record)) + "\n")
        self._fh.flush()

    def sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
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
            raise ValueError(f"{path}:{i + 1}: not valid JSON") from None


def write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """Write a derived file atomically (tmp + rename) in canonical, deterministic JSON."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(canonical_json(to_json_dict(r)) + "\n")
    tmp.replace(path)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps(to_json_dict(obj), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    tmp.replace(path)


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
