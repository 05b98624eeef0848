"""The runner: per haystack group, ``reset()``, ``add()`` every session in order (timed), then one
``search()`` per question (timed, with a timeout), writing raw observations. No scoring here.

Failures never stop a run: an exception or timeout becomes an observation with outcome ``error``
and its reason; an empty result is ``unusable``. Both are misses for the scorer.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.chunking import with_chunks
from recallbench.contracts import IngestRecord, Memory, Observation, Question, Session, sha256_text
from recallbench.datasets.dataset import LoadedDataset
from recallbench.results import store
from recallbench.results.manifest import now_rfc3339
from recallbench.run.calls import CallPool
from recallbench.spec import RunSpec
from recallbench.systems.base import MemorySystem, SystemContext, close_system, declared_hooks
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


def _validate_memories(result: Any) -> tuple[Memory, ...]:
    if not isinstance(result, list | tuple):
        raise TypeError(f"search returned {type(result).__name__}, expected a list of Memory")
    for m in result:
        if not isinstance(m, Memory):
            raise TypeError(f"search returned a {type(m).__name__}, expected Memory")
    return tuple(result)


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

    def _context(self, system_name: str) -> SystemContext:
        work = self.run_dir / "work" / system_name
        shutil.rmtree(work, ignore_errors=True)  # a resumed run rebuilds state from scratch
        work.mkdir(parents=True, exist_ok=True)
        return SystemContext(
            seed=self.spec.seed,
            work_dir=work,
            cache_dir=self.cache_dir,
            config=dict(self.spec.system_configs.get(system_name, {})),
        )

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
        system = create_system(system_name, self._context(system_name))
        self.capabilities[system_name] = dataclasses.asdict(system.capabilities)
        settings = getattr(system, "settings", None)  # optional, declared in systems/base.py
        if isinstance(settings, Mapping):
            self.settings[system_name] = dict(settings)
        image_mode = ds.options.image_mode
        try:
            images = (
                image_paths(ds)
                if system.capabilities.accepts_images and image_mode == "native"
                else {}
            )
            for group, qs in todo_groups:
                if not qs:
                    continue
                sessions = prepare_sessions(
                    [point_images(s, images) for s in group.sessions],
                    self.spec.chunking,
                    system.capabilities.accepts_images,
                    image_mode,
                )
                ok, reason = self._ingest(
                    system, ds, group.group_id, sessions, pool, ingest_log, ingested
                )
                if ok:
                    self._search_all(system, ds, qs, pool, obs_log)
                else:
                    for q in qs:
                        obs_log.append(self._failed(ds, system_name, q, f"ingest failed: {reason}"))
                        self.progress.advance(1)
                obs_log.sync()  # a group's records survive a machine crash once it is done
                ingest_log.sync()
        finally:
            close_system(system)

    def _ingest(
        self,
        system: MemorySystem,
        ds: LoadedDataset,
        group_id: str,
        sessions: list[Session],
        pool: CallPool,
        ingest_log: store.AppendLog,
        ingested: set[tuple[str, str, str]],
    ) -> tuple[bool, str | None]:
        timeout = self.spec.timeout_s
        finishes = "finish_ingest" in declared_hooks(system)
        finish_ms: list[float] = []

        def ingest() -> None:
            system.reset()
            for s in sessions:
                system.add(s)
            if finishes:  # the declared hook: inside the timed ingest, its own time recorded
                t0 = time.perf_counter()
                system.finish_ingest()  # type: ignore[attr-defined]
                finish_ms.append((time.perf_counter() - t0) * 1000.0)

        # The ingest timeout scales with its size: the per-call timeout for each call.
        outcome = pool.run(ingest, timeout * max(1, len(sessions) + int(finishes)))
        key = (ds.key, system.name, group_id)
        if key not in ingested:  # a resumed group re-ingests, but its time is recorded once
            ingest_log.append(
                IngestRecord(
                    run_id=self.run_id,
                    dataset=ds.key,
                    group=group_id,
                    system=system.name,
                    sessions=len(sessions),
                    chunks=sum(len(s.chunks) for s in sessions),
                    turns=sum(len(s.turns) for s in sessions),
                    ingest_ms=outcome.elapsed_ms,
                    outcome="usable" if outcome.ok else "error",
                    outcome_reason=outcome.reason,
                    finish_ms=round(finish_ms[0], 4) if finish_ms else None,
                )
            )
            ingested.add(key)
        return outcome.ok, outcome.reason

    def _search_all(
        self,
        system: MemorySystem,
        ds: LoadedDataset,
        qs: list[Question],
        pool: CallPool,
        obs_log: store.ObservationLog,
    ) -> None:
        k = self.spec.k_max
        # Submit in windows so a large group does not queue everything at once.
        window = max(1, self.spec.concurrency) * 4
        for start in range(0, len(qs), window):
            batch = qs[start : start + window]
            calls = [pool.submit(lambda q=q: system.search(q.text, k)) for q in batch]
            for q, call in zip(batch, calls, strict=True):
                outcome = pool.wait(call, self.spec.timeout_s)
                obs_log.append(self._observation(ds, system.name, q, k, outcome))
                self.progress.advance(1)

    def _observation(
        self, ds: LoadedDataset, system_name: str, q: Question, k: int, outcome: Any
    ) -> Observation:
        if not outcome.ok:
            return self._failed(ds, system_name, q, outcome.reason)
        try:
            memories = _validate_memories(outcome.result)
        except TypeError as exc:
            return self._failed(ds, system_name, q, f"invalid result: {exc}")
        return self._record(
            ds,
            system_name,
            q,
            latency_ms=round(outcome.elapsed_ms, 4),
            memories=memories,
            outcome="usable" if memories else "unusable",
            outcome_reason=None if memories else "empty result",
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
            chars_returned=sum(len(m.text) for m in memories),
            outcome=outcome,
            outcome_reason=outcome_reason,
            query_sha256=sha256_text(q.text),
        )
