"""BEAM's own reader and judges, read from its repository at the pinned commit (b2a3ee8).

Files (downloaded into the cache, checked against the SHA-256 pinned here, never committed):

* ``src/prompts.py``: the judge prompt ``unified_llm_judge_base_prompt`` and the RAG reader
  prompt ``answer_generation_for_rag`` (read with :func:`~recallbench.instruments.extract.literal`);
* ``src/evaluation/compute_metrics.py``: the scoring functions themselves. recallbench compiles
  ``evaluate_<ability>`` (all ten), ``event_ordering_score``, ``align_with_llm``,
  ``llm_equivalence`` and ``parse_json_response`` from the file's own source
  (:func:`~recallbench.instruments.extract.namespace`) and runs them; the file's imports never
  run (they download NLTK data and sentence-transformers models). What they call is provided:
  ``json``, ``re``, ``json_repair.repair_json`` (the package BEAM's requirements pin, 0.44.1),
  a ``kendalltau`` computing what ``scipy.stats.kendalltau(variant="b")`` computes (SciPy is
  not a dependency of recallbench's benchmarks), the judge prompt, and a ``model`` whose
  ``invoke`` sends the request through the pipeline's :data:`~recallbench.llm.types.CallLLM`;
* ``src/evaluation/run_evaluation.py``: which ``evaluate_<ability>`` each ability is scored with
  (its ``if key == ...`` dispatch, read from the syntax tree) and which model judges
  (``model=gpt_llm`` in its ``__main__`` block);
* ``src/llm.py``: that model's construction, ``BuildLLm(model_name="gpt-4.1-mini",
  temperature=0, ...)`` through LangChain's ``ChatOpenAI``, read as literal keywords.

Per question the official functions produce ``llm_judge_score`` (the ``rubric`` figure: each
rubric item judged alone, ``int(score)`` summed and divided by the item count, so a 0.5 grade
counts 0 on every ability but event ordering, which sums ``float(score)``) and, for
event-ordering questions, ``tau_norm`` (the ``event_ordering`` figure: the answer split into
lines, each line matched to a gold event by the judge's YES/NO equivalence call, Kendall tau-b of
the two rank lists normalised to (tau + 1) / 2), which is what BEAM's ``report_results.py``
reports for that ability. Quirks reproduced as they are: the judge prompt's ``<question>``
placeholder is never filled (the judge never sees the question), and a repeated identical
request within one question is sent once (the judge is deterministic at temperature 0 and the
reply is reused).

Verdict parsing is the file's own: ``parse_json_response``, then ``json_repair``. A reply from
which the official code cannot get a score (its evaluation would stop with an exception) is
scored as if the judge had replied ``{"score": 0}`` and counted as unparsed; a transport
failure or an empty reply after the retries is a judge error (null, out of the denominator).
Every step not reproduced is listed by :meth:`BeamInstrument.deviations`.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar, List, Tuple  # noqa: UP035 - the official annotations use them

from recallbench.benchmarks.beam.load import COMMIT, REPO
from recallbench.benchmarks.beam.metrics import (
    ABILITIES,
    EVENT_ORDERING,
    build_rubric_prompt,
    kendall_tau_b_scipy,
    parse_rubric_grade,
    rubric_outcome,
    rubric_prompt_version,
)
from recallbench.benchmarks.beam.rules import EVENT_ORDER, RUBRIC
from recallbench.contracts import Question, canonical_json, sha256_text
from recallbench.errors import UserError
from recallbench.instruments import extract
from recallbench.instruments.pins import InstrumentFile, LoadedInstrument, fetch_instrument
from recallbench.instruments.protocol import (
    OFFICIAL,
    RECALLBENCH_V1,
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

NAME = "beam"
PROMPTS = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/prompts.py",
    "2f630cc983ab0c34cfa80b1b4d340f5b51a9b4a3baa5af8aea9503c585eda06a",
)
COMPUTE_METRICS = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/evaluation/compute_metrics.py",
    "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c",
)
RUN_EVALUATION = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/evaluation/run_evaluation.py",
    "518894ab65860043a24259457ddf3b1ab8ae18427b6e01e5aa90cd29c4256a3b",
)
LLM = InstrumentFile(
    NAME,
    REPO,
    COMMIT,
    "src/llm.py",
    "1ce32f8bf67935fc0fcf169963cce79b5f7ee4e63e25baf72b174c497d364c54",
)
FILES: tuple[InstrumentFile, ...] = (PROMPTS, COMPUTE_METRICS, RUN_EVALUATION, LLM)

JUDGE_PROMPT = "unified_llm_judge_base_prompt"
READER_PROMPT = "answer_generation_for_rag"
JSON_REPAIR_VERSION = "0.44.1"
"""The ``json_repair`` version BEAM's ``requirements.txt`` pins at the commit."""
OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where LangChain's ``ChatOpenAI`` sends a request when ``openai_api_base`` is None (``llm.py``
passes ``model_url=None`` for the judge): the OpenAI client's default."""
READER_SETTINGS: Mapping[str, Any] = {"temperature": 0}
"""BEAM's RAG reader call: ``BuildLLm(..., temperature=0)`` in
``src/answer_probing_questions/answer_generation.py`` (not among the pinned files; see
:data:`DEVIATIONS`)."""
UNPARSED_REPLY = '{"score": 0}'
"""What the official code is handed in place of a judge reply it cannot score: recallbench's
rule for such replies (score 0, counted as unparsed), applied where the reply enters."""

PURPOSE_READER = "reader"
PURPOSE_RUBRIC = "judge:rubric"
PURPOSE_MATCH = "judge:event-match"

NAN_REASON = (
    "beam_tau_undefined: Kendall tau-b is undefined when the gold and answer events are one "
    "single event (SciPy returns NaN, and compute_metrics.py records it)"
)
NO_RUBRIC_REASON = "beam_no_rubric: the question has no rubric items to judge"

DEVIATIONS: tuple[str, ...] = (
    "reader: BEAM's RAG harness (src/answer_probing_questions/long_term_memory_methods.py and "
    "answer_generation.py at the commit, not among the pinned files) fills "
    "answer_generation_for_rag by replacing <context> then <question>, and builds the reader "
    "with temperature 0; recallbench does both steps the same way. The harness concatenates "
    "its retrieved chunks with no separator within an estimated 29,000-token budget "
    "(characters / 3.5), or filters them with its own 'light' method; recallbench puts the "
    "system's memories in rank order, one per line, with no budget. BEAM pins no reader model",
    "evaluate_event_ordering first asks the judge to break the answer into facts "
    "(extract_facts) and then discards the result (system_list = llm_response.split('\\n')); "
    "recallbench does not make that call, which changes no score",
    "scipy.stats.kendalltau(variant='b') is replaced by recallbench's implementation of the "
    "same formula ((concordant - discordant) / sqrt(n0 - ties_x) / sqrt(n0 - ties_y), clamped "
    "to [-1, 1], NaN when one side is all ties); its p-value, unused by BEAM, is not computed",
    "a judge reply from which compute_metrics.py gets no score (parse_json_response and "
    "json_repair both fail, the JSON has no 'score', or int()/float() rejects it) stops BEAM's "
    "evaluation of that conversation with an exception; recallbench scores that rubric item 0 "
    "and counts the reply as unparsed",
    "an empty judge reply, or a call that still fails after the retries (LangChain's default "
    "of 2 retries), stops BEAM's evaluation too; recallbench records a judge error (null, out "
    "of the denominator)",
    "a question without an answer (the reader failed) scores 0 without a judge call; BEAM's "
    "harness judges its error message ('Error in ... question type ...') in its place",
    "aggregation: BEAM's report_results.py averages each ability per conversation, then over "
    "conversations; recallbench averages over the questions of each slice (the same when every "
    "conversation has as many questions of the ability). BEAM reports the event-ordering "
    "ability by tau_norm: recallbench's event_ordering figure; its rubric figure on those "
    "questions is compute_metrics.py's llm_judge_score",
)


class BeamInstrumentError(UserError):
    """A mode or option the BEAM instrument cannot apply."""


class _CallFailed(Exception):
    """A judge call that failed after its retries, or came back empty: a judge error."""

    def __init__(self, completion: Completion, message: str) -> None:
        super().__init__(message)
        self.completion = completion


@dataclass(frozen=True, slots=True)
class _Content:
    """What LangChain's ``invoke`` returns, as far as compute_metrics.py reads it."""

    content: str


class _JudgeModel:
    """The ``model`` handed to the official functions: ``invoke(prompt)`` sends a user message
    (``invoke(messages)`` the messages as given) through ``call`` with the judge's settings.

    One instance serves one question in one thread. Completions are kept by prompt hash
    (``memo``, shared by the reruns of the same question), so a request is sent once; a rubric
    reply whose prompt hash is in ``unparsed`` is handed over as :data:`UNPARSED_REPLY`.
    """

    def __init__(
        self,
        call: CallLLM,
        settings: Mapping[str, Any],
        memo: dict[str, tuple[str, Completion]],
        unparsed: set[str],
    ) -> None:
        self._call = call
        self._settings = dict(settings)
        self._memo = memo
        self._unparsed = unparsed
        self.last: tuple[str, str] | None = None

    def invoke(self, prompt: Any) -> _Content:
        if isinstance(prompt, str):
            request = ChatRequest.user(prompt, PURPOSE_RUBRIC, **self._settings)
        else:
            messages = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in prompt)
            request = ChatRequest(messages, dict(self._settings), PURPOSE_MATCH)
        key = request.prompt_sha256
        if key not in self._memo:
            self._memo[key] = (request.purpose, self._call(request))
        purpose, completion = self._memo[key]
        if not completion.ok:
            raise _CallFailed(completion, completion.error or "judge call failed")
        text = completion.text or ""
        if not text.strip():
            raise _CallFailed(completion, "empty reply from the judge after the retries")
        self.last = (purpose, key)
        if purpose == PURPOSE_RUBRIC and key in self._unparsed:
            return _Content(UNPARSED_REPLY)
        return _Content(text)


def _kendalltau(
    x: Sequence[Any], y: Sequence[Any], *, variant: str = "b", method: str = "auto"
) -> tuple[float, float]:
    """``scipy.stats.kendalltau`` as compute_metrics.py calls it: (tau-b, p-value), the p-value
    NaN (not computed; BEAM never reads it)."""
    if variant != "b":
        raise ValueError(f"only variant 'b' is provided, not {variant!r}")
    return kendall_tau_b_scipy(x, y), math.nan


def _no_extract_facts(paragraph: str, question: str, model: Any) -> list[str]:
    """Stand-in for ``extract_facts``, whose result evaluate_event_ordering discards."""
    return []


def _dispatch(module: ast.Module, where: str) -> dict[str, str]:
    """``ability -> evaluate_<ability>`` from run_evaluation()'s ``if key == '<ability>':
    result = evaluate_...(...)`` chain."""
    out: dict[str, str] = {}
    for node in extract.walk(extract.function(module, "run_evaluation", where)):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        test = node.test
        if not (
            isinstance(test.left, ast.Name)
            and test.left.id == "key"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, str)
        ):
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Assign)
            and isinstance(first.value, ast.Call)
            and isinstance(first.value.func, ast.Name)
        ):
            out.setdefault(test.comparators[0].value, first.value.func.id)
    if not out:
        raise extract.InstrumentFormatError(f"{where}: no 'if key == ...' dispatch found")
    return out


def _judge_pin(run_eval: ast.Module, llm: ast.Module) -> ModelPin:
    """The judge: the ``model=`` of run_evaluation.py's ``__main__`` call, built in llm.py."""
    main = extract.main_block(run_eval)
    if main is None:
        raise extract.InstrumentFormatError(f"{RUN_EVALUATION.path}: no __main__ block")
    model_name: str | None = None
    for node in extract.walk(main):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "model" and isinstance(kw.value, ast.Name):
                    model_name = kw.value.id
    if model_name is None:
        raise extract.InstrumentFormatError(f"{RUN_EVALUATION.path}: no model= in __main__")
    built = extract.assigned_expr(llm, model_name)  # gpt_llm = gpt_llm_obj.build_llm()
    if not (
        isinstance(built, ast.Call)
        and isinstance(built.func, ast.Attribute)
        and isinstance(built.func.value, ast.Name)
    ):
        raise extract.InstrumentFormatError(f"{LLM.path}: {model_name} is not X.build_llm()")
    obj = built.func.value.id
    construct = extract.assigned_expr(llm, obj)
    if not isinstance(construct, ast.Call):
        raise extract.InstrumentFormatError(f"{LLM.path}: {obj} is not built by a call")
    kws = extract.keywords(construct)
    if "model_name" not in kws or "temperature" not in kws:
        raise extract.InstrumentFormatError(f"{LLM.path}: {obj} lacks model_name/temperature")
    settings: dict[str, Any] = {"temperature": kws["temperature"]}
    if isinstance(kws.get("extra_body"), Mapping):
        settings.update(kws["extra_body"])
    base_url = kws.get("model_url") or OPENAI_BASE_URL
    return ModelPin(
        model=str(kws["model_name"]),
        settings=settings,
        base_url=base_url,
        api_key_env="OPENAI_API_KEY",
        tries=3,
        timeout_s=600.0,
        empty_is_failure=True,
        source=(
            f"{LLM.path} {obj} = BuildLLm(...) (LangChain ChatOpenAI; {RUN_EVALUATION.path} "
            f"__main__: model={model_name}); retries and timeout are LangChain's and the "
            "OpenAI client's defaults (2 retries, 600 s)"
        ),
    )


@dataclass(frozen=True, slots=True)
class _Official:
    files: tuple[InstrumentFileRecord, ...]
    judge_prompt: str
    reader_prompt: str
    judge: ModelPin
    evaluators: Mapping[str, Callable[..., dict[str, Any]]]
    json_repair_version: str


def _json_repair() -> tuple[Callable[[str], str], str]:
    try:
        from json_repair import repair_json
    except ImportError as exc:  # a declared dependency: missing means a broken install
        raise BeamInstrumentError(
            f"BEAM's judge parsing needs the json-repair package ({JSON_REPAIR_VERSION}, as "
            f"BEAM pins): pip install json-repair=={JSON_REPAIR_VERSION}"
        ) from exc
    return repair_json, metadata.version("json-repair")


def load_official(cache_dir: Any) -> _Official:
    """Fetch and verify the four files and read everything the instrument uses from them."""
    loaded: dict[str, LoadedInstrument] = {f.path: fetch_instrument(f, cache_dir) for f in FILES}

    def tree(f: InstrumentFile) -> ast.Module:
        return extract.parse(loaded[f.path].text, f.path)

    prompts = tree(PROMPTS)
    judge_prompt = extract.literal(prompts, JUDGE_PROMPT, PROMPTS.path)
    reader_prompt = extract.literal(prompts, READER_PROMPT, PROMPTS.path)
    run_eval = tree(RUN_EVALUATION)
    dispatch = _dispatch(run_eval, RUN_EVALUATION.path)
    repair_json, version = _json_repair()
    names = (
        "parse_json_response",
        "llm_equivalence",
        "align_with_llm",
        "event_ordering_score",
        *sorted(set(dispatch.values())),
    )
    ns = extract.namespace(
        tree(COMPUTE_METRICS),
        names,
        COMPUTE_METRICS.path,
        provided={
            "json": json,
            "re": re,
            "List": List,  # noqa: UP006
            "Tuple": Tuple,  # noqa: UP006
            "repair_json": repair_json,
            "kendalltau": _kendalltau,
            "extract_facts": _no_extract_facts,
            JUDGE_PROMPT: judge_prompt,
        },
    )
    return _Official(
        files=tuple(loaded[f.path].record for f in FILES),
        judge_prompt=judge_prompt,
        reader_prompt=reader_prompt,
        judge=_judge_pin(run_eval, tree(LLM)),
        evaluators={ability: ns[fn] for ability, fn in dispatch.items()},
        json_repair_version=version,
    )


def _figure_hash(completions: Sequence[Completion]) -> str | None:
    """The prompt hash of a figure: the call's own for one call, else the SHA-256 of the
    canonical JSON list of its calls' prompt hashes, in the order first sent."""
    if not completions:
        return None
    if len(completions) == 1:
        return completions[0].prompt_sha256
    return sha256_text(canonical_json([c.prompt_sha256 for c in completions]))


def _has_yes_or_no(text: str | None) -> bool:
    low = (text or "").lower()
    return "yes" in low or "no" in low


class BeamInstrument(AnswerInstrument):
    """BEAM's official instrument: ``answer_generation_for_rag`` as reader prompt (the reader
    model is the operator's), ``unified_llm_judge_base_prompt`` judged by ``gpt-4.1-mini`` at
    temperature 0, scored by compute_metrics.py's own functions. See the module docstring."""

    name: ClassVar[str] = f"beam {COMMIT[:7]} official"
    official: ClassVar[bool] = True
    modes: ClassVar[tuple[str, ...]] = ("answer",)
    reader_presets: ClassVar[tuple[str, ...]] = ()
    reader_is_judge: ClassVar[bool] = False
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {"answer": (RUBRIC, EVENT_ORDER)}
    weighted_metrics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: InstrumentOptions) -> None:
        if options.reader_preset is not None:
            raise BeamInstrumentError(
                f"BEAM has one reader prompt ({READER_PROMPT}); no reader preset "
                f"{options.reader_preset!r}"
            )
        if options.judge_variant is not None:
            raise BeamInstrumentError(f"BEAM has no judge variant {options.judge_variant!r}")
        self.options = options
        self._official = load_official(options.cache_dir)

    # ------------------------------------------------------------ description

    @property
    def judge_pin(self) -> ModelPin:
        return self._official.judge

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        return self._official.files

    def deviations(self) -> tuple[str, ...]:
        extra: tuple[str, ...] = ()
        if self._official.json_repair_version != JSON_REPAIR_VERSION:
            extra = (
                f"json_repair {self._official.json_repair_version} repairs the judge replies "
                f"parse_json_response rejects; BEAM pins {JSON_REPAIR_VERSION}",
            )
        return DEVIATIONS + extra

    # ------------------------------------------------------------ reader

    def reader_request(self, question: str, context: str) -> ChatRequest:
        """The reader prompt with ``<context>`` then ``<question>`` replaced, as BEAM's RAG
        path fills it, in one user message with :data:`READER_SETTINGS`."""
        prompt = self._official.reader_prompt.replace("<context>", context).replace(
            "<question>", question
        )
        return ChatRequest.user(prompt, PURPOSE_READER, **READER_SETTINGS)

    def empty_reader_request(self) -> ChatRequest:
        """The reader prompt with an empty context and an empty question (the baseline whose
        token count is subtracted from each reader call's: the rest is memories and question)."""
        return self.reader_request("", "")

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        """One reader call; the answer is the reply as returned (BEAM stores it unstripped).
        The context is the memories' texts in rank order, one per line (empty under
        ``no-memory``)."""
        context = "\n".join(m.text for m in ctx.memories)
        request = self.reader_request(ctx.question.text, context)
        completion = call(request)
        if not completion.ok:
            return ReaderResult(
                None,
                None,
                request.prompt_sha256,
                (completion,),
                error=completion.error or "reader call failed",
            )
        return ReaderResult(completion.text, completion.text, request.prompt_sha256, (completion,))

    # ------------------------------------------------------------ judge

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        """Judge ``answer`` with the official ``evaluate_<ability>`` of the question's ability:
        ``rubric`` (llm_judge_score) always, ``event_ordering`` (tau_norm) on event-ordering
        questions. A call failure stops the question (every figure a judge error); a reply the
        official code cannot score is rerun as :data:`UNPARSED_REPLY` (earlier replies reused,
        not re-requested) and flagged unparsed."""
        if mode != "answer":
            raise BeamInstrumentError(f"BEAM judges answers only (mode answer), not {mode!r}")
        q = ctx.question
        metrics = (RUBRIC, EVENT_ORDER) if q.axis == EVENT_ORDERING else (RUBRIC,)
        rubric = list(q.extra.get("rubric") or ())
        if not rubric:
            return tuple(
                JudgeResult(m, None, False, None, None, (), null_reason=NO_RUBRIC_REASON)
                for m in metrics
            )
        if answer is None:
            return tuple(JudgeResult(m, 0.0, False, None, None, ()) for m in metrics)
        evaluate = self._official.evaluators.get(q.axis)
        if evaluate is None:
            reason = (
                f"beam_unknown_ability: {RUN_EVALUATION.path} scores no ability {q.axis!r} "
                f"(it scores {', '.join(sorted(self._official.evaluators))})"
            )
            return tuple(
                JudgeResult(m, None, False, None, None, (), null_reason=reason) for m in metrics
            )
        memo: dict[str, tuple[str, Completion]] = {}
        unparsed: set[str] = set()
        while True:
            model = _JudgeModel(call, self._official.judge.settings, memo, unparsed)
            try:
                result = evaluate(
                    rubric=list(rubric), llm_response=answer, probing_question=q.text, model=model
                )
                break
            except _CallFailed as failed:
                calls = tuple(c for _, c in memo.values())
                return tuple(
                    JudgeResult(m, None, False, None, _figure_hash(calls), calls, error=str(failed))
                    for m in metrics
                )
            except Exception:
                last = model.last
                if last is None or last[0] != PURPOSE_RUBRIC or last[1] in unparsed:
                    raise
                unparsed.add(last[1])
        rubric_calls = [(k, c) for k, (p, c) in memo.items() if p == PURPOSE_RUBRIC]
        rubric_completions = tuple(c for _, c in rubric_calls)
        results = [
            JudgeResult(
                RUBRIC,
                float(result["llm_judge_score"]),
                any(k in unparsed for k, _ in rubric_calls),
                canonical_json([c.text for c in rubric_completions]),
                _figure_hash(rubric_completions),
                rubric_completions,
            )
        ]
        if q.axis == EVENT_ORDERING:
            matches = tuple(c for p, c in memo.values() if p == PURPOSE_MATCH)
            tau = float(result["tau_norm"])
            results.append(
                JudgeResult(
                    EVENT_ORDER,
                    None if math.isnan(tau) else tau,
                    any(not _has_yes_or_no(c.text) for c in matches),
                    canonical_json([c.text for c in matches]),
                    _figure_hash(matches),
                    matches,
                    null_reason=NAN_REASON if math.isnan(tau) else None,
                )
            )
        return tuple(results)

    # ------------------------------------------------------------ judge-check

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        """Known-verdict cases on the ``rubric`` figure, per question with a rubric:

        * ``gold_verbatim`` (expected 1): the question's published answer, where it is one
          (``answer``, ``ideal_answer``, ``ideal_response``, ``ideal_summary``; not the
          ``expected_compliance`` description of instruction and preference following);
        * ``plausible_wrong`` (0): that answer of the next question of the same ability;
        * ``unrelated`` (0): that answer of the first question of the next ability;
        * ``dont_know`` (0): "I don't know." on every ability but abstention, whose rubric
          asks the reply to say what is missing.
        """
        if mode != "answer":
            return []
        answers = [q for q in questions if _answer_text(q) is not None and q.extra.get("rubric")]
        by_ability: dict[str, list[Question]] = {}
        for q in answers:
            by_ability.setdefault(q.axis, []).append(q)
        order = [a for a in ABILITIES if a in by_ability] + sorted(
            a for a in by_ability if a not in ABILITIES
        )
        cases: list[JudgeCase] = []
        for q in questions:
            if not q.extra.get("rubric"):
                continue
            gold = _answer_text(q)
            if gold is not None:
                cases.append(JudgeCase("gold_verbatim", q, gold, 1.0, RUBRIC))
            same = [o for o in by_ability.get(q.axis, []) if o.id != q.id]
            if same:
                later = [o for o in same if o.id > q.id]
                other = (later or same)[0]
                cases.append(JudgeCase("plausible_wrong", q, str(_answer_text(other)), 0.0, RUBRIC))
            others = [a for a in order if a != q.axis]
            if others:
                index = order.index(q.axis) if q.axis in order else -1
                nxt = next((a for a in order[index + 1 :] if a != q.axis), others[0])
                cases.append(
                    JudgeCase("unrelated", q, str(_answer_text(by_ability[nxt][0])), 0.0, RUBRIC)
                )
            if q.axis != "abstention":
                cases.append(JudgeCase("dont_know", q, "I don't know.", 0.0, RUBRIC))
        return cases


_ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")


def _answer_text(q: Question) -> str | None:
    """The question's published answer when its gold field is an answer (not a description)."""
    return q.gold if q.gold is not None and q.extra.get("gold_field") in _ANSWER_FIELDS else None


class BeamV1Instrument(BeamInstrument):
    """``recallbench prompts v1`` for BEAM: the rubric judged item by item with recallbench's
    own wording (``prompts/beam_rubric_v1.json``, which gives the judge the question), grades
    read by :func:`~recallbench.benchmarks.beam.metrics.parse_rubric_grade`, the mean kept
    with 0.5 grades (an unreadable grade counts 0, unparsed). The reader is BEAM's. Not a BEAM
    score: a labelled alternative; no event-ordering figure."""

    name: ClassVar[str] = "recallbench prompts v1"
    official: ClassVar[bool] = False
    judge_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {"answer": (RUBRIC,)}

    def deviations(self) -> tuple[str, ...]:
        return (
            f"judge prompt: recallbench's own wording (beam_rubric_v1.json version "
            f"{rubric_prompt_version()}), not BEAM's unified_llm_judge_base_prompt; grades kept "
            "as 0 / 0.5 / 1 (BEAM truncates them with int()); no event-ordering score",
            *DEVIATIONS[:1],
        )

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        if mode != "answer":
            raise BeamInstrumentError(f"BEAM judges answers only (mode answer), not {mode!r}")
        q = ctx.question
        rubric = list(q.extra.get("rubric") or ())
        if not rubric:
            return (JudgeResult(RUBRIC, None, False, None, None, (), null_reason=NO_RUBRIC_REASON),)
        if answer is None:
            return (JudgeResult(RUBRIC, 0.0, False, None, None, ()),)
        completions: list[Completion] = []
        grades: list[float | None] = []
        for item in rubric:
            request = ChatRequest.user(
                build_rubric_prompt(q.text, item, answer),
                PURPOSE_RUBRIC,
                **self._official.judge.settings,
            )
            completion = call(request)
            completions.append(completion)
            if not completion.ok or not (completion.text or "").strip():
                calls = tuple(completions)
                error = completion.error or "empty reply from the judge after the retries"
                return (JudgeResult(RUBRIC, None, False, None, _figure_hash(calls), calls, error),)
            grades.append(parse_rubric_grade(completion.text))
        outcome = rubric_outcome(grades)
        calls = tuple(completions)
        return (
            JudgeResult(
                RUBRIC,
                outcome.score,
                outcome.missing > 0,
                canonical_json([c.text for c in calls]),
                _figure_hash(calls),
                calls,
            ),
        )


def build(options: InstrumentOptions) -> AnswerInstrument:
    """``Benchmark.answering`` for BEAM: the official instrument, or ``recallbench prompts v1``
    (``options.prompts == "recallbench-v1"``)."""
    if options.prompts == OFFICIAL:
        return BeamInstrument(options)
    if options.prompts == RECALLBENCH_V1:
        return BeamV1Instrument(options)
    raise BeamInstrumentError(
        f"unknown instrument {options.prompts!r} for BEAM (choose {OFFICIAL} or {RECALLBENCH_V1})"
    )
