"""Glasshouse v0.1's official reader and judge, run from the authors' own ``judge.py``.

The instrument is ``glasshouse-v0.1/judge.py`` of ``wontopos/glasshouse`` at commit ``2eeb19e``
(:data:`JUDGE_FILE`), pinned by commit only: its SHA-256 is recorded in the cache's lock file
on first download ("pinned on first use") and any later copy must match it. recallbench never
retypes its text: the file's own definitions (:data:`OFFICIAL_NAMES`: the prompts, the per-axis
rules, ``rule_for``, ``_alts_block``, ``_call``, ``_verdict``, ``_vote``, ``judge_memory``,
``judge_answer``, ``judge_abstain``, ``generate_answer``, ``empty_prompt_tokens``, the models,
``JUDGE_MAX_TOKENS`` and ``PROVIDER_ORDER``) are compiled alone with
:func:`recallbench.instruments.extract.namespace` and called as they are, so the prompt, the
request body, the vote and the verdict parsing are the file's own.

Transport. The one thing replaced is the network. The official ``_call`` builds the OpenRouter
body (``temperature`` 0, ``max_tokens``, ``messages``, and for a model in ``PROVIDER_ORDER`` a
``provider`` block with ``allow_fallbacks: false``) and posts it with ``urllib``. Its
``urllib.request`` and ``time`` are stand-ins (``json`` is the real module): ``Request``
keeps the body the official code built and ``urlopen`` turns it into a
:class:`~recallbench.llm.types.ChatRequest` (``messages`` = the body's messages, ``settings`` =
the body minus ``model`` and ``messages``) and sends it through the ``CallLLM`` the pipeline
handed to :meth:`GlasshouseInstrument.answer` or :meth:`GlasshouseInstrument.judge`; the reply
goes back to the official code as an OpenRouter-shaped body, which then strips and parses it.

**Retries: the body is captured once and the official retry rules travel in the
:class:`~recallbench.instruments.protocol.ModelPin`** (``tries`` 3 read from ``_call``'s
``retries`` default, ``timeout_s`` 90 from its ``urlopen`` call, ``empty_is_failure`` as its
``if not c: raise`` says, ``backoff_s`` (2, 4) evaluated from its ``time.sleep(2 * (i + 1))``
between tries). The alternative, letting the official loop run real attempts through the
``CallLLM``, would stack the official loop on top of the client's retry policy (up to nine
attempts for one official call) and sleep the official waits in the caller's thread, and every
official attempt would be one more cached call with the same key, so the cache would hand the
failed reply back instead of retrying. So a call that failed after the client's retries (or
came back empty) leaves the official code at once (a ``BaseException`` its
``except Exception`` does not catch): the judgement is null with that error, never WRONG, as
``score.py`` leaves such a question "not scorable, not 0". An exception raised by the
``CallLLM`` itself is a bug and propagates with its traceback.

Threads. The pipeline calls :meth:`~GlasshouseInstrument.answer` and
:meth:`~GlasshouseInstrument.judge` from many threads at once. The namespace is shared and never
changed per call: the current ``CallLLM`` and what one call captured live in a thread-local,
set on entry and cleared on exit. (The official ``PROVIDERS_SEEN`` dict is filled by the
official code as it is; recallbench reads the provider from each ``Completion``.)

Models. The model actually sent is the endpoint's. :meth:`GlasshouseInstrument.with_models`
returns an instrument whose official namespace has ``ANSWER_MODEL`` (the reader) and
``JUDGES`` (one judge) set to the models the pipeline will call, so the official ``_call``
builds the provider block by its own rule (only for models in ``PROVIDER_ORDER``).
:attr:`~GlasshouseInstrument.reader` and :attr:`~GlasshouseInstrument.judge_pin` always say
what the benchmark pins: the reader ``openai/gpt-4o-mini`` (``ANSWER_MODEL``) with the reader
call's ``max_tokens`` 200 (``_call``'s default), the judge ``google/gemini-3.7-flash``
(``JUDGES``) with ``JUDGE_MAX_TOKENS`` 2000, both at ``temperature`` 0 through
``https://openrouter.ai/api/v1`` (``OR_URL`` without ``/chat/completions``) with the key in
``OPENROUTER_API_KEY`` (the variable ``score.py`` reads).

Dispatch, checked against ``glasshouse-v0.1/score.py`` (``judge_scores``, ``is_no_memory``,
``NO_MEMORY_AXES``) and the README at the same commit (its section "Per axis scoring: what
counts as right", which ``judge.py`` calls "Scoring by axis", and the table of modes):

* **memory mode**: ``judge_memory`` on every question, with the axis's rule
  (``rule_for(axis)``), ``gold_answer``, ``required_memories`` and the accepted alternatives
  (``gold_alts``); the memories are the texts the system returned. **Abstention questions**
  (axis ``ABSTAIN`` or ``FALSE_MEMORY``, or ``expect: no_memory``, which includes 10
  ``XLING_QUERY`` rows from the abstention question Q326) **are not scored in memory mode**:
  ``score.py`` leaves them "not scorable in memory mode" and sends nothing, and the README says
  ``ABSTAIN`` and ``FALSE_MEMORY`` "are not graded in memory mode" (a list of memories cannot
  say "I don't know"). So they are null here (``not_scorable: ...``), out of the denominator.
  ``judge.py`` also defines ``judge_abstain`` (the ``ABSTAIN_PROMPT``, CORRECT / WRONG), which
  nothing in the repository calls; it is offered as a labelled non-standard variant
  (``judge_variant="judge-abstain"``, :class:`GlasshouseAbstainJudgeInstrument`) that scores
  those questions with it, CORRECT 1.0 and anything else 0.0, keeping its parsing
  ``"CORRECT" in reply.upper()`` (so a reply "INCORRECT" counts as CORRECT: reproduced, not
  fixed). This is where ``judge.py``'s design and the official scorer disagree; recallbench
  follows the scorer.
* **answer mode**: the reader is ``generate_answer`` (the ``ANSWER_PROMPT``; memories joined
  as ``- text`` lines, ``(none)`` when there are none) asked the question as asked (the
  row's ``question`` for ``XLING_QUERY``, else ``question_en``), then ``judge_answer`` on every
  axis, abstention axes included, with ``rule_for(axis)`` and the ``_alts_block`` of
  ``gold_alts``; an abstention question of another axis (the 10 ``XLING_QUERY`` rows) is judged
  under the ``ABSTAIN`` rule, as ``score.py`` does. The judge always reads ``question_en``.
* **FALSE_MEMORY probes** come from ``glasshouse_v0.1_probes.jsonl`` (500 rows, kinds swap,
  invert, ghost and graft; ``--questions probes``): the loader maps each to a question with
  axis ``FALSE_MEMORY``, ``expect: no_memory``, no evidence by design and the raw row (its
  ``false_claim_en`` too) in ``Question.extra``; they carry no ``required_memories`` and no
  ``gold_alts``, so the judge reads "(nothing required)" and no alternatives block. Null in
  memory mode, judged in answer mode under the ``FALSE_MEMORY`` rule; the README keeps the
  probe file apart from the others (never one number).

The verdict is the official ``_verdict`` (the last of FULL / PARTIAL / WRONG; WRONG when none
appears) through the official ``_vote`` (the median over ``JUDGES``, one judge);
``JudgeResult.unparsed`` is true when no verdict word (read from ``_verdict``'s own loop)
appears in a judge's reply, i.e. the official default was applied.

:meth:`GlasshouseInstrument.judge_cases` builds ``recallbench judge-check`` cases whose right
verdict follows from the axis rules as the README states them; the mapping is recallbench's
reading of those rules and is documented there.
"""

from __future__ import annotations

import ast
import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

from recallbench.benchmarks.glasshouse.files import COMMIT
from recallbench.benchmarks.glasshouse.metrics import (
    ABSTENTION_AXES,
    contains,
    is_abstention_question,
    says_dont_know,
)
from recallbench.contracts import Question
from recallbench.errors import OptionError
from recallbench.instruments import extract
from recallbench.instruments.pins import InstrumentFile, fetch_instrument
from recallbench.instruments.protocol import (
    OFFICIAL,
    AnswerContext,
    AnswerInstrument,
    InstrumentFileRecord,
    InstrumentOptions,
    JudgeCase,
    JudgeResult,
    ModelPin,
    ReaderResult,
)
from recallbench.llm.types import CallLLM, ChatRequest, Completion

MEMORY = "gh_memory"
"""Memory mode: the judge's value (1 FULL, 0.5 PARTIAL, 0 WRONG) for the returned memories."""
ANSWER = "gh_answer"
"""Answer mode: the judge's value for the answer the reader wrote from the memories."""

JUDGE_FILE = InstrumentFile(
    name="glasshouse",
    repo="wontopos/glasshouse",
    commit=COMMIT,
    path="glasshouse-v0.1/judge.py",
    sha256=None,
)
"""``judge.py`` at the data's commit, pinned by commit only (its hash recorded on first use)."""

OFFICIAL_NAMES: tuple[str, ...] = (
    "OR_URL",
    "JUDGES",
    "JUDGE_MAX_TOKENS",
    "ANSWER_MODEL",
    "AXIS_RULE",
    "DEFAULT_RULE",
    "rule_for",
    "JUDGE_PROMPT",
    "ANSWER_JUDGE_PROMPT",
    "ANSWER_PROMPT",
    "ABSTAIN_PROMPT",
    "PROVIDER_ORDER",
    "PROVIDERS_SEEN",
    "_call",
    "generate_answer",
    "empty_prompt_tokens",
    "SCORE",
    "_verdict",
    "_vote",
    "_alts_block",
    "judge_memory",
    "judge_answer",
    "judge_abstain",
)
"""The top-level definitions of ``judge.py`` compiled and run (nothing else of the file runs)."""

API_KEY_ENV = "OPENROUTER_API_KEY"
"""The variable Glasshouse's ``score.py`` reads the OpenRouter key from."""
KEY = ""
"""What the official functions get as ``key``: the stand-in transport drops the header, and the
recallbench client reads the key from the endpoint's variable (never from here)."""
CHAT_PATH = "/chat/completions"

JUDGE_ABSTAIN = "judge-abstain"
"""The non-standard ``judge_variant``: abstention questions judged with ``judge_abstain`` in
memory mode."""

DONT_KNOW = "I don't know."
"""The "I don't know" answer of the judge-check cases (recallbench's wording)."""
DONT_KNOW_PARTIAL_AXES: frozenset[str] = frozenset({"UPDATE", "STALE", "CONTRADICT"})
"""Axes whose rule gives "I don't know" PARTIAL (recallbench's reading of the README table and
``AXIS_RULE``: "PARTIAL if it says it does not know"); abstention questions give it FULL, every
other axis WRONG (RECONCILE says so outright)."""
CASES_PER_AXIS = 4
"""Questions per axis that :meth:`GlasshouseInstrument.judge_cases` builds cases from."""

NOT_SCORABLE = (
    "not_scorable: an abstention question (axis ABSTAIN or FALSE_MEMORY, or expect no_memory) "
    "is not scored in memory mode by Glasshouse's score.py and README (a list of memories "
    "cannot say it does not know); it is judged in answer mode"
)


class GlasshouseInstrumentError(OptionError):
    """An instrument option Glasshouse's judge does not offer (the message says what does)."""


# ----------------------------------------------------------------------------- the transport


class _Captured(BaseException):
    """Stops the official code after its request body was captured (nothing was sent)."""


class _Failed(BaseException):
    """A call that failed after the client's retries, or came back empty: leaves the official
    code past its ``except Exception`` (its retries are the client's, see the module doc)."""

    def __init__(self, completion: Completion, error: str) -> None:
        super().__init__(error)
        self.completion = completion
        self.error = error


class _Bug(BaseException):
    """An exception of recallbench's own code inside the official call, carried out unchanged."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(repr(error))
        self.error = error


@dataclass
class _CallState:
    """What one instrument call (one thread) hands the stand-ins and gets back from them."""

    call: CallLLM | None
    purpose: str
    requests: list[ChatRequest] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)
    timeouts: list[float | None] = field(default_factory=list)


class _Request:
    """``urllib.request.Request`` as the official ``_call`` uses it: URL, body, headers."""

    def __init__(
        self, url: str, data: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        self.full_url = url
        self.data = data
        self.headers = dict(headers or {})


class _Response:
    """An OpenRouter-shaped reply body for the official ``json.load`` (a context manager)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def read(self, *_: Any) -> bytes:
        return self._body

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *_: object) -> None:
        return None


def _reply_body(completion: Completion, text: str) -> bytes:
    choice: dict[str, Any] = {"message": {"content": text}}
    if completion.finish_reason is not None:
        choice["finish_reason"] = completion.finish_reason
    usage = {
        k: v
        for k, v in (
            ("prompt_tokens", completion.prompt_tokens),
            ("completion_tokens", completion.completion_tokens),
        )
        if v is not None
    }
    body: dict[str, Any] = {"choices": [choice]}
    if usage:
        body["usage"] = usage
    if completion.provider is not None:
        body["provider"] = completion.provider
    return json.dumps(body).encode()


class _Transport:
    """The stand-in ``urllib`` and ``time`` the official code runs with, thread by thread."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.urllib = SimpleNamespace(
            request=SimpleNamespace(Request=_Request, urlopen=self._urlopen)
        )
        self.time = SimpleNamespace(sleep=self._sleep)

    def _state(self) -> _CallState:
        state: _CallState | None = getattr(self._local, "state", None)
        if state is None:
            raise _Bug(RuntimeError("judge.py's _call ran outside a recallbench instrument call"))
        return state

    def _urlopen(self, req: _Request, timeout: float | None = None) -> _Response:
        state = self._state()
        payload = json.loads(req.data or b"{}")
        request = ChatRequest(
            messages=tuple(dict(m) for m in payload.get("messages", ())),
            settings={k: v for k, v in payload.items() if k not in ("model", "messages")},
            purpose=state.purpose,
        )
        state.requests.append(request)
        state.timeouts.append(timeout)
        if state.call is None:
            raise _Captured()
        try:
            completion = state.call(request)
        except Exception as exc:
            raise _Bug(exc) from exc
        state.completions.append(completion)
        if completion.error is not None or completion.text is None:
            raise _Failed(completion, completion.error or "no reply text")
        if not completion.text:
            # the official `if not c:` failure; its retries are the client's (module doc)
            raise _Failed(completion, f"empty response (finish={completion.finish_reason})")
        return _Response(_reply_body(completion, completion.text))

    def _sleep(self, seconds: float) -> None:
        raise _Bug(
            RuntimeError(
                f"judge.py's retry loop was entered (sleep {seconds}): a reply recallbench "
                "handed to the official code failed its parsing"
            )
        )

    def run(
        self, call: CallLLM | None, purpose: str, fn: Callable[..., Any], *args: Any
    ) -> _Outcome:
        """Run one official function with ``call`` as this thread's transport."""
        state = _CallState(call, purpose)
        self._local.state = state
        try:
            return _Outcome(fn(*args), state, None)
        except _Captured:
            return _Outcome(None, state, None)
        except _Failed as failed:
            return _Outcome(None, state, failed)
        except _Bug as bug:
            raise bug.error from None
        finally:
            self._local.state = None


@dataclass
class _Outcome:
    result: Any
    state: _CallState
    failed: _Failed | None

    @property
    def request(self) -> ChatRequest | None:
        return self.state.requests[-1] if self.state.requests else None

    @property
    def prompt_sha256(self) -> str | None:
        request = self.request
        return request.prompt_sha256 if request is not None else None


# ----------------------------------------------------------------------------- reading judge.py


def _verdict_words(module: ast.Module, where: str) -> tuple[str, ...]:
    """The verdict words ``_verdict`` looks for, read from its own ``for w in (...)`` loop."""
    for node in extract.walk(extract.function(module, "_verdict", where)):
        if isinstance(node, ast.For):
            words = ast.literal_eval(node.iter)
            if isinstance(words, tuple) and all(isinstance(w, str) for w in words):
                return words
    raise extract.InstrumentFormatError(f"{where}: _verdict has no loop over its verdict words")


def _abstain_word(module: ast.Module, where: str) -> str:
    """The word ``judge_abstain`` looks for in the reply (``"CORRECT" in ...upper()``)."""
    for node in extract.walk(extract.function(module, "judge_abstain", where)):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.In)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            return node.left.value
    raise extract.InstrumentFormatError(f"{where}: judge_abstain tests no word in the reply")


def _call_retry_rules(module: ast.Module, where: str) -> tuple[int, tuple[float, ...]]:
    """``_call``'s ``retries`` default and the waits of its ``time.sleep(...)`` between tries."""
    fn = extract.function(module, "_call", where)
    names = [a.arg for a in fn.args.args]
    defaults = dict(zip(names[len(names) - len(fn.args.defaults) :], fn.args.defaults, strict=True))
    if "retries" not in defaults:
        raise extract.InstrumentFormatError(f"{where}: _call has no retries default")
    tries = int(ast.literal_eval(defaults["retries"]))
    for node in extract.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sleep"
            and node.args
        ):
            waits = tuple(
                float(extract.evaluate(node.args[0], where, {"i": i})) for i in range(tries - 1)
            )
            return tries, waits
    raise extract.InstrumentFormatError(f"{where}: _call sleeps nowhere between tries")


def _base_url(or_url: str, where: str) -> str:
    if not or_url.endswith(CHAT_PATH):
        raise extract.InstrumentFormatError(f"{where}: OR_URL {or_url!r} is not a chat URL")
    return or_url[: -len(CHAT_PATH)]


# ----------------------------------------------------------------------------- question fields


def _field(q: Question, name: str) -> Any:
    return q.extra.get(name) if q.extra else None


def judged_question(q: Question) -> str:
    """What the judge reads as the question: ``question_en`` (score.py: ``q.get("question_en")
    or ""``); a question without the raw row falls back to its text."""
    if not q.extra:
        return q.text
    return str(_field(q, "question_en") or "")


def asked_question(q: Question) -> str:
    """What the reader is asked: the row's ``question`` (XLING_QUERY), else ``question_en``."""
    return str(_field(q, "question") or judged_question(q))


def _gold(q: Question) -> Any:
    return _field(q, "gold_answer") if q.extra else q.gold


def _required(q: Question) -> list[Any]:
    return list(_field(q, "required_memories") or [])


def _alts(q: Question) -> Any:
    """``gold_alts`` exactly as the row has it (score.py passes ``q.get("gold_alts")``)."""
    return _field(q, "gold_alts") if q.extra else list(q.alternates)


def _memory_texts(ctx: AnswerContext) -> list[str]:
    """The memories as the official code gets them: each returned text, in order (score.py's
    ``memory_list`` of ``memories_returned``)."""
    return [m.text for m in ctx.memories]


def _answer_axis(q: Question) -> str:
    """The axis whose rule judges an answer: ABSTAIN for an abstention question of another axis
    (score.py: ``if is_no_memory(q) and ax not in NO_MEMORY_AXES: ax = "ABSTAIN"``)."""
    if is_abstention_question(q) and q.axis not in ABSTENTION_AXES:
        return "ABSTAIN"
    return q.axis


# ----------------------------------------------------------------------------- the instrument


class GlasshouseInstrument(AnswerInstrument):
    """Glasshouse v0.1's reader and judge: ``judge.py``'s own functions over recallbench's
    client (see the module docstring for the transport, the dispatch and the pins).

    Build it with :func:`glasshouse_answering` (``Benchmark.answering``); the pipeline then
    calls :meth:`with_models` with the reader and judge models its endpoints will call.
    """

    name: ClassVar[str] = "glasshouse-v0.1 official"
    official: ClassVar[bool] = True
    modes: ClassVar[tuple[str, ...]] = ("memory", "answer")
    reader_presets: ClassVar[tuple[str, ...]] = ()
    reader_is_judge: ClassVar[bool] = False
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "memory": (MEMORY,),
        "answer": (ANSWER,),
    }
    weighted_metrics: ClassVar[tuple[str, ...]] = (MEMORY, ANSWER)
    abstain_judge: ClassVar[bool] = False
    """True for the non-standard variant that judges abstention questions in memory mode."""

    def __init__(
        self,
        options: InstrumentOptions,
        reader_model: str | None = None,
        judge_model: str | None = None,
    ) -> None:
        """Download (or read from the cache) and verify ``judge.py``, compile its definitions,
        and read the pins; ``reader_model`` / ``judge_model`` are the models actually called
        (None: the pinned ones)."""
        self.options = options
        loaded = fetch_instrument(JUDGE_FILE, options.cache_dir)
        where = f"{JUDGE_FILE.repo}@{JUDGE_FILE.commit[:7]}:{JUDGE_FILE.path}"
        module = extract.parse(loaded.text, where)
        self._record = loaded.record
        self._transport = _Transport()
        self._ns = extract.namespace(
            module,
            OFFICIAL_NAMES,
            where,
            provided={"urllib": self._transport.urllib, "json": json, "time": self._transport.time},
        )
        self._words = _verdict_words(module, where)
        score: Mapping[str, float] = self._ns["SCORE"]
        self._score = dict(score)
        wrong = min(score, key=lambda w: score[w])
        self._abstain_words = (_abstain_word(module, where), wrong)
        tries, waits = _call_retry_rules(module, where)
        base_url = _base_url(str(self._ns["OR_URL"]), where)
        pinned_reader = str(self._ns["ANSWER_MODEL"])
        pinned_judge = str(self._ns["JUDGES"][0][0])
        reader_cap = self._transport.run(None, "reader", self._ns["generate_answer"], "x", [], KEY)
        judge_cap = self._transport.run(
            None, "judge", self._ns["judge_memory"], "x", None, [], [], "BASIC", KEY
        )
        assert reader_cap.request is not None and judge_cap.request is not None
        self._reader_pin = ModelPin(
            model=pinned_reader,
            settings=dict(reader_cap.request.settings),
            base_url=base_url,
            api_key_env=API_KEY_ENV,
            tries=tries,
            timeout_s=float(reader_cap.state.timeouts[-1] or 0.0),
            empty_is_failure=True,
            backoff_s=waits,
            source=f"{JUDGE_FILE.path} ANSWER_MODEL; body built by its _call (generate_answer)",
        )
        self._judge_pin = ModelPin(
            model=pinned_judge,
            settings=dict(judge_cap.request.settings),
            base_url=base_url,
            api_key_env=API_KEY_ENV,
            tries=tries,
            timeout_s=float(judge_cap.state.timeouts[-1] or 0.0),
            empty_is_failure=True,
            backoff_s=waits,
            source=f"{JUDGE_FILE.path} JUDGES, JUDGE_MAX_TOKENS; body built by its _call (_vote)",
        )
        # The models actually called (per instrument, never per call).
        if reader_model is not None:
            self._ns["ANSWER_MODEL"] = reader_model
        if judge_model is not None:
            self._ns["JUDGES"] = [(judge_model, judge_model)]
        self.reader_model = str(self._ns["ANSWER_MODEL"])
        self.judge_model = str(self._ns["JUDGES"][0][0])

    # -- what is pinned

    @property
    def reader(self) -> ModelPin:
        """The pinned reader: ``ANSWER_MODEL`` with the settings its call sends."""
        return self._reader_pin

    @property
    def judge_pin(self) -> ModelPin:
        """The pinned judge: ``JUDGES``' model with the settings its call sends."""
        return self._judge_pin

    def with_models(self, reader: str | None, judge: str | None) -> GlasshouseInstrument:
        """The same instrument calling ``reader`` and ``judge`` (None: the pinned one).

        The official code builds each body for the model named, so the provider block follows
        ``PROVIDER_ORDER`` (present only for models listed there); :attr:`reader` and
        :attr:`judge_pin` still say what Glasshouse pins. Cheap: ``judge.py`` comes from the
        cache.
        """
        return type(self)(self.options, reader_model=reader, judge_model=judge)

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        return (self._record,)

    def deviations(self) -> tuple[str, ...]:
        return (
            "transport: judge.py's own _call builds every request body and recallbench sends it "
            "through its client to the endpoint the operator chose, instead of urllib to "
            "OR_URL; the official 3 tries, 90 s timeout, empty-body failure and 2 s / 4 s waits "
            "are the client's retry policy (ModelPin), the official loop is not re-run",
            "the model sent is the endpoint's: with a reader or judge other than the pinned ones "
            "the official code builds the body for that model (its provider block only for "
            "models in PROVIDER_ORDER), and the run is not a Glasshouse v0.1 score",
            "score.py's judge_scores is not run: its dispatch (question_en to the judge, the "
            "row's question else question_en to the reader, gold_answer, required_memories, "
            "gold_alts, abstention rows of another axis judged under ABSTAIN, abstention "
            "questions not scored in memory mode) is recallbench's reading of score.py at "
            "the same commit",
            "a call that failed after the retries is null with the client's error "
            "(score.py keeps the first 300 characters of the exception)",
            "PROVIDERS_SEEN (the official record of which server answered) stays in memory; "
            "recallbench records the provider of every call on its Completion",
        )

    # -- running the official functions

    def _run(self, call: CallLLM, purpose: str, name: str, *args: Any) -> _Outcome:
        return self._transport.run(call, purpose, self._ns[name], *args)

    def empty_reader_request(self) -> ChatRequest:
        """The request ``empty_prompt_tokens`` builds (``ANSWER_PROMPT`` with memories
        "(none)", question "x", ``max_tokens`` 1), captured from the official function for the
        reader actually called; nothing is sent."""
        out = self._transport.run(None, "reader:empty", self._ns["empty_prompt_tokens"], KEY)
        assert out.request is not None
        return out.request

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        """``generate_answer(question as asked, returned texts)``; ``answer`` is what the
        official code returns (the reply stripped), ``error`` when the call failed."""
        q = ctx.question
        out = self._run(
            call, "reader", "generate_answer", asked_question(q), _memory_texts(ctx), KEY
        )
        calls = tuple(out.state.completions)
        if out.failed is not None:
            return ReaderResult(None, None, out.prompt_sha256, calls, error=out.failed.error)
        return ReaderResult(
            answer=str(out.result),
            reply=calls[-1].text if calls else None,
            prompt_sha256=out.prompt_sha256,
            calls=calls,
        )

    def _result(self, metric: str, out: _Outcome, value_of: Callable[[Any], float]) -> JudgeResult:
        calls = tuple(out.state.completions)
        if out.failed is not None:
            return JudgeResult(
                metric, None, False, None, out.prompt_sha256, calls, error=out.failed.error
            )
        reply = calls[-1].text if calls else None
        return JudgeResult(
            metric=metric,
            value=value_of(out.result),
            unparsed=any(self._unparsed(c.text or "", metric) for c in calls),
            reply=reply,
            prompt_sha256=out.prompt_sha256,
            calls=calls,
        )

    def _unparsed(self, reply: str, metric: str) -> bool:
        words = self._abstain_words if metric == "abstain" else self._words
        up = reply.upper()
        return not any(w in up for w in words)

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        """Judge one question the official way (module docstring: "Dispatch").

        ``mode`` ``memory``: ``judge_memory`` on the returned texts (abstention questions null
        with :data:`NOT_SCORABLE`); ``answer``: ``judge_answer`` on ``answer``. The value is
        the official median of the ``_verdict`` values; null with ``error`` when a call failed.
        """
        q = ctx.question
        if mode == "memory":
            if is_abstention_question(q):
                return (self._judge_abstention_memory(ctx, call),)
            out = self._run(
                call,
                "judge:memory",
                "judge_memory",
                judged_question(q),
                _gold(q),
                _required(q),
                _memory_texts(ctx),
                q.axis,
                KEY,
                _alts(q),
            )
            return (self._result(MEMORY, out, lambda r: float(r[0])),)
        if mode == "answer":
            out = self._run(
                call,
                "judge:answer",
                "judge_answer",
                judged_question(q),
                _gold(q),
                _required(q),
                answer,
                _answer_axis(q),
                KEY,
                _alts(q),
            )
            return (self._result(ANSWER, out, lambda r: float(r[0])),)
        raise GlasshouseInstrumentError(
            f"glasshouse-v0.1: no judge for mode {mode!r}; the official modes are "
            f"{', '.join(self.modes)}"
        )

    def _judge_abstention_memory(self, ctx: AnswerContext, call: CallLLM) -> JudgeResult:
        return JudgeResult(MEMORY, None, False, None, None, (), null_reason=NOT_SCORABLE)

    # -- judge-check

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        """Known-verdict cases for ``recallbench judge-check``, deterministic for the seed.

        Per axis, :data:`CASES_PER_AXIS` questions (drawn with ``options.seed``), each giving:
        ``gold_verbatim`` (FULL), ``accepted_alternative`` (the first ``gold_alts`` wording
        other than the gold; FULL), ``plausible_wrong`` (the gold of another question of the
        same axis that neither contains nor is contained in this one's gold or alternatives;
        WRONG), ``unrelated`` (the gold of a question of another axis, never an "I don't know"
        one; WRONG), ``partial_multi`` (GATHER: the first of ``gold_parts`` alone; PARTIAL),
        ``dont_know`` (:data:`DONT_KNOW`: PARTIAL on UPDATE, STALE and CONTRADICT, FULL on
        abstention questions, WRONG elsewhere, RECONCILE included) and, on abstention
        questions, ``invented_abstain`` (a probe's own ``false_claim_en``, else the gold of a
        non-abstention question of the same domain; WRONG). The expected values are
        recallbench's reading of the axis rules as the README and ``AXIS_RULE`` state them,
        scored with the official ``SCORE``.

        ``mode`` ``memory``: the case's answer is handed to the judge as the one returned
        memory; abstention questions and the ``dont_know`` cases are left out (not scored in
        memory mode; a memory cannot say it does not know). ``answer``: it is the answer.
        """
        if mode not in self.modes:
            raise GlasshouseInstrumentError(
                f"glasshouse-v0.1: no judge-check for mode {mode!r}; choose "
                f"{' or '.join(self.modes)}"
            )
        metric = MEMORY if mode == "memory" else ANSWER
        full, partial, wrong = (self._score[w] for w in ("FULL", "PARTIAL", "WRONG"))
        pool = [q for q in questions if isinstance(_gold(q), str) and str(_gold(q)).strip()]
        if mode == "memory":
            pool = [q for q in pool if not is_abstention_question(q)]
        by_axis: dict[str, list[Question]] = {}
        for q in pool:
            by_axis.setdefault(q.axis, []).append(q)
        seed = self.options.seed
        cases: list[JudgeCase] = []
        for axis in sorted(by_axis):
            group = by_axis[axis]
            rng = random.Random(f"glasshouse-judge-check:{seed}:{axis}")
            picked = rng.sample(group, min(CASES_PER_AXIS, len(group)))
            for q in sorted(picked, key=lambda x: x.id):
                cases += self._cases_for(q, pool, by_axis, metric, (full, partial, wrong), seed)
        return cases

    def _cases_for(
        self,
        q: Question,
        pool: Sequence[Question],
        by_axis: Mapping[str, Sequence[Question]],
        metric: str,
        values: tuple[float, float, float],
        seed: int,
    ) -> list[JudgeCase]:
        full, partial, wrong = values
        rng = random.Random(f"glasshouse-judge-check:{seed}:{q.id}")
        gold = str(_gold(q))
        alts = [str(a) for a in (_alts(q) or []) if a and str(a) != gold]
        accepted = [gold, *alts]
        out = [JudgeCase("gold_verbatim", q, gold, full, metric)]
        if alts:
            out.append(JudgeCase("accepted_alternative", q, alts[0], full, metric))

        def distinct(other: Question) -> bool:
            g = _gold(other)
            if other.id == q.id or not isinstance(g, str) or not g.strip() or says_dont_know(g):
                return False
            return not any(contains(g, a) or contains(a, g) for a in accepted)

        def draw(candidates: Sequence[Question]) -> Question | None:
            """A seeded draw among ``candidates`` of the first one that is distinct."""
            order = list(candidates)
            rng.shuffle(order)
            return next((o for o in order if distinct(o)), None)

        same = draw(by_axis.get(q.axis, ()))
        if same is not None:
            out.append(JudgeCase("plausible_wrong", q, str(_gold(same)), wrong, metric))
        unrelated = draw([o for o in pool if o.axis != q.axis])
        if unrelated is not None:
            out.append(JudgeCase("unrelated", q, str(_gold(unrelated)), wrong, metric))
        parts = [p for p in (_field(q, "gold_parts") or []) if isinstance(p, str) and p]
        if q.axis == "GATHER" and len(parts) >= 2:
            out.append(JudgeCase("partial_multi", q, parts[0], partial, metric))
        if metric == ANSWER:
            if is_abstention_question(q):
                dont_know = full
            elif q.axis in DONT_KNOW_PARTIAL_AXES:
                dont_know = partial
            else:
                dont_know = wrong
            out.append(JudgeCase("dont_know", q, DONT_KNOW, dont_know, metric))
            if is_abstention_question(q):
                claim = _field(q, "false_claim_en")
                if isinstance(claim, str) and claim.strip():
                    invented = claim
                else:
                    domain = _field(q, "domain")
                    values = [o for o in pool if not is_abstention_question(o)]
                    near = draw([o for o in values if _field(o, "domain") == domain])
                    chosen = near if near is not None else draw(values)
                    invented = str(_gold(chosen)) if chosen is not None else ""
                if invented:
                    out.append(JudgeCase("invented_abstain", q, invented, wrong, metric))
        return out


class GlasshouseAbstainJudgeInstrument(GlasshouseInstrument):
    """Non-standard: as :class:`GlasshouseInstrument`, but memory mode judges abstention
    questions with ``judge.py``'s ``judge_abstain`` (CORRECT 1.0, else 0.0), which Glasshouse's
    scorer never calls. Its parsing is kept: ``"CORRECT" in reply.upper()``, so "INCORRECT"
    counts as CORRECT. ``unparsed``: neither CORRECT nor the official default's word WRONG in
    the reply."""

    name: ClassVar[str] = "glasshouse-v0.1 official + judge_abstain (non-standard)"
    official: ClassVar[bool] = False
    abstain_judge: ClassVar[bool] = True

    def deviations(self) -> tuple[str, ...]:
        return (
            *super().deviations(),
            "memory mode scores abstention questions with judge.py's judge_abstain (CORRECT 1, "
            "otherwise 0), which score.py never calls (it leaves them not scorable): not a "
            "Glasshouse v0.1 score",
            "judge_abstain's parsing is kept as published: 'CORRECT' in reply.upper(), so a "
            "reply 'INCORRECT' counts as CORRECT",
        )

    def _judge_abstention_memory(self, ctx: AnswerContext, call: CallLLM) -> JudgeResult:
        out = self._run(
            call, "judge:abstain", "judge_abstain", judged_question(ctx.question),
            _memory_texts(ctx), KEY,
        )  # fmt: skip
        result = self._result("abstain", out, lambda r: 1.0 if r[0] else 0.0)
        return JudgeResult(
            MEMORY,
            result.value,
            result.unparsed,
            result.reply,
            result.prompt_sha256,
            result.calls,
            error=result.error,
        )


def glasshouse_answering(options: InstrumentOptions) -> GlasshouseInstrument:
    """``Benchmark.answering`` for Glasshouse v0.1: the official instrument, or with
    ``judge_variant="judge-abstain"`` the labelled non-standard variant.

    Refused (:class:`GlasshouseInstrumentError`): another prompt set than ``official`` (the
    labelled ``recallbench-v1`` prompts are recallbench's generic instrument), a reader preset
    (Glasshouse pins one reader prompt; another reader model goes through
    :meth:`GlasshouseInstrument.with_models`), another judge variant.
    """
    if options.prompts != OFFICIAL:
        raise GlasshouseInstrumentError(
            f"glasshouse-v0.1: its instrument is the official judge.py (prompts {OFFICIAL!r}); "
            f"{options.prompts!r} is not one of its own"
        )
    if options.reader_preset is not None:
        raise GlasshouseInstrumentError(
            f"glasshouse-v0.1: judge.py has one reader prompt and no presets "
            f"({options.reader_preset!r} given); choose the reader model with --reader"
        )
    if options.judge_variant not in (None, JUDGE_ABSTAIN):
        raise GlasshouseInstrumentError(
            f"glasshouse-v0.1: unknown judge variant {options.judge_variant!r}; the only one is "
            f"{JUDGE_ABSTAIN!r} (non-standard: abstention questions judged with judge_abstain "
            "in memory mode)"
        )
    if options.judge_variant == JUDGE_ABSTAIN:
        return GlasshouseAbstainJudgeInstrument(options)
    return GlasshouseInstrument(options)
