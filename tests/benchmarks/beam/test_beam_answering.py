"""BEAM's official instrument: the prompts it sends are BEAM's verbatim, its scores are
compute_metrics.py's own, and a tampered file is refused.

The reference is BEAM's ``compute_metrics.py`` from the shared copy, executed here on its own
(its third-party imports stubbed through ``sys.modules``, SciPy's ``kendalltau`` real), driven
by a fake model that replies what each test decides; the instrument is driven by a fake
``CallLLM`` giving the same replies. No network.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import random
import shutil
import sys
import threading
import types
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import load_dataset
from recallbench.benchmarks.beam import BENCHMARK
from recallbench.benchmarks.beam.answering import (
    DEVIATIONS,
    PURPOSE_MATCH,
    PURPOSE_RUBRIC,
    BeamInstrument,
    BeamInstrumentError,
    BeamV1Instrument,
    build,
)
from recallbench.benchmarks.beam.metrics import ABILITIES, build_rubric_prompt, kendall_tau_b_scipy
from recallbench.contracts import Question
from recallbench.errors import ChecksumMismatchError, UserError
from recallbench.instruments.pins import DIR_ENV
from recallbench.instruments.protocol import (
    AnswerContext,
    InstrumentOptions,
    JudgeResult,
    Retrieved,
)
from recallbench.llm.types import ChatRequest, Completion

INSTRUMENTS = Path(__file__).resolve().parents[3].parent / "shared" / "instruments"
BEAM_SRC = INSTRUMENTS / "beam" / "src"


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def instruments(monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (BEAM_SRC / "evaluation" / "compute_metrics.py").is_file():
        pytest.skip("BEAM's instrument files not in the shared copy (../shared/instruments)")
    monkeypatch.setenv(DIR_ENV, str(INSTRUMENTS))
    return INSTRUMENTS


@pytest.fixture
def instrument(instruments: Path, tmp_path: Path) -> BeamInstrument:
    inst = build(InstrumentOptions(cache_dir=tmp_path / "cache"))
    assert isinstance(inst, BeamInstrument)
    return inst


@pytest.fixture
def official(instruments: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """compute_metrics.py imported on its own from the shared copy: ``src.prompts`` is the real
    prompts.py, ``src.llm`` empty, NLTK / rouge / sentence-transformers stubs, SciPy real."""
    pytest.importorskip("scipy")

    def module(name: str, **attrs: Any) -> types.ModuleType:
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, m)
        return m

    def unused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not used by the judge path")

    module("nltk", download=lambda *a, **k: None, word_tokenize=unused)
    module("nltk.translate")
    module("nltk.translate.bleu_score", sentence_bleu=unused, SmoothingFunction=unused)
    module("rouge_score")
    module("rouge_score.rouge_scorer", RougeScorer=unused)
    module("sentence_transformers", SentenceTransformer=unused, util=types.SimpleNamespace())
    src = module("src")
    src.__path__ = []  # type: ignore[attr-defined]
    prompts = module("src.prompts")
    exec(compile((BEAM_SRC / "prompts.py").read_text(encoding="utf-8"), "prompts.py", "exec"),
         prompts.__dict__)  # fmt: skip
    module("src.llm")
    spec = importlib.util.spec_from_file_location(
        "beam_compute_metrics_reference", BEAM_SRC / "evaluation" / "compute_metrics.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def sample(shared_data: Path, tmp_path: Path) -> list[Question]:
    folder = shared_data / "beam" / "chats" / "100K" / "1"
    if not (folder / "chat.json").is_file():
        pytest.skip("BEAM sample not in the shared data")
    return list(load_dataset(f"beam@{folder}", tmp_path).questions)


# ---------------------------------------------------------------- fakes


Reply = Callable[[ChatRequest], str | None]


class FakeCall:
    """A CallLLM: records each request, answers with ``reply(request)`` (None: a failure)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        text = self.reply(request)
        return Completion(
            text=text,
            model="fake",
            cache_key=request.prompt_sha256,
            prompt_sha256=request.prompt_sha256,
            purpose=request.purpose,
            error=None if text is not None else "HTTP 500 after 3 tries",
        )


class FakeModel:
    """The LangChain model compute_metrics.py expects, answering like a FakeCall."""

    def __init__(self, reply: Callable[[Any], str]) -> None:
        self.reply = reply
        self.prompts: list[Any] = []

    def invoke(self, prompt: Any) -> Any:
        self.prompts.append(prompt)
        return types.SimpleNamespace(content=self.reply(prompt))


def user_text(request: ChatRequest) -> str:
    assert [m["role"] for m in request.messages] == ["user"]
    return request.messages[0]["content"]


def rubric_item_of(prompt: str) -> str:
    """Which rubric item a rendered official judge prompt is about (for scripted replies)."""
    line = next(ln for ln in prompt.splitlines() if ln.startswith("- RUBRIC CRITERION"))
    return line.split(": ", 1)[1]


def same_event(messages: Any) -> str:
    """A scripted equivalence judge: YES when the answer line contains the gold event."""
    user = messages[-1]["content"] if not isinstance(messages, str) else messages
    first = user.split("First snippet: ", 1)[1].split(" \n", 1)[0]
    second = user.split("Second snippet: ", 1)[1].strip()
    return "YES" if first.lower() in second.lower() else "NO"


def ctx(q: Question) -> AnswerContext:
    return AnswerContext(question=q, memories=())


def by_metric(results: tuple[JudgeResult, ...]) -> dict[str, JudgeResult]:
    return {r.metric: r for r in results}


def question(ability: str, rubric: list[str], qid: str = "1:x:0", gold: str = "g") -> Question:
    return Question(
        id=qid,
        dataset="beam",
        group="1",
        text=f"A {ability} question?",
        gold=gold,
        axis=ability,
        extra={"ability": ability, "rubric": tuple(rubric), "gold_field": "answer"},
    )


# ---------------------------------------------------------------- verbatim prompts


def test_judge_prompts_are_the_official_ones_for_every_ability(
    instrument: BeamInstrument, official: types.ModuleType, sample: list[Question]
) -> None:
    """For one question of each ability in the sample: the requests sent are, byte for byte,
    what BEAM's own evaluate_<ability> sends its model, and the figures are its results."""
    abilities = sorted({q.axis for q in sample})
    assert abilities == sorted(ABILITIES)
    for ability in abilities:
        q = next(x for x in sample if x.axis == ability)
        rubric = list(q.extra["rubric"])
        answer = f"{q.gold}\n{rubric[0]}\nA third line."
        grades = {item: ("1.0", "0.5", "0.0")[i % 3] for i, item in enumerate(rubric)}

        def reply(request: ChatRequest, grades: dict[str, str] = grades) -> str:
            if request.purpose == PURPOSE_MATCH:
                return same_event(request.messages)
            item = rubric_item_of(user_text(request))
            return json.dumps({"score": float(grades[item]), "reason": "scripted"})

        def model_reply(prompt: Any, grades: dict[str, str] = grades) -> str:
            if isinstance(prompt, str) and "RUBRIC CRITERION" in prompt:
                item = rubric_item_of(prompt)
                return json.dumps({"score": float(grades[item]), "reason": "scripted"})
            if isinstance(prompt, str):  # extract_facts, whose result BEAM discards
                return "1. a fact"
            return same_event(prompt)

        call = FakeCall(reply)
        results = by_metric(instrument.judge(ctx(q), "answer", answer, call))
        model = FakeModel(model_reply)
        evaluate = getattr(official, f"evaluate_{ability}")
        expected = evaluate(
            rubric=rubric, llm_response=answer, probing_question=q.text, model=model
        )

        sent_rubric = [user_text(r) for r in call.requests if r.purpose == PURPOSE_RUBRIC]
        official_rubric = [p for p in model.prompts if isinstance(p, str) and "RUBRIC" in p]
        assert sent_rubric == official_rubric, ability
        assert len(sent_rubric) == len(rubric)
        assert all("<question>" in p for p in sent_rubric)  # BEAM never fills it
        sent_match = [
            [dict(m) for m in r.messages] for r in call.requests if r.purpose == PURPOSE_MATCH
        ]
        official_match = [p for p in model.prompts if not isinstance(p, str)]
        assert sent_match == official_match, ability
        assert results["rubric"].value == expected["llm_judge_score"], ability
        assert not results["rubric"].unparsed
        if ability == "event_ordering":
            assert official_match, "event ordering asks the equivalence judge"
            assert results["event_ordering"].value == expected["tau_norm"]
            # the one official call not made: extract_facts, whose result is discarded
            assert len(model.prompts) == len(call.requests) + 1
        else:
            assert set(results) == {"rubric"}
            assert len(model.prompts) == len(call.requests)


def test_judge_settings_and_model_are_the_files(instrument: BeamInstrument) -> None:
    tree = ast.parse((BEAM_SRC / "llm.py").read_text(encoding="utf-8"))
    (gpt,) = [
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "gpt_llm_obj"
    ]
    assert isinstance(gpt, ast.Call)
    kws = {k.arg: k.value for k in gpt.keywords}
    pin = instrument.judge_pin
    assert pin.model == ast.literal_eval(kws["model_name"]) == "gpt-4.1-mini"
    assert dict(pin.settings) == {"temperature": ast.literal_eval(kws["temperature"])}
    assert (
        "gpt_llm"
        in (BEAM_SRC / "evaluation" / "run_evaluation.py").read_text().split("__main__")[-1]
    )
    call = FakeCall(lambda r: '{"score": 1.0, "reason": "ok"}')
    instrument.judge(ctx(question("information_extraction", ["x", "y"])), "answer", "a", call)
    assert [dict(r.settings) for r in call.requests] == [{"temperature": 0}] * 2
    assert instrument.reader is None  # BEAM pins no reader model
    assert not instrument.reader_is_judge
    assert [f.path for f in instrument.files()] == [
        "src/prompts.py",
        "src/evaluation/compute_metrics.py",
        "src/evaluation/run_evaluation.py",
        "src/llm.py",
    ]
    assert all(f.pinned for f in instrument.files())


def test_reader_prompt_is_answer_generation_for_rag(instrument: BeamInstrument) -> None:
    tree = ast.parse((BEAM_SRC / "prompts.py").read_text(encoding="utf-8"))
    (template,) = [
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and getattr(n.targets[0], "id", "") == "answer_generation_for_rag"
    ]
    q = question("information_extraction", ["x"])
    memories = (Retrieved("first memory"), Retrieved("second <question> memory"))
    call = FakeCall(lambda r: " March 29. ")
    result = instrument.answer(AnswerContext(question=q, memories=memories), call)
    (request,) = call.requests
    # BEAM's RAG path: .replace("<context>", context).replace("<question>", query)
    context = "first memory\nsecond <question> memory"
    assert user_text(request) == template.replace("<context>", context).replace(
        "<question>", q.text
    )
    assert dict(request.settings) == {"temperature": 0} and request.purpose == "reader"
    assert result.answer == " March 29. " and result.reply == " March 29. "
    assert result.prompt_sha256 == request.prompt_sha256 and result.error is None
    empty = instrument.empty_reader_request()
    assert user_text(empty) == template.replace("<context>", "").replace("<question>", "")

    failed = instrument.answer(AnswerContext(q, memories), FakeCall(lambda r: None))
    assert failed.answer is None and failed.error == "HTTP 500 after 3 tries"


# ---------------------------------------------------------------- arithmetic


def scripted(replies: dict[str, str]) -> Reply:
    def reply(request: ChatRequest) -> str:
        if request.purpose == PURPOSE_MATCH:
            return same_event(request.messages)
        return replies[rubric_item_of(user_text(request))]

    return reply


def official_result(
    official: types.ModuleType, q: Question, answer: str, replies: dict[str, str]
) -> dict[str, Any]:
    def model_reply(prompt: Any) -> str:
        if isinstance(prompt, str) and "RUBRIC CRITERION" in prompt:
            return replies[rubric_item_of(prompt)]
        return "1. a fact" if isinstance(prompt, str) else same_event(prompt)

    evaluate = getattr(official, f"evaluate_{q.axis}")
    return evaluate(
        rubric=list(q.extra["rubric"]),
        llm_response=answer,
        probing_question=q.text,
        model=FakeModel(model_reply),
    )


def test_half_grades_truncate_except_on_event_ordering(
    instrument: BeamInstrument, official: types.ModuleType
) -> None:
    """int(score) on every ability but event ordering, whose rubric sums float(score)."""
    replies = {"a": '{"score": 1.0, "reason": "r"}', "b": '{"score": 0.5, "reason": "r"}'}
    q = question("knowledge_update", ["a", "b"])
    got = by_metric(instrument.judge(ctx(q), "answer", "x", FakeCall(scripted(replies))))
    assert got["rubric"].value == 0.5  # (1 + int(0.5)) / 2
    assert got["rubric"].value == official_result(official, q, "x", replies)["llm_judge_score"]

    e = question("event_ordering", ["a", "b"])
    got = by_metric(instrument.judge(ctx(e), "answer", "a\nb", FakeCall(scripted(replies))))
    assert got["rubric"].value == 0.75  # (1.0 + 0.5) / 2
    assert got["rubric"].value == official_result(official, e, "a\nb", replies)["llm_judge_score"]
    assert len(got["rubric"].calls) == 2 and got["rubric"].prompt_sha256 is not None


def test_event_ordering_tau_norm_hand_computed(
    instrument: BeamInstrument, official: types.ModuleType
) -> None:
    """Gold A, B, C; answer lines C, A, B. Ranks over the union (A, B, C): gold 1 2 3, answer
    2 3 1. Pairs: AB concordant, AC and BC discordant: tau-b = (1 - 2) / 3, tau_norm 1/3."""
    replies = {x: '{"score": 1.0, "reason": "r"}' for x in ("alpha", "beta", "gamma")}
    q = question("event_ordering", ["alpha", "beta", "gamma"])
    answer = "gamma step\nalpha step\nbeta step"
    got = by_metric(instrument.judge(ctx(q), "answer", answer, FakeCall(scripted(replies))))
    assert got["event_ordering"].value == pytest.approx(1 / 3, abs=1e-15)
    assert got["event_ordering"].value == official_result(official, q, answer, replies)["tau_norm"]
    assert not got["event_ordering"].unparsed
    # gamma is tried against alpha, beta, gamma; alpha against alpha; beta against beta (alpha used)
    assert len(got["event_ordering"].calls) == 5
    # an extra line that matches nothing ties at the end of the gold order
    answer2 = "alpha\nnoise\nbeta\ngamma"
    got2 = by_metric(instrument.judge(ctx(q), "answer", answer2, FakeCall(scripted(replies))))
    ref = official_result(official, q, answer2, replies)["tau_norm"]
    assert got2["event_ordering"].value == ref


def test_single_event_tau_is_null_with_a_reason(instrument: BeamInstrument) -> None:
    q = question("event_ordering", ["alpha"])
    call = FakeCall(scripted({"alpha": '{"score": 1.0, "reason": "r"}'}))
    got = by_metric(instrument.judge(ctx(q), "answer", "alpha", call))
    assert got["event_ordering"].value is None
    assert got["event_ordering"].null_reason.startswith("beam_tau_undefined:")
    assert got["rubric"].value == 1.0


def test_kendall_tau_b_scipy_hand_example_and_scipy() -> None:
    # x 1 2 3 4, y 1 3 2 4: five concordant, one discordant, no ties: 4 / 6, computed as
    # SciPy does (4 / sqrt(6) / sqrt(6), one ulp above 4 / 6)
    tau = kendall_tau_b_scipy([1, 2, 3, 4], [1, 3, 2, 4])
    assert tau == pytest.approx(2 / 3, abs=1e-15) and tau == 4 / math.sqrt(6) / math.sqrt(6)
    # with ties: x 1 1 2, y 1 2 3: pairs 3, ties_x 1, concordant 2: 2 / sqrt(2) / sqrt(3)
    assert kendall_tau_b_scipy([1, 1, 2], [1, 2, 3]) == 2 / math.sqrt(2) / math.sqrt(3)
    assert math.isnan(kendall_tau_b_scipy([1], [1]))
    assert math.isnan(kendall_tau_b_scipy([2, 2], [1, 2]))
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 8)
        x = [rng.randint(1, 4) for _ in range(n)]
        y = [rng.randint(1, 4) for _ in range(n)]
        ours = kendall_tau_b_scipy(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = float(scipy_stats.kendalltau(x, y, variant="b").statistic)
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == theirs, (x, y)


# ---------------------------------------------------------------- parsing and failures


def test_fenced_and_repaired_replies_parse_the_official_way(
    instrument: BeamInstrument, official: types.ModuleType
) -> None:
    replies = {
        "a": '```json\n{"score": 1.0, "reason": "fenced"}\n```',
        "b": '{"score": 1.0, "reason": "cut off',  # json_repair closes it
        "c": 'Here: {"score": 0.0, "reason": "prose around"} done',
    }
    q = question("temporal_reasoning", ["a", "b", "c"])
    got = by_metric(instrument.judge(ctx(q), "answer", "x", FakeCall(scripted(replies))))
    assert got["rubric"].value == 2 / 3 and not got["rubric"].unparsed
    assert got["rubric"].value == official_result(official, q, "x", replies)["llm_judge_score"]


def test_unscoreable_reply_is_zero_and_unparsed(
    instrument: BeamInstrument, official: types.ModuleType
) -> None:
    """BEAM's own evaluation raises on such a reply; recallbench scores the item 0, flags it,
    keeps the other items' grades and re-requests nothing."""
    replies = {
        "a": '{"score": 1.0, "reason": "r"}',
        "b": "I would rate this highly.",
        "c": '{"score": "0.5", "reason": "string grade"}',  # int("0.5") raises
        "d": '{"score": 1.0, "reason": "r"}',
    }
    q = question("multi_session_reasoning", ["a", "b", "c", "d"])
    with pytest.raises((ValueError, TypeError)):
        official_result(official, q, "x", replies)
    call = FakeCall(scripted(replies))
    got = by_metric(instrument.judge(ctx(q), "answer", "x", call))
    assert got["rubric"].value == 0.5  # (1 + 0 + 0 + 1) / 4
    assert got["rubric"].unparsed
    assert len(call.requests) == 4 == len({r.prompt_sha256 for r in call.requests})
    assert json.loads(got["rubric"].reply)[1] == "I would rate this highly."


def test_call_failure_and_empty_reply_are_judge_errors(instrument: BeamInstrument) -> None:
    q = question("event_ordering", ["a", "b"])
    failing = FakeCall(lambda r: None)
    got = by_metric(instrument.judge(ctx(q), "answer", "a\nb", failing))
    assert set(got) == {"rubric", "event_ordering"}
    assert all(r.value is None and r.error == "HTTP 500 after 3 tries" for r in got.values())
    empty = FakeCall(lambda r: "  \n" if r.purpose == PURPOSE_RUBRIC else "YES")
    got = by_metric(instrument.judge(ctx(q), "answer", "a\nb", empty))
    assert all(r.value is None and "empty reply" in (r.error or "") for r in got.values())


def test_unknown_ability_is_null_with_a_reason(instrument: BeamInstrument) -> None:
    call = FakeCall(lambda r: pytest.fail("no call expected"))
    (res,) = instrument.judge(ctx(question("time_travel", ["a"])), "answer", "x", call)
    assert res.value is None and res.null_reason.startswith("beam_unknown_ability:")


def test_no_answer_scores_zero_without_a_call(instrument: BeamInstrument) -> None:
    call = FakeCall(lambda r: pytest.fail("no call expected"))
    got = by_metric(instrument.judge(ctx(question("event_ordering", ["a"])), "answer", None, call))
    assert {m: r.value for m, r in got.items()} == {"rubric": 0.0, "event_ordering": 0.0}
    assert not call.requests


def test_equivalence_reply_without_yes_or_no_is_unparsed(instrument: BeamInstrument) -> None:
    q = question("event_ordering", ["a", "b"])

    def reply(r: ChatRequest) -> str:
        return "maybe" if r.purpose == PURPOSE_MATCH else '{"score": 1.0, "reason": "r"}'

    got = by_metric(instrument.judge(ctx(q), "answer", "a\nb", FakeCall(reply)))
    assert got["event_ordering"].unparsed and got["event_ordering"].value is not None
    assert not got["rubric"].unparsed


def test_memory_mode_and_options_are_refused(instrument: BeamInstrument, tmp_path: Path) -> None:
    with pytest.raises(BeamInstrumentError):
        instrument.judge(ctx(question("abstention", ["a"])), "memory", "x", FakeCall(str))
    assert issubclass(BeamInstrumentError, UserError)
    with pytest.raises(BeamInstrumentError):
        build(InstrumentOptions(cache_dir=tmp_path, reader_preset="json"))
    with pytest.raises(BeamInstrumentError):
        build(InstrumentOptions(cache_dir=tmp_path, prompts="nope"))
    assert instrument.modes == ("answer",)
    assert instrument.judge_metrics == {"answer": ("rubric", "event_ordering")}
    assert instrument.deviations() == DEVIATIONS


def test_concurrent_judging_equals_sequential(
    instrument: BeamInstrument, sample: list[Question]
) -> None:
    def reply(r: ChatRequest) -> str:
        if r.purpose == PURPOSE_MATCH:
            return same_event(r.messages)
        return '{"score": %s, "reason": "r"}' % (len(user_text(r)) % 3 / 2)

    def run(q: Question) -> tuple[Any, ...]:
        res = instrument.judge(ctx(q), "answer", f"{q.gold}\nline", FakeCall(reply))
        return tuple((r.metric, r.value, r.unparsed, r.prompt_sha256) for r in res)

    sequential = [run(q) for q in sample]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(run, sample * 1)) == sequential


# ---------------------------------------------------------------- files, wiring, cases


def test_tampered_copy_is_refused_naming_both_hashes(
    instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "instruments"
    shutil.copytree(instruments / "beam", copy / "beam")
    target = copy / "beam" / "src" / "evaluation" / "compute_metrics.py"
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[100] ^= 1
    target.write_bytes(bytes(data))
    monkeypatch.setenv(DIR_ENV, str(copy))
    with pytest.raises(ChecksumMismatchError) as info:
        build(InstrumentOptions(cache_dir=tmp_path / "cache"))
    message = str(info.value)
    assert "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c" in message
    import hashlib

    assert hashlib.sha256(bytes(data)).hexdigest() in message


def test_benchmark_wires_the_instrument(instruments: Path, tmp_path: Path) -> None:
    assert BENCHMARK.answering is build
    v1 = build(InstrumentOptions(cache_dir=tmp_path, prompts="recallbench-v1"))
    assert isinstance(v1, BeamV1Instrument) and not v1.official
    assert v1.name == "recallbench prompts v1"
    q = question("knowledge_update", ["LLM response should state: 250ms", "b"])
    call = FakeCall(lambda r: '{"score": 0.5, "reason": "partly"}')
    (res,) = v1.judge(ctx(q), "answer", "about 250 ms", call)
    assert res.value == 0.5 and not res.unparsed  # v1 keeps half grades
    assert user_text(call.requests[0]) == build_rubric_prompt(
        q.text, "LLM response should state: 250ms", "about 250 ms"
    )


def test_judge_cases(instrument: BeamInstrument, sample: list[Question]) -> None:
    cases = instrument.judge_cases(sample, "answer")
    assert instrument.judge_cases(sample, "memory") == []
    kinds = {c.case_type for c in cases}
    assert kinds == {"gold_verbatim", "plausible_wrong", "unrelated", "dont_know"}
    for c in cases:
        assert c.metric == "rubric" and c.question in sample
        if c.case_type == "gold_verbatim":
            assert c.answer == c.question.gold and c.expected == 1.0
        elif c.case_type == "plausible_wrong":
            (other,) = [q for q in sample if q.gold == c.answer and q.id != c.question.id]
            assert other.axis == c.question.axis and c.expected == 0.0
        elif c.case_type == "unrelated":
            (other,) = [q for q in sample if q.gold == c.answer]
            assert other.axis != c.question.axis and c.expected == 0.0
        else:
            assert c.answer == "I don't know." and c.question.axis != "abstention"
    gold_axes = {c.question.axis for c in cases if c.case_type == "gold_verbatim"}
    assert "instruction_following" not in gold_axes  # its gold describes, it is no answer
    assert "abstention" in gold_axes


def test_docs_example_prints_what_it_says(
    instruments: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Python example of docs/benchmarks.md's BEAM section runs and prints its comments."""
    docs = (Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md").read_text()
    section = docs.split("### BEAM\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/benchmarks.md", "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out.splitlines()
    promised = [
        line[2:].split("<-")[0].strip()
        for line in code.splitlines()
        if line.startswith("# ") and not line.startswith("# event ordering")
    ]
    assert printed == promised
