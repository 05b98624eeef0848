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
    the same sessions and the same query give the same memory ids in the same order.
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

Every search result is also type-checked: a ``list`` of :class:`Memory` whose ``id`` and
``text`` are strings and whose ``source_turns`` is ``None`` or a tuple of strings.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from recallbench.chunking import with_chunks
from recallbench.contracts import Memory, Session, Turn
from recallbench.systems.base import (
    Capabilities,
    MemorySystem,
    SystemContext,
    close_system,
    declared_hooks,
)
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
)
"""Stable check names, in the order they run."""

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


def _ids(values: Iterable[str], limit: int = 5) -> str:
    items = sorted(set(values))
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _Probe:
    """Calls the system, turning its exceptions and malformed results into ``_Failed``."""

    def __init__(self, system: MemorySystem) -> None:
        self.system = system
        self.added: set[str] = set()  # turn ids added since the last reset
        self.returned: set[str] = set()  # memory ids returned since the last reset
        self.returned_before: set[str] = set()  # memory ids returned before the last reset
        self.chunks = 0
        self.turns = 0

    def reset(self) -> None:
        try:
            self.system.reset()
        except Exception as exc:
            raise _Failed(f"reset() raised {type(exc).__name__}: {exc}") from exc
        self.added = set()
        self.returned_before |= self.returned
        self.returned = set()
        self.chunks = 0
        self.turns = 0

    def add(self, *sessions: Session) -> None:
        for session in sessions:
            try:
                self.system.add(session)
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
                self.system.finish_ingest()  # type: ignore[attr-defined]
            except Exception as exc:
                raise _Failed(f"finish_ingest() raised {type(exc).__name__}: {exc}") from exc

    def search(self, query: str, k: int) -> list[Memory]:
        where = f"search({_short(query, 40)}, k={k})"
        try:
            result = self.system.search(query, k)
        except Exception as exc:
            raise _Failed(f"{where} raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, list):
            raise _Failed(f"{where} returned {type(result).__name__}, expected list[Memory]")
        for m in result:
            if not isinstance(m, Memory):
                raise _Failed(f"{where} returned a {type(m).__name__}, expected Memory")
            if not isinstance(m.id, str) or not isinstance(m.text, str):
                raise _Failed(f"{where} returned a Memory whose id or text is not a string")
            st = m.source_turns
            if st is not None and (
                not isinstance(st, tuple) or not all(isinstance(x, str) for x in st)
            ):
                raise _Failed(
                    f"{where} returned Memory {m.id!r} whose source_turns is "
                    f"{type(st).__name__}, expected tuple[str, ...] or None"
                )
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


def _check_deterministic(probe: _Probe) -> str:
    runs: list[list[list[str]]] = []
    for _ in range(2):
        probe.reset()
        probe.add(*DETERMINISM_SESSIONS)
        run = [[m.id for m in probe.search(q, 3)] for q in DETERMINISM_QUERIES]
        again = [m.id for m in probe.search(DETERMINISM_QUERIES[0], 3)]
        if again != run[0]:
            raise _Failed(
                f"the same search twice in a row gave {again} and then {run[0]} (memory ids differ)"
            )
        runs.append(run)
    for query, first, second in zip(DETERMINISM_QUERIES, runs[0], runs[1], strict=True):
        if first != second:
            raise _Failed(
                f"after reset and the same sessions, search({_short(query, 40)}) gave ids "
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


_CHECK_FUNCTIONS: dict[str, Callable[[_Probe], str]] = {
    "protocol": _check_protocol,
    "forgets_after_reset": _check_forgets_after_reset,
    "no_leak_between_groups": _check_no_leak_between_groups,
    "deterministic": _check_deterministic,
    "source_turns_exist": _check_source_turns_exist,
    "unicode_roundtrip": _check_unicode_roundtrip,
    "edge_cases": _check_edge_cases,
}
if tuple(_CHECK_FUNCTIONS) != CHECKS:  # pragma: no cover - guards edits to this module
    raise RuntimeError("conformance CHECKS and check functions are out of step")


def run_checks(name: str, system: MemorySystem) -> list[CheckResult]:
    """Run every check against an already built system (``name`` labels the results)."""
    probe = _Probe(system)
    results: list[CheckResult] = []
    callable_api = all(callable(getattr(system, a, None)) for a in ("add", "search", "reset"))
    for check in CHECKS:
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
    name: str, config: Mapping[str, Any] | None = None, work_dir: Path | None = None
) -> list[CheckResult]:
    """Build the registered system ``name`` and run the whole battery against it.

    ``work_dir`` is a folder for the system's state: its ``work`` and ``cache`` subfolders
    become the context's ``work_dir`` and ``cache_dir``. A temporary folder is used (and
    removed) when it is not given. Returns one result per entry of ``CHECKS``, or a single
    ``skip`` result (check ``"create"``) when an optional extra is missing, or a single
    ``fail`` result when building the system raises. Raises ``UnknownSystemError`` for a name
    that is not registered.
    """
    with ExitStack() as stack:
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
            system = create_system(name, context)
        except SystemUnavailableError as exc:
            extra = f"missing optional extra {exc.extra!r}" if exc.extra else "missing dependency"
            return [
                CheckResult(
                    name, CREATE_CHECK, "skip", f"{name}: {CREATE_CHECK} skipped: {extra}: {exc}"
                )
            ]
        except UnknownSystemError:
            raise
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
            return run_checks(name, system)
        finally:
            with suppress(Exception):  # best effort; the checks already reported
                if callable(getattr(system, "reset", None)):
                    system.reset()
                close_system(system)
