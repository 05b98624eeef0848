"""The options a system declares, and the one validator that checks a ``--config`` section.

A system declares its options as a class attribute ``options``: a tuple of :class:`Option`
(name, accepted types, default, bounds, choices, help). :func:`check_options` checks a config
section against it before any results folder exists: an unknown key (a typo such as
``char_budgett``), a value of the wrong type, out of its range or not one of its choices is a
:class:`~recallbench.errors.SystemConfigError` naming the file, the section and the key. A
plugin that declares no ``options`` keeps the old behaviour: its options are passed through
unchecked, and :func:`check_options` returns a note saying so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recallbench.errors import SystemConfigError

__all__ = ["Option", "check_options", "declared_options", "describe"]

_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a table (mapping)",
    type(None): "null",
}


@dataclass(frozen=True, slots=True)
class Option:
    """One option a system reads from its config section.

    ``types``: the accepted value types (``bool`` is never accepted for ``int``/``float``; an
    integer is accepted for ``float``; ``type(None)`` allows null). ``min``/``max`` bound a
    number (inclusive); ``choices`` are the accepted strings (a value of another accepted type,
    e.g. a list, is not checked against them); ``items`` is the type every element of a list
    must have.
    """

    name: str
    types: tuple[type, ...]
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""
    items: type | None = None


def declared_options(target: Any) -> tuple[Option, ...] | None:
    """The options a system class (or instance) declares, or None when it declares none."""
    options = getattr(target, "options", None)
    if options is None:
        return None
    if isinstance(options, Option):
        options = (options,)
    if not isinstance(options, Sequence) or not all(isinstance(o, Option) for o in options):
        return None
    return tuple(options)


def _type_ok(value: Any, t: type) -> bool:
    if isinstance(value, bool):
        return t is bool
    if t is float:
        return isinstance(value, int | float)
    return isinstance(value, t)


def _check_one(option: Option, value: Any, where: str) -> None:
    accepted = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in option.types)
    if not any(_type_ok(value, t) for t in option.types):
        raise SystemConfigError(
            f"{where}: {option.name} must be {accepted}, got {value!r} "
            f"({type(value).__name__}); fix or remove the key"
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise SystemConfigError(f"{where}: {option.name} must be finite, got {value!r}")
        if option.min is not None and value < option.min:
            raise SystemConfigError(
                f"{where}: {option.name} must be at least {option.min:g}, got {value!r}"
            )
        if option.max is not None and value > option.max:
            raise SystemConfigError(
                f"{where}: {option.name} must be at most {option.max:g}, got {value!r}"
            )
    if isinstance(value, str) and option.choices is not None and value not in option.choices:
        raise SystemConfigError(
            f"{where}: {option.name} must be one of {', '.join(option.choices)}, got {value!r}"
        )
    if isinstance(value, list) and option.items is not None:
        for item in value:
            if not _type_ok(item, option.items):
                raise SystemConfigError(
                    f"{where}: every element of {option.name} must be "
                    f"{_TYPE_NAMES.get(option.items, option.items.__name__)}, got {item!r}"
                )


def check_options(
    system: str, target: Any, config: Mapping[str, Any], source: str = "--config"
) -> str | None:
    """Check ``config`` (the ``[system]`` section of ``source``) against what ``target``
    declares; raises :class:`SystemConfigError` naming ``source``, the section and the key.

    Returns a note when the system declares no options (its options pass unchecked), else None.
    """
    declared = declared_options(target)
    if declared is None:
        if not config:
            return None
        return (
            f"note: system {system!r} declares no options: {source} [{system}] "
            f"({', '.join(sorted(config))}) is passed to it unchecked"
        )
    by_name = {o.name: o for o in declared}
    for key, value in config.items():
        where = f"{source} [{system}] {key}"
        if key not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            raise SystemConfigError(
                f"{source} [{system}]: unknown option {key!r}; {system} takes: {known}"
            )
        _check_one(by_name[key], value, where)
    return None


def describe(options: Sequence[Option]) -> str:
    """One line per option for ``recallbench systems``: ``name=default (types)``."""
    parts = []
    for o in options:
        kinds = "|".join(
            "null" if t is type(None) else _TYPE_NAMES.get(t, t.__name__).split()[-1]
            for t in o.types
        )
        extra = []
        if o.min is not None:
            extra.append(f">={o.min:g}")
        if o.max is not None:
            extra.append(f"<={o.max:g}")
        if o.choices:
            extra.append("|".join(o.choices))
        detail = ", ".join([kinds, *extra])
        parts.append(f"{o.name}={o.default!r} ({detail})")
    return "; ".join(parts) if parts else "none"
