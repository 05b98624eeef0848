"""LoCoMo's answer instrument against the official code, run independently from the shared copy.

The reader prompt of one question of each category is rendered by LoCoMo's own
``get_gpt_answers`` (``evaluate_gpts.py`` executed here with its imports stubbed, RAG dialog
mode, batch size 1, a fake ``run_chatgpt`` capturing the query) and compared byte for byte with
the instrument's request; mem0 J's request and verdicts are compared with mem0's own
``evaluate_llm_judge`` the same way. The copies are read from ``../shared/instruments``
(``$RECALLBENCH_INSTRUMENTS``); mem0's ``mem0/memory/utils.py`` is not among them yet: tests
that need it look for ``mem0-evaluation/mem0/memory/utils.py`` there or at
``$RECALLBENCH_MEM0_UTILS``, and skip without it. LoCoMo's data (CC BY-NC) is read through the
``shared_data`` fixture and never written into the repository.
"""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import random
import shutil
import sys
import types
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallbench.benchmarks import get_benchmark
from recallbench.benchmarks.locomo.answering import (
    DONT_KNOW,
    EVALUATE_GPTS,
    MEM0_J,
    MEM0_J_LABEL,
    MEM0_UTILS,
    LocomoInstrument,
    LocomoMem0JInstrument,
    locomo_instrument,
)
from recallbench.benchmarks.locomo.load import parse_locomo
from recallbench.benchmarks.locomo.rules import F1, LocomoRules
from recallbench.contracts import Observation, Question, Turn
from recallbench.datasets.dataset import HaystackGroup
from recallbench.errors import ChecksumMismatchError, UserError
from recallbench.instruments.pins import DIR_ENV
from recallbench.instruments.protocol import AnswerContext, InstrumentOptions, Retrieved
from recallbench.llm.types import ChatRequest, Completion

REPO = Path(__file__).resolve().parents[3]
MEM0_UTILS_ENV = "RECALLBENCH_MEM0_UTILS"


def _shared_instruments() -> Path | None:
    env = os.environ.get(DIR_ENV)
    path = Path(env) if env else REPO.parent / "shared" / "instruments"
    return path if (path / "locomo" / EVALUATE_GPTS.path).is_file() else None


@pytest.fixture
def instruments() -> Path:
    path = _shared_instruments()
    if path is None:
        pytest.skip("shared instrument copies not available (set RECALLBENCH_INSTRUMENTS)")
    return path


@pytest.fixture
def cache(instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache; instrument files come from the shared copy."""
    monkeypatch.setenv(DIR_ENV, str(instruments))
    return tmp_path / "cache"


def _mem0_utils(instruments: Path) -> Path | None:
    env = os.environ.get(MEM0_UTILS_ENV)
    for path in (Path(env) if env else None, instruments / "mem0-evaluation" / MEM0_UTILS.path):
        if path is not None and path.is_file():
            return path
    return None


@pytest.fixture
def mem0_cache(instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache and an instruments folder holding the shared copies and mem0's utils.py."""
    utils = _mem0_utils(instruments)
    if utils is None:
        pytest.skip(
            "mem0's mem0/memory/utils.py at b3ede5b is not among the shared copies (put it at "
            f"mem0-evaluation/{MEM0_UTILS.path} there, or set {MEM0_UTILS_ENV})"
        )
    folder = tmp_path / "instruments"
    (folder / "mem0-evaluation" / "mem0" / "memory").mkdir(parents=True)
    (folder / "locomo").symlink_to(instruments / "locomo")
    (folder / "mem0-evaluation" / "evaluation").symlink_to(
        instruments / "mem0-evaluation" / "evaluation"
    )
    shutil.copyfile(utils, folder / "mem0-evaluation" / MEM0_UTILS.path)
    monkeypatch.setenv(DIR_ENV, str(folder))
    return tmp_path / "cache"


@lru_cache(maxsize=1)
def _locomo(path: str) -> tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    groups, questions, _ = parse_locomo(raw)
    return groups, questions, raw


@pytest.fixture
def locomo(shared_data: Path) -> tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]:
    path = shared_data / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip("locomo10.json not in the shared data")
    return _locomo(str(path))


def _completion(request: ChatRequest, text: str | None, error: str | None = None) -> Completion:
    return Completion(
        text=text, model="fake", cache_key="k", prompt_sha256=request.prompt_sha256, error=error
    )


class FakeLLM:
    """A CallLLM that records every request and answers with ``reply`` (or fails)."""

    def __init__(self, reply: str | None = "an answer", error: str | None = None) -> None:
        self.reply = reply
        self.error = error
        self.requests: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        return _completion(request, self.reply, self.error)


# ---------------------------------------------------------------- the official code, run alone


def _stub(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def _without_top_level_calls(path: Path) -> Any:
    """The file's code without its top-level expression statements (``main()`` at the end)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    tree.body = [
        n for n in tree.body if not isinstance(n, ast.Expr) or isinstance(n.value, ast.Constant)
    ]
    return compile(tree, str(path), "exec")


class _Encoding:
    def encode(self, text: str) -> list[str]:
        return list(text)


def _embeddings(args: Any, texts: list[str], kind: str) -> Any:
    """Context rows score n, n-1, ..., 1 against any query: LoCoMo's ranking is file order."""
    if kind == "context":
        return np.array([[float(len(texts) - i)] for i in range(len(texts))])
    return np.ones((len(texts), 1))


@pytest.fixture
def official_gpts(instruments: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``evaluate_gpts.py`` executed from the shared copy, its imports stubbed."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    _stub(monkeypatch, "global_methods", run_chatgpt=None, set_openai_key=lambda: None)
    _stub(monkeypatch, "task_eval")
    _stub(monkeypatch, "task_eval.dpr_qa", get_embeddings=_embeddings)
    _stub(monkeypatch, "task_eval.evaluation", eval_question_answering=None)
    _stub(monkeypatch, "task_eval.evaluation_stats", analyze_acc=None)
    _stub(monkeypatch, "generative_agents")
    _stub(monkeypatch, "generative_agents.memory_utils", get_session_facts=None)
    _stub(monkeypatch, "tiktoken", encoding_for_model=lambda model: _Encoding())
    _stub(monkeypatch, "openai")
    _stub(monkeypatch, "scipy")
    _stub(monkeypatch, "scipy.spatial", distance=None)
    _stub(monkeypatch, "tqdm", tqdm=lambda x: x)
    path = instruments / "locomo" / EVALUATE_GPTS.path
    ns: dict[str, Any] = {"__file__": str(path), "__name__": "evaluate_gpts"}
    exec(_without_top_level_calls(path), ns)  # noqa: S102 - the shared official copy
    return ns


def _sessions_of(group: HaystackGroup, question: Question) -> list[tuple[str, list[Turn]]]:
    wanted = set(question.evidence_sessions)
    return [(str(s.date), list(s.turns)) for s in group.sessions if s.session_id in wanted]


def _official_reader(
    ns: dict[str, Any],
    tmp: Path,
    group: HaystackGroup,
    question: Question,
    raw_qa: dict[str, Any],
    seed: int,
    reply: str,
) -> tuple[str, dict[str, Any], str]:
    """LoCoMo's own query, run_chatgpt keywords and prediction for one question, RAG dialog
    mode over the turns of its evidence sessions (renumbered from 1, in order), with the
    category-5 draw seeded as recallbench documents it and ``clean_text`` the turn as loaded."""
    data: dict[str, Any] = {}
    sessions = _sessions_of(group, question)
    for n, (date, turns) in enumerate(sessions, start=1):
        data[f"session_{n}_date_time"] = date
        data[f"session_{n}"] = [
            {"speaker": t.speaker, "dia_id": t.turn_id, "clean_text": t.text} for t in turns
        ]
    qa = dict(raw_qa)
    if "answer" not in qa:
        qa["answer"] = qa["adversarial_answer"]  # what the official code reads (qa['answer'])
    data["qa"] = [qa]
    tmp.mkdir(parents=True, exist_ok=True)
    ann = tmp / "conv.json"
    ann.write_text(json.dumps(data), encoding="utf-8")
    captured: list[tuple[str, dict[str, Any]]] = []

    def run_chatgpt(query: str, **kwargs: Any) -> str:
        captured.append((query, kwargs))
        return reply

    draw = random.Random(f"{seed}:{question.id}").random()
    ns["run_chatgpt"] = run_chatgpt
    ns["random"] = types.SimpleNamespace(random=lambda: draw)
    ns["print"] = lambda *a, **k: None
    n_lines = sum(len(turns) for _, turns in sessions)
    args = types.SimpleNamespace(
        model="reader",
        use_rag=True,
        rag_mode="dialog",
        batch_size=1,
        top_k=n_lines,
        emb_dir=str(tmp),
        overwrite=False,
    )
    out = tmp / "out.json"
    ns["get_gpt_answers"](str(ann), str(out), args)
    ((query, kwargs),) = captured
    prediction = json.loads(out.read_text())["qa"][0][f"reader_dialog_top_{n_lines}_prediction"]
    return query, kwargs, prediction


def _raw_qa(raw: list[dict[str, Any]], question: Question) -> dict[str, Any]:
    sample = next(s for s in raw if s["sample_id"] == question.group)
    return dict(sample["qa"][int(question.extra["index"])])


def _pick(questions: list[Question], category: int) -> Question:
    return next(
        q
        for q in questions
        if q.extra["category"] == category and q.evidence_sessions and q.group == "conv-26"
    )


def _memories(group: HaystackGroup, question: Question) -> tuple[Retrieved, ...]:
    return tuple(
        Retrieved(t.text, (t,)) for _, turns in _sessions_of(group, question) for t in turns
    )


# ------------------------------------------------------------------------------------ the reader


@pytest.mark.parametrize(
    ("category", "reply"),
    [
        (1, " Pottery, camping "),
        (2, "7 May 2023"),
        (3, "Likely yes"),
        (4, "adoption"),
        (5, "(a)"),
        (5, "b"),
    ],
)
def test_reader_prompt_is_the_official_one_byte_for_byte(
    category: int,
    reply: str,
    cache: Path,
    official_gpts: dict[str, Any],
    locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    groups, questions, raw = locomo
    question = _pick(questions, category)
    group = next(g for g in groups if g.group_id == question.group)
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache, seed=7))
    for seed in (7, 8, 9):
        query, kwargs, prediction = _official_reader(
            official_gpts,
            tmp_path / str(seed),
            group,
            question,
            _raw_qa(raw, question),
            seed,
            reply,
        )
        llm = FakeLLM(reply)
        result = instrument.answer(
            AnswerContext(question, _memories(group, question), seed=seed), llm
        )
        (request,) = llm.requests
        assert request.messages == ({"role": "user", "content": query},)
        assert dict(request.settings) == {
            "max_tokens": kwargs["num_tokens_request"],
            "temperature": kwargs["temperature"],
            "n": kwargs["num_gen"],
        }
        assert result.answer == prediction
        assert result.reply == reply
        assert result.prompt_sha256 == request.prompt_sha256
        assert result.error is None
        assert [c.prompt_sha256 for c in result.calls] == [request.prompt_sha256]


def test_reader_settings_are_read_from_the_run_chatgpt_call(cache: Path) -> None:
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    assert instrument.reader_settings == {"max_tokens": 32, "temperature": 0, "n": 1}
    assert instrument.reader is None
    assert instrument.modes == ("answer",)
    assert instrument.judge_metrics == {"answer": ()}
    assert instrument.files()[0].pinned and instrument.files()[0].sha256 == EVALUATE_GPTS.sha256
    assert any("run_chatgpt" in d for d in instrument.deviations())
    assert any("random.Random" in d for d in instrument.deviations())


def test_category_5_order_is_seeded_recorded_and_reproducible(
    cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    groups, questions, _ = locomo
    question = _pick(questions, 5)
    group = next(g for g in groups if g.group_id == question.group)
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    memories = _memories(group, question)
    firsts: set[str] = set()
    for seed in range(12):
        a = instrument.answer(AnswerContext(question, memories, seed=seed), FakeLLM("(a)"))
        b = instrument.answer(AnswerContext(question, memories, seed=seed), FakeLLM("(a)"))
        assert a == b
        draw = random.Random(f"{seed}:{question.id}").random()
        assert repr(draw) in a.notes[0]
        not_mentioned_first = draw < 0.5
        assert (a.answer == "Not mentioned in the conversation") is not_mentioned_first
        firsts.add(str(a.answer))
    assert len(firsts) == 2  # both orders drawn over a dozen seeds
    # the official mapping: a one-letter or "(x)" reply picks an option, anything else is kept
    other = instrument.answer(AnswerContext(question, memories, seed=0), FakeLLM(" Maybe. "))
    assert other.answer == "maybe."


def test_memories_render_as_dialog_lines_with_dates(
    cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    groups, questions, _ = locomo
    question = _pick(questions, 4)
    group = groups[0]
    image_turn = next(t for s in group.sessions for t in s.turns if t.image)
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    llm = FakeLLM()
    memories = (Retrieved("Caroline likes tea.", ()), Retrieved(image_turn.text, (image_turn,)))
    instrument.answer(AnswerContext(question, memories), llm)
    content = llm.requests[0].messages[0]["content"]
    first, second = content.split("\n")[:2]
    assert first == "date unknown: Caroline likes tea."
    assert second == f'{image_turn.date}: {image_turn.speaker} said, "{image_turn.text}"'
    assert " and shared " in second  # the caption, as systems were given the turn


def test_no_memory_and_empty_baseline(
    cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    _, questions, _ = locomo
    question = _pick(questions, 4)
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    llm = FakeLLM()
    instrument.answer(AnswerContext(question, (), condition="no-memory"), llm)
    content = llm.requests[0].messages[0]["content"]
    assert content.startswith("\n\n\nBased on the above context")
    empty = instrument.empty_reader_request()
    assert empty is not None
    assert content == empty.messages[0]["content"].replace(
        "Question:  Short answer:", f"Question: {question.text} Short answer:"
    )
    assert dict(empty.settings) == instrument.reader_settings


def test_failed_reader_call_is_an_error_not_an_answer(
    cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    _, questions, _ = locomo
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    result = instrument.answer(
        AnswerContext(_pick(questions, 1), ()), FakeLLM(None, error="HTTP 500 after 3 tries")
    )
    assert result.answer is None and result.reply is None
    assert result.error == "HTTP 500 after 3 tries"
    assert len(result.calls) == 1


def test_reader_is_thread_safe(
    cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    groups, questions, _ = locomo
    group = groups[0]
    instrument = locomo_instrument(InstrumentOptions(cache_dir=cache))
    picked = [q for q in questions if q.group == group.group_id][:60]
    turns = {t.turn_id: t for s in group.sessions for t in s.turns}

    def one(q: Question) -> tuple[str, str | None]:
        memories = tuple(Retrieved(turns[e].text, (turns[e],)) for e in q.evidence_turns or ())
        llm = FakeLLM("(b)")
        result = instrument.answer(AnswerContext(q, memories, seed=3), llm)
        return llm.requests[0].messages[0]["content"], result.answer

    serial = [one(q) for q in picked]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, picked)) == serial


def test_generated_answers_are_scored_by_the_official_f1(
    instruments: Path,
    monkeypatch: pytest.MonkeyPatch,
    locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    """A reader's answer goes through LocomoRules' F1 exactly as evaluation.py scores it."""
    _stub(monkeypatch, "bert_score", score=None)
    path = instruments / "locomo" / "task_eval" / "evaluation.py"
    ns: dict[str, Any] = {"__name__": "evaluation"}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)  # noqa: S102
    _, questions, raw = locomo
    picked = [q for q in questions if q.group == "conv-26"]
    answers = ["Not mentioned in the conversation", "7 May 2023", "pottery, camping", "yes"]
    lines = []
    for i, q in enumerate(picked):
        qa = _raw_qa(raw, q)
        qa.setdefault("answer", qa.get("adversarial_answer", ""))
        qa["p"] = answers[i % len(answers)] if i % 3 else str(qa["answer"])
        lines.append(qa)
    infile = tmp_path / "scored.json"
    infile.write_text(json.dumps({"qa": lines}), encoding="utf-8")
    official, _, _ = ns["eval_question_answering"](str(infile), "p")
    rules = LocomoRules()
    for q, qa, expected in zip(picked, lines, official, strict=True):
        obs = Observation(
            run_id="r",
            dataset="locomo",
            dataset_version="v",
            group=q.group,
            question_id=q.id,
            system="s",
            k=10,
            attempt=1,
            observed_at="t",
            latency_ms=1.0,
            memories=(),
            chars_returned=0,
            outcome="usable",
            answer=qa["p"],
            answer_generated=True,
        )
        metrics, _ = rules.question_metrics(q, obs, (10,))
        assert metrics[F1] == pytest.approx(float(expected), abs=1e-12), q.id


# ------------------------------------------------------------------------------------ mem0 J


@pytest.fixture
def official_mem0(instruments: Path, mem0_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """mem0's ``llm_judge.py`` executed from the shared copy, ``mem0.memory.utils`` being the
    real ``utils.py`` (its own imports stubbed), its OpenAI client a recorder."""
    utils_path = _mem0_utils(instruments)
    assert utils_path is not None
    _stub(monkeypatch, "mem0")
    _stub(monkeypatch, "mem0.configs")
    _stub(
        monkeypatch,
        "mem0.configs.prompts",
        AGENT_MEMORY_EXTRACTION_PROMPT="",
        FACT_RETRIEVAL_PROMPT="",
        USER_MEMORY_EXTRACTION_PROMPT="",
    )
    _stub(monkeypatch, "mem0.memory")
    utils = _stub(monkeypatch, "mem0.memory.utils")
    exec(compile(utils_path.read_text(encoding="utf-8"), str(utils_path), "exec"), utils.__dict__)  # noqa: S102

    class Client:
        def __init__(self) -> None:
            self.calls: list[dict[str, Any]] = []
            self.reply = ""
            self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self.create))

        def create(self, **kwargs: Any) -> Any:
            self.calls.append(kwargs)
            message = types.SimpleNamespace(content=self.reply)
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    client = Client()
    _stub(monkeypatch, "openai", OpenAI=lambda: client)
    path = instruments / "mem0-evaluation" / "evaluation" / "metrics" / "llm_judge.py"
    ns: dict[str, Any] = {"__name__": "llm_judge"}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)  # noqa: S102
    return types.SimpleNamespace(ns=ns, client=client)


def _judge(instrument: LocomoInstrument, q: Question, answer: str | None, llm: Any) -> Any:
    (result,) = instrument.judge(AnswerContext(q, ()), "answer", answer, llm)
    return result


REPLIES = [
    '{"label": "CORRECT"}',
    '{"label": "WRONG"}',
    'The answer matches.\n```json\n{"label": "CORRECT"}\n```',
    'Reasoning first. {"label": "WRONG"} done',
    '{"label": "correct"}',
]
UNREADABLE = ["CORRECT", '{"verdict": "CORRECT"}', '["CORRECT"]', "{not json}"]


def test_mem0_j_prompt_settings_and_verdicts_are_mem0s(
    official_mem0: Any,
    mem0_cache: Path,
    locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]],
) -> None:
    _, questions, _ = locomo
    instrument = locomo_instrument(InstrumentOptions(cache_dir=mem0_cache, judge_variant="mem0-j"))
    assert isinstance(instrument, LocomoMem0JInstrument)
    evaluate: Callable[..., int] = official_mem0.ns["evaluate_llm_judge"]
    client = official_mem0.client
    for category in (1, 2, 3, 4):
        q = _pick(questions, category)
        for reply in REPLIES:
            client.reply = reply
            expected = evaluate(q.text, q.gold, "some generated answer")
            sent = client.calls[-1]
            llm = FakeLLM(reply)
            result = _judge(instrument, q, "some generated answer", llm)
            (request,) = llm.requests
            assert request.messages == tuple(sent["messages"])
            assert dict(request.settings) == {
                k: v for k, v in sent.items() if k not in ("model", "messages")
            }
            assert instrument.judge_pin is not None
            assert instrument.judge_pin.model == sent["model"] == "gpt-4o-mini"
            assert result.metric == MEM0_J
            assert result.value == float(expected)
            assert not result.unparsed and result.error is None
            assert result.reply == reply
            assert result.prompt_sha256 == request.prompt_sha256


def test_mem0_j_unreadable_replies_are_unparsed_zero(
    official_mem0: Any,
    mem0_cache: Path,
    locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]],
) -> None:
    _, questions, _ = locomo
    q = _pick(questions, 4)
    instrument = locomo_instrument(InstrumentOptions(cache_dir=mem0_cache, judge_variant="mem0-j"))
    for reply in UNREADABLE:
        official_mem0.client.reply = reply
        with pytest.raises((ValueError, KeyError, TypeError)):
            official_mem0.ns["evaluate_llm_judge"](q.text, q.gold, "x")  # the official run stops
        result = _judge(instrument, q, "x", FakeLLM(reply))
        assert (result.value, result.unparsed, result.error) == (0.0, True, None)


def test_mem0_j_judge_errors_skips_and_labels(
    mem0_cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    _, questions, _ = locomo
    instrument = locomo_instrument(InstrumentOptions(cache_dir=mem0_cache, judge_variant="mem0-j"))
    q = _pick(questions, 1)
    failed = _judge(instrument, q, "x", FakeLLM(None, error="timeout after 3 tries"))
    assert failed.value is None and failed.error == "judge_error: timeout after 3 tries"
    empty = _judge(instrument, q, "x", FakeLLM(""))
    assert empty.value is None and empty.error is not None and "empty" in empty.error
    llm = FakeLLM()
    skipped = _judge(instrument, _pick(questions, 5), "x", llm)
    assert skipped.value is None and skipped.error is None and not llm.requests
    assert skipped.null_reason is not None
    assert skipped.null_reason.startswith("mem0_j_skips_category_5: ")
    no_answer = _judge(instrument, q, None, llm)
    assert no_answer.value is None and no_answer.null_reason.startswith("no_answer: ")
    assert not llm.requests
    assert instrument.judge(AnswerContext(q, ()), "memory", "x", llm) == ()
    assert instrument.judge_metrics == {"answer": (MEM0_J,)}
    assert MEM0_J_LABEL in instrument.name and "not the LoCoMo score" in instrument.name
    assert [r.path for r in instrument.files()] == [
        EVALUATE_GPTS.path,
        "evaluation/metrics/llm_judge.py",
        MEM0_UTILS.path,
    ]
    assert all(r.pinned for r in instrument.files())
    assert any(MEM0_J_LABEL in d for d in instrument.deviations())
    pin = instrument.judge_pin
    assert pin is not None
    assert dict(pin.settings) == {"response_format": {"type": "json_object"}, "temperature": 0.0}
    # the official instrument has no judge at all
    official = locomo_instrument(InstrumentOptions(cache_dir=mem0_cache))
    assert official.judge(AnswerContext(q, ()), "answer", "x", llm) == ()
    assert official.judge_pin is None


def test_mem0_j_judge_cases(
    mem0_cache: Path, locomo: tuple[list[HaystackGroup], list[Question], list[dict[str, Any]]]
) -> None:
    _, questions, _ = locomo
    instrument = locomo_instrument(InstrumentOptions(cache_dir=mem0_cache, judge_variant="mem0-j"))
    picked = [q for q in questions if q.group in ("conv-26", "conv-30")]
    cases = instrument.judge_cases(picked, "answer")
    assert instrument.judge_cases(picked, "memory") == []
    assert all(c.question.extra["category"] != 5 for c in cases)
    by_type: dict[str, list[Any]] = {}
    for c in cases:
        by_type.setdefault(c.case_type, []).append(c)
    assert set(by_type) == {"gold_verbatim", "plausible_wrong", "unrelated", "dont_know"}
    for c in by_type["gold_verbatim"]:
        assert (c.answer, c.expected) == (c.question.gold, 1.0)
    golds = {(q.extra["category"], q.gold) for q in picked}
    for c in by_type["plausible_wrong"]:
        assert c.expected == 0.0 and c.answer != c.question.gold
        assert (c.question.extra["category"], c.answer) in golds
    for c in by_type["dont_know"]:
        assert (c.answer, c.expected) == (DONT_KNOW, 0.0)
    assert {c.metric for c in cases} == {MEM0_J}


# ------------------------------------------------------------------------------ pins and wiring


def _tampered(instruments: Path, tmp: Path, name: str, path: str) -> Path:
    folder = tmp / "tampered"
    target = folder / name / path
    target.parent.mkdir(parents=True)
    data = bytearray((instruments / name / path).read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    return folder


def test_a_changed_byte_is_refused_naming_both_hashes(
    instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _tampered(instruments, tmp_path, "locomo", EVALUATE_GPTS.path)
    monkeypatch.setenv(DIR_ENV, str(folder))
    with pytest.raises(ChecksumMismatchError) as err:
        locomo_instrument(InstrumentOptions(cache_dir=tmp_path / "cache"))
    assert EVALUATE_GPTS.sha256 is not None and EVALUATE_GPTS.sha256 in str(err.value)
    assert err.value.actual in str(err.value) and err.value.actual != EVALUATE_GPTS.sha256


def test_a_changed_mem0_judge_is_refused(
    instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _tampered(instruments, tmp_path, "mem0-evaluation", "evaluation/metrics/llm_judge.py")
    (folder / "locomo").symlink_to(instruments / "locomo")
    monkeypatch.setenv(DIR_ENV, str(folder))
    with pytest.raises(ChecksumMismatchError):
        locomo_instrument(InstrumentOptions(cache_dir=tmp_path / "cache", judge_variant="mem0-j"))


def test_options_are_checked(cache: Path) -> None:
    for options in (
        InstrumentOptions(cache_dir=cache, judge_variant="nope"),
        InstrumentOptions(cache_dir=cache, reader_preset="cot"),
        InstrumentOptions(cache_dir=cache, prompts="mine"),
    ):
        with pytest.raises(UserError):
            locomo_instrument(options)


def test_wired_as_the_benchmarks_answering() -> None:
    benchmark = get_benchmark("locomo")
    assert benchmark.answering is locomo_instrument
    assert any(m.name == MEM0_J and MEM0_J_LABEL in m.description for m in benchmark.metrics)
