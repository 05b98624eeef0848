"""The interface between a benchmark's answer/judge instrument and the pipeline.

A benchmark that scores answers provides an :class:`AnswerInstrument` (``Benchmark.answering``,
a factory taking :class:`InstrumentOptions`). The pipeline hands it one question at a time,
with what the reader may see (:class:`AnswerContext`) and a :data:`~recallbench.llm.types.CallLLM`
that makes one cached, retried, counted chat call; the instrument builds the official prompt,
calls, and parses the reply the official way. It never sees which system produced the memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from recallbench.contracts import Question, Turn
from recallbench.llm.types import CallLLM, ChatRequest, Completion

MODES: tuple[str, ...] = ("retrieval", "dry", "memory", "answer")
"""``retrieval``: no LLM (the default of ``run``); ``dry``: Glasshouse's string rules on the
returned memories (a development ruler); ``memory``: a judge reads the returned memories;
``answer``: a reader writes an answer from them and a judge grades it."""
LLM_MODES: tuple[str, ...] = ("memory", "answer")
CONDITIONS: tuple[str, ...] = ("system", "no-memory", "oracle")
"""``system``: the reader gets what the system returned; ``no-memory``: nothing (the floor);
``oracle``: the gold evidence turns with dates and speakers (the ceiling)."""

OFFICIAL = "official"
RECALLBENCH_V1 = "recallbench-v1"
"""recallbench's own prompts, in its own words: a labelled alternative, never a default where
a benchmark publishes its own."""


@dataclass(frozen=True, slots=True)
class ModelPin:
    """A model as a benchmark's protocol pins it: name, where its authors called it, and the
    generation settings of the request body exactly as the official code sends them.

    ``tries``, ``timeout_s`` and ``empty_is_failure`` are the official call's retry rules
    (Glasshouse: 3 tries, 90 s, an empty body counted as a failure); ``backoff_s`` the official
    waits between tries, when the code states them.
    """

    model: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str | None = None
    tries: int = 3
    timeout_s: float = 90.0
    empty_is_failure: bool = True
    backoff_s: tuple[float, ...] = ()
    source: str = ""
    """Where the pin is read from (``judge.py JUDGES``, ``evaluate_qa.py model_zoo['gpt-4o']``)."""


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One memory as the reader or the memory judge sees it: the text the system returned and,
    when its source turns resolve to dataset turns, those turns (with dates and speakers)."""

    text: str
    turns: tuple[Turn, ...] = ()


@dataclass(frozen=True, slots=True)
class InstrumentFileRecord:
    """One instrument file read: where from, its SHA-256, and whether that hash is pinned in
    recallbench (``pinned``) or was recorded on first download (``note`` says so)."""

    repo: str
    commit: str
    path: str
    sha256: str
    pinned: bool
    note: str | None = None


@dataclass(frozen=True, slots=True)
class InstrumentOptions:
    """What the operator chose: the instrument (``official`` or ``recallbench-v1``), the reader
    preset (None: the benchmark's recommended one), a judge variant (LoCoMo ``mem0-j``), the run
    seed, and the cache folder the instrument files are downloaded into."""

    cache_dir: Path
    prompts: str = OFFICIAL
    reader_preset: str | None = None
    judge_variant: str | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class AnswerContext:
    """One question as the reader and judge get it. ``memories`` are what the reader may read
    (the system's, nothing under ``no-memory``, the gold turns under ``oracle``); ``sample`` is
    the repeat number (part of every cache key)."""

    question: Question
    memories: tuple[Retrieved, ...]
    condition: str = "system"
    seed: int = 0
    sample: int = 0


@dataclass(frozen=True, slots=True)
class ReaderResult:
    """What the reader wrote. ``answer`` is the final answer after the benchmark's own
    post-processing (LoCoMo's category-5 option mapping), ``reply`` the raw text of the main
    reader call; ``error`` (answer None) when a call failed after its retries. ``notes`` say
    anything the instrument decided (the seeded category-5 option order)."""

    answer: str | None
    reply: str | None
    prompt_sha256: str | None
    calls: tuple[Completion, ...]
    error: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One judged figure of one question.

    ``value`` is the benchmark's official value parsed the official way (Glasshouse 1/0.5/0,
    LongMemEval 1/0); ``unparsed`` is true when the official parser found no verdict and applied
    its default (still a value: "unparsed, official rule: WRONG"). ``value`` is None only with
    ``error`` (a transport failure or empty body after the official retries: out of the
    denominator) or with ``null_reason`` (the protocol does not judge this question, e.g. mem0 J
    skips LoCoMo category 5), each ``rule: explanation``.
    """

    metric: str
    value: float | None
    unparsed: bool
    reply: str | None
    prompt_sha256: str | None
    calls: tuple[Completion, ...]
    error: str | None = None
    null_reason: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeCase:
    """A judge-check case whose right verdict is known from the benchmark's own rules.

    ``case_type``: ``gold_verbatim``, ``accepted_alternative``, ``plausible_wrong``,
    ``unrelated``, ``partial_multi``, ``dont_know``, ``invented_abstain``; ``answer`` what the
    judge reads as the answer; ``expected`` the official value the judge should give."""

    case_type: str
    question: Question
    answer: str
    expected: float
    metric: str


class AnswerInstrument:
    """A benchmark's reader and judge, for one benchmark version and one instrument choice.

    Subclasses set the class attributes and implement :meth:`answer` and :meth:`judge`; every
    prompt they send is built from the benchmark's own file (see
    :mod:`recallbench.instruments.extract`), never retyped.
    """

    name: ClassVar[str] = ""
    """How records name the instrument: ``glasshouse-v0.1 official``, ``recallbench prompts v1``."""
    official: ClassVar[bool] = True
    modes: ClassVar[tuple[str, ...]] = ("answer",)
    reader_presets: ClassVar[tuple[str, ...]] = ()
    """Named reader presets (LongMemEval's prompt templates); the first is the default."""
    reader_is_judge: ClassVar[bool] = False
    """True when the benchmark's own protocol uses one model to read and to judge."""
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """The metrics :meth:`judge` returns, by mode (``{"memory": ("gh_memory",), ...}``)."""
    weighted_metrics: ClassVar[tuple[str, ...]] = ()
    """Judge metrics also reported weighted by ``Question.weight`` (``<metric>:weighted``)."""

    @property
    def reader(self) -> ModelPin | None:
        """The reader the benchmark pins (None: it pins none, the operator chooses)."""
        return None

    @property
    def judge_pin(self) -> ModelPin | None:
        """The judge the benchmark pins (None: it pins none)."""
        return None

    def with_models(self, reader: str | None, judge: str | None) -> AnswerInstrument:
        """The instrument as it calls the models the run uses (None: the pinned one). An
        instrument whose official code builds each request for the model it names (Glasshouse's
        provider routing) returns a copy that knows them; by default nothing changes, since the
        endpoint supplies the model."""
        return self

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        """Every instrument file read, for ``run.json`` and the card."""
        return ()

    def deviations(self) -> tuple[str, ...]:
        """Every step of the official protocol recallbench does not reproduce, in words."""
        return ()

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        """Write an answer from ``ctx.memories`` with the benchmark's reader prompt."""
        raise NotImplementedError

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        """Judge one question: the memories (``mode == "memory"``) or ``answer``."""
        raise NotImplementedError

    def empty_reader_request(self) -> ChatRequest | None:
        """The reader prompt with no memories in it, whose token count is subtracted from each
        reader call's to report the memories' share (None: not measured)."""
        return None

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        """Cases for ``recallbench judge-check``, expected verdicts from the official rules."""
        return []
