"""The system registry: built-ins plus anything installed under the ``recallbench.systems``
entry-point group. An entry point names a class or factory called with a ``SystemContext``.

Capabilities are read one way, :func:`capabilities_for`: a system declares them as a class
attribute ``capabilities``, or, when they depend on its options (Mem0 with an LLM extracts facts
and returns no source turns), as a classmethod ``declare_capabilities(config)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from recallbench.errors import SystemUnavailableError, UnknownSystemError
from recallbench.registry import Entry, Registry, resolve_target
from recallbench.systems.base import Capabilities, MemorySystem, SystemContext

ENTRY_POINT_GROUP = "recallbench.systems"
BASELINES: tuple[str, ...] = ("random", "bm25", "naive")
SystemEntry = Entry

BUILTINS: dict[str, Entry] = {
    e.name: e
    for e in (
        Entry("random", "recallbench.systems.random_baseline:RandomSystem"),
        Entry("bm25", "recallbench.systems.bm25:BM25System"),
        Entry("naive", "recallbench.systems.naive:NaiveSystem"),
        Entry("dense", "recallbench.systems.dense:DenseSystem", extra="dense"),
        Entry("hybrid", "recallbench.systems.hybrid:HybridSystem", extra="dense"),
        Entry("mem0", "recallbench.systems.mem0_system:Mem0System", extra="mem0"),
        Entry("chroma", "recallbench.systems.chroma_system:ChromaSystem", extra="chroma"),
        Entry("http", "recallbench.systems.http.system:HttpSystem"),
    )
}
SYSTEMS: Registry[Any] = Registry("system", lambda: BUILTINS, ENTRY_POINT_GROUP)

__all__ = [
    "BASELINES",
    "BUILTINS",
    "SYSTEMS",
    "DeclaredCapabilities",
    "SystemEntry",
    "SystemUnavailableError",
    "UnknownSystemError",
    "available_systems",
    "capabilities_for",
    "create_system",
    "resolve_target",
    "system_factory",
]


def available_systems() -> dict[str, Entry]:
    """Every registered system by name; built-ins first, then plugins sorted by name."""
    return SYSTEMS.entries()


def system_factory(name: str) -> Any:
    """The class or factory of a registered system; raises UnknownSystemError or
    SystemUnavailableError (naming the pip extra) when it cannot be imported."""
    entries = available_systems()
    if name not in entries:
        known = ", ".join(entries)
        raise UnknownSystemError(f"unknown system {name!r}; registered systems: {known}")
    entry = entries[name]
    try:
        return resolve_target(entry.target)
    except ImportError as exc:
        raise SystemUnavailableError(name, entry.extra, exc) from exc


@dataclass(frozen=True, slots=True)
class DeclaredCapabilities:
    capabilities: Capabilities | None
    """None when the system declares none before it is built."""
    depends_on_config: bool


def capabilities_for(target: Any, config: Mapping[str, Any] | None = None) -> DeclaredCapabilities:
    """What a system class (or a built instance) declares for ``config``: the one way to read it.

    ``declare_capabilities(config)`` wins (capabilities that depend on options); otherwise the
    ``capabilities`` attribute. A plugin that declares neither gets ``None``.
    """
    declare = getattr(target, "declare_capabilities", None)
    if callable(declare):
        caps = declare(dict(config or {}))
        return DeclaredCapabilities(caps if isinstance(caps, Capabilities) else None, True)
    caps = getattr(target, "capabilities", None)
    return DeclaredCapabilities(caps if isinstance(caps, Capabilities) else None, False)


def create_system(name: str, context: SystemContext | None = None) -> MemorySystem:
    """Build a registered system; raises UnknownSystemError or SystemUnavailableError."""
    factory = system_factory(name)
    system = factory(context or SystemContext())
    if not getattr(system, "name", None):
        system.name = name
    return system
