"""LongMemEval's official reader and judge, run from its authors' own files.

Three files of xiaowu0162/LongMemEval at commit 9e0b455, each pinned by SHA-256 and downloaded
into the cache (never committed): ``src/evaluation/evaluate_qa.py`` (the judge),
``src/generation/run_generation.py`` (the reader prompts) and ``src/generation/run_generation.sh``
(the reading methods and the defaults the README recommends). Nothing of theirs is retyped here:

**Judge** (metric ``label``). The prompt is ``get_anscheck_prompt`` itself, compiled from the
file (:func:`recallbench.instruments.extract.namespace`) and called through the ``__main__``
block's own expression ``get_anscheck_prompt(qtype, q, ans, hyp, abstention='_abs' in
entry['question_id'])``, with ``qtype`` the question type, ``q`` the question, ``ans`` the
gold answer and ``hyp`` the reader's answer. The request is the block's ``kwargs`` dict: its
``messages`` expression, and ``n``, ``temperature`` and ``max_tokens`` (1, 0, 10) as literals.
The model is ``model_zoo['gpt-4o']`` (``gpt-4o-2024-08-06``; LongMemEval's README runs
``evaluate_qa.py gpt-4o``). The verdict is the block's own two expressions, evaluated on the
reply: ``eval_response = completion.choices[0].message.content.strip()`` and ``label = 'yes' in
eval_response.lower()``; ``label`` is 1.0 when ``label`` is true, else 0.0. A reply holding
neither ``yes`` nor ``no`` (lower-cased) is also counted as unparsed (the official rule gives it
0). A call that failed after its retries, or an empty body, is a judge error: null, out of the
denominator. Only answer mode exists (a memory judge is not part of LongMemEval's protocol).

**Reader.** LongMemEval pins no reader model (:attr:`LongMemEvalInstrument.reader` is None): the
operator chooses it. Its prompt templates are offered as named presets,
``<history format>-<reading method>[-useronly]`` (:data:`READER_PRESETS`; the first, ``json-con``,
is ``run_generation.sh``'s defaults, which the README recommends). A reading method maps to the
flags the shell script passes (``direct``: ``--cot false``; ``con``: ``--cot true``;
``con-separate``: ``--cot true --con true``, a reading-notes call per memory through the same
reader, with the settings of ``prepare_prompt``'s own request). The prompt is
``prepare_prompt(...)`` itself, compiled from the file with ``json`` provided,
``chat_completions_with_backoff`` replaced by a stand-in that sends through the run's
:data:`~recallbench.llm.types.CallLLM` (per thread), and a character tokenizer whose truncation
never triggers. The reader request is ``main()``'s ``kwargs`` dict: ``n`` 1, ``temperature`` 0,
``max_tokens`` ``gen_length``, evaluated with the file's own expression ``500 if not args.cot
else 800`` on ``args.cot`` as argparse gives it, the *string* ``'true'`` or ``'false'``; both
strings are truthy, so ``gen_length`` is 800 for every preset, as it is when the file runs. The
answer is ``main()``'s expression ``completion.choices[0].message.content.strip()``.

**Memories to LongMemEval's input.** ``prepare_prompt`` reads an ``entry`` shaped like a
retrieval log line. recallbench builds it from the question (``question``, ``question_date``)
and the memories the reader may see, as retriever type ``flat-session`` with one pseudo-session
per memory (``memory_<rank>``, listed in rank order in ``retrieval_results.ranked_items``),
``topk_context`` the number of memories (the run's k decides how many the reader sees):

* when every memory's source turns resolve (:attr:`Retrieved.turns`), each pseudo-session holds
  those turns as LongMemEval turn dicts ``{"role": speaker, "content": text}`` (the dataset's own
  roles and texts: LongMemEval's turns are these two fields, plus ``has_answer``, which the
  official code removes before rendering), dated with the first turn's session date, and
  ``merge_key_expansion_into_value`` is ``none``: the "history chats" template;
* otherwise (some memory is text a system wrote, without resolvable turns) every memory of the
  question is rendered through ``merge_key_expansion_into_value`` ``replace``, the "facts
  extracted" template, its ``text`` being the memory's text as the system returned it, dated
  with its first turn's date when it has turns, else the empty string;
* under ``--condition no-memory``, or when a system returned nothing, the retriever type is
  ``no-retrieval`` (the question alone, with its own template); under ``--condition oracle`` the
  memories are the gold evidence turns the pipeline hands over, rendered as above.

``prepare_prompt`` then keeps its own behaviour: it sorts the pseudo-sessions by date string
(stable, so equal dates keep rank order), numbers them ``### Session 1`` ..., drops assistant
turns under ``-useronly`` and writes each as JSON (``json``) or ``role: content`` lines (``nl``).
Every departure from the official protocol is listed in :data:`DEVIATIONS`.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
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

REPO = "xiaowu0162/LongMemEval"
COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
NAME = "longmemeval"
"""The benchmark's folder in a local copy of the instruments (``$RECALLBENCH_INSTRUMENTS``)."""

EVALUATE_QA = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/evaluation/evaluate_qa.py",
    "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251",
)
RUN_GENERATION = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/generation/run_generation.py",
    "4f1eb3c69d7ad40f04065b9c0bc86f6582441018fc6ff751d162d66c95baf672",
)
RUN_GENERATION_SH = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/generation/run_generation.sh",
    "6602147b866eca4a80acdf5e6689389586086216c9198fce7b8380b7495c5422",
)
FILES: tuple[InstrumentFile, ...] = (EVALUATE_QA, RUN_GENERATION, RUN_GENERATION_SH)

LME_LABEL = "label"
"""The official judge fills the rule set's own QA figure, ``label`` (and, through the scorer,
its ``label:abstention`` variant on abstention questions)."""
"""LongMemEval's judge verdict on the reader's answer: 1.0 when ``'yes'`` is in the reply."""
JUDGE_MODEL_ALIAS = "gpt-4o"
"""The ``model_zoo`` key the README's evaluation command passes (``evaluate_qa.py gpt-4o``)."""

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where the OpenAI client sends a call when ``base_url`` is None, as ``evaluate_qa.py`` leaves
it for an ``openai`` model of its ``model_zoo``."""

PURPOSE_READER = "reader"
PURPOSE_NOTES = "reader:notes"
PURPOSE_JUDGE = "judge:answer"

RULE_NO_ANSWER = "no_answer"
RULE_READER_FORMAT = "lme_history_format"

RETRIEVER = "flat-session"
NO_RETRIEVAL = "no-retrieval"
EXPANSION_NONE = "none"
EXPANSION_REPLACE = "replace"
UNDATED = ""
"""The session date of a memory without source turns (its date is unknown)."""

READER_PRESETS: tuple[str, ...] = (
    "json-con",
    "json-direct",
    "json-con-separate",
    "json-con-useronly",
    "json-direct-useronly",
    "json-con-separate-useronly",
    "nl-con",
    "nl-direct",
    "nl-con-useronly",
    "nl-direct-useronly",
)
"""``<history_format>-<reading_method>[-useronly]``; the first is ``run_generation.sh``'s
defaults (the README's recommendation). ``nl`` with ``con-separate`` is not offered: the
official ``prepare_prompt`` raises ``KeyError: 'role'`` on every question there (its ``nl``
branch reads ``role`` from the notes dict ``{'session_summary': ...}``)."""

NOT_OFFERED: dict[str, str] = {
    name: "not offered: LongMemEval's prepare_prompt raises KeyError 'role' on every question "
    "with history format nl and reading notes (con-separate)"
    for name in ("nl-con-separate", "nl-con-separate-useronly")
}

DEVIATIONS: tuple[str, ...] = (
    "the reader sees the memories a system returned, one pseudo-session per memory (retriever "
    "type flat-session, topk_context = the number of memories); LongMemEval's own pipeline "
    "reads whole retrieved sessions, or turns expanded to their round (turn and the next), of "
    "its corpus",
    "a memory without resolvable source turns is rendered with merge_key_expansion_into_value "
    "'replace' (the memory's text, the 'facts extracted' template), and then so is every other "
    "memory of that question; such a memory has no date, so its Session Date is empty (and it "
    "sorts first in prepare_prompt's sort by date)",
    "a memory whose turns come from several sessions is one pseudo-session dated with its "
    "first turn's date",
    "history format nl cannot render a memory without source turns (prepare_prompt's nl branch "
    "reads role and content from the text); such a question gets no answer (reader error "
    "lme_history_format), and nl with con-separate is not offered (it raises on every question)",
    "a question for which the system returned nothing is read with the no-retrieval template "
    "(prepare_prompt asserts a non-empty history otherwise)",
    "no truncation: run_generation.py truncates the history to the reader's context length "
    "(model_max_length - gen_length - 1000 tokens, with tiktoken or a Hugging Face tokenizer); "
    "recallbench has neither offline and sends the whole history",
    "under --condition oracle the reader sees the gold evidence turns (user turns marked "
    "has_answer) the pipeline hands over; LongMemEval's oracle file holds the whole evidence "
    "sessions",
    "retries: run_generation.py retries a reader call on RateLimitError every 5 s without "
    "limit, evaluate_qa.py a judge call on RateLimitError and APIError with exponential backoff "
    "without limit; recallbench stops after the client's tries and records an error",
    "a reader call that fails is recorded as a reader error; run_generation.py skips the "
    "question (it writes no hypothesis line, so evaluate_qa.py leaves it out of every mean)",
    "an empty judge reply is a judge error (null, out of the denominator); evaluate_qa.py "
    "would read it as label False",
    "a judge reply with neither 'yes' nor 'no' is counted as unparsed (value 0, the official "
    "rule); evaluate_qa.py does not count such replies",
)

_SH_DEFAULT = re.compile(r'^(\w+)=\$\{\d+:-"([^"]*)"\}\s*$', re.M)
_SH_METHOD = re.compile(r'\$reading_method == "([^"]+)" \]\]; then\s*\n\s*reading_flags="([^"]*)"')
_SH_FLAG = re.compile(r"--(\w+) (\S+)")


class ReaderPresetError(OptionError):
    """A reader preset LongMemEval's files do not offer, or an instrument choice it has none of."""


@dataclass(frozen=True, slots=True)
class Preset:
    """One reader preset: ``run_generation.py``'s options as the shell script passes them
    (strings, as argparse gives them)."""

    name: str
    history_format: str
    useronly: str
    reading_method: str
    cot: str
    con: str


class _NotesCallFailed(Exception):
    def __init__(self, completion: Completion) -> None:
        super().__init__(completion.error)
        self.completion = completion


class _CharTokenizer:
    """``prepare_prompt``'s tokenizer with the ``openai`` backend: one token per character,
    ``decode`` the inverse. With ``max_retrieval_length`` past any history it never truncates;
    at 0 it empties the history (:meth:`LongMemEvalInstrument.empty_reader_request`)."""

    def encode(self, text: str, allowed_special: Any = None) -> list[str]:
        return list(text)

    def decode(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)


def _response(text: str) -> SimpleNamespace:
    """What the official code reads from an OpenAI completion: ``choices[0].message.content``."""
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])


def _no_print(*args: Any, **kwargs: Any) -> None:
    """``prepare_prompt`` prints when it truncates; the instrument stays quiet."""


def _settings(kwargs: ast.Dict, where: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A request ``kwargs`` dict display's items other than ``model`` and ``messages``, each
    value evaluated from the file's own expression (``'max_tokens': gen_length``)."""
    out: dict[str, Any] = {}
    for k, v in zip(kwargs.keys, kwargs.values, strict=True):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise extract.InstrumentFormatError(f"{where}: a request key is not a string")
        if k.value in ("model", "messages"):
            continue
        out[k.value] = extract.evaluate(v, where, variables)
    return out


def _messages_expr(kwargs: ast.Dict, where: str) -> ast.expr:
    for k, v in zip(kwargs.keys, kwargs.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == "messages":
            return v
    raise extract.InstrumentFormatError(f"{where}: the request has no 'messages'")


def _mentions(reply: str, word: str) -> bool:
    return word in reply.lower()


class LongMemEvalInstrument(AnswerInstrument):
    """LongMemEval's reader prompts and judge, from its files at 9e0b455 (see the module
    docstring for every step). Thread-safe: :meth:`answer` and :meth:`judge` may run in many
    threads at once (the notes stand-in reads its thread's ``call``)."""

    name: ClassVar[str] = "longmemeval official (9e0b455)"
    official: ClassVar[bool] = True
    modes: ClassVar[tuple[str, ...]] = ("answer",)
    reader_presets: ClassVar[tuple[str, ...]] = READER_PRESETS
    reader_is_judge: ClassVar[bool] = False
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {"answer": (LME_LABEL,)}
    weighted_metrics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: InstrumentOptions) -> None:
        if options.prompts != OFFICIAL:
            raise ReaderPresetError(
                f"the LongMemEval instrument is the official one; prompts {options.prompts!r} "
                "are served by recallbench's own instrument"
            )
        if options.judge_variant is not None:
            raise ReaderPresetError(
                f"LongMemEval has no judge variant {options.judge_variant!r} (it has one judge)"
            )
        self.options = options
        self._loaded: tuple[LoadedInstrument, ...] = tuple(
            fetch_instrument(f, options.cache_dir) for f in FILES
        )
        qa, gen, sh = self._loaded
        self._read_judge(qa)
        self.presets = self._read_presets(gen, sh)
        name = options.reader_preset or READER_PRESETS[0]
        if name not in self.presets:
            why = NOT_OFFERED.get(name, "unknown")
            raise ReaderPresetError(
                f"LongMemEval reader preset {name!r}: {why}; choose one of "
                + ", ".join(READER_PRESETS)
            )
        self.preset = self.presets[name]
        self._read_reader(gen)
        self._local = threading.local()

    # ------------------------------------------------------------ reading the files

    def _read_judge(self, loaded: LoadedInstrument) -> None:
        where = f"{REPO}@{COMMIT[:7]}:{loaded.file.path}"
        module = extract.parse(loaded.text, where)
        zoo = extract.literal(module, "model_zoo", where)
        model, source = zoo[JUDGE_MODEL_ALIAS]
        main = extract.main_block(module)
        if main is None:
            raise extract.InstrumentFormatError(f"{where}: no __main__ block")
        kwargs = extract.dict_with_key(main, "max_tokens")
        self._judge_where = where
        self._judge_settings = _settings(kwargs, where, {})
        self._judge_messages = _messages_expr(kwargs, where)
        self._judge_prompt = extract.assigned_expr(main, "prompt")
        self._judge_response = extract.assigned_expr(main, "eval_response")
        self._judge_label = extract.assigned_expr(main, "label")
        key = extract.assigned_expr(main, "openai_api_key")
        key_env = (
            key.args[0].value
            if isinstance(key, ast.Call) and key.args and isinstance(key.args[0], ast.Constant)
            else None
        )
        ns = extract.namespace(module, ["get_anscheck_prompt"], where)
        self._get_anscheck_prompt = ns["get_anscheck_prompt"]
        self._judge = ModelPin(
            model=str(model),
            settings=dict(self._judge_settings),
            base_url=OPENAI_BASE_URL,
            api_key_env=str(key_env) if key_env else None,
            tries=8,
            timeout_s=600.0,
            empty_is_failure=True,
            source=(
                f"evaluate_qa.py model_zoo[{JUDGE_MODEL_ALIAS!r}] = {(model, source)!r} (the "
                "README's evaluate_qa.py gpt-4o); settings: the __main__ block's kwargs; "
                "endpoint: the OpenAI client's default, as openai_api_base = None asks; the file "
                "retries without limit (backoff.expo), recallbench 8 tries, 600 s each (the "
                "OpenAI client's default timeout)"
            ),
        )

    def _read_presets(self, gen: LoadedInstrument, sh: LoadedInstrument) -> dict[str, Preset]:
        where = f"{REPO}@{COMMIT[:7]}:{gen.file.path}"
        sh_where = f"{REPO}@{COMMIT[:7]}:{sh.file.path}"
        module = extract.parse(gen.text, where)
        args = extract.function(module, "parse_args", where)
        formats = extract.keyword_literal(
            extract.call_with_first_arg(args, "--history_format"), "choices"
        )
        useronly = extract.keyword_literal(
            extract.call_with_first_arg(args, "--useronly"), "choices"
        )
        con_default = extract.keyword_literal(extract.call_with_first_arg(args, "--con"), "default")
        defaults = dict(_SH_DEFAULT.findall(sh.text))
        methods = {m: dict(_SH_FLAG.findall(flags)) for m, flags in _SH_METHOD.findall(sh.text)}
        needed = ("history_format", "useronly", "reading_method")
        if any(k not in defaults for k in needed) or not methods:
            raise extract.InstrumentFormatError(
                f"{sh_where}: the defaults of {', '.join(needed)} or the reading methods are "
                "not where recallbench reads them"
            )
        presets: dict[str, Preset] = {}
        for name in READER_PRESETS:
            fmt, _, rest = name.partition("-")
            method, _, only = rest.partition("-useronly")
            user = "true" if name.endswith("-useronly") else "false"
            flags = methods.get(method)
            if fmt not in formats or user not in useronly or flags is None or only:
                raise extract.InstrumentFormatError(
                    f"{where}: reader preset {name!r} is not offered by the file (history "
                    f"formats {formats}, useronly {useronly}, reading methods {sorted(methods)})"
                )
            presets[name] = Preset(
                name, fmt, user, method, flags["cot"], flags.get("con", con_default)
            )
        first = presets[READER_PRESETS[0]]
        default = (first.history_format, first.useronly, first.reading_method)
        if default != tuple(defaults[k] for k in needed):
            raise extract.InstrumentFormatError(
                f"{sh_where}: its defaults {[defaults[k] for k in needed]} are not the default "
                f"preset {READER_PRESETS[0]!r}"
            )
        return presets

    def _read_reader(self, gen: LoadedInstrument) -> None:
        where = f"{REPO}@{COMMIT[:7]}:{gen.file.path}"
        module = extract.parse(gen.text, where)
        ns = extract.namespace(
            module,
            ["prepare_prompt"],
            where,
            provided={
                "json": json,
                "print": _no_print,
                "chat_completions_with_backoff": self._notes_call,
            },
        )
        self._prepare_prompt = ns["prepare_prompt"]
        main = extract.function(module, "main", where)
        lengths = extract.assigned_exprs(main, "gen_length")
        defaults = [e for e in lengths if not isinstance(e, ast.Attribute)]
        if len(defaults) != 1:
            raise extract.InstrumentFormatError(f"{where}: main() has no default gen_length")
        args = SimpleNamespace(cot=self.preset.cot, con=self.preset.con, gen_length=None)
        self.gen_length = int(extract.evaluate(defaults[0], where, {"args": args}))
        kwargs = extract.dict_with_key(main, "max_tokens")
        self._reader_where = where
        self._reader_settings = _settings(kwargs, where, {"gen_length": self.gen_length})
        self._reader_messages = _messages_expr(kwargs, where)
        self._reader_answer = extract.assigned_expr(main, "answer")

    # ------------------------------------------------------------ the protocol

    @property
    def judge_pin(self) -> ModelPin:
        """``gpt-4o-2024-08-06`` with ``n`` 1, ``temperature`` 0, ``max_tokens`` 10."""
        return self._judge

    @property
    def reader_settings(self) -> dict[str, Any]:
        """The reader request's settings, as ``main()`` sends them for this preset."""
        return dict(self._reader_settings)

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        return tuple(x.record for x in self._loaded)

    def deviations(self) -> tuple[str, ...]:
        return DEVIATIONS

    def entry(self, ctx: AnswerContext) -> tuple[dict[str, Any], str, str]:
        """The ``entry`` ``prepare_prompt`` reads for ``ctx``, its retriever type and its
        ``merge_key_expansion_into_value`` (see the module docstring)."""
        q = ctx.question
        memories = ctx.memories if ctx.condition != "no-memory" else ()
        entry: dict[str, Any] = {
            "question_id": q.id,
            "question": q.text,
            "question_date": q.extra.get("question_date"),
            "haystack_dates": [],
            "haystack_session_ids": [],
            "haystack_sessions": [],
            "retrieval_results": {"ranked_items": []},
        }
        if not memories:
            return entry, NO_RETRIEVAL, EXPANSION_NONE
        expansion = EXPANSION_NONE if all(m.turns for m in memories) else EXPANSION_REPLACE
        for rank, memory in enumerate(memories, start=1):
            sid = f"memory_{rank}"
            entry["haystack_session_ids"].append(sid)
            entry["haystack_dates"].append(_date(memory))
            entry["haystack_sessions"].append(
                [{"role": t.speaker, "content": t.text} for t in memory.turns]
            )
            entry["retrieval_results"]["ranked_items"].append(
                {"corpus_id": sid, "text": memory.text}
            )
        return entry, RETRIEVER, expansion

    def _prompt(
        self,
        entry: Mapping[str, Any],
        retriever: str,
        expansion: str,
        max_retrieval_length: int = sys.maxsize,
        reading_notes: bool = True,
    ) -> str:
        """``prepare_prompt`` on ``entry`` with the preset's options (reading notes as the
        preset says, unless ``reading_notes`` is false)."""
        p = self.preset
        return str(
            self._prepare_prompt(
                entry,
                retriever,
                len(entry["retrieval_results"]["ranked_items"]),
                p.useronly == "true",
                p.history_format,
                p.cot == "true",
                tokenizer=_CharTokenizer(),
                tokenizer_backend="openai",
                max_retrieval_length=max_retrieval_length,
                merge_key_expansion_into_value=expansion,
                con=reading_notes and p.con == "true",
                con_client=None,
                con_model=None,
            )
        )

    def _request(self, prompt: str) -> ChatRequest:
        messages = extract.evaluate(self._reader_messages, self._reader_where, {"prompt": prompt})
        return ChatRequest(
            tuple(dict(m) for m in messages), dict(self._reader_settings), PURPOSE_READER
        )

    def _notes_call(self, client: Any, **kwargs: Any) -> SimpleNamespace:
        """``chat_completions_with_backoff`` for ``prepare_prompt``'s reading-notes calls: the
        request as the official code builds it, sent through this thread's ``call``."""
        state = self._local
        settings = {k: v for k, v in kwargs.items() if k not in ("model", "messages")}
        request = ChatRequest(tuple(dict(m) for m in kwargs["messages"]), settings, PURPOSE_NOTES)
        completion = state.call(request)
        state.calls.append(completion)
        if not completion.ok:
            raise _NotesCallFailed(completion)
        return _response(str(completion.text))

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        entry, retriever, expansion = self.entry(ctx)
        notes = (
            f"reader preset {self.preset.name} (history_format {self.preset.history_format}, "
            f"useronly {self.preset.useronly}, reading method {self.preset.reading_method})",
            f"retriever_type {retriever}, merge_key_expansion_into_value {expansion}",
        )
        if expansion == EXPANSION_REPLACE and self.preset.history_format == "nl":
            return ReaderResult(
                None,
                None,
                None,
                (),
                error=(
                    f"{RULE_READER_FORMAT}: history format nl cannot render a memory without "
                    "source turns (LongMemEval's prepare_prompt reads role and content from "
                    "it); choose a json preset"
                ),
                notes=notes,
            )
        state = self._local
        state.call, state.calls = call, []
        try:
            try:
                prompt = self._prompt(entry, retriever, expansion)
            except _NotesCallFailed as failed:
                return ReaderResult(
                    None,
                    None,
                    None,
                    tuple(state.calls),
                    error=f"reading-notes call failed: {failed.completion.error}",
                    notes=notes,
                )
            request = self._request(prompt)
            completion = call(request)
            calls = (*state.calls, completion)
        finally:
            state.call, state.calls = None, []
        if not completion.ok:
            return ReaderResult(
                None,
                None,
                request.prompt_sha256,
                calls,
                error=completion.error or "the reader call returned no text",
                notes=notes,
            )
        answer = extract.evaluate(
            self._reader_answer,
            self._reader_where,
            {"completion": _response(str(completion.text))},
        )
        return ReaderResult(str(answer), completion.text, request.prompt_sha256, calls, notes=notes)

    def empty_reader_request(self) -> ChatRequest:
        """The preset's history template with an empty history, question and date: one
        pseudo-session rendered by ``prepare_prompt`` and truncated to nothing by its own
        truncation step (``max_retrieval_length`` 0), without reading notes."""
        entry = {
            "question": "",
            "question_date": "",
            "haystack_dates": [UNDATED],
            "haystack_session_ids": ["memory_1"],
            "haystack_sessions": [[]],
            "retrieval_results": {"ranked_items": [{"corpus_id": "memory_1", "text": ""}]},
        }
        prompt = self._prompt(entry, RETRIEVER, EXPANSION_NONE, 0, reading_notes=False)
        return self._request(str(prompt))

    def judge_prompt(self, question: Question, answer: str) -> str:
        """``get_anscheck_prompt`` called by the ``__main__`` block's own expression."""
        return str(
            extract.evaluate(
                self._judge_prompt,
                self._judge_where,
                {
                    "get_anscheck_prompt": self._get_anscheck_prompt,
                    "qtype": question.extra.get("question_type", question.axis),
                    "q": question.text,
                    "ans": question.gold,
                    "hyp": answer,
                    "entry": {"question_id": question.id},
                },
            )
        )

    def judge_request(self, question: Question, answer: str) -> ChatRequest:
        prompt = self.judge_prompt(question, answer)
        messages = extract.evaluate(self._judge_messages, self._judge_where, {"prompt": prompt})
        return ChatRequest(
            tuple(dict(m) for m in messages), dict(self._judge_settings), PURPOSE_JUDGE
        )

    def label(self, reply: str) -> bool:
        """The ``__main__`` block's verdict on a raw reply: ``eval_response`` (the reply
        stripped), then ``label = 'yes' in eval_response.lower()``."""
        response = extract.evaluate(
            self._judge_response, self._judge_where, {"completion": _response(reply)}
        )
        return bool(
            extract.evaluate(self._judge_label, self._judge_where, {"eval_response": response})
        )

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        if mode != "answer":
            raise ValueError(f"LongMemEval judges answers only, not mode {mode!r}")
        if answer is None:
            return (
                JudgeResult(
                    LME_LABEL,
                    None,
                    False,
                    None,
                    None,
                    (),
                    null_reason=f"{RULE_NO_ANSWER}: the reader wrote no answer; nothing to judge",
                ),
            )
        request = self.judge_request(ctx.question, answer)
        completion = call(request)
        if not completion.ok:
            return (
                JudgeResult(
                    LME_LABEL,
                    None,
                    False,
                    completion.text,
                    request.prompt_sha256,
                    (completion,),
                    error=completion.error or "the judge call returned no text",
                ),
            )
        reply = str(completion.text)
        value = 1.0 if self.label(reply) else 0.0
        unparsed = not (_mentions(reply, "yes") or _mentions(reply, "no"))
        return (
            JudgeResult(LME_LABEL, value, unparsed, reply, request.prompt_sha256, (completion,)),
        )

    # ------------------------------------------------------------ judge-check

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        """Known-verdict cases from LongMemEval's own judge rules, per question in order:

        * answerable questions: ``gold_verbatim`` (the gold answer, 1; not on
          single-session-preference, whose gold is a rubric, not a response),
          ``plausible_wrong`` (the gold of the next question of the same type whose gold
          differs, 0), ``unrelated`` (:data:`UNRELATED`, 0), ``dont_know`` (:data:`DONT_KNOW`,
          0), and ``partial_multi`` (the first part of a gold that lists parts, 0; not on
          "how many/much/long/often" questions) on the types whose official prompt
          says a subset is wrong (:data:`SUBSET_WORD`);
        * abstention questions (``_abs``): ``gold_verbatim`` (the explanation, 1),
          ``dont_know`` (1: it identifies the question as unanswerable), ``unrelated`` (0) and
          ``invented_abstain`` (the gold of an answerable question of the same type, else of
          any, stated as fact: 0).
        """
        if mode != "answer":
            return []
        cases: list[JudgeCase] = []
        answerable = [q for q in questions if not _abstention(q)]
        for q in questions:
            qtype = _qtype(q)
            gold = "" if q.gold is None else str(q.gold)
            same = [o for o in answerable if _qtype(o) == qtype and o.id != q.id]
            if _abstention(q):
                cases.append(JudgeCase("gold_verbatim", q, gold, 1.0, LME_LABEL))
                cases.append(JudgeCase("dont_know", q, DONT_KNOW, 1.0, LME_LABEL))
                cases.append(JudgeCase("unrelated", q, UNRELATED, 0.0, LME_LABEL))
                donor = next(iter(same or [o for o in answerable if o.id != q.id]), None)
                if donor is not None and donor.gold:
                    cases.append(JudgeCase("invented_abstain", q, str(donor.gold), 0.0, LME_LABEL))
                continue
            if qtype != PREFERENCE:
                cases.append(JudgeCase("gold_verbatim", q, gold, 1.0, LME_LABEL))
            wrong = _next_with_other_gold(q, [o for o in answerable if _qtype(o) == qtype])
            if wrong is not None:
                cases.append(JudgeCase("plausible_wrong", q, str(wrong.gold), 0.0, LME_LABEL))
            cases.append(JudgeCase("unrelated", q, UNRELATED, 0.0, LME_LABEL))
            cases.append(JudgeCase("dont_know", q, DONT_KNOW, 0.0, LME_LABEL))
            part = None if _COUNTING.match(q.text) else first_part(gold)
            if part is not None and SUBSET_WORD in self.judge_prompt(q, ""):
                cases.append(JudgeCase("partial_multi", q, part, 0.0, LME_LABEL))
        return cases


PREFERENCE = "single-session-preference"
SUBSET_WORD = "subset"
"""A ``partial_multi`` case is built only where the type's official judge prompt has a
sentence with this word (at 9e0b455: the rule that a response holding only a subset of the
answer's information is wrong, in the single-session, multi-session and temporal prompts)."""
DONT_KNOW = "I don't know."
UNRELATED = "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen."
_PARTS = re.compile(r",\s*(?:and\s+)?|\s+and\s+")
_COUNTING = re.compile(r"^\s*how (many|much|long|often)\b", re.I)


def first_part(gold: str) -> str | None:
    """The first item of a gold that lists several short parts (``"the cello and the piano"``
    -> ``"the cello"``), or None: golds with digits or a colon (a count or a total stated
    beside the items) and parts over six words are not split."""
    if any(c.isdigit() for c in gold) or ":" in gold:
        return None
    parts = [p.strip(" .") for p in _PARTS.split(gold)]
    if len(parts) < 2 or any(not p or len(p.split()) > 6 for p in parts):
        return None
    return parts[0]


def _date(memory: Retrieved) -> str:
    for t in memory.turns:
        if t.date is not None:
            return t.date
    return UNDATED


def _qtype(q: Question) -> str:
    return str(q.extra.get("question_type", q.axis))


def _abstention(q: Question) -> bool:
    return "_abs" in q.id


def _next_with_other_gold(q: Question, same: Sequence[Question]) -> Question | None:
    """The first question after ``q`` in ``same`` (its type's answerable questions in dataset
    order, wrapping round) whose gold differs from ``q``'s, case and spaces aside."""
    mine = (q.gold or "").strip().lower()
    at = next((i for i, o in enumerate(same) if o.id == q.id), -1)
    ordered = [*same[at + 1 :], *same[: max(at, 0)]]
    for other in ordered:
        if other.gold and str(other.gold).strip().lower() != mine:
            return other
    return None


def make_instrument(options: InstrumentOptions) -> LongMemEvalInstrument:
    """``Benchmark.answering`` for LongMemEval: its official instrument for ``options``."""
    return LongMemEvalInstrument(options)
