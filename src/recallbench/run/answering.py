"""The answer and judge steps of memory and answer modes: read observations, write
``answers.jsonl`` and ``judgements.jsonl``.

Each question of each system (and of each condition row: ``condition:no-memory`` reads nothing,
``condition:oracle`` the gold evidence turns) is one job: the reader writes an answer from the
memories (answer mode), then the judge grades the answer or the memories. Jobs run in a pool of
``llm_concurrency`` threads, so at most that many calls are in flight. Every record is appended
and flushed as soon as its call returns, so a killed step loses at most the calls in flight, and
a resume skips every answer and judgement already recorded (for the same judge). Records are
keyed by the observation's ``repeat`` too (``run --repeats N``), and the response cache's sample
index is that repeat, so each repeat's reader and judge calls are fresh samples.

A search that failed (outcome ``error``) is a miss: no reader or judge call, every judged
figure 0. A search that returned nothing is judged like any other (abstention questions are
answered correctly by nothing). A reader or judge call that failed after its retries is an
instrument failure, not the system's: recorded as ``reader_error`` / ``judge_error``, scored
null and out of the denominator, counted and shown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from recallbench.contracts import (
    AnswerRecord,
    JudgementRecord,
    Memory,
    Observation,
    Question,
    Turn,
    answer_from_dict,
    judgement_from_dict,
)
from recallbench.datasets.dataset import LoadedDataset
from recallbench.instruments.protocol import (
    AnswerContext,
    AnswerInstrument,
    JudgeResult,
    ReaderResult,
    Retrieved,
)
from recallbench.llm.types import CallLLM, ChatRequest, Completion
from recallbench.results import store

NO_MEMORY = "no-memory"
ORACLE = "oracle"
CONDITION_PREFIX = "condition:"


def condition_system(condition: str) -> str:
    """The row name of a condition (``condition:oracle``)."""
    return f"{CONDITION_PREFIX}{condition}"


def condition_of(system: str) -> str:
    return system[len(CONDITION_PREFIX) :] if system.startswith(CONDITION_PREFIX) else "system"


def turn_index(ds: LoadedDataset) -> dict[str, Turn]:
    """Every turn of the dataset by id, its date filled from its session's when it has none."""
    out: dict[str, Turn] = {}
    for g in ds.groups:
        for s in g.sessions:
            for t in s.turns:
                out[t.turn_id] = t if t.date or not s.date else replace(t, date=s.date)
    return out


def retrieved(memories: Iterable[Memory], turns: Mapping[str, Turn]) -> tuple[Retrieved, ...]:
    """What the reader sees of a system's memories: each text and its resolved source turns."""
    out = []
    for m in memories:
        resolved = tuple(turns[t] for t in (m.source_turns or ()) if t in turns)
        out.append(Retrieved(m.text, resolved))
    return tuple(out)


def oracle_memories(q: Question, turns: Mapping[str, Turn]) -> tuple[Memory, ...]:
    """The gold evidence turns as memories (``speaker: text``), in the dataset's order."""
    out = []
    for tid in q.evidence_turns or ():
        t = turns.get(tid)
        if t is not None:
            out.append(Memory(id=tid, text=f"{t.speaker}: {t.text}", source_turns=(tid,)))
    return tuple(out)


def condition_observation(
    run_id: str, ds: LoadedDataset, q: Question, condition: str, k: int, at: str,
    turns: Mapping[str, Turn],
) -> Observation:
    """The observation of a condition row: nothing (no-memory) or the gold turns (oracle). Its
    retrieval is not reported (the row measures the reader, not a retrieval)."""
    memories = oracle_memories(q, turns) if condition == ORACLE else ()
    return Observation(
        run_id=run_id,
        dataset=ds.key,
        dataset_version=ds.version_label,
        group=q.group,
        question_id=q.id,
        system=condition_system(condition),
        k=k,
        attempt=1,
        observed_at=at,
        latency_ms=None,
        memories=memories,
        chars_returned=sum(len(m.text) for m in memories),
        outcome="usable" if memories else "unusable",
        outcome_reason=None if memories else f"condition {condition}: the reader gets nothing",
        retrieval_reported=False,
    )


def _sum(values: Iterable[int | None]) -> int | None:
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _sum_usd(calls: Sequence[Completion]) -> float | None:
    total = 0.0
    for c in calls:
        if c.cached:
            continue
        if c.billed_usd is None:
            return None
        total += c.billed_usd
    return total


def _retries(calls: Sequence[Completion]) -> tuple[dict[str, object], ...]:
    """Every try of the calls that needed more than one."""
    return tuple(
        {"purpose": c.purpose, "attempt": a.attempt, "status": a.status, "error": a.error,
         "wait_s": a.wait_s}
        for c in calls
        if len(c.attempts) > 1
        for a in c.attempts
    )


def _latency(calls: Sequence[Completion]) -> float | None:
    values = [c.latency_ms for c in calls if c.latency_ms is not None]
    return sum(values) if values else None


@dataclass(frozen=True)
class Roles:
    """Who reads and who judges: labels as records name them, and the calls that reach them."""

    reader: str | None
    judge: str | None
    reader_call: CallLLM | None
    judge_call: CallLLM | None


@dataclass(frozen=True)
class DatasetJob:
    """One dataset's part of the step: its instrument and the observations to answer."""

    dataset: LoadedDataset
    instrument: AnswerInstrument
    observations: Sequence[Observation]
    empty_prompt_tokens: int | None = None


class AnsweringStep:
    """Write the answers and judgements a run still lacks (see the module docstring)."""

    def __init__(
        self,
        run_dir: Path,
        run_id: str,
        mode: str,
        roles: Roles,
        *,
        seed: int = 0,
        concurrency: int = 8,
        reader_preset: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        phases: Callable[[str, int], Callable[[int], None]] | None = None,
        roles_for: Callable[[int], Roles] | None = None,
    ) -> None:
        """``roles`` serve repeat 0; ``roles_for(r)`` the observations of repeat ``r`` above 0
        (calls whose response-cache sample index is ``r``); without it every repeat is served
        by ``roles``."""
        self.run_dir = run_dir
        self.run_id = run_id
        self.mode = mode
        self.roles = roles
        self.seed = seed
        self.roles_for = roles_for
        self._by_repeat: dict[int, Roles] = {0: roles}
        self.concurrency = max(1, concurrency)
        self.reader_preset = reader_preset
        self.progress = progress
        self.phases = phases
        """``phases(phase, total)`` starts the ``answer`` or ``judge`` progress task of the
        step and returns its advance function (each question ticks each phase it needs)."""
        self._lock = threading.Lock()
        self._done = 0

    def _roles(self, repeat: int) -> Roles:
        """Who reads and judges the observations of ``repeat`` (built once per repeat)."""
        with self._lock:
            if repeat not in self._by_repeat:
                made = self.roles_for(repeat) if self.roles_for is not None else self.roles
                self._by_repeat[repeat] = made
            return self._by_repeat[repeat]

    # -- what is already there

    def _existing(
        self,
    ) -> tuple[dict[tuple[str, str, str, int], AnswerRecord], set[tuple[object, ...]]]:
        for name in (store.ANSWERS, store.JUDGEMENTS):
            store.repair_torn_tail(self.run_dir / name)
        answers: dict[tuple[str, str, str, int], AnswerRecord] = {}
        for d in store.read_jsonl_tolerant(self.run_dir / store.ANSWERS):
            a = answer_from_dict(d)
            answers.setdefault((a.dataset, a.system, a.question_id, a.repeat), a)
        judged: set[tuple[object, ...]] = {
            (j.dataset, j.system, j.question_id, j.repeat, j.judge, j.metric)
            for j in map(judgement_from_dict, store.read_jsonl_tolerant(
                self.run_dir / store.JUDGEMENTS
            ))
        }
        return answers, judged

    # -- records

    def _answer_record(
        self, ds: LoadedDataset, obs: Observation, inst: AnswerInstrument, ctx: AnswerContext,
        result: ReaderResult | None, empty_tokens: int | None,
    ) -> AnswerRecord:
        chars = sum(len(m.text) for m in ctx.memories)
        base = dict(
            run_id=self.run_id, dataset=ds.key, system=obs.system, question_id=obs.question_id,
            mode=self.mode, condition=ctx.condition, instrument=inst.name,
            reader=self.roles.reader or "", reader_preset=self.reader_preset,
            sample=obs.repeat, memory_chars=chars, repeat=obs.repeat,
        )
        if result is None:
            return AnswerRecord(
                **base, outcome="miss", answer=None, reply=None,
                error=f"search_failed: {obs.outcome_reason or obs.outcome}",
                prompt_sha256=None, prompt_tokens=None, completion_tokens=None,
                memory_tokens=None, calls=0, cached_calls=0, attempts=0, billed_usd=None,
                latency_ms=None,
            )
        calls = result.calls
        main = next((c for c in calls if c.prompt_sha256 == result.prompt_sha256), None)
        prompt_tokens = _sum(c.prompt_tokens for c in calls)
        memory_tokens = (
            main.prompt_tokens - empty_tokens
            if main is not None and main.prompt_tokens is not None and empty_tokens is not None
            else None
        )
        failed = result.error is not None or result.answer is None
        return AnswerRecord(
            **base,
            outcome="reader_error" if failed else "answered",
            answer=result.answer,
            reply=result.reply,
            error=(result.error or "reader_error: no answer") if failed else None,
            prompt_sha256=result.prompt_sha256,
            prompt_tokens=prompt_tokens,
            completion_tokens=_sum(c.completion_tokens for c in calls),
            memory_tokens=memory_tokens,
            calls=len(calls),
            cached_calls=sum(1 for c in calls if c.cached),
            attempts=sum(len(c.attempts) for c in calls),
            billed_usd=_sum_usd(calls),
            latency_ms=_latency(calls),
            notes=tuple(result.notes),
            retries=_retries(calls),
        )

    def _judgement(
        self, ds: LoadedDataset, obs: Observation, inst: AnswerInstrument, condition: str,
        metric: str, result: JudgeResult | None,
    ) -> JudgementRecord:
        base = dict(
            run_id=self.run_id, dataset=ds.key, system=obs.system, question_id=obs.question_id,
            mode=self.mode, condition=condition, instrument=inst.name,
            judge=self.roles.judge or "", reader=self.roles.reader if self.mode == "answer"
            else None, metric=metric, sample=obs.repeat, repeat=obs.repeat,
        )
        if result is None:
            return JudgementRecord(
                **base, outcome="miss", value=0.0, unparsed=False, reply=None,
                error=f"search_failed: {obs.outcome_reason or obs.outcome}", prompt_sha256=None,
                prompt_tokens=None, completion_tokens=None, calls=0, cached_calls=0,
                attempts=0, billed_usd=None, latency_ms=None,
            )
        calls = result.calls
        if result.error is not None:
            outcome = "judge_error"
        elif result.value is None:
            outcome = "not_judged"
        else:
            outcome = "judged"
        return JudgementRecord(
            **base,
            outcome=outcome,  # type: ignore[arg-type]
            value=result.value if outcome == "judged" else None,
            unparsed=result.unparsed,
            reply=result.reply,
            error=result.error or result.null_reason,
            prompt_sha256=result.prompt_sha256,
            prompt_tokens=_sum(c.prompt_tokens for c in calls) if calls else None,
            completion_tokens=_sum(c.completion_tokens for c in calls) if calls else None,
            calls=len(calls),
            cached_calls=sum(1 for c in calls if c.cached),
            attempts=sum(len(c.attempts) for c in calls),
            billed_usd=_sum_usd(calls) if calls else None,
            latency_ms=_latency(calls),
            retries=_retries(calls),
        )

    # -- the step

    def run(self, jobs: Sequence[DatasetJob]) -> None:
        answers, judged = self._existing()
        answers_log = store.AppendLog(self.run_dir / store.ANSWERS)
        judgements_log = store.AppendLog(self.run_dir / store.JUDGEMENTS)
        todo: list[tuple[DatasetJob, Observation, Question, dict[str, Turn]]] = []
        needs: list[tuple[bool, bool]] = []  # (answer, judge) each question of todo needs
        for job in jobs:
            turns = turn_index(job.dataset)
            questions = {q.id: q for q in job.dataset.questions}
            metrics = job.instrument.judge_metrics.get(self.mode, ())
            for obs in job.observations:
                q = questions.get(obs.question_id)
                if q is None:
                    continue
                key = (job.dataset.key, obs.system, obs.question_id, obs.repeat)
                need_answer = self.mode == "answer" and key not in answers
                need_judge = any(
                    (*key, self.roles.judge or "", m) not in judged for m in metrics
                )
                if need_answer or need_judge:
                    todo.append((job, obs, q, turns))
                    needs.append((need_answer, need_judge))
        total = len(todo)
        answer_tick = judge_tick = None
        if self.phases is not None:
            n_answer = sum(a for a, _ in needs)
            n_judge = sum(j for _, j in needs)
            answer_tick = self.phases("answer", n_answer) if n_answer else None
            judge_tick = self.phases("judge", n_judge) if n_judge else None
        self._done = 0
        if self.progress is not None:
            self.progress(0, total)  # the step starts (a progress bar shows its total)

        def one(item: tuple[DatasetJob, Observation, Question, dict[str, Turn]]) -> None:
            job, obs, q, turns = item
            inst, ds = job.instrument, job.dataset
            roles = self._roles(obs.repeat)
            condition = condition_of(obs.system)
            memories = () if obs.outcome == "error" else retrieved(obs.memories, turns)
            ctx = AnswerContext(q, memories, condition, self.seed, obs.repeat)
            key = (ds.key, obs.system, obs.question_id, obs.repeat)
            answer_text: str | None = None
            missed = obs.outcome == "error"
            if self.mode == "answer":
                record = answers.get(key)
                if record is None and roles.reader_call is None:
                    self._tick(total)  # re-judging only: a question without an answer waits
                    return
                if record is None:
                    assert roles.reader_call is not None
                    result = None if missed else inst.answer(ctx, roles.reader_call)
                    record = self._answer_record(ds, obs, inst, ctx, result,
                                                 job.empty_prompt_tokens)
                    with self._lock:
                        answers_log.append(record)
                        answers[key] = record
                if record.outcome == "reader_error":
                    self._tick(total)
                    return  # the answer figures are null (reader_error); nothing to judge
                missed = record.outcome == "miss"
                answer_text = record.answer
            metrics = inst.judge_metrics.get(self.mode, ())
            pending = [m for m in metrics if (*key, self.roles.judge or "", m) not in judged]
            if pending:
                if missed:
                    results: dict[str, JudgeResult | None] = {m: None for m in pending}
                else:
                    assert roles.judge_call is not None
                    got = inst.judge(ctx, self.mode, answer_text, roles.judge_call)
                    results = {r.metric: r for r in got}
                for m in pending:
                    if m not in results:
                        continue
                    rec = self._judgement(ds, obs, inst, condition, m, results[m])
                    with self._lock:
                        judgements_log.append(rec)
                        judged.add((*key, self.roles.judge or "", m))
            self._tick(total)

        def phased(i: int) -> None:
            try:
                one(todo[i])
            finally:
                need_answer, need_judge = needs[i]
                if need_answer and answer_tick is not None:
                    answer_tick(1)
                if need_judge and judge_tick is not None:
                    judge_tick(1)

        try:
            if self.concurrency == 1:
                for i in range(len(todo)):
                    phased(i)
            else:
                with ThreadPoolExecutor(self.concurrency, thread_name_prefix="answer") as pool:
                    for _ in pool.map(phased, range(len(todo))):
                        pass
        finally:
            answers_log.close()
            judgements_log.close()

    def _tick(self, total: int) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        if self.progress is not None:
            self.progress(done, total)


def empty_prompt_tokens(
    inst: AnswerInstrument, call: CallLLM | None
) -> tuple[int | None, ChatRequest | None]:
    """The reader prompt's token count with no memories (None: not measured)."""
    request = inst.empty_reader_request()
    if request is None or call is None:
        return None, request
    done = call(request)
    return (done.prompt_tokens if done.ok else None), request


def read_answers(run_dir: Path) -> list[AnswerRecord]:
    return [answer_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.ANSWERS)]


def read_judgements(run_dir: Path) -> list[JudgementRecord]:
    return [
        judgement_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.JUDGEMENTS)
    ]
