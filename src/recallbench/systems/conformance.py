"""The conformance kit: a quick battery every memory system (built-in or plugin) should pass.

``check_system(name)`` builds the system through the registry, exactly as a run would, and
probes it with small synthetic conversations. Each check yields one :class:`CheckResult`; a
failure's ``detail`` names the system and the check so it can be pasted into a bug report. The
kit never raises because of the system under test: exceptions from ``add``/``search``/``reset``
turn into failures. Only an unknown name raises (:class:`UnknownSystemError`), so the caller can
list the registered systems.

Checks, in order (``CHECKS``):

``protocol``
    callable ``add``/``search``/``reset``, a ``capabilities`` that is a :class:`Capabilities`
    and a non-empty string ``name``.
``forgets_after_reset``
    a made-up word stored before ``reset()`` never comes back after it (neither its text nor
    the ids of the turns it came from).
``no_leak_between_groups``
    after a reset, searches over a second haystack group return nothing of the first group.
``deterministic``
    the same sessions and the same query give the same memory ids in the same order; a system
    whose ids are issued by a server (class attribute ``server_issued_ids = True``, as
    ``http``) may get new ids after a reset, so for it the texts and source turns are compared
    in order instead (the same search twice in a row must still give the same ids).
``source_turns_exist``
    every source turn id a memory names was added since the last reset; a system declaring
    ``returns_source_turns`` must actually return some.
``unicode_roundtrip``
    text in ten scripts plus emoji comes back byte-for-byte (skipped for ``summarizes=True``).
``edge_cases``
    empty query, a ~100k-character turn, ``k`` larger than the store, ``k=1``. Systems that
    return everything regardless of ``k`` declare it (``Capabilities(ignores_k=True)``) and
    are exempt from the ``k`` bound (never from the store-size bound or the no-duplicates
    rule).
``thread_safe``
    after one ingest, a set of searches is run sequentially, then the same searches from
    ``THREADS`` threads at once (each thread all of them, ``ROUNDS`` times, in its own order):
    every concurrent result must equal the sequential one (ids, texts and source turns, in
    order), as ``recallbench run --concurrency N`` needs. A search that raises only under
    concurrency fails the check too.
``results_not_aliased``
    every list a search returned, and the memories in it, still hold what they held when they
    were returned after later searches, a later ``add`` and a ``reset()`` (a system that hands
    out one list object and refills it, or rewrites memories it returned, fails).

Every search result is also type-checked, failing with the field named: a ``list`` of
:class:`Memory` whose ``id`` and ``text`` are ``str`` without lone surrogates (they must encode
as UTF-8), whose ``source_turns`` is ``None`` or a tuple of strings, and whose ``score`` is
``None`` or a finite real number: an ``int`` or a ``float`` (a subclass such as
``numpy.float64`` included) but not a ``bool``, so a ``numpy.float32`` fails (convert it with
``float()``).

Untrusted code may hang, so the kit makes every call to the system (``add``, ``search``,
``reset``, ``finish_ingest``) on a daemon worker thread and waits at most ``timeout_s`` seconds
for it (default ``DEFAULT_CALL_TIMEOUT_S``; building the system: ``create_timeout_s``, default
``DEFAULT_CREATE_TIMEOUT_S``). A call that overruns fails its check naming the call (``search('...',
k=5) did not return within 10 s (timeout)``); the stuck thread is abandoned (in-process code
cannot be killed; a daemon thread cannot keep the process alive), the instance is sent nothing
more (no further checks, no final ``reset``/``close``) and every remaining check is skipped
naming the check that timed out. A constructor that overruns fails ``create``.
"""

from __future__ import annotations

import math
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from recallbench.chunking import private_copy, with_chunks
from recallbench.contracts import Memory, Session, Turn
from recallbench.errors import SystemConfigError
from recallbench.systems.base import (
    Capabilities,
    MemorySystem,
    SystemContext,
    close_system,
    declared_hooks,
)
from recallbench.systems.boundary import lone_surrogate_at
from recallbench.systems.registry import (
    SystemUnavailableError,
    UnknownSystemError,
    create_system,
)

Status = Literal["pass", "fail", "skip"]

CHECKS: tuple[str, ...] = (
    "protocol",
    "forgets_after_reset",
    "no_leak_between_groups",
    "deterministic",
    "source_turns_exist",
    "unicode_roundtrip",
    "edge_cases",
    "thread_safe",
    "results_not_aliased",
)
"""Stable check names, in the order they run (new checks are appended, never inserted)."""

DEFAULT_CALL_TIMEOUT_S = 10.0
"""Seconds the kit waits for one ``add``/``search``/``reset``/``finish_ingest`` call."""

DEFAULT_CREATE_TIMEOUT_S = 300.0
"""Seconds the kit waits for the system's constructor (which may load a model)."""

THREADS = 4
"""Threads that search at the same time in the ``thread_safe`` check."""

ROUNDS = 2
"""How many times each of those threads runs every ``thread_safe`` query."""

CREATE_CHECK = "create"
"""Check name of the single result returned when the system cannot be built at all."""


@dataclass(frozen=True)
class CheckResult:
    system: str
    check: str
    status: Status
    detail: str = ""


def passed(results: Iterable[CheckResult]) -> bool:
    """True when no result failed (skips do not count as failures)."""
    return all(r.status != "fail" for r in results)


# --------------------------------------------------------------------------------------------
# Building harness-style sessions


def _session(conv: str, number: int, date: str, lines: Sequence[tuple[str, str]]) -> Session:
    """A Session with turn ids ``{conv}-s{number}-t{i}`` and pair chunks.

    Pair chunking as the harness does it: a user turn followed by an assistant reply make one
    chunk; any other turn is a chunk on its own.
    """
    session_id = f"{conv}-s{number}"
    turns = tuple(
        Turn(
            turn_id=f"{session_id}-t{i}",
            session_id=session_id,
            speaker=speaker,
            text=text,
            date=date,
        )
        for i, (speaker, text) in enumerate(lines, start=1)
    )
    return with_chunks(Session(session_id=session_id, date=date, turns=turns), "pair")


def _turn_ids(sessions: Iterable[Session]) -> set[str]:
    return {t.turn_id for s in sessions for t in s.turns}


# --------------------------------------------------------------------------------------------
# Probe data. Made-up words make leaks unambiguous, and every check uses its own conversation
# ids (c1..c8), so anything a system keeps across reset() shows up as a foreign id.

FACT_WORD = "zorblatt"
FACT_QUERY = "What is the name of the parrot? Zorblatt"

FACT_SESSION = _session(
    "c1",
    1,
    "2024-03-01",
    [
        ("user", "My neighbour's parrot is called Zorblatt and it whistles sea shanties."),
        ("assistant", "Zorblatt sounds like a lively parrot. Do the shanties wake you up?"),
        ("user", "Every morning at six, Zorblatt starts singing on the balcony."),
        ("assistant", "An early riser, then. Earplugs might help on weekends."),
    ],
)
UNRELATED_SESSION = _session(
    "c2",
    1,
    "2024-03-08",
    [
        ("user", "I am baking sourdough bread this weekend for my sister."),
        ("assistant", "Feed the starter the night before so it is bubbly in the morning."),
        ("user", "Should I add some rye flour to the dough?"),
        ("assistant", "A little rye gives the loaf a deeper, slightly sour flavour."),
    ],
)

GROUP_A_MARK = "quorvenik"
GROUP_A = (
    _session(
        "c3",
        1,
        "2023-06-02",
        [
            ("user", "We rented a cabin by Lake Quorvenik for the summer holiday."),
            ("assistant", "Lake Quorvenik must be lovely in June. Will you go kayaking?"),
            ("user", "Yes, and my daughter wants to learn fishing there."),
            ("assistant", "Early mornings are best for fishing on a quiet lake."),
        ],
    ),
    _session(
        "c3",
        2,
        "2023-06-20",
        [
            ("user", "The cabin at Quorvenik has no internet, which is a relief."),
            ("assistant", "A holiday offline sounds restful. Bring a few board games."),
        ],
    ),
)
GROUP_B = (
    _session(
        "c4",
        1,
        "2023-09-11",
        [
            ("user", "My cat Plenthar knocked the orchid off the shelf again."),
            ("assistant", "Cats love pushing things off shelves. Maybe move the orchid higher."),
            ("user", "Plenthar also chews on the phone charger cable."),
            ("assistant", "A cable cover or bitter spray can stop the chewing."),
        ],
    ),
    _session(
        "c4",
        2,
        "2023-09-30",
        [
            ("user", "I started a pottery class on Thursday evenings."),
            ("assistant", "Pottery is relaxing. What are you making first?"),
        ],
    ),
)
GROUP_B_QUERIES = (
    "Where did we rent a cabin for the summer holiday? Quorvenik lake",
    "fishing kayaking lake cabin internet",
    "What did the cat Plenthar knock off the shelf?",
    "pottery class",
)

DETERMINISM_SESSIONS = (
    _session(
        "c5",
        1,
        "2024-01-05",
        [
            ("user", "I am training for a half marathon in April."),
            ("assistant", "Build your weekly distance slowly and rest one day a week."),
            ("user", "My long run on Sunday was fourteen kilometres."),
            ("assistant", "Good progress. Keep the long run at an easy pace."),
            ("user", "My running shoes are starting to wear out."),
            ("assistant", "Most running shoes last about 600 to 800 kilometres."),
        ],
    ),
    _session(
        "c5",
        2,
        "2024-02-10",
        [
            ("user", "I bought new running shoes with more cushioning."),
            ("assistant", "Break them in on short runs before the long run."),
            ("user", "The half marathon route goes along the river."),
            ("assistant", "A flat river route is great for a personal best."),
        ],
    ),
)
DETERMINISM_QUERIES = ("running shoes long run", "Where does the half marathon route go?")

STALE_SESSION = _session(
    "c6",
    1,
    "2022-12-24",
    [
        ("user", "My old car is a blue hatchback that needs new brakes."),
        ("assistant", "Worn brakes are worth fixing soon. Have a garage check the discs too."),
    ],
)
SOURCE_QUERIES = (
    "running shoes",
    "half marathon route river",
    "car brakes hatchback",
    "What is my long run distance?",
)

UNICODE_LINES: tuple[tuple[str, str], ...] = (
    ("user", "latin: Crème brûlée, jalapeño, façade, smørrebrød and São Paulo in Ærøskøbing."),
    ("assistant", "cyrillic: Привет! Съешь же ещё этих мягких французских булок."),
    ("user", "greek: Καλημέρα, πώς είσαι σήμερα;"),
    ("assistant", "arabic: مرحبا، كيف حالك اليوم؟"),
    ("user", "hebrew: שלום, מה שלומך היום?"),
    ("assistant", "devanagari: नमस्ते, आज मौसम बहुत अच्छा है।"),
    ("user", "chinese: 我今天去市场买了苹果和茶叶。"),
    ("assistant", "japanese: 今日はいい天気なので、カタカナとひらがなで散歩します。"),
    ("user", "korean: 안녕하세요, 오늘 날씨가 정말 좋네요."),
    ("assistant", "thai: สวัสดีครับ วันนี้อากาศดีมาก"),
    ("user", "emoji: party 🎉 with the family 👨‍👩‍👧 and a thumbs up 👍🏽"),
)
UNICODE_SESSION = _session("c7", 1, "2024-05-01", UNICODE_LINES)

EDGE_SESSION = _session(
    "c8",
    1,
    "2024-07-01",
    [
        ("user", "The garden tomatoes are finally ripe."),
        ("assistant", "Pick them in the morning for the best flavour."),
        ("user", "I want to make tomato sauce with basil from the garden."),
        ("assistant", "Simmer the tomatoes slowly and add the basil at the end."),
        ("user", "The garden also has too many courgettes."),
        ("assistant", "Courgettes freeze well when grated."),
    ],
)
LONG_MARK = "glimmerfax"
LONG_TEXT_CHARS = 100_000


def _long_text() -> str:
    filler = "the lighthouse keeper wrote the tide times in the garden logbook at dawn. "
    half = (filler * (LONG_TEXT_CHARS // (2 * len(filler)) + 1))[: LONG_TEXT_CHARS // 2]
    return f"{half} The secret word is {LONG_MARK}. {half}"


# --------------------------------------------------------------------------------------------
# Running probes against a system


class _Failed(Exception):
    """The check failed; the message says why."""


class _Skipped(Exception):
    """The check cannot be judged for this system; the message says why."""


class _TimedOut(_Failed):
    """A call to the system did not return in time; the instance cannot be trusted any more."""


class _Pending:
    """One call handed to a worker thread, and what became of it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - the system's failure is reported, not raised here
            self.error = exc
        finally:
            self.done.set()


def _worker_loop(calls: queue.SimpleQueue[_Pending | None]) -> None:
    while True:
        pending = calls.get()
        if pending is None:
            return
        pending.run()


def _seconds(timeout_s: float) -> float:
    """``timeout_s`` as a float; ``ValueError`` unless it is a positive finite number."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise ValueError(f"a timeout must be a positive number of seconds, got {timeout_s!r}")
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"a timeout must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


class _Caller:
    """Makes the system's calls one at a time on one daemon worker thread, each with a timeout.

    ``call`` returns what the call returned or re-raises what it raised (an ``Exception``; any
    other ``BaseException`` becomes ``_Failed``). A call that overruns its timeout raises
    ``_TimedOut`` naming it; its thread is abandoned (it exits if the call ever returns) and
    ``hung`` names the call, after which nothing more may be sent. ``close()`` lets the worker
    exit once it is idle.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = _seconds(timeout_s)
        self.hung: str | None = None
        self._calls: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        threading.Thread(
            target=_worker_loop, args=(self._calls,), daemon=True, name="recallbench-verify"
        ).start()

    def call(self, what: str, fn: Callable[[], Any], timeout_s: float | None = None) -> Any:
        if self.hung is not None:  # pragma: no cover - run_checks stops after a timeout
            raise _TimedOut(f"{what} not attempted: {self.hung} timed out earlier")
        limit = self.timeout_s if timeout_s is None else timeout_s
        pending = _Pending(fn)
        self._calls.put(pending)
        if not pending.done.wait(limit):
            self.hung = what
            raise _TimedOut(f"{what} did not return within {limit:g} s (timeout)")
        err = pending.error
        if err is None:
            return pending.result
        if isinstance(err, Exception):
            raise err
        raise _Failed(f"{what} raised {type(err).__name__}: {err}")

    def close(self) -> None:
        self._calls.put(None)


def _type_name(value: object) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _validate(where: str, result: object) -> list[Memory]:
    """``result`` if it is a well-typed search result, else ``_Failed`` naming the field."""
    if not isinstance(result, list):
        raise _Failed(f"{where} returned {_type_name(result)}, expected list[Memory]")
    for m in result:
        if not isinstance(m, Memory):
            raise _Failed(f"{where} returned a {_type_name(m)}, expected Memory")
        label = f"{where} returned Memory {m.id!r}"
        for name in ("id", "text"):
            value = getattr(m, name)
            if not isinstance(value, str):
                raise _Failed(f"{label} whose {name} is {_type_name(value)}, expected str")
            at = lone_surrogate_at(value)
            if at is not None:
                raise _Failed(
                    f"{label} whose {name} contains a lone surrogate at index {at} "
                    f"({ascii(value[at])}), which is not valid text (cannot be encoded as UTF-8)"
                )
        st = m.source_turns
        if st is not None and not isinstance(st, tuple):
            raise _Failed(
                f"{label} whose source_turns is {_type_name(st)}, expected tuple[str, ...] or None"
            )
        bad = [x for x in st or () if not isinstance(x, str)]
        if bad:
            raise _Failed(
                f"{label} whose source_turns holds {_type_name(bad[0])}, "
                "expected tuple[str, ...] or None"
            )
        score = m.score
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise _Failed(
                    f"{label} whose score is {_type_name(score)}, expected a float or None "
                    "(convert it with float())"
                )
            if not math.isfinite(score):
                raise _Failed(f"{label} whose score is {score!r}, expected a finite number or None")
    return result


def _ids(values: Iterable[str], limit: int = 5) -> str:
    items = sorted(set(values))
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _Probe:
    """Calls the system, turning its exceptions and malformed results into ``_Failed``."""

    def __init__(self, system: MemorySystem, caller: _Caller) -> None:
        self.system = system
        self.caller = caller
        self.added: set[str] = set()  # turn ids added since the last reset
        self.returned: set[str] = set()  # memory ids returned since the last reset
        self.returned_before: set[str] = set()  # memory ids returned before the last reset
        self.chunks = 0
        self.turns = 0

    def reset(self) -> None:
        try:
            self.caller.call("reset()", self.system.reset)
        except _Failed:
            raise
        except Exception as exc:
            raise _Failed(f"reset() raised {type(exc).__name__}: {exc}") from exc
        self.added = set()
        self.returned_before |= self.returned
        self.returned = set()
        self.chunks = 0
        self.turns = 0

    def add(self, *sessions: Session) -> None:
        # the system gets copies: one that rewrites what it is handed must not change the probe
        # data the kit checks it (and every later system) against
        for session in private_copy(sessions):
            where = f"add({session.session_id})"
            try:
                self.caller.call(where, lambda session=session: self.system.add(session))
            except _Failed:
                raise
            except Exception as exc:
                raise _Failed(
                    f"add({session.session_id}) raised {type(exc).__name__}: {exc}"
                ) from exc
            self.added |= {t.turn_id for t in session.turns}
            self.chunks += len(session.chunks)
            self.turns += len(session.turns)
        self._finish_ingest()

    def _finish_ingest(self) -> None:
        """As the runner does after a group's last ``add``: the declared ``finish_ingest``."""
        try:
            hooks = declared_hooks(self.system)
        except TypeError as exc:
            raise _Failed(str(exc)) from exc
        if "finish_ingest" in hooks:
            try:
                self.caller.call("finish_ingest()", self.system.finish_ingest)  # type: ignore[attr-defined]
            except _Failed:
                raise
            except Exception as exc:
                raise _Failed(f"finish_ingest() raised {type(exc).__name__}: {exc}") from exc

    def search(self, query: str, k: int) -> list[Memory]:
        where = f"search({_short(query, 40)}, k={k})"
        try:
            raw = self.caller.call(where, lambda: self.system.search(query, k))
        except _Failed:
            raise
        except Exception as exc:
            raise _Failed(f"{where} raised {type(exc).__name__}: {exc}") from exc
        result = _validate(where, raw)
        ids = [m.id for m in result]
        if len(set(ids)) != len(ids):
            dups = {i for i in ids if ids.count(i) > 1}
            hint = (
                " (all were also returned before the last reset(): does reset forget everything?)"
                if dups <= self.returned_before
                else ""
            )
            raise _Failed(f"{where} returned duplicate memory ids: {_ids(dups)}{hint}")
        self.returned |= set(ids)
        return result


def _ignores_k(system: object) -> bool:
    return getattr(getattr(system, "capabilities", None), "ignores_k", False) is True


def _check_protocol(probe: _Probe) -> str:
    system = probe.system
    problems = [
        f"{attr} is missing or not callable"
        for attr in ("add", "search", "reset")
        if not callable(getattr(system, attr, None))
    ]
    caps = getattr(system, "capabilities", None)
    if not isinstance(caps, Capabilities):
        problems.append(f"capabilities is {type(caps).__name__}, expected recallbench Capabilities")
    name = getattr(system, "name", None)
    if not isinstance(name, str) or not name:
        problems.append(f"name is {name!r}, expected a non-empty string")
    try:
        declared_hooks(system)
    except TypeError as exc:
        problems.append(str(exc))
    if problems:
        raise _Failed("; ".join(problems))
    return ""


def _leaks(memories: Sequence[Memory], words: Sequence[str], turn_ids: set[str]) -> list[str]:
    found: list[str] = []
    for m in memories:
        low = m.text.casefold()
        hit_words = [w for w in words if w.casefold() in low]
        if hit_words:
            found.append(f"memory {m.id!r} text contains {', '.join(map(repr, hit_words))}")
        old = set(m.source_turns or ()) & turn_ids
        if old:
            found.append(f"memory {m.id!r} names earlier turns {_ids(old)}")
    return found


def _check_forgets_after_reset(probe: _Probe) -> str:
    note = ""
    before_ids = _turn_ids([FACT_SESSION])
    probe.reset()
    probe.add(FACT_SESSION)
    found = probe.search(FACT_QUERY, 5)
    if not found:
        note = "precondition not observable: nothing returned for the fact before reset"
    elif not any(
        FACT_WORD in m.text.casefold() or set(m.source_turns or ()) & before_ids for m in found
    ):
        raise _Failed(
            f"before reset, search for {FACT_WORD!r} returned {len(found)} memories but none "
            "mentions it, so forgetting cannot be judged"
        )
    probe.reset()
    probe.add(UNRELATED_SESSION)
    for query in (FACT_QUERY, FACT_WORD, "parrot sea shanties balcony", "sourdough bread"):
        leaks = _leaks(probe.search(query, 10), [FACT_WORD], before_ids)
        if leaks:
            raise _Failed(
                f"after reset(), search({_short(query, 40)}) still returns pre-reset data: "
                + "; ".join(leaks[:3])
            )
    return note


def _check_no_leak_between_groups(probe: _Probe) -> str:
    a_ids = _turn_ids(GROUP_A)
    a_texts = [t.text for s in GROUP_A for t in s.turns]
    probe.reset()
    probe.add(*GROUP_A)
    probe.search(GROUP_B_QUERIES[0], 5)  # let lazy systems build their index over group A
    probe.reset()
    probe.add(*GROUP_B)
    for query in GROUP_B_QUERIES:
        memories = probe.search(query, 20)
        leaks = _leaks(memories, [GROUP_A_MARK], a_ids)
        leaks += [
            f"memory {m.id!r} contains group A text {_short(t, 40)}"
            for m in memories
            for t in a_texts
            if t in m.text
        ]
        if leaks:
            raise _Failed(
                f"group B search({_short(query, 40)}) returned group A data: "
                + "; ".join(leaks[:3])
            )
    return ""


def _server_issued_ids(system: object) -> bool:
    return getattr(type(system), "server_issued_ids", False) is True


def _check_deterministic(probe: _Probe) -> str:
    runs: list[list[list[Any]]] = []
    by_content = _server_issued_ids(probe.system)

    def key(m: Memory) -> Any:
        return (m.text, m.source_turns) if by_content else m.id

    for _ in range(2):
        probe.reset()
        probe.add(*DETERMINISM_SESSIONS)
        memories = [probe.search(q, 3) for q in DETERMINISM_QUERIES]
        run = [[key(m) for m in ms] for ms in memories]
        again = [m.id for m in probe.search(DETERMINISM_QUERIES[0], 3)]
        if again != [m.id for m in memories[0]]:
            raise _Failed(
                f"the same search twice in a row gave {again} and then "
                f"{[m.id for m in memories[0]]} (memory ids differ)"
            )
        runs.append(run)
    for query, first, second in zip(DETERMINISM_QUERIES, runs[0], runs[1], strict=True):
        if first != second:
            what = "texts and source turns" if by_content else "ids"
            raise _Failed(
                f"after reset and the same sessions, search({_short(query, 40)}) gave {what} "
                f"{first} then {second}"
            )
    if not any(runs[0]):
        return "no memories returned, so determinism held trivially"
    return ""


def _check_source_turns_exist(probe: _Probe) -> str:
    stale_ids = _turn_ids([STALE_SESSION])
    probe.reset()
    probe.add(STALE_SESSION)
    probe.search(SOURCE_QUERIES[2], 5)
    probe.reset()
    probe.add(*DETERMINISM_SESSIONS)
    memories = [m for q in SOURCE_QUERIES for m in probe.search(q, 5)]
    memories += probe.search(SOURCE_QUERIES[0], 50)
    if not memories:
        raise _Skipped("no memories returned for any query, nothing to check")
    with_sources = 0
    for m in memories:
        if m.source_turns is None:
            continue
        if m.source_turns:
            with_sources += 1
        unknown = set(m.source_turns) - probe.added
        if unknown:
            stale = " (turns added before the last reset)" if unknown <= stale_ids else ""
            raise _Failed(f"memory {m.id!r} names turns never added{stale}: {_ids(unknown)}")
    caps = getattr(probe.system, "capabilities", None)
    if isinstance(caps, Capabilities) and caps.returns_source_turns and not with_sources:
        raise _Failed(
            f"capabilities say returns_source_turns=True but none of {len(memories)} "
            "memories had source turns"
        )
    return ""


def _has_non_ascii(token: str) -> bool:
    return any(ord(c) > 127 for c in token)


def _check_unicode_roundtrip(probe: _Probe) -> str:
    caps = getattr(probe.system, "capabilities", None)
    if isinstance(caps, Capabilities) and caps.summarizes:
        raise _Skipped("system declares summarizes=True, so memory text is not verbatim")
    session = UNICODE_SESSION
    by_id = {t.turn_id: t.text for t in session.turns}
    corpus = "\n".join([*by_id.values(), *(c.text for c in session.chunks)])
    probe.reset()
    probe.add(session)
    k = max(len(session.chunks), len(session.turns))
    seen_verbatim: set[str] = set()
    returned = 0
    for turn in session.turns:
        for m in probe.search(turn.text, k):
            returned += 1
            for token in m.text.split():
                if _has_non_ascii(token) and token not in corpus:
                    raise _Failed(
                        f"memory {m.id!r} holds {ascii(token)}, which is not in the text added "
                        "(mangled non-ASCII text?)"
                    )
            for tid in m.source_turns or ():
                if tid in by_id and by_id[tid] not in m.text:
                    raise _Failed(
                        f"memory {m.id!r} names turn {tid} as its source but does not carry "
                        f"its text unchanged: expected {ascii(by_id[tid])} inside "
                        f"{ascii(m.text[:200])}"
                    )
            seen_verbatim |= {tid for tid, text in by_id.items() if text in m.text}
    if not returned:
        raise _Skipped("no memories returned for any of the unicode queries")
    if not seen_verbatim:
        raise _Failed(f"{returned} memories came back but none contains any added text unchanged")
    return f"{len(seen_verbatim)} of {len(by_id)} texts seen verbatim"


def _check_edge_cases(probe: _Probe) -> str:
    ignores_k = _ignores_k(probe.system)
    probe.reset()
    probe.add(EDGE_SESSION)

    def bounded(query: str, k: int) -> list[Memory]:
        memories = probe.search(query, k)
        if len(memories) > probe.turns:
            raise _Failed(
                f"search({_short(query, 40)}, k={k}) returned {len(memories)} memories but "
                f"only {probe.turns} turns ({probe.chunks} chunks) were stored"
            )
        if not ignores_k and len(memories) > k:
            raise _Failed(
                f"search({_short(query, 40)}, k={k}) returned {len(memories)} memories "
                "(declare Capabilities(ignores_k=True) if the system ignores k by design)"
            )
        return memories

    for query in ("", "   "):
        bounded(query, 5)
    bounded("garden tomatoes basil courgettes", 50)
    bounded("garden tomatoes", 1)
    long_session = _session(
        "c8",
        2,
        "2024-07-02",
        [
            ("user", _long_text()),
            ("assistant", "That is a long logbook entry."),
        ],
    )
    probe.add(long_session)
    bounded(f"What is the secret word? {LONG_MARK}", 3)
    bounded("lighthouse keeper tide logbook", 1)
    bounded("garden tomatoes basil courgettes lighthouse", 100)
    return "ignores_k: exempt from the k bound" if ignores_k else ""


THREAD_QUERIES = (
    *DETERMINISM_QUERIES,
    *SOURCE_QUERIES,
    *GROUP_B_QUERIES,
)
"""The searches ``thread_safe`` runs sequentially and then concurrently (k=3)."""


def _key(memories: Sequence[Memory]) -> list[tuple[str, str, tuple[str, ...] | None]]:
    """What the scorer reads of a result: ids, texts and source turns, in order."""
    return [(m.id, m.text, m.source_turns) for m in memories]


class _SearchThread:
    """One daemon thread running ``queries`` against the system, as a ``--concurrency`` worker.

    ``current`` is the call in progress and when it started (for the timeout); ``results`` the
    raw results in order; ``error`` the first exception (the thread stops there).
    """

    def __init__(
        self, system: MemorySystem, queries: Sequence[str], k: int, start: threading.Barrier
    ) -> None:
        self.system = system
        self.queries = list(queries)
        self.k = k
        self.start = start
        self.current: tuple[str, float] | None = None
        self.results: list[tuple[str, str, object]] = []
        self.error: tuple[str, BaseException] | None = None
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="recallbench-verify-search").start()

    def _run(self) -> None:
        try:
            self.start.wait()
            for query in self.queries:
                where = f"search({_short(query, 40)}, k={self.k})"
                self.current = (where, time.monotonic())
                try:
                    found = self.system.search(query, self.k)
                except BaseException as exc:  # noqa: BLE001 - reported by the check
                    self.error = (where, exc)
                    return
                self.results.append((query, where, found))
                self.current = None
        finally:
            self.done.set()


def _check_thread_safe(probe: _Probe) -> str:
    k = 3
    probe.reset()
    probe.add(*GROUP_A, *DETERMINISM_SESSIONS)
    expected = {q: _key(probe.search(q, k)) for q in THREAD_QUERIES}
    if not any(expected.values()):
        raise _Skipped("no memories returned for any query, nothing to compare")
    plans = []
    for t in range(THREADS):  # each thread its own order: rotated by t, odd threads reversed
        order = [*THREAD_QUERIES[t:], *THREAD_QUERIES[:t]]
        plans.append((order[::-1] if t % 2 else order) * ROUNDS)
    start = threading.Barrier(THREADS)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads often, so races show up in a short probe
    try:
        threads = [_SearchThread(probe.system, plan, k, start) for plan in plans]
        while not all(t.done.wait(0.02) for t in threads):
            for t in threads:
                current = t.current
                if current is not None and time.monotonic() - current[1] > probe.caller.timeout_s:
                    probe.caller.hung = f"concurrent {current[0]}"
                    raise _TimedOut(
                        f"concurrent {current[0]} (from {THREADS} threads) did not return "
                        f"within {probe.caller.timeout_s:g} s (timeout)"
                    )
    finally:
        sys.setswitchinterval(previous)
    for t in threads:
        if t.error is not None:
            where, exc = t.error
            raise _Failed(
                f"concurrent {where} (from {THREADS} threads) raised {type(exc).__name__}: {exc}"
            )
    differ: list[str] = []
    total = 0
    for t in threads:
        for query, where, found in t.results:
            total += 1
            got = _key(_validate(f"concurrent {where}", found))
            if got != expected[query]:
                differ.append(
                    f"{where} gave ids {[m[0] for m in got]} concurrently but "
                    f"{[m[0] for m in expected[query]]} sequentially"
                )
    if differ:
        raise _Failed(
            f"{len(differ)} of {total} searches run concurrently from {THREADS} threads gave "
            f"a different result than sequentially (not thread-safe: protect shared state "
            f"with a lock): {'; '.join(differ[:2])}"
        )
    return f"{total} concurrent searches from {THREADS} threads matched"


def _snapshot(memories: Sequence[Memory]) -> list[tuple[object, ...]]:
    return [(m.id, m.text, m.source_turns, m.score) for m in memories]


def _check_results_not_aliased(probe: _Probe) -> str:
    kept: list[tuple[str, list[Memory], list[tuple[object, ...]]]] = []

    def unchanged(after: str) -> None:
        for where, result, snapshot in kept:
            now = _snapshot(result)
            if now != snapshot:
                again = any(r is result for w, r, _ in kept if w != where)
                hint = " (search returned the same list object again)" if again else ""
                raise _Failed(
                    f"the result of {where} changed after later calls (after {after}): ids were "
                    f"{[s[0] for s in snapshot]}, texts {[_short(str(s[1]), 30) for s in snapshot]}"
                    f", now ids {[s[0] for s in now]}, texts "
                    f"{[_short(str(s[1]), 30) for s in now]}{hint}: return a new list of new "
                    "Memory objects from every search"
                )

    probe.reset()
    probe.add(*DETERMINISM_SESSIONS)
    for query in (*SOURCE_QUERIES, *DETERMINISM_QUERIES):
        where = f"search({_short(query, 40)}, k=3)"
        result = probe.search(query, 3)
        unchanged(where)
        kept.append((where, result, _snapshot(result)))
    if not any(snapshot for _, _, snapshot in kept):
        raise _Skipped("no memories returned for any query, nothing to compare")
    probe.add(STALE_SESSION)
    unchanged(f"add({STALE_SESSION.session_id})")
    probe.search(SOURCE_QUERIES[2], 3)
    unchanged(f"search({_short(SOURCE_QUERIES[2], 40)}, k=3)")
    probe.reset()
    unchanged("reset()")
    probe.add(UNRELATED_SESSION)
    probe.search("sourdough bread", 3)
    unchanged("a search after reset()")
    return ""


_CHECK_FUNCTIONS: dict[str, Callable[[_Probe], str]] = {
    "protocol": _check_protocol,
    "forgets_after_reset": _check_forgets_after_reset,
    "no_leak_between_groups": _check_no_leak_between_groups,
    "deterministic": _check_deterministic,
    "source_turns_exist": _check_source_turns_exist,
    "unicode_roundtrip": _check_unicode_roundtrip,
    "edge_cases": _check_edge_cases,
    "thread_safe": _check_thread_safe,
    "results_not_aliased": _check_results_not_aliased,
}
if tuple(_CHECK_FUNCTIONS) != CHECKS:  # pragma: no cover - guards edits to this module
    raise RuntimeError("conformance CHECKS and check functions are out of step")


def run_checks(
    name: str, system: MemorySystem, timeout_s: float = DEFAULT_CALL_TIMEOUT_S
) -> list[CheckResult]:
    """Run every check against an already built system (``name`` labels the results).

    Each call to the system waits at most ``timeout_s`` seconds; after a call that timed out,
    the remaining checks are skipped (see the module docstring).
    """
    caller = _Caller(timeout_s)
    try:
        return _run_checks(name, system, caller)
    finally:
        caller.close()


def _run_checks(name: str, system: MemorySystem, caller: _Caller) -> list[CheckResult]:
    probe = _Probe(system, caller)
    results: list[CheckResult] = []
    callable_api = all(callable(getattr(system, a, None)) for a in ("add", "search", "reset"))
    timed_out: str | None = None
    for check in CHECKS:
        if timed_out is not None:
            results.append(
                CheckResult(
                    name,
                    check,
                    "skip",
                    f"{name}: {check} skipped: {timed_out} timed out, so the instance cannot be "
                    "trusted",
                )
            )
            continue
        if check != "protocol" and not callable_api:
            results.append(
                CheckResult(
                    name,
                    check,
                    "skip",
                    f"{name}: {check} skipped: add/search/reset are not all callable",
                )
            )
            continue
        try:
            note = _CHECK_FUNCTIONS[check](probe)
        except _TimedOut as exc:
            timed_out = check
            results.append(CheckResult(name, check, "fail", f"{name}: {check} failed: {exc}"))
        except _Failed as exc:
            results.append(CheckResult(name, check, "fail", f"{name}: {check} failed: {exc}"))
        except _Skipped as exc:
            results.append(CheckResult(name, check, "skip", f"{name}: {check} skipped: {exc}"))
        except Exception as exc:  # a bug in the system that slipped past the probe
            results.append(
                CheckResult(
                    name,
                    check,
                    "fail",
                    f"{name}: {check} failed: raised {type(exc).__name__}: {exc}",
                )
            )
        else:
            results.append(CheckResult(name, check, "pass", note))
    return results


def check_system(
    name: str,
    config: Mapping[str, Any] | None = None,
    work_dir: Path | None = None,
    *,
    timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    create_timeout_s: float = DEFAULT_CREATE_TIMEOUT_S,
) -> list[CheckResult]:
    """Build the registered system ``name`` and run the whole battery against it.

    The constructor runs on the kit's worker thread and may take ``create_timeout_s`` seconds;
    every later call ``timeout_s`` seconds (see the module docstring). After a call timed out
    the system is neither reset nor closed.

    ``work_dir`` is a folder for the system's state: its ``work`` and ``cache`` subfolders
    become the context's ``work_dir`` and ``cache_dir``. A temporary folder is used (and
    removed) when it is not given. Returns one result per entry of ``CHECKS``, or a single
    ``skip`` result (check ``"create"``) when an optional extra is missing or the system cannot
    be built without options and none were given (a ``SystemConfigError`` with an empty
    ``config``, as ``http`` without its config), or a single
    ``fail`` result when building the system raises or times out. Raises
    ``UnknownSystemError`` for a name that is not registered, ``ValueError`` for a timeout that
    is not a positive number.
    """
    create_timeout_s = _seconds(create_timeout_s)
    caller = _Caller(timeout_s)
    with ExitStack() as stack:
        stack.callback(caller.close)
        if work_dir is None:
            tmp = tempfile.TemporaryDirectory(
                prefix="recallbench-verify-", ignore_cleanup_errors=True
            )
            root = Path(stack.enter_context(tmp))
        else:
            root = Path(work_dir)
        context = SystemContext(
            seed=0, work_dir=root / "work", cache_dir=root / "cache", config=dict(config or {})
        )
        for folder in (context.work_dir, context.cache_dir):
            assert folder is not None
            folder.mkdir(parents=True, exist_ok=True)
        try:
            system = caller.call(
                f"building {name}", lambda: create_system(name, context), create_timeout_s
            )
        except _TimedOut as exc:
            return [
                CheckResult(name, CREATE_CHECK, "fail", f"{name}: {CREATE_CHECK} failed: {exc}")
            ]
        except SystemUnavailableError as exc:
            extra = f"missing optional extra {exc.extra!r}" if exc.extra else "missing dependency"
            return [
                CheckResult(
                    name, CREATE_CHECK, "skip", f"{name}: {CREATE_CHECK} skipped: {extra}: {exc}"
                )
            ]
        except UnknownSystemError:
            raise
        except SystemConfigError as exc:
            if config:
                return [
                    CheckResult(name, CREATE_CHECK, "fail", f"{name}: {CREATE_CHECK} failed: {exc}")
                ]
            return [
                CheckResult(
                    name,
                    CREATE_CHECK,
                    "skip",
                    f"{name}: {CREATE_CHECK} skipped: it needs options "
                    f"(recallbench verify --system {name} --config FILE): {exc}",
                )
            ]
        except Exception as exc:
            return [
                CheckResult(
                    name,
                    CREATE_CHECK,
                    "fail",
                    f"{name}: {CREATE_CHECK} failed: {type(exc).__name__}: {exc}",
                )
            ]
        try:
            return _run_checks(name, system, caller)
        finally:
            if caller.hung is None:
                with suppress(Exception):  # best effort; the checks already reported
                    if callable(getattr(system, "reset", None)):
                        caller.call("reset()", system.reset)
                    caller.call("close()", lambda: close_system(system))
