"""Memory and answer modes, assembled: which instrument scores each dataset, who reads and who
judges, which labels a run earns, and the step that writes answers and judgements.

The rules kept here:

* The official instrument is the default wherever a benchmark publishes one
  (``Benchmark.answering``); recallbench's own prompts (``recallbench prompts v1``) serve the
  datasets without one and, asked for with ``--prompts recallbench-v1``, are labelled.
* A model left unnamed is the benchmark's pinned one (reader or judge); a benchmark that pins
  no reader needs ``--reader`` and its card says "reader chosen by the operator (the benchmark
  pins none)", which is not "non-standard".
* Any pinned part that differs (reader, judge, prompts) labels every row and the card
  non-standard ("not a Glasshouse v0.1 score: reader X").
* The reader and the judge must be different models unless the benchmark's protocol uses one
  model for both; otherwise ``--same-model`` allows it and every row says so.
* The mock models (``mock``, ``mock-judge``, ...) without a base URL are served by the shipped
  mock provider, started in-process on a free loopback port.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.benchmarks import benchmark_of
from recallbench.contracts import AnswerRecord, Observation, to_json_dict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import OptionError
from recallbench.instruments.generic import RecallbenchV1
from recallbench.instruments.protocol import (
    CONDITIONS,
    LLM_MODES,
    MODES,
    OFFICIAL,
    RECALLBENCH_V1,
    AnswerInstrument,
    InstrumentOptions,
    ModelPin,
)
from recallbench.llm.types import CallLLM, Endpoint
from recallbench.run.answering import (
    AnsweringStep,
    DatasetJob,
    Roles,
    condition_observation,
    condition_system,
    empty_prompt_tokens,
    turn_index,
)
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec

MOCK_PREFIX = "mock"
SAME_MODEL_LABEL = "reader and judge are the same model ({model})"


def is_mock(model: str) -> bool:
    return model == MOCK_PREFIX or model.startswith(MOCK_PREFIX + "-")


def check_answering(spec: AnsweringSpec) -> None:
    """The answering options on their own, before any dataset is loaded."""
    if spec.mode not in MODES:
        raise OptionError(f"--mode must be one of {', '.join(MODES)}, got {spec.mode!r}")
    if spec.prompts not in (OFFICIAL, RECALLBENCH_V1):
        raise OptionError(
            f"--prompts must be {OFFICIAL} or {RECALLBENCH_V1}, got {spec.prompts!r}"
        )
    for c in spec.conditions:
        if c not in CONDITIONS or c == "system":
            raise OptionError(
                f"--condition must name no-memory or oracle (comma-separated), got {c!r}"
            )
    if spec.mode not in LLM_MODES:
        if spec.reader or spec.judge or spec.conditions:
            raise OptionError(
                f"--reader, --judge and --condition need --mode memory or answer (got "
                f"--mode {spec.mode})"
            )
        return
    if spec.mode == "memory" and spec.reader is not None:
        raise OptionError("--reader is for --mode answer: in memory mode the judge reads the "
                          "memories and no reader runs")
    if spec.llm_concurrency < 1:
        raise OptionError(f"--llm-concurrency must be at least 1, got {spec.llm_concurrency}")


def instrument_for(
    ds: LoadedDataset, spec: AnsweringSpec, cache_dir: Path, seed: int
) -> AnswerInstrument:
    """The instrument that scores ``ds`` in this run (official unless asked otherwise)."""
    bench = benchmark_of(ds)
    opts = InstrumentOptions(
        cache_dir=cache_dir,
        prompts=spec.prompts,
        reader_preset=spec.reader_preset,
        judge_variant=spec.judge_variant,
        seed=seed,
    )
    if bench.answering is None or spec.prompts == RECALLBENCH_V1:
        if spec.judge_variant:
            raise OptionError(f"--judge-variant {spec.judge_variant}: {ds.key} has no such "
                              "judge (recallbench prompts v1 has one judge)")
        inst: AnswerInstrument = RecallbenchV1()
    else:
        inst = bench.answering(opts)
    if spec.mode not in inst.modes:
        raise OptionError(
            f"--mode {spec.mode}: {inst.name} scores {ds.key} in "
            f"{' and '.join(inst.modes)} mode only"
        )
    if spec.reader_preset and spec.reader_preset not in inst.reader_presets:
        known = ", ".join(inst.reader_presets) or "none"
        raise OptionError(
            f"--reader-preset {spec.reader_preset}: {inst.name} has presets: {known}"
        )
    return inst


@dataclass(frozen=True)
class Role:
    """A resolved reader or judge: the endpoint called and the pin it honours (or not)."""

    choice: ModelChoice
    endpoint: Endpoint
    pin: ModelPin | None

    @property
    def label(self) -> str:
        return self.choice.label


def _endpoint(choice: ModelChoice, pin: ModelPin | None, concurrency: int) -> Endpoint:
    base_url = choice.base_url
    key_env = choice.api_key_env
    if base_url is None and is_mock(choice.model):
        from recallbench.benchmarks.mock_shapes import all_shapes
        from recallbench.llm.mock import ensure_mock_server, set_shape_provider

        set_shape_provider(all_shapes)
        base_url = ensure_mock_server().base_url
        key_env = None
    elif base_url is None:
        if pin is not None and pin.base_url and pin.model == choice.model:
            base_url = pin.base_url
            key_env = key_env or pin.api_key_env
        else:
            raise OptionError(
                f"model {choice.model!r} needs an endpoint: give --reader-url / --judge-url "
                "(an OpenAI-compatible base URL ending in /v1)"
            )
    timeout = pin.timeout_s if pin is not None else 90.0
    return Endpoint(
        base_url=base_url, model=choice.model, api_key_env=key_env, timeout_s=timeout,
        max_concurrency=concurrency, label=choice.label,
    )


def resolve_role(
    what: str, choice: ModelChoice | None, pin: ModelPin | None, concurrency: int, where: str
) -> Role:
    """The reader or judge of one dataset: the operator's choice, else the benchmark's pin."""
    if choice is None:
        if pin is None:
            raise OptionError(
                f"{where} pins no {what}: give --{what} MODEL (and --{what}-url URL), or "
                f"--{what} mock{'-judge' if what == 'judge' else ''} to try the path offline"
            )
        choice = ModelChoice(pin.model, pin.base_url, pin.api_key_env)
    endpoint = _endpoint(choice, pin, concurrency)
    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
        raise OptionError(
            f"the {what} {choice.model} at {endpoint.base_url} reads its API key from "
            f"${endpoint.api_key_env}, which is not set: export {endpoint.api_key_env}=... "
            f"(the key is never written anywhere), or name another --{what}-key-env"
        )
    return Role(choice, endpoint, pin)


def labels(
    ds: LoadedDataset, inst: AnswerInstrument, spec: AnsweringSpec,
    reader: Role | None, judge: Role | None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(non-standard labels, notes) of a dataset's answering in this run."""
    bench = benchmark_of(ds)
    title = bench.name
    non_standard: list[str] = []
    notes: list[str] = []
    if judge is None:
        notes.append(
            f"{inst.name} scores answers without a judge"
            + (f" (--judge {spec.judge.model} is not used for {ds.key})" if spec.judge else "")
        )
    if bench.answering is not None and not inst.official:
        non_standard.append(f"not a {title} score: {inst.name}, not its official prompts")
    if bench.answering is None:
        notes.append(f"{ds.key} publishes no answer instrument: {inst.name} is recallbench's own")
    if reader is not None:
        if inst.reader is None:
            notes.append("reader chosen by the operator (the benchmark pins none)")
        elif reader.choice.model != inst.reader.model:
            non_standard.append(
                f"not a {title} score: reader {reader.choice.model} (pinned: {inst.reader.model})"
            )
    if judge is not None and inst.judge_pin is not None and \
            judge.choice.model != inst.judge_pin.model:
        non_standard.append(
            f"not a {title} score: judge {judge.choice.model} (pinned: {inst.judge_pin.model})"
        )
    same = reader is not None and judge is not None and reader.choice.model == judge.choice.model
    if same and not inst.reader_is_judge:
        if not spec.same_model:
            raise OptionError(
                f"the reader and the judge are the same model ({judge.choice.model}), "
                f"which {title}'s protocol does not do: a model grading its own answers is "
                "biased; choose another judge, or pass --same-model to allow it (every "
                "row is then labelled)"
            )
        non_standard.append(SAME_MODEL_LABEL.format(model=reader.choice.model))
    return tuple(non_standard), tuple(notes)


@dataclass(frozen=True)
class DatasetAnswering:
    """Everything the answer step and the scorer need of one dataset."""

    dataset: LoadedDataset
    instrument: AnswerInstrument
    reader: Role | None
    judge: Role | None
    non_standard: tuple[str, ...]
    notes: tuple[str, ...]

    def record(self) -> dict[str, Any]:
        """What ``run.json`` says about it."""
        inst = self.instrument
        return {
            "instrument": inst.name,
            "official": inst.official,
            "files": [to_json_dict(f) for f in inst.files()],
            "deviations": list(inst.deviations()),
            "reader": None if self.reader is None else self.reader.endpoint.describe(),
            "reader_pin": None if inst.reader is None else to_json_dict(inst.reader),
            "judge": None if self.judge is None else self.judge.endpoint.describe(),
            "judge_pin": None if inst.judge_pin is None else to_json_dict(inst.judge_pin),
            "judge_metrics": list(inst.judge_metrics.get("answer", ()))
            + list(inst.judge_metrics.get("memory", ())),
            "non_standard": list(self.non_standard),
            "notes": list(self.notes),
        }


def plan(
    spec: RunSpec, datasets: Sequence[LoadedDataset], cache_dir: Path
) -> list[DatasetAnswering]:
    """Resolve instruments, roles and labels for every dataset; raises before any call."""
    a = spec.answering
    assert a is not None and a.mode in LLM_MODES
    out = []
    for ds in datasets:
        inst = instrument_for(ds, a, cache_dir, spec.seed)
        reader = (
            resolve_role("reader", a.reader, inst.reader, a.llm_concurrency, ds.key)
            if a.mode == "answer" else None
        )
        judge = (
            resolve_role("judge", a.judge, inst.judge_pin, a.llm_concurrency, ds.key)
            if inst.judge_metrics.get(a.mode) else None
        )
        inst = inst.with_models(reader.choice.model if reader else None,
                                judge.choice.model if judge else None)
        non_standard, notes = labels(ds, inst, a, reader, judge)
        out.append(DatasetAnswering(ds, inst, reader, judge, non_standard, notes))
    return out


def _client_call(
    role: Role, cache_dir: Path, use_cache: bool, prices: Path | None, sample: int
) -> CallLLM:
    from recallbench.llm.cache import shared_response_cache
    from recallbench.llm.client import ChatClient
    from recallbench.llm.prices import PriceTable
    from recallbench.llm.retry import RetryPolicy

    policy = RetryPolicy.from_pin(role.pin) if role.pin is not None else RetryPolicy()
    client = ChatClient(
        role.endpoint,
        shared_response_cache(cache_dir) if use_cache else None,
        policy,
        PriceTable.load(prices) if prices is not None else None,
    )
    return client.as_call(sample)


CallFactory = Callable[..., CallLLM]
"""``make(role, sample=0)``: the call that reaches ``role``, its response-cache sample index
fixed at ``sample`` (the repeat number, ``run --repeats``)."""


def call_factory(
    cache_dir: Path, use_cache: bool = True, prices: Path | None = None, sample: int = 0
) -> CallFactory:
    """One client per endpoint and sample index, shared by the datasets that use it;
    ``sample`` is the index when ``make`` is not given one."""
    made: dict[tuple[Endpoint, int], CallLLM] = {}

    def make(role: Role, sample: int = sample) -> CallLLM:
        key = (role.endpoint, sample)
        if key not in made:
            made[key] = _client_call(role, cache_dir, use_cache, prices, sample)
        return made[key]

    return make


def condition_rows(spec: RunSpec) -> tuple[str, ...]:
    """The extra rows the run's conditions add (``condition:no-memory``, ...)."""
    a = spec.answering
    return tuple(condition_system(c) for c in (a.conditions if a else ()))


def scored_systems(spec: RunSpec) -> tuple[str, ...]:
    return (*spec.systems, *condition_rows(spec))


def add_condition_observations(
    run_dir: Path, run_id: str, spec: RunSpec, datasets: Sequence[LoadedDataset],
    existing: Sequence[Observation], observed_at: str,
) -> list[Observation]:
    """Write the observations of the condition rows a run still lacks; return them all."""
    from recallbench.results import store

    have = {(o.dataset, o.system, o.question_id, o.repeat) for o in existing}
    new: list[Observation] = []
    a = spec.answering
    for repeat in range(max(1, spec.repeats)):
        for ds in datasets:
            turns = turn_index(ds)
            for c in a.conditions if a else ():
                for q in ds.questions:
                    if (ds.key, condition_system(c), q.id, repeat) not in have:
                        obs = condition_observation(
                            run_id, ds, q, c, spec.k_max, observed_at, turns
                        )
                        new.append(dataclasses.replace(obs, repeat=repeat))
    if new:
        log = store.ObservationLog(run_dir)
        try:
            for o in new:
                log.append(o)
        finally:
            log.close()
    return [*existing, *new]


def run_step(
    run_dir: Path,
    run_id: str,
    spec: RunSpec,
    planned: Sequence[DatasetAnswering],
    observations: Sequence[Observation],
    make_call: CallFactory,
    *,
    judge_only: bool = False,
    progress: Callable[[int, int], None] | None = None,
    phases: Callable[[str, str, int], Callable[[int], None]] | None = None,
) -> None:
    """Write the answers and judgements the folder lacks, dataset by dataset; ``phases(phase,
    dataset key, total)`` starts a progress task per phase (``answer``, ``judge``) and
    returns its advance function (else ``progress(done, total)`` ticks once per question)."""
    a = spec.answering
    assert a is not None
    for item in planned:
        # re-judging (judge_only): the answers were written; no reader call is made
        reader_call = None if item.reader is None or judge_only else make_call(item.reader)
        judge_call = None if item.judge is None else make_call(item.judge)
        empty_tokens, _ = (
            empty_prompt_tokens(item.instrument, reader_call) if reader_call else (None, None)
        )
        roles = Roles(
            reader=item.reader.label if item.reader else None,
            judge=item.judge.label if item.judge else None,
            reader_call=reader_call,
            judge_call=judge_call,
        )

        def roles_for(repeat: int, item: DatasetAnswering = item, roles: Roles = roles) -> Roles:
            """The calls of a repeat above 0: their cache sample index is the repeat."""
            return dataclasses.replace(
                roles,
                reader_call=None if roles.reader_call is None or item.reader is None
                else make_call(item.reader, sample=repeat),
                judge_call=None if item.judge is None else make_call(item.judge, sample=repeat),
            )

        step = AnsweringStep(
            run_dir, run_id, a.mode, roles, seed=spec.seed, concurrency=a.llm_concurrency,
            reader_preset=a.reader_preset or (item.instrument.reader_presets or (None,))[0],
            progress=progress,
            phases=None if phases is None else partial_phases(phases, item.dataset.key),
            roles_for=roles_for,
        )
        obs = [o for o in observations if o.dataset == item.dataset.key]
        step.run([DatasetJob(item.dataset, item.instrument, obs, empty_tokens)])


def partial_phases(
    phases: Callable[[str, str, int], Callable[[int], None]], what: str
) -> Callable[[str, int], Callable[[int], None]]:
    """``phases`` with its middle argument (what the task is of) fixed to ``what``."""
    return lambda phase, total: phases(phase, what, total)


def file_answer(
    obs: Observation, run_id: str, mode: str, instrument: str, reader: str
) -> AnswerRecord:
    """A predictions file's answer as an answer record: written by someone else's reader
    (``reader``), so no call, no tokens; a line without an answer is the empty answer (a miss
    when the file carries answers, as the predictions reader decided)."""
    return AnswerRecord(
        run_id=run_id, dataset=obs.dataset, system=obs.system, question_id=obs.question_id,
        mode=mode, condition="system", instrument=instrument, reader=reader,
        reader_preset=None, sample=0, outcome="answered", answer=obs.answer or "",
        reply=None, error=None, prompt_sha256=None, prompt_tokens=None,
        completion_tokens=None, memory_tokens=None, memory_chars=obs.chars_returned, calls=0,
        cached_calls=0, attempts=0, billed_usd=None, latency_ms=None,
    )


def with_judge(spec: RunSpec, judge: ModelChoice) -> RunSpec:
    """The spec as a re-judging sees it (the run's own spec is never edited)."""
    assert spec.answering is not None
    return dataclasses.replace(spec, answering=dataclasses.replace(spec.answering, judge=judge))




# ------------------------------------------------------------------------- judge check

JUDGE_CHECKS = "judge-checks"


def judge_check_key(ds: LoadedDataset, inst: AnswerInstrument, mode: str, judge: str) -> str:
    """The stored judge check's name: dataset bytes, instrument, mode and judge."""
    from recallbench.contracts import canonical_json, sha256_text

    material = {"dataset": ds.key, "checksum": ds.checksum, "instrument": inst.name,
                "files": [f.sha256 for f in inst.files()], "mode": mode, "judge": judge}
    return sha256_text(canonical_json(material))[:16]


@dataclass(frozen=True)
class JudgeCheck:
    """A judge's accuracy on cases whose right verdict the benchmark's own rules give."""

    dataset: str
    instrument: str
    mode: str
    judge: str
    by_type: dict[str, dict[str, int]]
    cases: list[dict[str, Any]]

    @property
    def judged(self) -> int:
        return sum(t["judged"] for t in self.by_type.values())

    @property
    def correct(self) -> int:
        return sum(t["correct"] for t in self.by_type.values())

    def summary(self) -> str:
        acc = self.correct / self.judged if self.judged else None
        shown = "n/a" if acc is None else f"{acc:.3f}"
        unparsed = sum(t["unparsed"] for t in self.by_type.values())
        errors = sum(t["errors"] for t in self.by_type.values())
        parts = ", ".join(
            f"{name} {t['correct']}/{t['judged']}" for name, t in sorted(self.by_type.items())
        )
        return (
            f"{self.judge} on {self.dataset} ({self.instrument}, {self.mode} mode): accuracy "
            f"{shown} ({self.correct}/{self.judged} known-verdict cases; {unparsed} unparsed, "
            f"{errors} judge errors excluded); {parts}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "instrument": self.instrument, "mode": self.mode,
                "judge": self.judge, "by_type": self.by_type, "summary": self.summary(),
                "cases": self.cases}


def judge_check(
    ds: LoadedDataset,
    spec: AnsweringSpec,
    cache_dir: Path,
    make_call: CallFactory,
    *,
    per_type: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeCheck:
    """Run the judge on the instrument's known-verdict cases (``judge_cases``) and count, per
    case type, how often its official value equals the expected one. ``per_type`` keeps the
    first N cases of each type (deterministic). Judge errors are counted, not scored."""
    from concurrent.futures import ThreadPoolExecutor

    from recallbench.instruments.protocol import AnswerContext, Retrieved

    inst = instrument_for(ds, spec, cache_dir, seed)
    judge = resolve_role("judge", spec.judge, inst.judge_pin, spec.llm_concurrency, ds.key)
    inst = inst.with_models(None, judge.choice.model)
    cases = inst.judge_cases(ds.questions, spec.mode)
    if per_type is not None:
        kept: dict[str, int] = {}
        chosen = []
        for c in cases:
            if kept.get(c.case_type, 0) < per_type:
                kept[c.case_type] = kept.get(c.case_type, 0) + 1
                chosen.append(c)
        cases = chosen
    if not cases:
        raise OptionError(f"{inst.name} builds no judge-check cases for {ds.key} "
                          f"in {spec.mode} mode")
    call = make_call(judge)
    done = [0]

    def one(case: Any) -> dict[str, Any]:
        memories = (Retrieved(case.answer),) if spec.mode == "memory" else ()
        ctx = AnswerContext(case.question, memories, "system", seed, 0)
        results = inst.judge(ctx, spec.mode, case.answer, call)
        r = next((x for x in results if x.metric == case.metric), None)
        done[0] += 1
        if progress is not None:
            progress(done[0], len(cases))
        return {
            "case_type": case.case_type,
            "question_id": case.question.id,
            "slice": case.question.axis,
            "answer": case.answer,
            "expected": case.expected,
            "value": None if r is None else r.value,
            "unparsed": bool(r and r.unparsed),
            "error": None if r is None else (r.error or r.null_reason),
            "reply": None if r is None else r.reply,
        }

    with ThreadPoolExecutor(spec.llm_concurrency) as pool:
        lines = list(pool.map(one, cases))
    by_type: dict[str, dict[str, int]] = {}
    for line in lines:
        t = by_type.setdefault(line["case_type"],
                               {"cases": 0, "judged": 0, "correct": 0, "unparsed": 0,
                                "errors": 0})
        t["cases"] += 1
        if line["value"] is None:
            t["errors"] += 1
            continue
        t["judged"] += 1
        t["unparsed"] += int(line["unparsed"])
        t["correct"] += int(abs(line["value"] - line["expected"]) < 1e-9)
    return JudgeCheck(ds.key, inst.name, spec.mode, judge.label, by_type, lines)


def store_judge_check(check: JudgeCheck, key: str, cache_dir: Path) -> Path:
    from recallbench.results import store

    path = cache_dir / JUDGE_CHECKS / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    store.write_json(path, check.to_dict())
    return path


def stored_judge_check(key: str, cache_dir: Path) -> str | None:
    """The summary of a stored judge check, or None."""
    import json

    path = cache_dir / JUDGE_CHECKS / f"{key}.json"
    if not path.exists():
        return None
    return str(json.loads(path.read_text(encoding="utf-8")).get("summary"))
