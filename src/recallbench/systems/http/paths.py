"""A small path syntax for finding values in a JSON response (a subset of JSONPath).

A path starts at ``$`` (the value it is applied to) and is followed by steps:

* ``.name`` or ``['name']`` / ``["name"]``: the key ``name`` of an object (``.name`` takes
  letters, digits, ``_`` and ``-``; quote any other key);
* ``[N]``: element ``N`` of a list (0-based; ``[-1]`` is the last);
* ``[*]``: every element of a list (the path then yields one value per element).

Examples: ``$`` (the whole response), ``$.results``, ``$.data.items[*]``, ``$['memory text']``,
``$.metadata.turn_ids``, ``$.hits[0].id``. Nothing else (filters, slices, ``..``) is accepted.

:func:`parse_path` raises :class:`PathSyntaxError` (a ``ValueError``) naming the position of
the first character it cannot read; :meth:`JsonPath.find` raises :class:`PathLookupError`
naming the step that found nothing and what was there instead (the keys of an object, the
length of a list, or the type of the value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonPath", "PathLookupError", "PathSyntaxError", "parse_path"]

_NAME = re.compile(r"[A-Za-z0-9_\-]+")
_INDEX = re.compile(r"\[(-?\d+)\]")
_QUOTED = re.compile(r"""\[(?:'([^']*)'|"([^"]*)")\]""")


class PathSyntaxError(ValueError):
    """A path that does not follow the syntax above."""


class PathLookupError(LookupError):
    """A path that finds nothing in a value (a missing key, an index out of range, a type)."""


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # "key", "index" or "all"
    key: str = ""
    index: int = 0

    def text(self) -> str:
        if self.kind == "all":
            return "[*]"
        if self.kind == "index":
            return f"[{self.index}]"
        return f".{self.key}" if _NAME.fullmatch(self.key) else f"[{self.key!r}]"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(str(k) for k in value)[:10]) or "none"
        return f"an object with keys: {keys}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {str(value)[:40]!r}"


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A parsed path (see the module doc); ``text`` is the path as written."""

    text: str
    steps: tuple[_Step, ...]

    @property
    def many(self) -> bool:
        """True when the path has a ``[*]`` step (it yields a list of matches)."""
        return any(s.kind == "all" for s in self.steps)

    def find(self, value: Any) -> list[Any]:
        """Every value the path reaches in ``value``, in document order (exactly one when the
        path has no ``[*]``). Raises :class:`PathLookupError` when a step finds nothing."""
        current: list[tuple[str, Any]] = [("$", value)]
        for step in self.steps:
            out: list[tuple[str, Any]] = []
            for where, item in current:
                here = where + step.text()
                if step.kind == "key":
                    if not isinstance(item, dict) or step.key not in item:
                        raise PathLookupError(
                            f"{self.text}: nothing at {here} ({where} is {_describe(item)})"
                        )
                    out.append((here, item[step.key]))
                elif step.kind == "index":
                    if not isinstance(item, list) or not -len(item) <= step.index < len(item):
                        raise PathLookupError(
                            f"{self.text}: nothing at {here} ({where} is {_describe(item)})"
                        )
                    out.append((here, item[step.index]))
                else:
                    if not isinstance(item, list):
                        raise PathLookupError(
                            f"{self.text}: {here} needs a list ({where} is {_describe(item)})"
                        )
                    out.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
            current = out
        return [v for _, v in current]

    def one(self, value: Any) -> Any:
        """The single value a path without ``[*]`` reaches (see :meth:`find`)."""
        found = self.find(value)
        if len(found) != 1:
            raise PathLookupError(f"{self.text}: expected one value, found {len(found)}")
        return found[0]


def parse_path(text: str) -> JsonPath:
    """Parse ``text`` (see the module doc); raises :class:`PathSyntaxError`."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathSyntaxError(f"path {text!r} must start with '$' (e.g. '$.results[*]')")
    steps: list[_Step] = []
    pos = 1
    while pos < len(text):
        rest = text[pos:]
        if rest.startswith("."):
            m = _NAME.match(text, pos + 1)
            if m is None:
                raise PathSyntaxError(
                    f"path {text!r}: expected a key name after '.' at position {pos + 1} "
                    "(quote other keys: ['my key'])"
                )
            steps.append(_Step("key", key=m.group(0)))
            pos = m.end()
        elif rest.startswith("[*]"):
            steps.append(_Step("all"))
            pos += 3
        elif (m := _INDEX.match(text, pos)) is not None:
            steps.append(_Step("index", index=int(m.group(1))))
            pos = m.end()
        elif (m := _QUOTED.match(text, pos)) is not None:
            key = m.group(1) if m.group(1) is not None else m.group(2)
            steps.append(_Step("key", key=key))
            pos = m.end()
        else:
            raise PathSyntaxError(
                f"path {text!r}: cannot read {rest[:20]!r} at position {pos} "
                "(steps are .name, ['name'], [N] and [*])"
            )
    return JsonPath(text, tuple(steps))
