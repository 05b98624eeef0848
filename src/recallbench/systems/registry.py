"""The system registry: built-ins plus anything installed under the ``recallbench.systems``
entry-point group. An entry point names a class or factory called with a ``SystemContext``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from recallbench.systems.base import MemorySystem, SystemContext

ENTRY_POINT_GROUP = "recallbench.systems"
BASELINES: tuple[str, ...] = ("random", "bm25", "naive")


@dataclass(frozen=True, slots=True)
class SystemEntry:
    name: str
    target: str
    source: str  # "builtin" or the distribution that provides the plugin
    extra: str | None = None  # the pip extra a built-in needs, if any


BUILTINS: dict[str, SystemEntry] = {
    e.name: e
    for e in (
        SystemEntry("random", "recallbench.systems.random_baseline:RandomSystem", "builtin"),
        SystemEntry("bm25", "recallbench.systems.bm25:BM25System", "builtin"),
        SystemEntry("naive", "recallbench.systems.naive:NaiveSystem", "builtin"),
        SystemEntry("dense", "recallbench.systems.dense:DenseSystem", "builtin", "dense"),
        SystemEntry("hybrid", "recallbench.systems.hybrid:HybridSystem", "builtin", "dense"),
        SystemEntry("mem0", "recallbench.systems.mem0_system:Mem0System", "builtin", "mem0"),
        SystemEntry(
            "chroma", "recallbench.systems.chroma_system:ChromaSystem", "builtin", "chroma"
        ),
    )
}


class UnknownSystemError(LookupError):
    pass


class SystemUnavailableError(RuntimeError):
    """A registered system whose optional dependencies are not installed."""

    def __init__(self, name: str, extra: str | None, cause: BaseException) -> None:
        hint = f' (install it with: pip install "recallbench[{extra}]")' if extra else ""
        super().__init__(f"system {name!r} is not available: {cause}{hint}")
        self.name = name
        self.extra = extra


def available_systems() -> dict[str, SystemEntry]:
    """Every registered system by name; built-ins first, then plugins sorted by name."""
    found = dict(BUILTINS)
    plugins: dict[str, SystemEntry] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
            continue
        dist = getattr(ep, "dist", None)
        source = f"plugin:{dist.name}" if dist is not None else "plugin"
        plugins[ep.name] = SystemEntry(ep.name, ep.value, source)
    return found | dict(sorted(plugins.items()))


def resolve_target(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def create_system(name: str, context: SystemContext | None = None) -> MemorySystem:
    """Build a registered system; raises UnknownSystemError or SystemUnavailableError."""
    entries = available_systems()
    if name not in entries:
        known = ", ".join(entries)
        raise UnknownSystemError(f"unknown system {name!r}; registered systems: {known}")
    entry = entries[name]
    try:
        factory = resolve_target(entry.target)
    except ImportError as exc:
        raise SystemUnavailableError(name, entry.extra, exc) from exc
    system = factory(context or SystemContext())
    if not getattr(system, "name", None):
        system.name = name
    return system
