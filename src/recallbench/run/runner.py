"""The runner: per haystack group, ``reset()``, ``add()`` every session in order (timed), then one
``search()`` per question (timed, with a timeout), writing raw observations. No scoring here.

Systems are untrusted. Failures never stop a run, and one rule covers every failure inside a
group: an exception from a search, or an invalid result (:mod:`recallbench.systems.boundary`,
checked and copied inside the worker as the call returns), becomes an observation with outcome
``error`` and its reason; an empty result is ``unusable``; both are misses for the scorer. An
``add`` that raises is recorded and the group's ingest is ``partial`` (its searches still run).
A call that times out quarantines the instance: it is closed if that returns, never called
again, the group's remaining questions are errors (``instance quarantined after a timeout``),
and a freshly built instance serves the next group (no hidden re-ingest). A system whose
constructor raises is recorded as failed for every question, with the reason. Each system gets
its own copy of the sessions, and ``chars_returned`` is counted by the harness
(:func:`~recallbench.systems.boundary.chars_returned`).

Parallel groups (``group_concurrency`` N above 1): the haystack groups of one (dataset, system)
are taken in dataset order by N lanes, each a thread with its own instance (built through the
same factory and :class:`~recallbench.systems.base.SystemContext`, with its own work folder),
reset and used by one group at a time, and its own call pool of ``concurrency`` workers (the
searches in flight within a group). A timeout quarantines that lane's instance only; a system
whose constructor raises fails every group of every lane, as with one lane. A lane holds a
group's records and appends them together, under one lock, once the group is done (one lane
writes each observation as it comes, as before), so a killed run loses at most the groups in
flight and records of a group stay together in the files. Results do not depend on N: the
scorer orders by question, and every instance starts from ``reset()``.

Limits: the first instance built of a system is asked for ``limits``
(``max_concurrency``, ``requests_per_second``; read defensively, see :func:`limiter_of`); one
:class:`~recallbench.run.calls.Limiter` then gates every call (reset, add, finish_ingest,
search) of all that system's instances. Tries: a system with ``last_attempts()`` (per thread,
the tries of its last call, as ``llm.types.Attempt``) has them read on the worker thread right
after each call; ``attempt`` is their number and ``retries`` (on the observation, or on the
ingest record with the ``call`` named) holds them when there was more than one.

Speed (docs/hosted.md, "Speed"): a system with ``warm_up()`` (the ``http`` system) has it
called once on every search worker before a group's timed searches (untimed, unrecorded). A
system with ``last_call_info()`` has it read on the worker thread after each search: its
``response_bytes`` go on the observation and its ``queued`` flags (Glasshouse's N8) join the
observation's flags. Given network files (``network``, from ``run --network``), a system
whose ``endpoint`` (host, port) matches one (the first that matches) gets, on each timed
search, ``network_ms`` (that file's median round trip) and ``latency_minus_rtt_ms`` (the
latency with one round trip removed). When the median reply of a (dataset, system) is above
:data:`LARGE_REPLY_BYTES`, a ``RuntimeWarning`` says so (a reply that large costs an extra
round trip on a cold TCP window).

Speed sample (``spec.speed.sample`` N, ``run --speed-sample N``): a seeded sample of N of each
dataset's questions (:func:`~recallbench.score.speed.speed_sample`, the same questions for every
system) is searched *alone*: after the rest of its group's searches, one at a time, each
starting only when no other call of that system is running in any lane, and none starting while
it runs (:class:`~recallbench.run.calls.Gate`). Those observations carry ``speed_sample: true``
and are the ones the speed score reads; the search is the question's only one, so accuracy is
measured as before.

Repeats (``spec.repeats`` N, ``run --repeats N``): the whole run (every dataset, every system)
is done N times in turn, repeat 0 first; each repeat builds fresh instances, ingests every group
again and asks every question again, and its records carry ``repeat`` (0 to N-1, left out of
the JSON when 0). A system's seed is the run's seed plus the repeat (so a seeded system's own
variation is measured too; repeat 0 runs with the run's seed, as a single run does); the speed
sample is the same questions in every repeat. Resume keys on the repeat: an interrupted repeat
continues where it stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.chunking import private_copy, with_chunks
from recallbench.contracts import (
    IngestRecord,
    Memory,
    Observation,
    Question,
    Session,
    sha256_text,
)
from recallbench.datasets.dataset import HaystackGroup, LoadedDataset
from recallbench.errors import UserError
from recallbench.results import store
from recallbench.results.manifest import now_rfc3339
from recallbench.run.calls import CallOutcome, CallPool, Gate, Limiter
from recallbench.score.speed import speed_sample
from recallbench.spec import RunSpec
from recallbench.systems.base import MemorySystem, SystemContext, close_system, declared_hooks
from recallbench.systems.boundary import chars_returned, normalise_memories, source_text_flags
from recallbench.systems.http.network import endpoint_matches
from recallbench.systems.registry import create_system

LARGE_REPLY_BYTES = 14 * 1024
"""Median reply size above which the runner warns (about ten TCP segments: the initial
congestion window; more costs another round trip on a new or idle connection)."""


PHASES = ("ingest", "search", "answer", "judge")
"""The phases of a run, each drawn as its own progress task: sessions ingested, questions
searched, answers written (answer mode), answers or memories judged (memory, answer mode)."""


@dataclass
class Progress:
    """Callbacks the CLI uses to draw progress; all optional.

    ``start_phase(phase, what, total)`` starts one task of a phase (one of :data:`PHASES`,
    ``what`` says of which system and dataset) and returns the function advancing that task;
    tasks of several phases may run at once (ingest and search with parallel lanes). Without
    it, :meth:`phase` falls back to ``start_task`` (the phase leads the description) and
    ``advance``."""

    start_task: Callable[[str, int], None] = lambda description, total: None
    advance: Callable[[int], None] = lambda n: None
    start_phase: Callable[[str, str, int], Callable[[int], None]] | None = None

    def phase(self, phase: str, what: str, total: int) -> Callable[[int], None]:
        """Start a task of ``phase`` over ``total`` items; returns its advance function."""
        if self.start_phase is not None:
            return self.start_phase(phase, what, total)
        self.start_task(f"{phase} {what}", total)
        return self.advance


def strip_images(session: Session) -> Session:
    if not any(t.image for t in session.turns):
        return session
    return dataclasses.replace(
        session, turns=tuple(dataclasses.replace(t, image=None) for t in session.turns)
    )


def prepare_sessions(
    sessions: Sequence[Session], chunking: str, accepts_images: bool, image_mode: str
) -> list[Session]:
    """Chunk sessions; hand image references only to systems that accept them (``native``)."""
    keep_images = accepts_images and image_mode == "native"
    out = []
    for s in sessions:
        s = s if keep_images else strip_images(s)
        out.append(with_chunks(s, chunking))
    return out


def image_paths(ds: LoadedDataset) -> dict[str, str]:
    """Local files for the image references on a dataset's turns (``native`` image mode).

    A dataset whose turns carry images has an ``image_resolver`` (called with the dataset,
    returning ``{reference: path}``); it raises a clear error naming any missing file. Called
    only when a system that accepts images runs.
    """
    if ds.image_resolver is None:
        return {}
    return dict(ds.image_resolver(ds))


def point_images(session: Session, paths: Mapping[str, str]) -> Session:
    """Replace image references by their local file paths."""
    if not paths or not any(t.image for t in session.turns):
        return session
    return dataclasses.replace(
        session,
        turns=tuple(
            dataclasses.replace(t, image=paths.get(t.image, t.image)) if t.image else t
            for t in session.turns
        ),
    )


QUARANTINED = "instance quarantined after a timeout"
"""The reason of every question a quarantined instance did not answer."""


class _BuildError(Exception):
    """A plugin's constructor (or its declarations) failed; the message is the recorded reason."""


@dataclass
class _Instance:
    """One built system instance and what the runner knows of it."""

    system: MemorySystem
    summarizes: bool
    quarantined: bool = False
    name: str = ""
    """The registry name the run knows the system by (records never use the plugin's own
    ``name`` attribute, which a plugin may set to anything)."""


@dataclass(frozen=True, slots=True)
class _IngestResult:
    searchable: bool
    reason: str | None


_Work = tuple[HaystackGroup, list[Question]]
"""A haystack group and its questions still to ask."""


def limiter_of(system: object) -> Limiter | None:
    """The system's declared limits as a :class:`Limiter` shared by all its instances, or None.

    Read defensively: ``system.limits`` (``systems.base.Limits``: ``max_concurrency``,
    ``requests_per_second``, e.g. from the ``[limits]`` table of an ``http`` system's config);
    anything else, or no limit set, is no limit."""
    limits = getattr(system, "limits", None)
    cap = getattr(limits, "max_concurrency", None)
    rps = getattr(limits, "requests_per_second", None)
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1 else None
    rps = float(rps) if isinstance(rps, int | float) and not isinstance(rps, bool) else None
    rps = rps if rps is not None and rps > 0 else None
    if cap is None and rps is None:
        return None
    return Limiter(cap, rps)


class _Tries:
    """A call that also collects, on its own worker thread, the tries the system reports for
    it (``last_attempts()``, per thread, e.g. the ``http`` system): ``attempts`` as dicts."""

    def __init__(self, system: object, fn: Callable[[], Any]) -> None:
        self._system = system
        self._fn = fn
        self.attempts: tuple[Mapping[str, Any], ...] = ()
        self.response_bytes: int | None = None
        self.queued: tuple[str, ...] = ()

    def __call__(self) -> Any:
        last = getattr(self._system, "last_attempts", None)
        info = getattr(self._system, "last_call_info", None)
        try:
            return self._fn()
        finally:
            if callable(last):
                try:
                    self.attempts = tuple(_attempt_dict(a) for a in last())
                except Exception:  # noqa: BLE001 - a broken report of tries is no try
                    self.attempts = ()
            if callable(info):
                self._read_info(info)

    def _read_info(self, info: Callable[[], Any]) -> None:
        """``response_bytes`` (a non-negative int) and ``queued`` flags (strings starting
        ``queued: ``) from ``last_call_info()``; anything else is ignored."""
        try:
            facts = info()
        except Exception:  # noqa: BLE001 - a broken report is no report
            return
        if not isinstance(facts, Mapping):
            return
        size = facts.get("response_bytes")
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            self.response_bytes = size
        queued = facts.get("queued") or ()
        if isinstance(queued, list | tuple):
            self.queued = tuple(
                q for q in queued if isinstance(q, str) and q.startswith("queued: ")
            )


def _attempt_dict(a: Any) -> dict[str, Any]:
    if isinstance(a, Mapping):
        return dict(a)
    return {
        "attempt": a.attempt,
        "status": a.status,
        "error": a.error,
        "wait_s": a.wait_s,
        "latency_ms": a.latency_ms,
    }


class _Writer:
    """The run's two logs behind one lock: lanes append whole groups through it, and nothing is
    appended once the run's logs are closed (a lane still running after Ctrl-C)."""

    def __init__(self, obs_log: store.ObservationLog, ingest_log: store.AppendLog) -> None:
        self.obs_log = obs_log
        self.ingest_log = ingest_log
        self.lock = threading.Lock()
        self.closed = False

    def write(self, ingests: Sequence[IngestRecord], observations: Sequence[Observation]) -> None:
        with self.lock:
            if self.closed:
                return
            for r in ingests:
                self.ingest_log.append(r)
            for o in observations:
                self.obs_log.append(o)
            self.obs_log.sync()
            self.ingest_log.sync()

    def close(self) -> None:
        with self.lock:
            self.closed = True


class _GroupRecords:
    """Where one group's records go: straight to the logs (one lane: each observation as it
    comes), or held and appended together when the group is done (``buffered``: parallel
    lanes, so each group's records stay together in the files)."""

    def __init__(self, writer: _Writer, buffered: bool) -> None:
        self._writer = writer
        self._buffered = buffered
        self._ingests: list[IngestRecord] = []
        self._observations: list[Observation] = []

    def ingest(self, record: IngestRecord) -> None:
        if self._buffered:
            self._ingests.append(record)
        else:
            self._writer.write([record], [])

    def append(self, obs: Observation) -> None:
        if self._buffered:
            self._observations.append(obs)
        else:
            with self._writer.lock:
                if not self._writer.closed:
                    self._writer.obs_log.append(obs)

    def flush(self) -> None:
        """Append what is held and sync both logs."""
        self._writer.write(self._ingests, self._observations)
        self._ingests, self._observations = [], []


class _Feed:
    """The groups of one (dataset, system), handed to lanes one at a time in dataset order."""

    def __init__(self, work: Sequence[_Work]) -> None:
        self._items = list(work)
        self._next = 0
        self._lock = threading.Lock()
        self._stopped = False

    def __iter__(self) -> Iterator[_Work]:
        return self

    def __next__(self) -> _Work:
        with self._lock:
            if self._stopped or self._next >= len(self._items):
                raise StopIteration
            item = self._items[self._next]
            self._next += 1
            return item

    def stop(self) -> None:
        """No lane takes another group (a lane failed, or the run was interrupted)."""
        with self._lock:
            self._stopped = True


@dataclass
class _SystemState:
    """What the lanes of one (dataset, system) share."""

    ds: LoadedDataset
    system_name: str
    ingested: set[tuple[str, str, str, int]]
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    generation: int = 0
    build_error: str | None = None
    images: dict[str, str] | None = None
    sampled: frozenset[str] = frozenset()
    """The ids of the speed sample's questions (searched alone)."""


class Runner:
    """Executes a RunSpec into a results folder, resumable from its own logs."""

    def __init__(
        self,
        spec: RunSpec,
        datasets: Sequence[LoadedDataset],
        run_dir: Path,
        run_id: str,
        progress: Progress | None = None,
        cache_dir: Path | None = None,
        group_concurrency: int = 1,
        network: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.spec = spec
        self.network = [dict(n) for n in network]
        """Network files (``run --network``), as read: the first whose host and port match a
        system's ``endpoint`` is subtracted from that system's search latencies."""
        self.network_of: dict[str, Mapping[str, Any] | None] = {}
        """The network record applied to each built system (None: none matched)."""
        self.response_bytes: dict[tuple[str, str], list[int]] = {}
        """Reply sizes per (dataset, system), for the large-reply warning."""
        self.group_concurrency = max(1, group_concurrency)
        """Haystack groups run at once, each on its own instance (an execution setting: not
        part of the spec, and results do not depend on it)."""
        sample = spec.speed.sample if spec.speed is not None else None
        self.sample_size = sample or 0
        """``spec.speed.sample``: how many questions of each dataset are searched alone."""
        self.gates: dict[str, Gate] = {}
        """Each system's :class:`Gate`, when the run has a speed sample."""
        self.samples: dict[str, frozenset[str]] = {}
        """Each dataset's speed sample (question ids); their observations carry
        ``speed_sample: true``, failed ones included."""
        self.limiters: dict[str, Limiter | None] = {}
        """Each system's :class:`Limiter`, from the first instance built (None: no limits)."""
        self._limiters_lock = threading.Lock()
        self._writer: _Writer
        self.datasets = list(datasets)
        self.run_dir = run_dir
        self.run_id = run_id
        self.progress = progress or Progress()
        self._ticks: dict[tuple[str, str, str], Callable[[int], None]] = {}
        """The advance function of each (phase, dataset, system) progress task."""
        self.cache_dir = cache_dir
        self.capabilities: dict[str, dict[str, Any]] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        """The options each built system reported running with (``settings``), if any."""
        """What each built system declared (some depend on its config, e.g. mem0 with an LLM)."""
        self.repeat = 0
        """The repeat being run (``execute`` runs them in turn; every record carries it)."""

    # -- bookkeeping -----------------------------------------------------------------------
    def done_keys(self) -> set[tuple[str, str, str, int]]:
        """``(dataset, system, question id, repeat)`` of every observation written."""
        path = self.run_dir / store.OBSERVATIONS
        store.repair_torn_tail(path)
        return {
            (o["dataset"], o["system"], o["question_id"], int(o.get("repeat", 0)))
            for o in store.read_jsonl_tolerant(path)
        }

    def ingested_groups(self) -> set[tuple[str, str, str, int]]:
        """``(dataset, system, group, repeat)`` of every ingest record written."""
        path = self.run_dir / store.INGEST
        store.repair_torn_tail(path)
        return {
            (r["dataset"], r["system"], r["group"], int(r.get("repeat", 0)))
            for r in store.read_jsonl_tolerant(path)
        }

    # -- execution -------------------------------------------------------------------------
    def execute(self) -> None:
        """Run every system on every dataset; with ``group_concurrency`` above 1, the haystack
        groups of one (dataset, system) run on that many lanes at once (see the module doc)."""
        done = self.done_keys()
        ingested = self.ingested_groups()
        obs_log = store.ObservationLog(self.run_dir)
        ingest_log = store.AppendLog(self.run_dir / store.INGEST)
        self._writer = _Writer(obs_log, ingest_log)
        try:
            for repeat in range(max(1, self.spec.repeats)):
                self.repeat = repeat
                for ds in self.datasets:
                    for system_name in self.spec.systems:
                        self._run_system(ds, system_name, done, ingested)
        finally:
            self._writer.close()
            obs_log.close()
            ingest_log.close()

    def _context(self, system_name: str, generation: int = 0) -> SystemContext:
        """A fresh private work folder: ``work/<system>`` for the first instance, and
        ``work/<system>.<n>`` for the n-th one after it (a replacement for a quarantined
        instance, which may still be writing to its own, or another lane's instance)."""
        suffix = f".{generation}" if generation else ""
        work = self.run_dir / "work" / f"{system_name}{suffix}"
        shutil.rmtree(work, ignore_errors=True)  # a resumed run rebuilds state from scratch
        work.mkdir(parents=True, exist_ok=True)
        return SystemContext(
            seed=self.spec.seed + self.repeat,
            work_dir=work,
            cache_dir=self.cache_dir,
            config=dict(self.spec.system_configs.get(system_name, {})),
        )

    def _build(self, system_name: str, generation: int) -> _Instance:
        """Build an instance; a user error (unknown system, bad config) propagates, any other
        exception from the plugin's constructor or declarations is raised as ``_BuildError``."""
        try:
            system = create_system(system_name, self._context(system_name, generation))
            caps = system.capabilities
            declared_hooks(system)
            summarizes = bool(caps.summarizes)
            caps_dict = dataclasses.asdict(caps)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plugin that cannot be built is recorded
            raise _BuildError(f"system could not be built: {type(exc).__name__}: {exc}") from exc
        self.capabilities.setdefault(system_name, caps_dict)
        settings = getattr(system, "settings", None)  # optional, declared in systems/base.py
        if isinstance(settings, Mapping):
            self.settings.setdefault(system_name, dict(settings))
        with self._limiters_lock:
            if system_name not in self.limiters:
                self.limiters[system_name] = limiter_of(system)
            if system_name not in self.network_of:
                self.network_of[system_name] = self._network_for(system)
        return _Instance(system, summarizes, name=system_name)

    def _network_for(self, system: object) -> Mapping[str, Any] | None:
        """The first network record for the system's ``endpoint`` (read defensively)."""
        if not self.network:
            return None
        try:
            endpoint = getattr(system, "endpoint", None)
        except Exception:  # noqa: BLE001 - a broken declaration is no endpoint
            endpoint = None
        if not (isinstance(endpoint, tuple) and len(endpoint) == 2):
            return None
        return next((n for n in self.network if endpoint_matches(n, endpoint)), None)

    def _warn_large_replies(self, ds: LoadedDataset, system_name: str) -> None:
        sizes = sorted(self.response_bytes.get((ds.key, system_name), []))
        if not sizes:
            return
        mid = len(sizes) // 2
        median = sizes[mid] if len(sizes) % 2 else (sizes[mid - 1] + sizes[mid]) / 2
        if median > LARGE_REPLY_BYTES:
            warnings.warn(
                f"{system_name} on {ds.key}: median search reply is {median:,.0f} bytes, above "
                f"{LARGE_REPLY_BYTES:,} (about 14 KB): on a new or idle TCP connection such a "
                "reply costs an extra round trip, which its latency includes",
                RuntimeWarning,
                stacklevel=2,
            )

    def _quarantine(self, inst: _Instance, pool: CallPool) -> None:
        """Never call the instance again; close it if that returns within the timeout."""
        inst.quarantined = True
        pool.run(lambda: close_system(inst.system), self.spec.timeout_s)

    def _run_system(
        self,
        ds: LoadedDataset,
        system_name: str,
        done: set[tuple[str, str, str, int]],
        ingested: set[tuple[str, str, str, int]],
    ) -> None:
        """Every haystack group of ``ds`` for one system: on this thread with one lane, else on
        ``group_concurrency`` lane threads taking groups in dataset order."""
        questions = {q.id: q for q in ds.questions}
        todo_groups = [
            (
                g,
                [
                    questions[qid]
                    for qid in g.question_ids
                    if (ds.key, system_name, qid, self.repeat) not in done
                ],
            )
            for g in ds.groups
        ]
        total = sum(len(qs) for _, qs in todo_groups)
        work = [(g, qs) for g, qs in todo_groups if qs]
        of = f" (repeat {self.repeat + 1} of {self.spec.repeats})" if self.spec.repeats > 1 else ""
        what = f"{system_name} on {ds.key}{of}"
        sessions = sum(len(g.sessions) for g, _ in work)  # a resumed group is ingested again
        if sessions:
            self._ticks[("ingest", ds.key, system_name)] = self.progress.phase(
                "ingest", what, sessions
            )
        self._ticks[("search", ds.key, system_name)] = self.progress.phase("search", what, total)
        if total == 0:
            return
        state = _SystemState(ds, system_name, ingested)
        if self.sample_size:
            ids = [q.id for q in ds.questions]
            state.sampled = self.samples.setdefault(
                ds.key, speed_sample(ids, self.spec.seed, ds.key, self.sample_size)
            )
            self.gates.setdefault(system_name, Gate())
        lanes = max(1, min(self.group_concurrency, len(work)))
        if lanes == 1:
            self._lane(state, iter(work), buffered=False)
            self._warn_large_replies(ds, system_name)
            return
        feed = _Feed(work)
        errors: list[BaseException] = []

        def lane() -> None:
            try:
                self._lane(state, feed, buffered=True)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                errors.append(exc)
                feed.stop()

        threads = [
            threading.Thread(target=lane, daemon=True, name=f"recallbench-lane-{i}")
            for i in range(lanes)
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.1)  # short joins: Ctrl-C reaches this thread
        except BaseException:
            feed.stop()
            raise
        if errors:
            raise errors[0]
        self._warn_large_replies(ds, system_name)

    def _lane(self, state: _SystemState, groups: Iterator[_Work], buffered: bool) -> None:
        """One lane: its own instance (built on first use, replaced after a quarantine) and
        call pool, taking groups from ``groups`` until none is left. With ``buffered`` a
        group's records are appended together once the group is done."""
        ds, system_name = state.ds, state.system_name
        image_mode = ds.options.image_mode
        inst: _Instance | None = None
        pool: CallPool | None = None
        try:
            for group, qs in groups:
                out = _GroupRecords(self._writer, buffered)
                if inst is None:
                    inst = self._lane_instance(state)
                if inst is None:
                    self._ingest_record(
                        ds,
                        system_name,
                        group.group_id,
                        group.sessions,
                        None,
                        "error",
                        state.build_error,
                        None,
                        out,
                        state.ingested,
                    )
                    self._tick("ingest", ds, system_name, len(group.sessions))
                    self._fail_all(ds, system_name, qs, state.build_error, out)
                    out.flush()
                    continue
                if pool is None:
                    pool = CallPool(
                        self.spec.concurrency,
                        self.limiters.get(system_name),
                        self.gates.get(system_name),
                    )
                caps = inst.system.capabilities
                images = self._images(state, ds, caps.accepts_images and image_mode == "native")
                sessions = private_copy(
                    prepare_sessions(
                        [point_images(s, images) for s in group.sessions],
                        self.spec.chunking,
                        caps.accepts_images,
                        image_mode,
                    )
                )
                turns = {t.turn_id: t.text for s in group.sessions for t in s.turns}
                result = self._ingest(
                    inst, ds, group.group_id, sessions, pool, out, state.ingested
                )
                if result.searchable:
                    self._search_all(inst, ds, qs, turns, pool, out, state.sampled)
                elif inst.quarantined:
                    self._fail_all(ds, system_name, qs, f"{QUARANTINED} ({result.reason})", out)
                else:
                    self._fail_all(ds, system_name, qs, f"ingest failed: {result.reason}", out)
                if inst.quarantined:
                    inst = None  # a fresh instance serves the next group
                out.flush()  # a group's records survive a machine crash once it is done
        finally:
            if inst is not None and not inst.quarantined:
                self._close(inst, pool)
            if pool is not None:
                pool.close()

    def _close(self, inst: _Instance, pool: CallPool | None) -> None:
        """``close()`` a lane's instance once its work is done: through its call pool when it
        has one (so the limits and the speed sample's gate hold for it too: an ``http`` close
        sends a request), with the per-call timeout; a failure only warns."""
        system_name = inst.name
        if pool is None:
            try:
                close_system(inst.system)
            except Exception as exc:  # noqa: BLE001 - every observation is already written
                reason = f"{type(exc).__name__}: {exc}"
            else:
                return
        else:
            out = pool.run(lambda: close_system(inst.system), self.spec.timeout_s)
            if out.ok:
                return
            reason = out.reason or "failed"
        warnings.warn(f"{system_name}: close() raised {reason}", RuntimeWarning, stacklevel=3)

    def _lane_instance(self, state: _SystemState) -> _Instance | None:
        """A new instance for a lane, or None once building one has failed (the reason is in
        ``state.build_error``; no later build is tried, as with a single lane)."""
        with state.lock:
            if state.build_error is not None:
                return None
            generation = state.generation
            state.generation += 1
        try:
            return self._build(state.system_name, generation)
        except _BuildError as exc:
            with state.lock:
                if state.build_error is None:
                    state.build_error = str(exc)
            return None

    def _images(self, state: _SystemState, ds: LoadedDataset, wanted: bool) -> dict[str, str]:
        """The dataset's image files, resolved once per (dataset, system)."""
        with state.lock:
            if state.images is None:
                state.images = image_paths(ds) if wanted else {}
            return state.images

    def _tick(self, phase: str, ds: LoadedDataset, system_name: str, n: int = 1) -> None:
        """Advance the progress task of ``phase`` for this dataset and system by ``n``."""
        tick = self._ticks.get((phase, ds.key, system_name))
        if tick is not None and n:
            tick(n)

    def _fail_all(
        self,
        ds: LoadedDataset,
        system_name: str,
        qs: Sequence[Question],
        reason: str | None,
        obs_log: _GroupRecords,
    ) -> None:
        for q in qs:
            obs_log.append(self._failed(ds, system_name, q, reason))
            self._tick("search", ds, system_name)

    def _ingest_record(
        self,
        ds: LoadedDataset,
        system_name: str,
        group_id: str,
        sessions: Sequence[Session],
        ingest_ms: float | None,
        outcome: Any,
        reason: str | None,
        finish_ms: float | None,
        out: _GroupRecords,
        ingested: set[tuple[str, str, str, int]],
        retries: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        key = (ds.key, system_name, group_id, self.repeat)
        if key in ingested:  # a resumed group re-ingests, but its time is recorded once
            return
        out.ingest(
            IngestRecord(
                run_id=self.run_id,
                dataset=ds.key,
                group=group_id,
                system=system_name,
                sessions=len(sessions),
                chunks=sum(len(s.chunks) for s in sessions),
                turns=sum(len(s.turns) for s in sessions),
                ingest_ms=ingest_ms,
                outcome=outcome,
                outcome_reason=reason,
                finish_ms=finish_ms,
                retries=retries,
                repeat=self.repeat,
            )
        )
        ingested.add(key)

    def _ingest(
        self,
        inst: _Instance,
        ds: LoadedDataset,
        group_id: str,
        sessions: list[Session],
        pool: CallPool,
        ingest_log: _GroupRecords,
        ingested: set[tuple[str, str, str, int]],
    ) -> _IngestResult:
        """``reset()``, one ``add`` per session, then the declared ``finish_ingest``: each its
        own call with the per-call timeout. A call that raises is recorded (``add`` or
        ``finish_ingest``: the ingest is ``partial`` and the group is still searched; ``reset``:
        ``error``, not searched); a call that times out quarantines the instance (``error``).
        The tries of every call that took more than one (``last_attempts()``) are recorded
        under ``retries``, each with its ``call``."""
        system = inst.system
        timeout = self.spec.timeout_s
        finishes = "finish_ingest" in declared_hooks(system)
        ms = 0.0
        finish_ms: float | None = None
        failures: list[str] = []
        retries: list[Mapping[str, Any]] = []

        added = 0

        def record(outcome: str, reason: str | None) -> None:
            self._tick("ingest", ds, inst.name, len(sessions) - added)  # the rest, if it stopped
            self._ingest_record(
                ds, inst.name, group_id, sessions,
                round(ms, 4) if outcome == "usable" else None,
                outcome, reason, finish_ms, ingest_log, ingested, tuple(retries),
            )  # fmt: skip

        steps: list[tuple[str, Any]] = [("reset", system.reset)]
        steps += [(f"add of session {s.session_id}", lambda s=s: system.add(s)) for s in sessions]
        if finishes:
            steps.append(("finish_ingest", system.finish_ingest))  # type: ignore[attr-defined]
        for label, fn in steps:
            tried = _Tries(system, fn)
            out: CallOutcome = pool.run(tried, timeout)
            if not out.timed_out and len(tried.attempts) > 1:
                retries.extend({"call": label, **a} for a in tried.attempts)
            if out.timed_out:
                self._quarantine(inst, pool)
                reason = f"{label}: {out.reason}"
                record("error", reason)
                return _IngestResult(False, reason)
            if not out.ok:
                if label == "reset":
                    reason = f"reset: {out.reason}"
                    record("error", reason)
                    return _IngestResult(False, reason)
                failures.append(f"{label}: {out.reason}")
                if label.startswith("add"):
                    added += 1
                    self._tick("ingest", ds, inst.name)
                continue
            if label.startswith("add"):
                added += 1
                self._tick("ingest", ds, inst.name)
            ms += out.elapsed_ms or 0.0
            if label == "finish_ingest":
                finish_ms = round(out.elapsed_ms or 0.0, 4)
        if failures:
            record("partial", "; ".join(failures))
        else:
            record("usable", None)
        return _IngestResult(True, None)

    def _search_all(
        self,
        inst: _Instance,
        ds: LoadedDataset,
        qs: list[Question],
        turns: Mapping[str, str],
        pool: CallPool,
        obs_log: _GroupRecords,
        sampled: frozenset[str] = frozenset(),
    ) -> None:
        """One search per question, up to ``4 * concurrency`` submitted ahead; then the speed
        sample's questions (``sampled``) one at a time, each alone (``speed_sample: true``).
        Each result is validated and copied inside the worker the moment the call returns.
        After a timeout the instance is quarantined: calls not yet started are cancelled, and
        every later question of the group is an error (``instance quarantined after a
        timeout``)."""
        if callable(getattr(inst.system, "warm_up", None)) and not inst.quarantined:
            self._warm_up(inst, pool)
        window = max(1, self.spec.concurrency) * 4
        together = [q for q in qs if q.id not in sampled]
        for start in range(0, len(together), window):
            self._search_batch(inst, ds, together[start : start + window], turns, pool, obs_log)
        for q in qs:
            if q.id in sampled:
                self._search_batch(inst, ds, [q], turns, pool, obs_log, Gate.ALONE)

    def _search_batch(
        self,
        inst: _Instance,
        ds: LoadedDataset,
        batch: Sequence[Question],
        turns: Mapping[str, str],
        pool: CallPool,
        obs_log: _GroupRecords,
        gate_mode: str = Gate.SHARED,
    ) -> None:
        system = inst.system
        k = self.spec.k_max

        def post(result: Any) -> tuple[Memory, ...]:
            return normalise_memories(result, turns)

        if inst.quarantined:
            self._fail_all(ds, inst.name, batch, QUARANTINED, obs_log)
            return
        tries = [_Tries(system, lambda q=q: system.search(q.text, k)) for q in batch]
        calls = [pool.submit(t, post, gate_mode) for t in tries]
        for i, (q, call) in enumerate(zip(batch, calls, strict=True)):
            if inst.quarantined:
                obs = self._failed(ds, inst.name, q, QUARANTINED)
            else:
                outcome = pool.wait(call, self.spec.timeout_s, abandon=False)
                if outcome.timed_out:
                    for later in calls[i + 1 :]:  # before a replacement worker can start them
                        pool.abandon(later)
                    pool.abandon(call)
                    self._quarantine(inst, pool)
                attempts = () if outcome.timed_out else tries[i].attempts
                obs = self._observation(ds, inst, q, turns, outcome, attempts)
                if not outcome.timed_out:
                    obs = self._speed_fields(ds, obs, tries[i])
            obs_log.append(obs)
            self._tick("search", ds, inst.name)

    def _warm_up(self, inst: _Instance, pool: CallPool) -> None:
        """``warm_up()`` once on each of the pool's workers (a barrier holds every worker on
        its call until all have one); untimed, unrecorded, failures ignored. A warm-up that
        overruns five per-call timeouts quarantines the instance."""
        workers = max(1, self.spec.concurrency)
        limiter = self.limiters.get(inst.name)
        cap = limiter.max_concurrency if limiter is not None else None
        # below the system's own cap every worker can wait at the barrier at once; above it,
        # workers are warmed as the calls reach them (a worker may then stay cold)
        barrier = threading.Barrier(workers) if cap is None or cap >= workers else None
        system = inst.system

        def one() -> None:
            if barrier is not None:
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait(timeout=self.spec.timeout_s)
            system.warm_up()  # type: ignore[attr-defined]

        calls = [pool.submit(one, gate_mode=Gate.EARLY) for _ in range(workers)]
        for call in calls:
            if inst.quarantined:
                pool.abandon(call)
                continue
            outcome = pool.wait(call, 5 * self.spec.timeout_s, abandon=False)
            if outcome.timed_out:
                pool.abandon(call)
                self._quarantine(inst, pool)

    def _speed_fields(self, ds: LoadedDataset, obs: Observation, tried: _Tries) -> Observation:
        """``obs`` with the reply size, the ``queued`` flags and, for a timed search of a
        system with a matching network record, ``network_ms`` and ``latency_minus_rtt_ms``."""
        changes: dict[str, Any] = {}
        if tried.response_bytes is not None:
            changes["response_bytes"] = tried.response_bytes
            with self._limiters_lock:
                self.response_bytes.setdefault((ds.key, obs.system), []).append(
                    tried.response_bytes
                )
        if tried.queued:
            changes["flags"] = tuple(dict.fromkeys((*obs.flags, *tried.queued)))
        record = self.network_of.get(obs.system)
        if record is not None and obs.latency_ms is not None:
            rtt = float(record["median_ms"])
            changes["network_ms"] = round(rtt, 4)
            changes["latency_minus_rtt_ms"] = round(obs.latency_ms - rtt, 4)
        return dataclasses.replace(obs, **changes) if changes else obs

    def _observation(
        self,
        ds: LoadedDataset,
        inst: _Instance,
        q: Question,
        turns: Mapping[str, str],
        outcome: CallOutcome,
        attempts: tuple[Mapping[str, Any], ...] = (),
    ) -> Observation:
        """The record of one search; ``attempts``: its tries, as the system reported them
        (``attempt`` is their number, ``retries`` holds them when there was more than one)."""
        name = inst.name
        tries = {"attempt": max(1, len(attempts)), "retries": attempts if len(attempts) > 1 else ()}
        if not outcome.ok:
            return dataclasses.replace(self._failed(ds, name, q, outcome.reason), **tries)
        memories: tuple[Memory, ...] = outcome.result
        flags = () if inst.summarizes else source_text_flags(memories, turns)
        return self._record(
            ds,
            name,
            q,
            latency_ms=round(outcome.elapsed_ms or 0.0, 4),
            memories=memories,
            outcome="usable" if memories else "unusable",
            outcome_reason=None if memories else "empty result",
            chars=chars_returned(memories, turns),
            flags=flags,
            **tries,
        )

    def _failed(
        self, ds: LoadedDataset, system_name: str, q: Question, reason: str | None
    ) -> Observation:
        return self._record(
            ds, system_name, q, latency_ms=None, memories=(), outcome="error", outcome_reason=reason
        )

    def _record(
        self,
        ds: LoadedDataset,
        system_name: str,
        q: Question,
        *,
        latency_ms: float | None,
        memories: tuple[Memory, ...],
        outcome: Any,
        outcome_reason: str | None,
        chars: int = 0,
        flags: tuple[str, ...] = (),
        attempt: int = 1,
        retries: tuple[Mapping[str, Any], ...] = (),
    ) -> Observation:
        return Observation(
            run_id=self.run_id,
            dataset=ds.key,
            dataset_version=ds.version_label,
            group=q.group,
            question_id=q.id,
            system=system_name,
            k=self.spec.k_max,
            attempt=attempt,
            observed_at=now_rfc3339(),
            latency_ms=latency_ms,
            memories=memories,
            chars_returned=chars,
            outcome=outcome,
            outcome_reason=outcome_reason,
            query_sha256=sha256_text(q.text),
            flags=flags,
            retries=retries,
            speed_sample=True if q.id in self.samples.get(ds.key, ()) else None,
            repeat=self.repeat,
        )
