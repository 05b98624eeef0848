"""What crosses the adapter boundary back from a system, validated and normalised.

Systems are third-party code: the runner (and the conformance kit) read a ``search`` result only
through :func:`normalise_memories`, which returns fresh, frozen :class:`Memory` records or
raises :class:`InvalidResultError` naming the first impossible field. Normalising means: any
list or tuple of memories becomes a tuple; ``source_turns`` given as a list (or tuple) of
strings becomes a tuple; a real-number ``score`` of any numeric type (``numpy.float32`` from a
vector store, an ``int``) becomes a Python ``float``. Impossible values are errors, never
guessed at: a ``text`` or ``id`` that is not a ``str``, a text that cannot be written as UTF-8
(a lone surrogate), ``source_turns`` given as a single ``str`` (which would otherwise be read
as one turn id per character), a non-string turn id, a non-finite or non-numeric score, and,
when the turns handed to the system are known, a turn id that names none of them.

:func:`chars_returned` is how the harness counts the characters a result costs, and
:func:`source_text_flags` the check that a raw-text system's memories contain the turns they
claim.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from recallbench.contracts import Memory

SOURCE_TEXT_ABSENT = "source_text_absent"
"""Flag rule: a memory of a system that declares raw text (``summarizes`` False) contains the
text of none of the turns it claims."""


class InvalidResultError(ValueError):
    """A system returned something impossible; ``field`` names where (``memories[2].text``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def lone_surrogate_at(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (which UTF-8 cannot encode), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _utf8(value: str, where: str) -> None:
    at = lone_surrogate_at(value)
    if at is not None:
        raise InvalidResultError(where, f"not valid UTF-8 text (character {at}: {value[at]!r})")


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidResultError(where, f"a {type(value).__name__}, expected str")
    _utf8(value, where)
    return str(value)


def _score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidResultError(where, f"a {type(value).__name__}, expected a real number")
    out = float(value)
    if not math.isfinite(out):
        raise InvalidResultError(where, f"{out!r} is not a finite number")
    return out


def _source_turns(
    value: Any, where: str, turns: Mapping[str, str] | None
) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidResultError(
            where, f"a {type(value).__name__}, expected a list of turn ids (or None)"
        )
    ids = tuple(_string(t, f"{where}[{i}]") for i, t in enumerate(value))
    if turns is not None:
        unknown = sorted({t for t in ids if t not in turns})
        if unknown:
            shown = ", ".join(unknown[:5]) + (
                f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            )
            raise InvalidResultError(
                where, f"names turns not handed to the system in this haystack group: {shown}"
            )
    return ids


def normalise_memories(result: Any, turns: Mapping[str, str] | None = None) -> tuple[Memory, ...]:
    """Validate a ``search`` result and return it as a tuple of fresh :class:`Memory` records.

    ``turns`` maps the turn ids handed to the system (in the haystack group searched) to their
    text; when given, every claimed source turn must be one of them. Raises
    :class:`InvalidResultError` naming the first impossible field (see the module docstring).
    The returned records share nothing mutable with ``result``.
    """
    if isinstance(result, str) or not isinstance(result, list | tuple):
        raise InvalidResultError("result", f"a {type(result).__name__}, expected a list of Memory")
    out = []
    for i, m in enumerate(list(result)):
        where = f"memories[{i}]"
        if not isinstance(m, Memory):
            raise InvalidResultError(where, f"a {type(m).__name__}, expected Memory")
        out.append(
            Memory(
                id=_string(m.id, f"{where}.id"),
                text=_string(m.text, f"{where}.text"),
                source_turns=_source_turns(m.source_turns, f"{where}.source_turns", turns),
                score=_score(m.score, f"{where}.score"),
            )
        )
    return tuple(out)


def memory_chars(memory: Memory, turns: Mapping[str, str]) -> int:
    """Characters one memory costs: ``max(len(text), total length of the distinct turns it
    claims)`` (a claimed id missing from ``turns`` counts 0), so claiming turns is never free."""
    claimed = set(memory.source_turns or ())
    return max(len(memory.text), sum(len(turns.get(t, "")) for t in claimed))


def chars_returned(memories: tuple[Memory, ...], turns: Mapping[str, str]) -> int:
    """The characters a result costs: :func:`memory_chars` summed over its memories."""
    return sum(memory_chars(m, turns) for m in memories)


def source_text_flags(memories: tuple[Memory, ...], turns: Mapping[str, str]) -> tuple[str, ...]:
    """For a system that declares it returns raw text: one ``source_text_absent: ...`` flag
    naming the memories whose text contains the text of none of the turns they claim (memories
    claiming no turns are not checked); ``()`` when there are none."""
    bad = [
        m.id
        for m in memories
        if m.source_turns and not any(turns.get(t, "") in m.text for t in m.source_turns)
    ]
    if not bad:
        return ()
    shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return (
        f"{SOURCE_TEXT_ABSENT}: memory {shown} contains none of the text of the turns it "
        "claims, though the system declares raw text (summarizes=False)",
    )
