"""One generic registry for everything recallbench looks up by name: systems and benchmarks.

An entry names its object lazily as ``"module:attr"`` (nothing is imported until the entry is
used, so a Glasshouse run never imports LoCoMo's code); plugins add entries through an
entry-point group. Built-ins take precedence: a plugin that reuses a built-in's name is listed as
shadowed and ignored; two plugins that claim one name are an error naming both.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from recallbench.errors import RegistryError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    target: str
    """``"module:attr"`` (attr may be dotted)."""
    source: str = "builtin"
    """``builtin``, or ``plugin:<distribution>`` for an entry point."""
    extra: str | None = None
    """The pip extra a built-in needs, if any (shown in install hints)."""


def resolve_target(target: str) -> Any:
    """Import ``module`` and walk ``attr`` of a ``"module:attr"`` target."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Named, lazily imported entries of one kind (``kind`` names it in messages)."""

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, Entry] | Callable[[], Mapping[str, Entry]],
        group: str | None = None,
        check: Callable[[Any], T] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins_of = builtins if callable(builtins) else (lambda: builtins)
        """Read at every lookup (not copied), so a process may add built-ins later."""
        self._check = check
        self.shadowed: list[Entry] = []
        """Plugins ignored because a built-in has their name (filled by :meth:`entries`)."""

    def _plugins(self) -> list[Entry]:
        if self.group is None:
            return []
        out = []
        for ep in entry_points(group=self.group):
            dist = getattr(ep, "dist", None)
            source = f"plugin:{dist.name}" if dist is not None else "plugin"
            out.append(Entry(ep.name, ep.value, source))
        return out

    def entries(self) -> dict[str, Entry]:
        """Every entry by name: built-ins first (in declaration order), then plugins by name."""
        builtins = self._builtins_of()
        plugins: dict[str, Entry] = {}
        shadowed = []
        for e in self._plugins():
            if e.name in builtins:
                shadowed.append(e)
                continue
            seen = plugins.get(e.name)
            if seen is not None and seen.target != e.target:
                raise RegistryError(
                    f"two plugins register the {self.kind} {e.name!r}: {seen.target} "
                    f"({seen.source}) and {e.target} ({e.source}); uninstall one of them"
                )
            plugins[e.name] = e
        self.shadowed = shadowed
        return dict(builtins) | dict(sorted(plugins.items()))

    def entry(self, name: str) -> Entry:
        entries = self.entries()
        if name not in entries:
            raise RegistryError(
                f"unknown {self.kind} {name!r}; registered: {', '.join(entries) or 'none'}"
            )
        return entries[name]

    def load(self, name: str) -> T:
        """The object an entry names (imports its module); ImportError if an extra is missing."""
        obj = resolve_target(self.entry(name).target)
        return self._check(obj) if self._check is not None else obj
