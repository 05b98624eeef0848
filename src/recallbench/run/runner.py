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
"""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
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
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import UserError
from recallbench.results import store
from recallbench.results.manifest import now_rfc3339
from recallbench.run.calls import CallOutcome, CallPool
from recallbench.spec import RunSpec
from recallbench.systems.base import MemorySystem, SystemContext, close_system, declared_hooks
from recallbench.systems.boundary import chars_returned, normalise_memories, source_text_flags
from recallbench.systems.registry import create_system


@dataclass
class Progress:
    """Callbacks the CLI uses to draw progress; all optional."""

    start_task: Callable[[str, int], None] = lambda description, total: None
    advance: Callable[[int], None] = lambda n: None


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
    ) -> None:
        self.spec = spec
        self.datasets = list(datasets)
        self.run_dir = run_dir
        self.run_id = run_id
        self.progress = progress or Progress()
        self.cache_dir = cache_dir
        self.capabilities: dict[str, dict[str, Any]] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        """The options each built system reported running with (``settings``), if any."""
        """What each built system declared (some depend on its config, e.g. mem0 with an LLM)."""

    # -- bookkeeping -----------------------------------------------------------------------
    def done_keys(self) -> set[tuple[str, str, str]]:
        path = self.run_dir / store.OBSERVATIONS
        store.repair_torn_tail(path)
        return {
            (o["dataset"], o["system"], o["question_id"]) for o in store.read_jsonl_tolerant(path)
        }

    def ingested_groups(self) -> set[tuple[str, str, str]]:
        path = self.run_dir / store.INGEST
        store.repair_torn_tail(path)
        return {(r["dataset"], r["system"], r["group"]) for r in store.read_jsonl_tolerant(path)}

    # -- execution -------------------------------------------------------------------------
    def execute(self) -> None:
        done = self.done_keys()
        ingested = self.ingested_groups()
        obs_log = store.ObservationLog(self.run_dir)
        ingest_log = store.AppendLog(self.run_dir / store.INGEST)
        pool = CallPool(self.spec.concurrency)
        try:
            for ds in self.datasets:
                for system_name in self.spec.systems:
                    self._run_system(ds, system_name, done, ingested, obs_log, ingest_log, pool)
        finally:
            pool.close()
            obs_log.close()
            ingest_log.close()

    def _context(self, system_name: str, generation: int = 0) -> SystemContext:
        """A fresh private work folder: ``work/<system>`` for the first instance, and
        ``work/<system>.<n>`` for the n-th replacement (a quarantined instance may still be
        writing to its own)."""
        suffix = f".{generation}" if generation else ""
        work = self.run_dir / "work" / f"{system_name}{suffix}"
        shutil.rmtree(work, ignore_errors=True)  # a resumed run rebuilds state from scratch
        work.mkdir(parents=True, exist_ok=True)
        return SystemContext(
            seed=self.spec.seed,
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
        return _Instance(system, summarizes, name=system_name)

    def _quarantine(self, inst: _Instance, pool: CallPool) -> None:
        """Never call the instance again; close it if that returns within the timeout."""
        inst.quarantined = True
        pool.run(lambda: close_system(inst.system), self.spec.timeout_s)

    def _run_system(
        self,
        ds: LoadedDataset,
        system_name: str,
        done: set[tuple[str, str, str]],
        ingested: set[tuple[str, str, str]],
        obs_log: store.ObservationLog,
        ingest_log: store.AppendLog,
        pool: CallPool,
    ) -> None:
        questions = {q.id: q for q in ds.questions}
        todo_groups = [
            (
                g,
                [
                    questions[qid]
                    for qid in g.question_ids
                    if (ds.key, system_name, qid) not in done
                ],
            )
            for g in ds.groups
        ]
        total = sum(len(qs) for _, qs in todo_groups)
        self.progress.start_task(f"{system_name} on {ds.key}", total)
        if total == 0:
            return
        image_mode = ds.options.image_mode
        inst: _Instance | None = None
        generation = 0
        build_error: str | None = None
        images: dict[str, str] | None = None
        try:
            for group, qs in todo_groups:
                if not qs:
                    continue
                if inst is None and build_error is None:
                    try:
                        inst = self._build(system_name, generation)
                    except _BuildError as exc:
                        build_error = str(exc)
                    generation += 1
                if inst is None:
                    self._ingest_record(
                        ds,
                        system_name,
                        group.group_id,
                        group.sessions,
                        None,
                        "error",
                        build_error,
                        None,
                        ingest_log,
                        ingested,
                    )
                    self._fail_all(ds, system_name, qs, build_error, obs_log)
                    continue
                caps = inst.system.capabilities
                if images is None:
                    images = (
                        image_paths(ds) if caps.accepts_images and image_mode == "native" else {}
                    )
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
                    inst, ds, group.group_id, sessions, pool, ingest_log, ingested
                )
                if result.searchable:
                    self._search_all(inst, ds, qs, turns, pool, obs_log)
                elif inst.quarantined:
                    self._fail_all(ds, system_name, qs, f"{QUARANTINED} ({result.reason})", obs_log)
                else:
                    self._fail_all(ds, system_name, qs, f"ingest failed: {result.reason}", obs_log)
                if inst.quarantined:
                    inst = None  # a fresh instance serves the next group
                obs_log.sync()  # a group's records survive a machine crash once it is done
                ingest_log.sync()
        finally:
            if inst is not None and not inst.quarantined:
                try:
                    close_system(inst.system)
                except Exception as exc:  # noqa: BLE001 - every observation is already written
                    warnings.warn(
                        f"{system_name}: close() raised {type(exc).__name__}: {exc}",
                        RuntimeWarning,
                        stacklevel=2,
                    )

    def _fail_all(
        self,
        ds: LoadedDataset,
        system_name: str,
        qs: Sequence[Question],
        reason: str | None,
        obs_log: store.ObservationLog,
    ) -> None:
        for q in qs:
            obs_log.append(self._failed(ds, system_name, q, reason))
            self.progress.advance(1)

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
        ingest_log: store.AppendLog,
        ingested: set[tuple[str, str, str]],
    ) -> None:
        key = (ds.key, system_name, group_id)
        if key in ingested:  # a resumed group re-ingests, but its time is recorded once
            return
        ingest_log.append(
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
        ingest_log: store.AppendLog,
        ingested: set[tuple[str, str, str]],
    ) -> _IngestResult:
        """``reset()``, one ``add`` per session, then the declared ``finish_ingest``: each its
        own call with the per-call timeout. A call that raises is recorded (``add`` or
        ``finish_ingest``: the ingest is ``partial`` and the group is still searched; ``reset``:
        ``error``, not searched); a call that times out quarantines the instance (``error``)."""
        system = inst.system
        timeout = self.spec.timeout_s
        finishes = "finish_ingest" in declared_hooks(system)
        ms = 0.0
        finish_ms: float | None = None
        failures: list[str] = []

        def record(outcome: str, reason: str | None) -> None:
            self._ingest_record(
                ds, inst.name, group_id, sessions,
                round(ms, 4) if outcome == "usable" else None,
                outcome, reason, finish_ms, ingest_log, ingested,
            )  # fmt: skip

        steps: list[tuple[str, Any]] = [("reset", system.reset)]
        steps += [(f"add of session {s.session_id}", lambda s=s: system.add(s)) for s in sessions]
        if finishes:
            steps.append(("finish_ingest", system.finish_ingest))  # type: ignore[attr-defined]
        for label, fn in steps:
            out: CallOutcome = pool.run(fn, timeout)
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
                continue
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
        obs_log: store.ObservationLog,
    ) -> None:
        """One search per question, up to ``4 * concurrency`` submitted ahead. Each result is
        validated and copied inside the worker the moment the call returns. After a timeout the
        instance is quarantined: calls not yet started are cancelled, and every later question
        of the group is an error (reason ``instance quarantined after a timeout``)."""
        system = inst.system
        k = self.spec.k_max

        def post(result: Any) -> tuple[Memory, ...]:
            return normalise_memories(result, turns)

        window = max(1, self.spec.concurrency) * 4
        for start in range(0, len(qs), window):
            batch = qs[start : start + window]
            if inst.quarantined:
                self._fail_all(ds, inst.name, batch, QUARANTINED, obs_log)
                continue
            calls = [pool.submit(lambda q=q: system.search(q.text, k), post) for q in batch]
            for i, (q, call) in enumerate(zip(batch, calls, strict=True)):
                if inst.quarantined:
                    obs_log.append(self._failed(ds, inst.name, q, QUARANTINED))
                else:
                    outcome = pool.wait(call, self.spec.timeout_s, abandon=False)
                    if outcome.timed_out:
                        for later in calls[i + 1 :]:  # before a replacement worker can start them
                            pool.abandon(later)
                        pool.abandon(call)
                        self._quarantine(inst, pool)
                    obs_log.append(self._observation(ds, inst, q, turns, outcome))
                self.progress.advance(1)

    def _observation(
        self,
        ds: LoadedDataset,
        inst: _Instance,
        q: Question,
        turns: Mapping[str, str],
        outcome: CallOutcome,
    ) -> Observation:
        name = inst.name
        if not outcome.ok:
            return self._failed(ds, name, q, outcome.reason)
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
    ) -> Observation:
        return Observation(
            run_id=self.run_id,
            dataset=ds.key,
            dataset_version=ds.version_label,
            group=q.group,
            question_id=q.id,
            system=system_name,
            k=self.spec.k_max,
            attempt=1,
            observed_at=now_rfc3339(),
            latency_ms=latency_ms,
            memories=memories,
            chars_returned=chars,
            outcome=outcome,
            outcome_reason=outcome_reason,
            query_sha256=sha256_text(q.text),
            flags=flags,
        )
