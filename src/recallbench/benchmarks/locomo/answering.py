"""LoCoMo's answer instrument: its own reader, and mem0's LLM judge as a labelled variant.

The official LoCoMo score is token F1 on a generated answer (``LocomoRules`` scores
``Observation.answer``), so LoCoMo's instrument is its **reader**: ``task_eval/evaluate_gpts.py``
of ``snap-research/LoCoMo`` (branch ``code``, commit ``9228632``), byte-pinned by SHA-256 and
downloaded into the cache, never committed. Nothing of it is retyped; per question the
instrument runs the file's own code:

* the question is built by running ``get_gpt_answers``'s own ``if qa['category'] == 2: ...
  elif qa['category'] == 5: ... else: ...`` chain (the category-2 suffix, the category-5
  "Select the correct answer" template and its "Not mentioned in the conversation" option), on
  ``qa = {question, category, answer}``; the official ``random.random() < 0.5`` option draw is
  replaced by a seeded one, ``random.Random(f"{seed}:{question_id}").random()``, and the order
  drawn is written to ``ReaderResult.notes``;
* the context is the official ``get_rag_context`` (dialog mode) run on a stand-in context
  database holding the memories the reader may see, with a stand-in ``np`` whose ranking is the
  system's order and ``top_k`` the number of lines, so it joins ``date_time + ': ' + context``
  lines with ``'\\n'`` exactly as LoCoMo's RAG evaluation does; each line's ``context`` is the
  expression ``prepare_for_rag`` appends to ``dialogs`` (``speaker + ' said, "' + clean_text +
  '"'``), evaluated on the turn, its ``date_time`` the turn's session date. A memory with
  resolved turns gives one line per turn (its turns in order, memories in the system's order,
  nothing deduplicated); a memory without turns gives one line, its text, dated
  :data:`DATE_UNKNOWN`;
* the query and the call are the body of ``get_gpt_answers``'s ``if args.batch_size == 1:``
  branch, run as written (``QA_PROMPT`` or ``QA_PROMPT_CAT_5``, the official
  ``get_cat_5_answer`` mapping, the final ``.strip()``), with its ``run_chatgpt`` replaced by a
  call through the pipeline's client: one user message, ``max_tokens`` from
  ``num_tokens_request``, ``temperature`` and ``n`` from ``num_gen`` (32, 0 and 1 in the file).

LoCoMo pins no reader model (its script takes gpt-3.5 and gpt-4 variants as an option):
:attr:`LocomoInstrument.reader` is None and F1 needs no judge, so the official instrument has
no judge metric and :meth:`LocomoInstrument.judge` returns ``()``.

The variant ``judge_variant="mem0-j"`` adds **mem0 J** (:data:`MEM0_J_LABEL`): the LLM-judge
score vendors quote for LoCoMo, from ``evaluation/metrics/llm_judge.py`` of ``mem0ai/mem0`` at
``b3ede5b`` (byte-pinned). Its ``evaluate_llm_judge`` runs as written (``ACCURACY_PROMPT``, the
``create(...)`` call's model and settings, its ``json.loads(extract_json(...))["label"] ==
"CORRECT"`` verdict) with its ``client`` replaced by the pipeline's client and ``extract_json``
taken from ``mem0/memory/utils.py`` at the same commit (byte-pinned too), run alone. Category 5
is skipped as its ``main()`` skips it (null, :data:`RULE_MEM0_SKIPS_CAT5`). A reply its parser
cannot read (not JSON, not an object, no ``"label"``) makes the official script raise and stop;
recallbench scores it 0, the value the official rule gives any label but ``CORRECT``, and marks
it ``unparsed`` (issue item 3: counted and shown). A failed call or an empty reply after the
retries is a judge error (null, out of the denominator).
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, SimpleNamespace
from typing import Any, ClassVar

from recallbench.contracts import Question
from recallbench.errors import OptionError
from recallbench.instruments import extract
from recallbench.instruments.pins import InstrumentFile, LoadedInstrument, fetch_instrument
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
    Retrieved,
)
from recallbench.llm.types import CallLLM, ChatRequest, Completion
from recallbench.score.rules import RULE_NO_ANSWER

EVALUATE_GPTS = InstrumentFile(
    name="locomo",
    repo="snap-research/LoCoMo",
    commit="9228632",
    path="task_eval/evaluate_gpts.py",
    sha256="e878692fd25919c4069b87ee5c2c5c24d8916e97c55b00500e9bf8b467c065a0",
)
"""LoCoMo's QA script (branch ``code``): reader prompts, question templates, RAG context."""
MEM0_LLM_JUDGE = InstrumentFile(
    name="mem0-evaluation",
    repo="mem0ai/mem0",
    commit="b3ede5b",
    path="evaluation/metrics/llm_judge.py",
    sha256="ac2e242f6ea0b817ba1b229ff9e5271f6846b7b8a9aefa8a5a5a81ea58df3b3c",
)
"""mem0's LoCoMo LLM judge (its ``evaluation/`` folder, removed upstream in ``9315e30``)."""
MEM0_UTILS = InstrumentFile(
    name="mem0-evaluation",
    repo="mem0ai/mem0",
    commit="b3ede5b",
    path="mem0/memory/utils.py",
    sha256="766c878e0d17679a2e43477c6faf67e7a210076d0c1400af971550e23ef92262",
)
"""Where ``llm_judge.py`` imports ``extract_json`` from (``mem0.memory.utils``) at the same
commit; hash taken from the repository's own git object of the file at ``b3ede5b``."""

MEM0_J = "mem0_j"
"""The metric name of mem0 J: 1 when mem0's judge labels the answer CORRECT, else 0."""
MEM0_J_VARIANT = "mem0-j"
"""``InstrumentOptions.judge_variant`` that adds mem0 J."""
MEM0_J_LABEL = "mem0 J (mem0's LLM judge, not the LoCoMo score)"
"""How every record, table and card names mem0 J."""
JUDGE_VARIANTS: tuple[str, ...] = (MEM0_J_VARIANT,)
DATE_UNKNOWN = "date unknown"
"""recallbench's words (not LoCoMo's) for the date of a memory that names no dataset turn."""
RULE_MEM0_SKIPS_CAT5 = "mem0_j_skips_category_5"
MEM0_SKIPS_CAT5_REASON = (
    f"{RULE_MEM0_SKIPS_CAT5}: mem0's llm_judge.py main() skips category 5 (adversarial) "
    "questions, so mem0 J has no value for them"
)
NO_ANSWER_REASON = f"{RULE_NO_ANSWER}: the reader wrote no answer, and mem0 J grades an answer"
RULE_JUDGE_ERROR = "judge_error"
DONT_KNOW = "I don't know"
"""The "I don't know" answer of the judge-check cases (issue item 7)."""

READER_KEYWORDS: Mapping[str, str] = {
    "temperature": "temperature",
    "num_tokens_request": "max_tokens",
    "num_gen": "n",
}
"""How ``run_chatgpt``'s parameters become request fields, as its chat branches
(``global_methods.py`` at ``9228632``, not among the pinned files) pass them to
``ChatCompletion.create``; its other parameters (``model``, ``use_16k``, ``wait_time``) choose
the model and its waits and are not sent."""

READER_DEVIATIONS: tuple[str, ...] = (
    "reader: the memories are read in LoCoMo's RAG dialog format (evaluate_gpts.py --use-rag "
    "--rag-mode dialog, batch size 1); the system's order replaces LoCoMo's retriever "
    "(get_rag_context ranks by an embedding dot product) and top_k is every memory line the "
    "system returned; the full-conversation mode (CONV_START_PROMPT and get_input_context) is "
    "not a memory measurement and is not offered",
    "reader: run_chatgpt (global_methods.py, not among the pinned files) is not run: recallbench "
    "sends the query as one user message (its gpt-4 branch; its gpt-3.5 branch sends it as a "
    "system message to gpt-3.5-turbo) with temperature, max_tokens and n from the call's "
    "keywords, to the reader the operator chose, and retries with recallbench's retry policy "
    "instead of run_chatgpt's unbounded loop with doubling waits",
    "reader: category 5's option order is drawn with random.Random(f'{seed}:{question_id}')"
    ".random() < 0.5 instead of the official unseeded random.random() < 0.5, so a run is "
    "reproducible; the order drawn is recorded in the reader notes",
    "reader: category 5's second option is the question's answer as the official code reads it "
    "(qa['answer']); the released locomo10.json gives most category-5 items only "
    "adversarial_answer, which is used when answer is absent (the official script would stop "
    "with a KeyError there)",
    "reader: a line's text is the turn's text as loaded (prepare_for_rag reads clean_text, which "
    "the released file lacks; it has text); a turn that shared an image reads '<text> and shared "
    "<blip_caption>.', as systems were given it, where the official dialog line drops the image",
    f"reader: a memory that names no dataset turn is one line, its text, dated '{DATE_UNKNOWN}' "
    "(recallbench's words; LoCoMo's RAG database holds dataset turns only)",
    "reader: the empty-prompt baseline (empty_reader_request) is the category-1-4 query with no "
    "memory and an empty question",
)

MEM0_DEVIATIONS: tuple[str, ...] = (
    f"{MEM0_J_LABEL} is mem0's evaluation, not LoCoMo's (LoCoMo's score is F1); mem0's "
    "published J figures graded answers written with mem0's own reader prompts "
    "(evaluation/prompts.py), where here it grades the answer LoCoMo's reader wrote",
    "mem0 J: a reply its parser cannot read (json.loads(extract_json(reply))['label'] raises) "
    "stops the official script; recallbench scores it 0 (the official rule for any label but "
    "CORRECT) and counts it as unparsed",
    "mem0 J: a failed call or an empty reply left after the retries is a judge error (null, out "
    "of the denominator); the official script would raise; the openai client's own retries are "
    "replaced by recallbench's retry policy",
    "mem0 J: category 5 is null (mem0_j_skips_category_5), as mem0's main() skips it",
)


class _CallFailed(Exception):
    """The call failed after its retries (or returned an empty body)."""

    def __init__(self, completion: Completion, reason: str) -> None:
        super().__init__(reason)
        self.completion = completion
        self.reason = reason


class _Captured(Exception):
    """Stop the official body at the call: the request is all that was wanted."""

    def __init__(self, request: ChatRequest) -> None:
        super().__init__("captured")
        self.request = request


class _SeededDraw:
    """Stands for the module ``random`` in the category-5 branch: its one ``random()`` draw."""

    def __init__(self, value: float) -> None:
        self._value = value

    def random(self) -> float:
        return self._value


class _Lines(list[Any]):
    """A context database's ``embeddings``: ``.T`` is itself, for ``np.dot`` below."""

    @property
    def T(self) -> _Lines:  # noqa: N802 - numpy's name, read by the official code
        return self


class _RankInSystemOrder:
    """Stands for ``np`` in ``get_rag_context``: scores fall with position, so its
    ``np.argsort(output)[::-1]`` is the system's order."""

    @staticmethod
    def dot(query_vector: object, rows: Sequence[object]) -> list[int]:
        return [len(rows) - i for i in range(len(rows))]

    @staticmethod
    def argsort(scores: Sequence[int]) -> list[int]:
        return sorted(range(len(scores)), key=lambda i: scores[i])


def _noop(*args: object, **kwargs: object) -> None:
    """Stands for ``print`` in the official body (its console output is not wanted)."""


def seeded_draw(seed: int, question_id: str) -> float:
    """The draw that replaces LoCoMo's unseeded ``random.random()`` for one question."""
    return random.Random(f"{seed}:{question_id}").random()


def option_answer(question: Question) -> str | None:
    """The value of ``qa['answer']`` for the category-5 template: the question's answer, else
    its ``adversarial_answer`` (what the released file gives category 5)."""
    if question.gold is not None:
        return question.gold
    value = question.extra.get("adversarial_answer")
    return None if value is None else str(value)


@dataclass(frozen=True)
class _Reader:
    """What is read once from ``evaluate_gpts.py``: compiled official statements and values."""

    loaded: LoadedInstrument
    prompts: Mapping[str, str]
    question_code: CodeType
    body_code: CodeType
    dialog_expr: ast.expr
    get_rag_context: Callable[..., tuple[str, list[Any]]]
    get_cat_5_answer: Callable[[str, Mapping[str, str]], str]
    keywords: Mapping[str, Any]


def _read_reader(loaded: LoadedInstrument) -> _Reader:
    where = EVALUATE_GPTS.path
    module = extract.parse(loaded.text, where)
    prompts = {n: extract.literal(module, n, where) for n in ("QA_PROMPT", "QA_PROMPT_CAT_5")}
    answers = extract.function(module, "get_gpt_answers", where)
    chain = extract.branch(answers, "qa['category'] == 2", where)
    single = extract.branch(answers, "args.batch_size == 1", where)
    chatgpt = [c for stmt in single.body for c in extract.calls(stmt, "run_chatgpt")]
    if len(chatgpt) != 1:
        raise extract.InstrumentFormatError(
            f"{where}: expected one run_chatgpt call in the batch-size-1 branch, found "
            f"{len(chatgpt)}"
        )
    rag = extract.function(module, "prepare_for_rag", where)
    dialog_branch = extract.branch(rag, "args.use_rag and args.rag_mode == 'dialog'", where)
    appends = extract.calls(dialog_branch, "dialogs.append")
    if len(appends) != 1 or len(appends[0].args) != 1:
        raise extract.InstrumentFormatError(
            f"{where}: no single dialogs.append(...) in dialog mode"
        )
    ns = extract.namespace(
        module, ("get_rag_context", "get_cat_5_answer"), where, {"np": _RankInSystemOrder}
    )
    return _Reader(
        loaded=loaded,
        prompts=prompts,
        question_code=extract.compile_statements([chain], where),
        body_code=extract.compile_statements(single.body, where),
        dialog_expr=appends[0].args[0],
        get_rag_context=ns["get_rag_context"],
        get_cat_5_answer=ns["get_cat_5_answer"],
        keywords=extract.keywords(chatgpt[0]),
    )


@dataclass(frozen=True)
class _Judge:
    """What is read once from mem0's ``llm_judge.py`` and ``utils.py``."""

    files: tuple[LoadedInstrument, LoadedInstrument]
    code: CodeType
    extract_json: Callable[[str], str]
    skip_test: ast.expr
    pin: ModelPin


def _read_judge(judge: LoadedInstrument, utils: LoadedInstrument) -> _Judge:
    where = MEM0_LLM_JUDGE.path
    module = extract.parse(judge.text, where)
    evaluate = extract.function(module, "evaluate_llm_judge", where)
    creates = extract.calls(evaluate, "client.chat.completions.create")
    if len(creates) != 1:
        raise extract.InstrumentFormatError(f"{where}: expected one create(...) call")
    kw = extract.keywords(creates[0])
    if "model" not in kw:
        raise extract.InstrumentFormatError(f"{where}: create(...) names no literal model")
    main = extract.function(module, "main", where)
    skips = [
        n
        for n in extract.walk(main)
        if isinstance(n, ast.If)
        and len(n.body) == 1
        and isinstance(n.body[0], ast.Continue)
        and "category" in {x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)}
    ]
    if len(skips) != 1:
        raise extract.InstrumentFormatError(f"{where}: expected one category skip in main()")
    utils_ns = extract.namespace(
        extract.parse(utils.text, MEM0_UTILS.path), ("extract_json",), MEM0_UTILS.path, {"re": re}
    )
    pin = ModelPin(
        model=str(kw["model"]),
        settings={k: v for k, v in kw.items() if k not in ("model", "messages")},
        base_url="https://api.openai.com/v1",
        api_key_env="OPENAI_API_KEY",
        tries=3,
        timeout_s=600.0,
        empty_is_failure=False,
        source=(
            "mem0ai/mem0@b3ede5b evaluation/metrics/llm_judge.py evaluate_llm_judge: "
            "client.chat.completions.create(...) keywords; tries and timeout are the openai "
            "client's defaults (max_retries=2, 600 s), which the script leaves unchanged"
        ),
    )
    return _Judge(
        files=(judge, utils),
        code=extract.compile_statements(
            [
                extract.top_level(module, "ACCURACY_PROMPT", where),
                evaluate,
            ],
            where,
        ),
        extract_json=utils_ns["extract_json"],
        skip_test=skips[0].test,
        pin=pin,
    )


class _Client:
    """Stands for mem0's ``client = OpenAI()``: ``client.chat.completions.create(...)`` makes
    one call through the pipeline's client and answers in the openai response's shape."""

    def __init__(self, call: CallLLM, purpose: str) -> None:
        self._call = call
        self._purpose = purpose
        self.request: ChatRequest | None = None
        self.completion: Completion | None = None
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, *, model: str, messages: Sequence[Mapping[str, str]], **settings: Any) -> Any:
        request = ChatRequest(tuple(dict(m) for m in messages), dict(settings), self._purpose)
        self.request = request
        completion = self._call(request)
        self.completion = completion
        if not completion.ok:
            raise _CallFailed(completion, completion.error or "the call failed")
        if completion.text == "":
            raise _CallFailed(completion, "empty reply left after the retries")
        message = SimpleNamespace(content=completion.text)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


class LocomoInstrument(AnswerInstrument):
    """LoCoMo's own reader (``task_eval/evaluate_gpts.py``); F1 needs no judge.

    Build it with :func:`locomo_instrument`, which picks the mem0 J variant when asked.
    """

    name: ClassVar[str] = "locomo official reader (task_eval/evaluate_gpts.py)"
    official: ClassVar[bool] = True
    modes: ClassVar[tuple[str, ...]] = ("answer",)
    reader_presets: ClassVar[tuple[str, ...]] = ()
    reader_is_judge: ClassVar[bool] = False
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {"answer": ()}
    weighted_metrics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: InstrumentOptions) -> None:
        self.options = options
        self._reader = _read_reader(fetch_instrument(EVALUATE_GPTS, options.cache_dir))

    @property
    def reader(self) -> ModelPin | None:
        """None: LoCoMo pins no reader (gpt-3.5 and gpt-4 variants are options of its script)."""
        return None

    @property
    def reader_settings(self) -> dict[str, Any]:
        """The reader call's request fields, from the ``run_chatgpt(...)`` keywords of the
        batch-size-1 branch (``max_tokens`` 32, ``temperature`` 0, ``n`` 1 in the file)."""
        return _reader_settings(self._reader.keywords)

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        return (self._reader.loaded.record,)

    def deviations(self) -> tuple[str, ...]:
        return READER_DEVIATIONS

    def context_lines(
        self, memories: Sequence[Retrieved]
    ) -> tuple[list[str], list[str], list[Any]]:
        """The context database of the memories: ``date_time``, ``context`` and ``dia_id`` per
        line, in the system's order (one line per resolved turn, one per memory without)."""
        dates: list[str] = []
        contexts: list[str] = []
        ids: list[Any] = []
        for memory in memories:
            if not memory.turns:
                dates.append(DATE_UNKNOWN)
                contexts.append(memory.text)
                ids.append(None)
                continue
            for turn in memory.turns:
                dialog = {"speaker": turn.speaker, "clean_text": turn.text}
                contexts.append(
                    str(
                        extract.evaluate(
                            self._reader.dialog_expr, EVALUATE_GPTS.path, {"dialog": dialog}
                        )
                    )
                )
                dates.append(turn.date if turn.date is not None else DATE_UNKNOWN)
                ids.append(turn.turn_id)
        return dates, contexts, ids

    def _run(
        self,
        question: Question,
        memories: Sequence[Retrieved],
        seed: int,
        run_chatgpt: Callable[..., str],
    ) -> dict[str, Any]:
        """Run the official question chain, get_rag_context and the batch-size-1 body; return
        the body's namespace (``answer``, ``cat_5_answers``, ``query``...)."""
        category = int(question.extra["category"])
        qa = {"question": question.text, "category": category, "answer": option_answer(question)}
        built = extract.run(
            self._reader.question_code,
            {
                "qa": qa,
                "questions": [],
                "cat_5_idxs": [],
                "cat_5_answers": [],
                "random": _SeededDraw(seeded_draw(seed, question.id)),
            },
        )
        dates, contexts, ids = self.context_lines(memories)
        database = {
            "embeddings": _Lines(contexts),
            "date_time": dates,
            "dia_id": ids,
            "context": contexts,
        }
        args = SimpleNamespace(
            top_k=len(contexts), rag_mode="dialog", use_rag=True, model="", batch_size=1
        )
        query_conv, context_ids = self._reader.get_rag_context(database, None, args)
        return extract.run(
            self._reader.body_code,
            {
                **{k: built[k] for k in ("questions", "cat_5_idxs", "cat_5_answers")},
                **self._reader.prompts,
                "query_conv": query_conv,
                "context_ids": context_ids,
                "args": args,
                "print": _noop,
                "run_chatgpt": run_chatgpt,
                "get_cat_5_answer": self._reader.get_cat_5_answer,
                "out_data": {"qa": [{}]},
                "include_idxs": [0],
                "prediction_key": "prediction",
            },
        )

    def _capture(self, question: Question, memories: Sequence[Retrieved], seed: int) -> ChatRequest:
        def stop(query: str, **kwargs: Any) -> str:
            raise _Captured(ChatRequest.user(query, "reader", **_reader_settings(kwargs)))

        try:
            self._run(question, memories, seed, stop)
        except _Captured as captured:
            return captured.request
        raise extract.InstrumentFormatError(f"{EVALUATE_GPTS.path}: the reader body made no call")

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        """Write the answer as ``get_gpt_answers`` does for one question (batch size 1, RAG
        dialog mode), the call made through ``call``.

        ``answer`` is the official prediction (after ``get_cat_5_answer`` for category 5 and
        ``.strip()``), ``reply`` the raw reply; a failed call gives ``answer`` None and
        ``error``. Category 5's notes give the seeded draw and the option order it chose.
        """
        made: list[tuple[ChatRequest, Completion]] = []

        def run_chatgpt(query: str, **kwargs: Any) -> str:
            request = ChatRequest.user(query, "reader", **_reader_settings(kwargs))
            completion = call(request)
            made.append((request, completion))
            if not completion.ok:
                raise _CallFailed(completion, completion.error or "the call failed")
            return str(completion.text)

        notes: list[str] = []
        try:
            ns = self._run(ctx.question, ctx.memories, ctx.seed, run_chatgpt)
        except _CallFailed as failed:
            request, completion = made[-1]
            return ReaderResult(
                None, None, request.prompt_sha256, (completion,), error=failed.reason
            )
        request, completion = made[-1]
        answer = str(ns["out_data"]["qa"][0]["prediction"])
        if ns["cat_5_answers"]:
            key = ns["cat_5_answers"][0]
            draw = seeded_draw(ctx.seed, ctx.question.id)
            notes.append(
                f"category-5 options: random.Random({f'{ctx.seed}:{ctx.question.id}'!r})"
                f".random() = {draw!r} replaced the official unseeded random.random(); "
                f"(a) {key['a']!r}, (b) {key['b']!r}"
            )
            notes.append(f"get_cat_5_answer mapped the reply {completion.text!r} to {answer!r}")
        return ReaderResult(
            answer, completion.text, request.prompt_sha256, (completion,), notes=tuple(notes)
        )

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        """None: LoCoMo's score is F1 on the answer, computed by the rules without a judge."""
        return ()

    def empty_reader_request(self) -> ChatRequest | None:
        """The category-1-4 query with no memory and an empty question."""
        empty = Question(id="", dataset="locomo", group="", text="", gold="", extra={"category": 4})
        return self._capture(empty, (), self.options.seed)


def _reader_settings(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {READER_KEYWORDS[k]: v for k, v in kwargs.items() if k in READER_KEYWORDS}


class LocomoMem0JInstrument(LocomoInstrument):
    """LoCoMo's reader, and :data:`MEM0_J_LABEL` as its judge (``judge_variant="mem0-j"``)."""

    name: ClassVar[str] = f"locomo official reader + {MEM0_J_LABEL}"
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {"answer": (MEM0_J,)}

    def __init__(self, options: InstrumentOptions) -> None:
        super().__init__(options)
        self._judge = _read_judge(
            fetch_instrument(MEM0_LLM_JUDGE, options.cache_dir),
            fetch_instrument(MEM0_UTILS, options.cache_dir),
        )

    @property
    def judge_pin(self) -> ModelPin | None:
        """mem0's judge: ``gpt-4o-mini``, ``temperature`` 0.0, ``response_format`` json_object,
        read from its ``create(...)`` call."""
        return self._judge.pin

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        return (*super().files(), *(f.record for f in self._judge.files))

    def deviations(self) -> tuple[str, ...]:
        return (*READER_DEVIATIONS, *MEM0_DEVIATIONS)

    def skips(self, question: Question) -> bool:
        """True when mem0's ``main()`` skips the question (its ``int(category) == 5`` test)."""
        category = question.extra["category"]
        return bool(
            extract.evaluate(
                self._judge.skip_test, MEM0_LLM_JUDGE.path, {"category": category, "int": int}
            )
        )

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        """Grade ``answer`` with mem0's ``evaluate_llm_judge`` (mode ``answer`` only).

        Category 5 is null (skipped, as mem0 does) and so is a missing answer; a failed call or
        an empty reply is null with ``error``; a reply the official parser cannot read is 0 and
        ``unparsed``; otherwise the official value (1 for ``CORRECT``, else 0).
        """
        if mode != "answer":
            return ()
        question = ctx.question
        if self.skips(question):
            return (
                JudgeResult(
                    MEM0_J, None, False, None, None, (), null_reason=MEM0_SKIPS_CAT5_REASON
                ),
            )
        if answer is None:
            return (JudgeResult(MEM0_J, None, False, None, None, (), null_reason=NO_ANSWER_REASON),)
        client = _Client(call, "judge:answer")
        ns = extract.run(
            self._judge.code,
            {"client": client, "json": json, "extract_json": self._judge.extract_json},
        )
        unparsed = False
        try:
            value = float(ns["evaluate_llm_judge"](question.text, question.gold, answer))
        except _CallFailed as failed:
            request = client.request
            return (
                JudgeResult(
                    MEM0_J,
                    None,
                    False,
                    failed.completion.text,
                    None if request is None else request.prompt_sha256,
                    (failed.completion,),
                    error=f"{RULE_JUDGE_ERROR}: {failed.reason}",
                ),
            )
        except Exception:
            if client.completion is None:
                raise
            value, unparsed = 0.0, True
        assert client.request is not None and client.completion is not None
        return (
            JudgeResult(
                MEM0_J,
                value,
                unparsed,
                client.completion.text,
                client.request.prompt_sha256,
                (client.completion,),
            ),
        )

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        """Per judged question (categories 1-4, with a gold answer): the gold verbatim (1), the
        gold of the next question of the same category with another gold (0), the gold of the
        next question of another category and conversation (0, unrelated) and
        :data:`DONT_KNOW` (0). Category 5 gets none (mem0 J skips it)."""
        if mode != "answer":
            return []
        judged = [q for q in questions if q.gold is not None and not self.skips(q)]
        cases: list[JudgeCase] = []
        for i, q in enumerate(judged):
            gold = str(q.gold)
            cases.append(JudgeCase("gold_verbatim", q, gold, 1.0, MEM0_J))
            ring = judged[i + 1 :] + judged[:i]
            wrong = next(
                (
                    o
                    for o in ring
                    if o.extra["category"] == q.extra["category"] and _differs(o, gold)
                ),
                None,
            )
            if wrong is not None:
                cases.append(JudgeCase("plausible_wrong", q, str(wrong.gold), 0.0, MEM0_J))
            unrelated = next(
                (
                    o
                    for o in ring
                    if o.extra["category"] != q.extra["category"]
                    and o.group != q.group
                    and _differs(o, gold)
                ),
                None,
            )
            if unrelated is not None:
                cases.append(JudgeCase("unrelated", q, str(unrelated.gold), 0.0, MEM0_J))
            cases.append(JudgeCase("dont_know", q, DONT_KNOW, 0.0, MEM0_J))
        return cases


def _differs(other: Question, gold: str) -> bool:
    return str(other.gold).strip().lower() != gold.strip().lower()


def locomo_instrument(options: InstrumentOptions) -> LocomoInstrument:
    """LoCoMo's instrument for the operator's choices: its official reader, with
    :data:`MEM0_J_LABEL` as judge when ``options.judge_variant == "mem0-j"``.

    Raises:
        OptionError: for prompts other than ``official``, a reader preset (LoCoMo has none),
            or an unknown judge variant.
    """
    if options.prompts != OFFICIAL:
        raise OptionError(
            f"LoCoMo's instrument builds its official prompts only, not {options.prompts!r}"
        )
    if options.reader_preset is not None:
        raise OptionError(
            f"LoCoMo has no reader presets (got {options.reader_preset!r}): its reader prompt "
            "is task_eval/evaluate_gpts.py's"
        )
    if options.judge_variant is None:
        return LocomoInstrument(options)
    if options.judge_variant == MEM0_J_VARIANT:
        return LocomoMem0JInstrument(options)
    raise OptionError(
        f"unknown LoCoMo judge variant {options.judge_variant!r}; choose from "
        f"{', '.join(JUDGE_VARIANTS)}"
    )
