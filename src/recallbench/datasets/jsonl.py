"""Strict JSON Lines reading and field helpers shared by every loader.

A line that is not a JSON object, a file that ends mid-line or a missing field stops the load
with a :class:`~recallbench.errors.DatasetFormatError` naming the file and line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recallbench.errors import DatasetFormatError

BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF8, "UTF-8 with a byte-order mark"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def decode_utf8(path: Path, data: bytes) -> str:
    """``data`` (the bytes of ``path``) as UTF-8 text; a byte-order mark (UTF-16, UTF-32, or
    UTF-8 with a BOM) or bytes that are not UTF-8 raise :class:`DatasetFormatError` naming the
    encoding problem and the line."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            raise DatasetFormatError(
                path, 1, f"file is {encoding}; recallbench reads UTF-8 without a BOM: re-save it"
            )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetFormatError(
            path,
            line,
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); re-save the file as UTF-8",
        ) from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; strict about the encoding (UTF-8,
    no BOM), JSON, nesting depth and truncation.

    Lines end at ``\n`` only (a ``\r`` before it is JSON whitespace): U+2028, U+2029 and U+0085
    inside a string are part of it, as JSON Lines says."""
    data = path.read_bytes()
    text = decode_utf8(path, data)
    if data and not data.endswith(b"\n"):
        last = data.count(b"\n") + 1
        raise DatasetFormatError(path, last, "file is truncated (the last line has no newline)")
    for number, raw in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, number, f"not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise DatasetFormatError(path, number, "JSON nested too deeply to read") from None
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
