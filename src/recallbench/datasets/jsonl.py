"""Strict JSON Lines reading and field helpers shared by every loader.

A line that is not a JSON object, a file that ends mid-line or a missing field stops the load
with a :class:`~recallbench.errors.DatasetFormatError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recallbench.errors import DatasetFormatError


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; strict about JSON and truncation.

    Lines end at ``\n`` only (a ``\r`` before it is JSON whitespace): U+2028, U+2029 and U+0085
    inside a string are part of it, as JSON Lines says."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        last = data.count(b"\n") + 1
        raise DatasetFormatError(path, last, "file is truncated (the last line has no newline)")
    lines = data.decode("utf-8").split("\n")  # not splitlines(): U+2028 etc. are not newlines
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, number, f"not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DatasetFormatError(path, number, "expected a JSON object")
        yield number, obj


def require(path: Path, line: int, obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj or obj[key] is None:
        raise DatasetFormatError(path, line, f"missing field {key!r}")
    return obj[key]


def id_list(path: Path, line: int, obj: Mapping[str, Any], key: str) -> list[str]:
    """A list field of ids or strings; a string or object here is an error, not a list."""
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise DatasetFormatError(path, line, f"field {key!r} must be a list")
    return [str(v) for v in value]
