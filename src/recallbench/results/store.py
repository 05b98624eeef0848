"""The results folder on disk: append-only JSONL logs and the deterministic derived files.

``observations.jsonl`` (with ``texts.jsonl``) and ``ingest.jsonl`` are appended one flushed line
per record, so a run killed at any moment loses at most the line being written;
:func:`read_jsonl_tolerant` drops such a torn last line (and :func:`repair_torn_tail` cuts it
off before a resume appends).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from recallbench.contracts import (
    Observation,
    canonical_json,
    observation_from_dict,
    sha256_text,
    to_json_dict,
)
from recallbench.errors import RunFolderError

RUN_JSON = "run.json"
OBSERVATIONS = "observations.jsonl"
TEXTS = "texts.jsonl"
TEXT_KEY_CHARS = 16  # the first 64 bits of a text's SHA-256 name it in texts.jsonl
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
            raise RunFolderError(f"{path}:{i + 1}: not valid JSON") from None


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


class ObservationLog:
    """``observations.jsonl`` with memory texts stored once, by SHA-256, in ``texts.jsonl``.

    A full-context system returns the same thousands of chunks for every question; storing each
    text once keeps a run folder the size of its corpus. A text line is always flushed before
    the first observation that names it, so a killed run never references a missing text.
    """

    def __init__(self, run_dir: Path) -> None:
        texts_path = run_dir / TEXTS
        repair_torn_tail(texts_path)
        self._seen = {t["sha256"] for t in read_jsonl_tolerant(texts_path)}
        self._texts = AppendLog(texts_path)
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
        self._obs.append(record)

    def close(self) -> None:
        self._texts.close()
        self._obs.close()


def read_observations(run_dir: Path) -> list[Observation]:
    """Observations with their memory texts restored from ``texts.jsonl``."""
    texts = {t["sha256"]: t["text"] for t in read_jsonl_tolerant(run_dir / TEXTS)}
    out = []
    for number, d in enumerate(read_jsonl_tolerant(run_dir / OBSERVATIONS), start=1):
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
        out.append(observation_from_dict(d))
    return out
