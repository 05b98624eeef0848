"""Test doubles shipped with recallbench, for its own tests, its timing scripts and plugin authors.

Systems: :class:`NoopSystem` (does nothing: harness overhead), :class:`SlowBM25` (BM25, slow
enough to kill a run part-way), :class:`SlowFinishBM25` (a slow ``finish_ingest`` hook),
:class:`SlowAddBM25` (a fixed delay per ``add``: an extracting hosted service),
:class:`FlakySystem` (raises on some questions, hangs on others), :class:`NoSourceSystem`
(memories without source turns), :class:`HostileSystem` (one fault per mode, for the adapter
boundary). :func:`register` adds them to
this process's system registry under those names.

:class:`FakeEncoderModel` is a bag-of-words hashing "sentence model" (no torch) to register with
``recallbench.systems.embeddings.register_model``.

:mod:`recallbench.testing.mock_llm` is a deterministic OpenAI-compatible chat endpoint on loopback
(rule-based reader and judges, optional delay and faults) for everything that calls an LLM.

:func:`compare_runs` is the one notion of "two runs of the same spec agree": equal verdicts and
metric rows, ignoring the run id and the rows derived from wall-clock time, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.error
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from recallbench.contracts import Memory, Session
from recallbench.errors import SystemConfigError
from recallbench.results import store
from recallbench.score.metrics import TIMING
from recallbench.score.repeats import split_repeat_metric
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.bm25 import BM25System
from recallbench.systems.options import Option


class SlowBM25(BM25System):
    """BM25 that takes a while per search, so a run can be killed part-way."""

    name = "slow-bm25"
    delay_s = 0.02

    def search(self, query: str, k: int) -> list[Memory]:
        time.sleep(self.delay_s)
        return super().search(query, k)


class SlowFinishBM25(BM25System):
    """BM25 whose declared ``finish_ingest`` hook also sleeps: its time must land in ingest."""

    name = "slow-finish"
    finish_delay_s = 0.3

    def finish_ingest(self) -> None:
        time.sleep(self.finish_delay_s)
        super().finish_ingest()


class SlowAddBM25(BM25System):
    """BM25 whose every ``add`` takes ``add_delay_s`` (option, default 0.05 s) and every
    ``search`` ``search_delay_s`` (default 0): a stand-in for a hosted service that extracts
    on ingest, for the group-concurrency timing script and tests. :attr:`peak` is the most
    instances that were inside ``add`` at once in this process."""

    name = "slow-add"
    options = (
        *BM25System.options,
        Option("add_delay_s", (int, float), 0.05, min=0, help="sleep in every add"),
        Option("search_delay_s", (int, float), 0.0, min=0, help="sleep in every search"),
    )
    peak = 0
    _inside = 0
    _guard = threading.Lock()

    def __init__(self, context: SystemContext | None = None) -> None:
        config = dict((context or SystemContext()).config)
        self.add_delay_s = float(config.pop("add_delay_s", 0.05))
        self.search_delay_s = float(config.pop("search_delay_s", 0.0))
        super().__init__(SystemContext(**{**_context_fields(context), "config": config}))

    def add(self, session: Session) -> None:
        with SlowAddBM25._guard:
            SlowAddBM25._inside += 1
            SlowAddBM25.peak = max(SlowAddBM25.peak, SlowAddBM25._inside)
        try:
            time.sleep(self.add_delay_s)
            super().add(session)
        finally:
            with SlowAddBM25._guard:
                SlowAddBM25._inside -= 1

    def search(self, query: str, k: int) -> list[Memory]:
        if self.search_delay_s:
            time.sleep(self.search_delay_s)
        return super().search(query, k)


class FlakySystem(BM25System):
    """Raises on every question whose text contains 'when'; once it has raised, hangs on
    questions starting 'Which'; else BM25. (A timeout quarantines the instance for the rest of
    its group, so the hang comes after a raise for both faults to show in one group.)"""

    name = "flaky"
    _raised = False

    def search(self, query: str, k: int) -> list[Memory]:
        if "when" in query.lower().split():
            self._raised = True
            raise RuntimeError("backend exploded")
        if query.startswith("Which") and self._raised:
            time.sleep(2.0)
        return super().search(query, k)


class NoSourceSystem(BM25System):
    """Returns memories but cannot say which turns they came from."""

    name = "no-source"
    capabilities = Capabilities(returns_source_turns=False)

    def search(self, query: str, k: int) -> list[Memory]:
        return [Memory(id=m.id, text=m.text, source_turns=None) for m in super().search(query, k)]


class NoopSystem:
    """Does nothing: measures harness overhead."""

    name = "noop"
    capabilities = Capabilities()
    _memory = (Memory(id="m", text="x", source_turns=("t",)),)

    def __init__(self, context: SystemContext | None = None) -> None:
        pass

    def add(self, session: Session) -> None:
        pass

    def search(self, query: str, k: int) -> list[Memory]:
        return list(self._memory)

    def reset(self) -> None:
        pass


class HostileSystem(BM25System):
    """BM25 with faults, chosen by its config: ``mode = "<name>"`` or ``modes = [...]``.

    Value faults (every search): ``text_none``, ``text_int`` (a memory whose text is None or an
    int), ``numpy_score`` (scores are ``numpy.float32``: valid, normalised to float),
    ``lone_surrogate`` (a text with a lone surrogate), ``reused_list`` (one list object, cleared
    and refilled by every search, returned after a short sleep), ``claims_every_turn`` (one
    16-character memory claiming every turn handed to it), ``unknown_turn`` (the first memory
    also claims a turn id that names no turn), ``str_source_turns`` (``source_turns`` a str).
    ``mutates_session``: every ``add`` overwrites the text of the turns it is handed.
    ``server_down``: every ``reset``, ``add`` and ``search`` raises
    ``urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))``, as an HTTP
    client does when nothing listens; ``search_refused``: only searches raise it.
    ``constructor_raises``: the constructor raises ``RuntimeError("cannot connect")``.
    Call faults, the first ``times`` calls of a run only (option, default 1; counted in the run's
    work folder, so a replacement instance behaves): ``add_sleeps`` and ``search_sleeps`` (sleep
    ``sleep_s`` seconds, option, default 1.0), ``add_raises`` (raise ``RuntimeError``).

    :attr:`log` records ``(instance, method, detail)`` for every call in the process and
    :attr:`overlaps` counts calls that ran while another call was inside the same instance.
    """

    name = "hostile"
    MODES = frozenset(
        {
            "text_none",
            "text_int",
            "numpy_score",
            "lone_surrogate",
            "constructor_raises",
            "add_sleeps",
            "search_sleeps",
            "add_raises",
            "reused_list",
            "claims_every_turn",
            "unknown_turn",
            "str_source_turns",
            "mutates_session",
            "server_down",
            "search_refused",
        }
    )
    options = (
        *BM25System.options,
        Option("mode", (str, type(None)), None, help="one fault, see the class docstring"),
        Option("modes", (list, type(None)), None, items=str, help="several faults at once"),
        Option("times", (int,), 1, min=0, help="call faults: how many calls misbehave"),
        Option("sleep_s", (int, float), 1.0, min=0, help="call faults: how long a sleep lasts"),
    )
    log: list[tuple[int, str, str]] = []
    overlaps = 0
    _serial = 0
    _guard = threading.Lock()

    def __init__(self, context: SystemContext | None = None) -> None:
        config = dict((context or SystemContext()).config)
        modes = config.pop("modes", None)
        mode = config.pop("mode", None)
        chosen = list(modes or []) + ([mode] if mode else [])
        self.times = int(config.pop("times", 1))
        self.sleep_s = float(config.pop("sleep_s", 1.0))
        unknown = sorted(set(chosen) - self.MODES)
        if unknown:
            raise SystemConfigError(f"hostile: unknown mode(s) {', '.join(unknown)}")
        self.modes = frozenset(chosen)
        if "constructor_raises" in self.modes:
            raise RuntimeError("cannot connect")
        super().__init__(SystemContext(**{**_context_fields(context), "config": config}))
        work = (context or SystemContext()).work_dir
        self._counter_dir = work.parent if work is not None else None
        self._fired: dict[str, int] = {}
        self._inside = 0
        self._turns: list[str] = []
        self._shared: list[Memory] = []
        with HostileSystem._guard:
            HostileSystem._serial += 1
            self.instance = HostileSystem._serial

    # -- bookkeeping -----------------------------------------------------------------------
    def _enter(self, method: str, detail: str) -> None:
        with HostileSystem._guard:
            HostileSystem.log.append((self.instance, method, detail))
            self._inside += 1
            if self._inside > 1:
                HostileSystem.overlaps += 1

    def _leave(self) -> None:
        with HostileSystem._guard:
            self._inside -= 1

    def _fires(self, mode: str) -> bool:
        """True for the first ``times`` calls in ``mode`` of this run (of this instance when
        it has no work folder)."""
        if mode not in self.modes:
            return False
        if self._counter_dir is None:
            n = self._fired.get(mode, 0)
            self._fired[mode] = n + 1
            return n < self.times
        path = self._counter_dir / f".hostile-{mode}"
        with HostileSystem._guard:
            n = int(path.read_text()) if path.exists() else 0
            path.write_text(str(n + 1))
        return n < self.times

    # -- the protocol ----------------------------------------------------------------------
    def _refuse(self, *modes: str) -> None:
        if self.modes & set(modes):
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))

    def reset(self) -> None:
        self._enter("reset", "")
        try:
            self._refuse("server_down")
            self._turns = []
            super().reset()
        finally:
            self._leave()

    def add(self, session: Session) -> None:
        self._enter("add", session.session_id)
        try:
            self._refuse("server_down")
            if self._fires("add_sleeps"):
                time.sleep(self.sleep_s)
            if self._fires("add_raises"):
                raise RuntimeError(f"add of {session.session_id} failed")
            self._turns.extend(t.turn_id for t in session.turns)
            super().add(session)
            if "mutates_session" in self.modes:
                for t in session.turns:
                    object.__setattr__(t, "text", "mutated by hostile")
                for c in session.chunks:
                    for t in c.turns:
                        object.__setattr__(t, "text", "mutated by hostile")
        finally:
            self._leave()

    def search(self, query: str, k: int) -> Any:
        self._enter("search", query)
        try:
            self._refuse("server_down", "search_refused")
            if self._fires("search_sleeps"):
                time.sleep(self.sleep_s)
            found = super().search(query, k)
            return self._spoil(found)
        finally:
            self._leave()

    def close(self) -> None:
        with HostileSystem._guard:
            HostileSystem.log.append((self.instance, "close", ""))

    def _spoil(self, found: list[Memory]) -> Any:
        out: list[Any] = list(found)
        if "claims_every_turn" in self.modes:
            out = [Memory(id="all", text="x" * 16, source_turns=tuple(self._turns))]
        if out and "text_none" in self.modes:
            out[0] = Memory(id=out[0].id, text=None, source_turns=out[0].source_turns)  # type: ignore[arg-type]
        if out and "text_int" in self.modes:
            out[0] = Memory(id=out[0].id, text=42, source_turns=out[0].source_turns)  # type: ignore[arg-type]
        if out and "lone_surrogate" in self.modes:
            m = out[0]
            out[0] = Memory(id=m.id, text=m.text + "\ud800", source_turns=m.source_turns)
        if "numpy_score" in self.modes:
            out = [
                Memory(m.id, m.text, m.source_turns, np.float32(1.0 / (i + 1)))
                for i, m in enumerate(out)
            ]
        if out and "unknown_turn" in self.modes:
            m = out[0]
            out[0] = Memory(m.id, m.text, (*(m.source_turns or ()), "no-such-turn"), m.score)
        if out and "str_source_turns" in self.modes:
            m = out[0]
            out[0] = Memory(m.id, m.text, ",".join(m.source_turns or ()), m.score)  # type: ignore[arg-type]
        if "reused_list" in self.modes:
            self._shared.clear()
            self._shared.extend(out)
            time.sleep(0.002)
            return self._shared
        return out


def longmemeval_shaped(path: Path, haystacks: int = 50, sessions: int = 3) -> Path:
    """Write a LongMemEval-shaped file (the published format, text written here) with
    ``haystacks`` instances of ``sessions`` two-turn sessions each, one of them the answer
    session; returns ``path`` (load it as ``longmemeval@<path>``)."""
    items = []
    for i in range(haystacks):
        ids = [f"s{i}_{j}" for j in range(sessions)]
        ids[-1] = f"answer_{i}"
        items.append(
            {
                "question_id": f"q{i}",
                "question_type": "single-session-user",
                "question": f"What colour is bicycle number {i}?",
                "answer": f"colour {i}",
                "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_session_ids": ids,
                "haystack_dates": [f"2023/05/{j + 1:02d} (Mon) 09:00" for j in range(sessions)],
                "haystack_sessions": [
                    [
                        {
                            "role": "user",
                            "content": f"Bicycle number {i} is painted colour {i}."
                            if j == sessions - 1
                            else f"Note {j} of haystack {i}: the weather was mild.",
                            **({"has_answer": True} if j == sessions - 1 else {}),
                        },
                        {"role": "assistant", "content": f"Noted, entry {j}."},
                    ]
                    for j in range(sessions)
                ],
                "answer_session_ids": [ids[-1]],
            }
        )
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _context_fields(context: SystemContext | None) -> dict[str, Any]:
    c = context or SystemContext()
    return {"seed": c.seed, "work_dir": c.work_dir, "cache_dir": c.cache_dir}


TEST_SYSTEMS = {
    "slow-bm25": "recallbench.testing:SlowBM25",
    "flaky": "recallbench.testing:FlakySystem",
    "no-source": "recallbench.testing:NoSourceSystem",
    "noop": "recallbench.testing:NoopSystem",
    "slow-finish": "recallbench.testing:SlowFinishBM25",
    "slow-add": "recallbench.testing:SlowAddBM25",
    "hostile": "recallbench.testing:HostileSystem",
}


def register() -> None:
    """Add the test systems to the built-in system registry of this process."""
    for name, target in TEST_SYSTEMS.items():
        registry.BUILTINS[name] = registry.SystemEntry(name, target, "test")


class FakeEncoderModel:
    """Bag-of-words hashing vectors of ``dim`` dimensions; records every ``encode`` call."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, hashlib.sha256(word.encode()).digest()[0] % self.dim] += 1.0
        return out


# ------------------------------------------------------------------------ comparing runs


def _rows(path: Path, drop_timing: bool, systems: frozenset[str] | None = None) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        record: dict[str, Any] = json.loads(line)
        metric = split_repeat_metric(str(record.get("metric", "")))[0]
        if drop_timing and metric in TIMING:  # a timing figure, or one over repeats of it
            continue
        if systems is not None and record.get("system") not in systems:
            continue
        record.pop("run_id", None)
        record.pop("run_date", None)  # the run's identity, like its id
        out.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    return out


def run_differences(
    a: Path, b: Path, files: Iterable[str] | None = None, systems: Iterable[str] | None = None
) -> list[str]:
    """How two results folders differ in their verdicts and metric rows, ignoring the run id
    and date and the timing-derived rows (:data:`recallbench.score.metrics.TIMING`:
    ``latency_ms_*``, ``ingest_ms_total``, ``ingest_add_ms_total``,
    ``ingest_index_wait_ms_total``, ``ingest_turns_per_s``, and their rows over repeats) and
    nothing else; ``[]`` when they
    agree. ``systems``: compare only the rows of these systems (e.g. the baselines of a run
    that also ran a plugin)."""
    only = None if systems is None else frozenset(systems)
    problems = []
    for name in files or (store.VERDICTS, store.METRICS):
        pa, pb = a / name, b / name
        if not pa.exists() or not pb.exists():
            problems.append(f"{name}: missing in {a if not pa.exists() else b}")
            continue
        ra = _rows(pa, name == store.METRICS, only)
        rb = _rows(pb, name == store.METRICS, only)
        if ra == rb:
            continue
        if len(ra) != len(rb):
            problems.append(f"{name}: {len(ra)} rows in {a}, {len(rb)} in {b}")
        first = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), None)
        if first is not None:
            problems.append(f"{name}: row {first + 1} differs:\n  {ra[first]}\n  {rb[first]}")
    return problems


def compare_runs(a: Path, b: Path, systems: Iterable[str] | None = None) -> None:
    """Raise AssertionError naming the first difference unless the two runs agree (on the rows
    of ``systems`` only, when given)."""
    problems = run_differences(a, b, systems=systems)
    if problems:
        raise AssertionError("runs differ: " + "\n".join(problems))


def manifest_for(
    systems: Iterable[str], k: Iterable[int], chunking: str = "pair", run_id: str = "r"
) -> Any:
    """A minimal :class:`~recallbench.results.manifest.RunManifest` for report tests."""
    from recallbench.results.manifest import RunManifest
    from recallbench.spec import RunSpec

    spec = RunSpec(systems=tuple(systems), datasets=(), k=tuple(k), chunking=chunking)
    return RunManifest(run_id, spec, spec.spec_hash, 1, [], [], started_at="")
