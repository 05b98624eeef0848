"""LongMemEval's official instrument against LongMemEval's own code, run here independently.

The official files (xiaowu0162/LongMemEval at 9e0b455) are read from the shared copy of the
benchmarks' instruments (``$RECALLBENCH_INSTRUMENTS``, else ``../shared/instruments``); the tests
skip when it is absent. The instrument under test fetches them into a fresh cache; the tests run
the same files as their authors do, with the third-party imports (``openai``, ``backoff``,
``tqdm``, ``numpy``, ``transformers``, ``tiktoken``) stubbed through ``sys.modules``:

* ``evaluate_qa.py`` runs as ``__main__`` (``python evaluate_qa.py gpt-4o HYP REF``) against a
  stub OpenAI client that records every request and answers from a table; its requests and its
  ``autoeval_label`` lines are compared with what the instrument sent to a fake ``CallLLM`` and
  the values it returned;
* ``run_generation.py``'s ``main()`` runs on the very ``entry`` the instrument built, with the
  options ``run_generation.sh`` passes for each reader preset; every request it makes (the
  reading-notes calls of ``con-separate``, then the reader call) and the hypothesis it writes
  are compared with the instrument's, byte for byte.

No network: the fake ``CallLLM`` is a plain function; one test serves the copy on loopback.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import runpy
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from recallbench.benchmarks import get_benchmark, metric_catalogue
from recallbench.benchmarks.longmemeval.answering import (
    EVALUATE_QA,
    FILES,
    LME_LABEL,
    READER_PRESETS,
    RULE_READER_FORMAT,
    SUBSET_WORD,
    LongMemEvalInstrument,
    ReaderPresetError,
    first_part,
    make_instrument,
)
from recallbench.benchmarks.longmemeval.load import parse_longmemeval
from recallbench.benchmarks.longmemeval.metrics import QUESTION_TYPES
from recallbench.contracts import Question
from recallbench.datasets.dataset import HaystackGroup
from recallbench.errors import ChecksumMismatchError, UserError
from recallbench.instruments.pins import DIR_ENV, URL_ENV
from recallbench.instruments.protocol import (
    AnswerContext,
    InstrumentOptions,
    Retrieved,
)
from recallbench.llm.types import ChatRequest, Completion

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
JUDGE_MODEL = "gpt-4o-2024-08-06"


def _turn(role: str, content: str, has_answer: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": content}
    if has_answer:
        out["has_answer"] = True
    return out


def _instance(
    qid: str,
    qtype: str,
    question: str,
    answer: str,
    date: str,
    sessions: list[tuple[str, str, list[dict[str, Any]]]],
    answer_sessions: list[str],
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": answer,
        "question_date": date,
        "haystack_session_ids": [s[0] for s in sessions],
        "haystack_dates": [s[1] for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": answer_sessions,
    }


EXTRA: list[dict[str, Any]] = [
    # written for these tests, in LongMemEval's format; no text comes from the benchmark
    _instance(
        "syn_ssp_6",
        "single-session-preference",
        "Can you suggest something for me to do this weekend?",
        "The user would prefer suggestions built on their birdwatching hobby near the coast; "
        "they would not prefer indoor activities.",
        "2023/11/04 (Sat) 09:30",
        [
            (
                "answer_p1",
                "2023/10/02 (Mon) 18:00",
                [
                    _turn("user", "I spent Sunday watching terns at the estuary.", True),
                    _turn("assistant", "Terns are lovely to watch in autumn."),
                ],
            ),
            ("other_p2", "2023/10/09 (Mon) 18:00", [_turn("user", "Any soup recipe?")]),
        ],
        ["answer_p1"],
    ),
    _instance(
        "syn_ku_7",
        "knowledge-update",
        "Where do I keep my kayak now?",
        "In the garage",
        "2023/12/01 (Fri) 08:00",
        [
            (
                "answer_k1",
                "2023/09/01 (Fri) 08:00",
                [_turn("user", "My kayak lives on the balcony.", True)],
            ),
            (
                "answer_k2",
                "2023/11/01 (Wed) 08:00",
                [
                    _turn("user", "I moved the kayak into the garage.", True),
                    _turn("assistant", "Good: it is safer from the sun there."),
                ],
            ),
        ],
        ["answer_k1", "answer_k2"],
    ),
    _instance(
        "syn_ms_8",
        "multi-session",
        "Which cities did I visit in spring?",
        "Porto and Lyon",
        "2024/06/01 (Sat) 08:00",
        [
            ("answer_m1", "2024/04/02 (Tue) 08:00", [_turn("user", "Back from Porto!", True)]),
            ("answer_m2", "2024/05/02 (Thu) 08:00", [_turn("user", "Lyon was rainy.", True)]),
        ],
        ["answer_m1", "answer_m2"],
    ),
    _instance(
        "syn_ssu_9",
        "single-session-user",
        "What is my sister's name?",
        "Marta",
        "2024/02/01 (Thu) 08:00",
        [("answer_s1", "2024/01/05 (Fri) 08:00", [_turn("user", "My sister Marta called.", True)])],
        ["answer_s1"],
    ),
    _instance(
        "syn_ssa_10",
        "single-session-assistant",
        "Which novel did you recommend to me last time?",
        "Middlemarch",
        "2024/03/01 (Fri) 08:00",
        [
            (
                "answer_a1",
                "2024/02/20 (Tue) 08:00",
                [_turn("user", "A long novel, please."), _turn("assistant", "Try Middlemarch.")],
            )
        ],
        ["answer_a1"],
    ),
    _instance(
        "syn_tr_11_abs",
        "temporal-reasoning",
        "How many days passed between my trip to Oslo and my trip to Bergen?",
        "The user mentioned Oslo but never a trip to Bergen.",
        "2024/07/01 (Mon) 08:00",
        [("answer_t1", "2024/06/01 (Sat) 08:00", [_turn("user", "Oslo in June is bright.")])],
        ["answer_t1"],
    ),
]


def _instruments_dir() -> Path | None:
    env = os.environ.get(DIR_ENV)
    path = Path(env) if env else REPO.parent / "shared" / "instruments"
    return path if (path / "longmemeval").is_dir() else None


@pytest.fixture
def shared_instruments(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared copy (skip when absent), checked against the pins, set as the source."""
    root = _instruments_dir()
    if root is None:
        pytest.skip("LongMemEval's files are not in the shared instruments copy")
    for f in FILES:
        data = (root / f.name / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256, f"{f.path} is not the pinned copy"
    monkeypatch.setenv(DIR_ENV, str(root))
    monkeypatch.delenv(URL_ENV, raising=False)
    return root


def _make(tmp_path: Path, preset: str | None = None) -> LongMemEvalInstrument:
    return LongMemEvalInstrument(InstrumentOptions(tmp_path / "cache", reader_preset=preset))


@pytest.fixture
def raw() -> list[dict[str, Any]]:
    return [*json.loads(FIXTURE.read_text(encoding="utf-8")), *EXTRA]


@pytest.fixture
def dataset(raw: list[dict[str, Any]]) -> tuple[list[HaystackGroup], list[Question]]:
    groups, questions, _ = parse_longmemeval(json.loads(json.dumps(raw)))
    return groups, questions


# ---------------------------------------------------------------- the official code, stubbed


class _Recorder:
    """A stub OpenAI client: records each request's kwargs and replies with ``reply(kwargs)``."""

    def __init__(self, reply: Callable[[list[Mapping[str, str]]], str]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **kwargs: Any) -> SimpleNamespace:
        self.requests.append(json.loads(json.dumps(kwargs)))
        text = self.reply(kwargs["messages"])
        message = SimpleNamespace(content=text)
        usage = SimpleNamespace(prompt_tokens=1, completion_tokens=1)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


class _Mean(float):
    def item(self) -> float:
        return float(self)


class _CharEncoding:
    def encode(self, text: str, allowed_special: Any = None) -> list[str]:
        return list(text)

    def decode(self, tokens: list[str]) -> str:
        return "".join(tokens)


def _stub_imports(monkeypatch: pytest.MonkeyPatch, recorder: _Recorder) -> None:
    """Put stand-ins for the official files' third-party imports into ``sys.modules``."""
    backoff = ModuleType("backoff")
    backoff.on_exception = lambda *a, **k: lambda f: f  # type: ignore[attr-defined]
    backoff.expo = backoff.constant = object()  # type: ignore[attr-defined]
    openai = ModuleType("openai")
    openai.RateLimitError = type("RateLimitError", (Exception,), {})  # type: ignore[attr-defined]
    openai.APIError = type("APIError", (Exception,), {})  # type: ignore[attr-defined]
    openai.OpenAI = lambda **kwargs: recorder  # type: ignore[attr-defined]
    openai.organization = None  # type: ignore[attr-defined]
    tqdm = ModuleType("tqdm")
    tqdm.tqdm = lambda it, **k: it  # type: ignore[attr-defined]
    numpy = ModuleType("numpy")
    numpy.mean = lambda xs: _Mean(sum(xs) / len(xs) if xs else float("nan"))  # type: ignore[attr-defined]
    transformers = ModuleType("transformers")
    transformers.AutoTokenizer = None  # type: ignore[attr-defined]
    tiktoken = ModuleType("tiktoken")
    tiktoken.get_encoding = lambda name: _CharEncoding()  # type: ignore[attr-defined]
    for module in (backoff, openai, tqdm, numpy, transformers, tiktoken):
        monkeypatch.setitem(sys.modules, module.__name__, module)


def _official_module(
    monkeypatch: pytest.MonkeyPatch, root: Path, path: str, recorder: _Recorder
) -> dict[str, Any]:
    """The official file's globals, executed as an imported module (its ``__main__`` block
    does not run)."""
    _stub_imports(monkeypatch, recorder)
    return runpy.run_path(str(root / "longmemeval" / path), run_name="lme_official")


def _digest(messages: list[Mapping[str, str]] | tuple[Mapping[str, str], ...]) -> str:
    return hashlib.sha256(json.dumps([dict(m) for m in messages]).encode()).hexdigest()[:10]


def _reply(messages: list[Mapping[str, str]] | tuple[Mapping[str, str], ...]) -> str:
    """The same reply for the same messages, on both sides: notes and answers differ by prompt."""
    return f"  reply {_digest(messages)} \n"


class _FakeCall:
    """A ``CallLLM``: records each request, replies with ``reply`` (or fails)."""

    def __init__(
        self,
        reply: Callable[[tuple[Mapping[str, str], ...]], str | None] = _reply,
        error: str | None = None,
    ) -> None:
        self.reply = reply
        self.error = error
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        text = None if self.error else self.reply(request.messages)
        return Completion(
            text=text,
            model="reader-or-judge",
            cache_key=f"key-{request.prompt_sha256[:8]}",
            prompt_sha256=request.prompt_sha256,
            purpose=request.purpose,
            error=self.error,
        )


def _sent(requests: list[ChatRequest]) -> list[tuple[list[dict[str, str]], dict[str, Any]]]:
    return [([dict(m) for m in r.messages], dict(r.settings)) for r in requests]


def _official_sent(
    requests: list[dict[str, Any]],
) -> list[tuple[list[dict[str, str]], dict[str, Any]]]:
    return [
        (r["messages"], {k: v for k, v in r.items() if k not in ("model", "messages")})
        for r in requests
    ]


# ---------------------------------------------------------------- judge


def test_judge_prompts_settings_and_labels_are_evaluate_qa_main(
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    raw: list[dict[str, Any]],
    dataset: tuple[list[HaystackGroup], list[Question]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One question of every type and abstention questions: evaluate_qa.py run as ``__main__``
    sends the same prompt, model and settings, and labels the same replies the same way."""
    _, questions = dataset
    types = {q.extra["question_type"] for q in questions if "_abs" not in q.id}
    assert types == set(QUESTION_TYPES)
    assert any("_abs" in q.id for q in questions)
    replies = ["Yes", " no.\n", "YES, it does", "Maybe", "", "no", "The answer is yes"]
    hyps = {q.id: f"hypothesis for {q.id}: {q.gold}" for q in questions}
    table = {q.id: replies[i % len(replies)] for i, q in enumerate(questions)}
    by_prompt: dict[str, str] = {}

    inst = _make(tmp_path)
    ours: dict[str, tuple[ChatRequest, float | None, bool]] = {}
    for q in questions:
        fake = _FakeCall(lambda messages, qid=q.id: table[qid])
        (result,) = inst.judge(AnswerContext(q, ()), "answer", hyps[q.id], fake)
        (request,) = fake.requests
        by_prompt[request.messages[0]["content"]] = table[q.id]
        assert result.metric == LME_LABEL
        assert result.prompt_sha256 == request.prompt_sha256
        assert request.purpose == "judge:answer"
        ours[q.id] = (request, result.value, result.unparsed)

    recorder = _Recorder(lambda messages: by_prompt[messages[0]["content"]])
    _stub_imports(monkeypatch, recorder)
    hyp_file = tmp_path / "hyp.jsonl"
    hyp_file.write_text(
        "".join(
            json.dumps({"question_id": q.id, "hypothesis": hyps[q.id]}) + "\n" for q in questions
        )
    )
    ref_file = tmp_path / "ref.json"
    ref_file.write_text(json.dumps(raw))
    qa = shared_instruments / EVALUATE_QA.name / EVALUATE_QA.path
    monkeypatch.setattr(sys, "argv", ["evaluate_qa.py", "gpt-4o", str(hyp_file), str(ref_file)])
    runpy.run_path(str(qa), run_name="__main__")
    capsys.readouterr()
    logged = [
        json.loads(line)
        for line in Path(f"{hyp_file}.eval-results-gpt-4o").read_text().splitlines()
    ]

    assert [r["model"] for r in recorder.requests] == [JUDGE_MODEL] * len(questions)
    assert inst.judge_pin.model == JUDGE_MODEL
    assert _official_sent(recorder.requests) == [_sent([ours[q.id][0]])[0] for q in questions]
    assert {r["question_id"]: r["autoeval_label"]["label"] for r in logged} == {
        qid: value == 1.0 for qid, (_, value, _) in ours.items()
    }
    for q in questions:
        _, value, unparsed = ours[q.id]
        reply = table[q.id].strip().lower()
        assert unparsed == ("yes" not in reply and "no" not in reply), q.id
        assert value in (0.0, 1.0)
    assert dict(inst.judge_pin.settings) == {"n": 1, "temperature": 0, "max_tokens": 10}


def test_judge_prompt_is_get_anscheck_prompt_for_each_type(
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    raw: list[dict[str, Any]],
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    """The prompt for one question of each type, and each abstention question, equals the
    official function's, called on the published fields (the raw answer, an int included)."""
    official = _official_module(
        monkeypatch, shared_instruments, EVALUATE_QA.path, _Recorder(_reply)
    )
    inst = _make(tmp_path)
    _, questions = dataset
    by_id = {r["question_id"]: r for r in raw}
    seen: set[str] = set()
    for q in questions:
        kind = "abstention" if "_abs" in q.id else q.extra["question_type"]
        if kind in seen:
            continue
        seen.add(kind)
        r = by_id[q.id]
        expected = official["get_anscheck_prompt"](
            r["question_type"], r["question"], r["answer"], "The response.", "_abs" in q.id
        )
        fake = _FakeCall(lambda messages: "yes")
        inst.judge(AnswerContext(q, ()), "answer", "The response.", fake)
        assert fake.requests[0].messages == ({"role": "user", "content": expected},)
    assert seen == {*QUESTION_TYPES, "abstention"}


def test_label_parsing_the_official_way(shared_instruments: Path, tmp_path: Path) -> None:
    inst = _make(tmp_path)
    q = Question(
        "fx_1",
        "longmemeval",
        "fx_1",
        "Q?",
        "A",
        axis="multi-session",
        extra={"question_type": "multi-session"},
    )
    cases = {
        "Yes": (1.0, False),
        "  yes.  ": (1.0, False),
        "No": (0.0, False),
        "no, it is not": (0.0, False),
        "Yes and no": (1.0, False),
        "I cannot tell": (0.0, False),  # 'no' in 'cannot': parsed, official value False
        "Maybe": (0.0, True),
        "Correct": (0.0, True),
        "\n": (0.0, True),
        "Eyes": (1.0, False),  # the official substring rule
    }
    for reply, (value, unparsed) in cases.items():
        (result,) = inst.judge(AnswerContext(q, ()), "answer", "A", _FakeCall(lambda m, r=reply: r))
        assert (result.value, result.unparsed, result.error) == (value, unparsed, None), reply
        assert result.reply == reply


def test_judge_error_is_null_and_no_answer_is_not_judged(
    shared_instruments: Path, tmp_path: Path
) -> None:
    inst = _make(tmp_path)
    q = Question(
        "fx_1",
        "longmemeval",
        "fx_1",
        "Q?",
        "A",
        axis="multi-session",
        extra={"question_type": "multi-session"},
    )
    fake = _FakeCall(error="HTTP 503 after 8 tries")
    (result,) = inst.judge(AnswerContext(q, ()), "answer", "A", fake)
    assert result.value is None and result.error == "HTTP 503 after 8 tries"
    assert not result.unparsed and result.reply is None and len(result.calls) == 1
    fake = _FakeCall()
    (result,) = inst.judge(AnswerContext(q, ()), "answer", None, fake)
    assert (
        result.value is None and result.null_reason and result.null_reason.startswith("no_answer:")
    )
    assert fake.requests == []
    with pytest.raises(ValueError, match="answers only"):
        inst.judge(AnswerContext(q, ()), "memory", "A", fake)


# ---------------------------------------------------------------- reader


def _contexts(groups: list[HaystackGroup], questions: list[Question]) -> dict[str, AnswerContext]:
    """The reader's inputs exercised: turns out of date order (one memory of assistant turns
    only), a text memory beside one with turns, nothing returned, and the no-memory floor."""
    by_id = {g.group_id: g for g in groups}
    q = next(q for q in questions if q.id == "fx_ms_2")
    sessions = by_id[q.group].sessions
    turns = [t for s in sessions for t in s.turns]
    memories = (
        Retrieved("second", (turns[-1],)),
        Retrieved("pair", tuple(sessions[0].turns[:2])),
        Retrieved("assistant only", tuple(t for t in turns if t.speaker == "assistant")[:1]),
        Retrieved("whole", sessions[1].turns),
    )
    q2 = next(q for q in questions if q.id == "syn_ku_7")
    s2 = by_id[q2.group].sessions
    mixed = (
        Retrieved("The user keeps the kayak in the garage (fact).", ()),
        Retrieved("kayak on the balcony", s2[0].turns),
    )
    return {
        "turns": AnswerContext(q, memories),
        "mixed": AnswerContext(q2, mixed),
        "nothing": AnswerContext(q, ()),
        "no-memory": AnswerContext(q2, mixed, condition="no-memory"),
    }


def _run_official_main(
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    tmp_path: Path,
    entry: Mapping[str, Any],
    retriever: str,
    expansion: str,
    preset: Any,
    reply: Callable[[list[Mapping[str, str]]], str] = _reply,
) -> tuple[list[dict[str, Any]], str | None]:
    """``run_generation.py``'s ``main()`` on one entry with the options ``run_generation.sh``
    passes for ``preset``, its client replying ``reply(messages)``: (its requests, the
    hypothesis it wrote)."""
    recorder = _Recorder(reply)
    official = _official_module(monkeypatch, root, "src/generation/run_generation.py", recorder)
    work = tmp_path / "official"
    shutil.rmtree(work, ignore_errors=True)
    (work / "out").mkdir(parents=True)
    in_file = work / "in.json"
    in_file.write_text(json.dumps([{**entry, "answer": "gold"}]))
    args = SimpleNamespace(
        in_file=str(in_file),
        out_dir=str(work / "out"),
        out_file_suffix="",
        model_name=JUDGE_MODEL,
        model_alias="gpt-4o",
        openai_base_url=None,
        openai_key="EMPTY",
        openai_organization=None,
        retriever_type=retriever,
        topk_context=len(entry["retrieval_results"]["ranked_items"]),
        history_format=preset.history_format,
        useronly=preset.useronly,
        cot=preset.cot,
        con=preset.con,
        merge_key_expansion_into_value=expansion,
        gen_length=None,
    )
    official["main"](args)
    (out,) = list((work / "out").iterdir())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return recorder.requests, lines[0]["hypothesis"] if lines else None


@pytest.mark.parametrize("preset", READER_PRESETS)
def test_reader_requests_are_run_generation_main(
    preset: str,
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dataset: tuple[list[HaystackGroup], list[Question]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each preset, each kind of input: the reading-notes requests, the reader request (prompt
    and settings) and the answer equal what run_generation.py's main() sends and writes."""
    inst = _make(tmp_path, preset)
    groups, questions = dataset
    for kind, ctx in _contexts(groups, questions).items():
        entry, retriever, expansion = inst.entry(ctx)
        if kind == "mixed" and inst.preset.history_format == "nl":
            continue  # refused: test_nl_cannot_render_text_memories
        fake = _FakeCall()
        result = inst.answer(ctx, fake)
        official, hypothesis = _run_official_main(
            monkeypatch, shared_instruments, tmp_path, entry, retriever, expansion, inst.preset
        )
        capsys.readouterr()
        assert _sent(fake.requests) == _official_sent(official), (preset, kind)
        assert result.error is None
        assert result.answer == hypothesis
        assert result.reply == _reply(fake.requests[-1].messages)
        assert result.prompt_sha256 == fake.requests[-1].prompt_sha256
        assert [r.purpose for r in fake.requests] == [
            *["reader:notes"] * (len(fake.requests) - 1),
            "reader",
        ]
        assert len(result.calls) == len(fake.requests)
        notes_expected = inst.preset.con == "true" and retriever != "no-retrieval"
        assert (len(fake.requests) > 1) == notes_expected, (preset, kind)
        assert fake.requests[-1].settings == {"n": 1, "temperature": 0, "max_tokens": 800}


def test_requests_received_by_the_mock_endpoint_are_the_official_ones(
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    raw: list[dict[str, Any]],
    dataset: tuple[list[HaystackGroup], list[Question]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through the shipped HTTP client and mock endpoint (loopback): the request bodies the
    endpoint received are the official code's, judge (every type, abstention) and reader (every
    preset, notes calls included, the official main() given the same replies)."""
    from recallbench.llm.client import ChatClient
    from recallbench.llm.types import Endpoint
    from recallbench.testing.mock_llm import MockLLMServer

    official = _official_module(
        monkeypatch, shared_instruments, EVALUATE_QA.path, _Recorder(_reply)
    )
    groups, questions = dataset
    by_id = {r["question_id"]: r for r in raw}
    with MockLLMServer() as server:
        judge = ChatClient(Endpoint(server.base_url, "mock-judge")).as_call()
        inst = _make(tmp_path)
        for q in questions:
            inst.judge(AnswerContext(q, ()), "answer", f"My answer: {q.gold}", judge)
        expected = []
        for q in questions:
            r = by_id[q.id]
            prompt = official["get_anscheck_prompt"](
                r["question_type"],
                r["question"],
                r["answer"],
                f"My answer: {q.gold}",
                abstention="_abs" in q.id,
            )
            expected.append(
                {
                    "model": "mock-judge",
                    "messages": [{"role": "user", "content": prompt}],
                    "n": 1,
                    "temperature": 0,
                    "max_tokens": 10,
                }
            )
        assert server.requests == expected
        reader = ChatClient(Endpoint(server.base_url, "mock")).as_call()
        ctx = _contexts(groups, questions)["turns"]
        for preset in READER_PRESETS:
            server.reset_counters()
            inst = _make(tmp_path, preset)
            result = inst.answer(ctx, reader)
            assert result.error is None
            notes = iter([str(c.text) for c in result.calls[:-1]])
            entry, retriever, expansion = inst.entry(ctx)
            sent, hypothesis = _run_official_main(
                monkeypatch,
                shared_instruments,
                tmp_path,
                entry,
                retriever,
                expansion,
                inst.preset,
                reply=lambda messages, n=notes, last=str(result.reply): next(n, last),
            )
            capsys.readouterr()
            assert len(server.requests) == len(sent) == len(result.calls)
            for got, want in zip(server.requests, sent, strict=True):
                assert got["model"] == "mock" and want["model"] == JUDGE_MODEL
                assert {**got, "model": None} == {**want, "model": None}, preset
            assert result.answer == hypothesis


def test_reader_prompt_is_prepare_prompt(
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    """The recommended preset's prompt, and its empty-memories baseline, from the official
    prepare_prompt called here on the same entry."""
    inst = _make(tmp_path)
    official = _official_module(
        monkeypatch, shared_instruments, "src/generation/run_generation.py", _Recorder(_reply)
    )
    groups, questions = dataset
    ctx = _contexts(groups, questions)["turns"]
    entry, retriever, expansion = inst.entry(ctx)
    expected = official["prepare_prompt"](
        json.loads(json.dumps(entry)),
        retriever,
        4,
        False,
        "json",
        True,
        tokenizer=_CharEncoding(),
        tokenizer_backend="openai",
        max_retrieval_length=10**9,
        merge_key_expansion_into_value=expansion,
    )
    fake = _FakeCall()
    inst.answer(ctx, fake)
    assert fake.requests[-1].messages == ({"role": "user", "content": expected},)
    assert "Answer (step by step):" in expected and "### Session 4:" in expected
    empty = inst.empty_reader_request()
    template = official["prepare_prompt"](
        {**entry, "question": "", "question_date": ""},
        retriever,
        4,
        False,
        "json",
        True,
        tokenizer=_CharEncoding(),
        tokenizer_backend="openai",
        max_retrieval_length=0,
        merge_key_expansion_into_value="none",
    )
    assert empty.messages == ({"role": "user", "content": template},)
    assert "History Chats:" in template and "Session" not in template.split("History Chats:")[1]
    assert empty.settings == fake.requests[-1].settings


def test_entry_mapping(
    shared_instruments: Path,
    tmp_path: Path,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    """One pseudo-session per memory in rank order, its turns as {role, content} dated by the
    first turn; a text memory switches the question to 'replace' with an empty date."""
    inst = _make(tmp_path)
    groups, questions = dataset
    contexts = _contexts(groups, questions)
    entry, retriever, expansion = inst.entry(contexts["turns"])
    memories = contexts["turns"].memories
    assert (retriever, expansion) == ("flat-session", "none")
    assert entry["question"] == contexts["turns"].question.text
    assert entry["question_date"] == "2023/07/01 (Sat) 08:00"
    assert entry["haystack_session_ids"] == ["memory_1", "memory_2", "memory_3", "memory_4"]
    assert [i["corpus_id"] for i in entry["retrieval_results"]["ranked_items"]] == entry[
        "haystack_session_ids"
    ]
    assert entry["haystack_dates"] == [m.turns[0].date for m in memories]
    assert entry["haystack_sessions"][1] == [
        {"role": t.speaker, "content": t.text} for t in memories[1].turns
    ]
    entry, retriever, expansion = inst.entry(contexts["mixed"])
    assert (retriever, expansion) == ("flat-session", "replace")
    assert entry["haystack_dates"] == ["", contexts["mixed"].memories[1].turns[0].date]
    assert [i["text"] for i in entry["retrieval_results"]["ranked_items"]] == [
        m.text for m in contexts["mixed"].memories
    ]
    for kind in ("nothing", "no-memory"):
        entry, retriever, _ = inst.entry(contexts[kind])
        assert retriever == "no-retrieval" and entry["haystack_sessions"] == []


def test_nl_cannot_render_text_memories(
    shared_instruments: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    """The official nl branch raises on a 'replace' memory and on reading notes: recallbench
    answers nothing there (a reader error with its rule) and offers no nl-con-separate."""
    official = _official_module(
        monkeypatch, shared_instruments, "src/generation/run_generation.py", _Recorder(_reply)
    )
    inst = _make(tmp_path, "nl-con")
    groups, questions = dataset
    ctx = _contexts(groups, questions)["mixed"]
    entry, retriever, expansion = inst.entry(ctx)
    common = dict(tokenizer=_CharEncoding(), tokenizer_backend="openai", max_retrieval_length=10**9)
    with pytest.raises(TypeError):
        official["prepare_prompt"](
            entry,
            retriever,
            2,
            False,
            "nl",
            True,
            merge_key_expansion_into_value=expansion,
            **common,
        )
    fake = _FakeCall()
    result = inst.answer(ctx, fake)
    assert result.answer is None and fake.requests == []
    assert result.error is not None and result.error.startswith(f"{RULE_READER_FORMAT}:")
    turns_entry, retriever, expansion = inst.entry(_contexts(groups, questions)["turns"])
    with pytest.raises(KeyError, match="role"):
        official["prepare_prompt"](
            turns_entry,
            retriever,
            4,
            False,
            "nl",
            True,
            merge_key_expansion_into_value=expansion,
            con=True,
            con_client=_Recorder(_reply),
            con_model="m",
            **common,
        )
    assert not any(p.startswith("nl-con-separate") for p in READER_PRESETS)
    with pytest.raises(ReaderPresetError, match="nl-con-separate"):
        _make(tmp_path, "nl-con-separate")


def test_failed_notes_or_reader_call_is_a_reader_error(
    shared_instruments: Path,
    tmp_path: Path,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    groups, questions = dataset
    ctx = _contexts(groups, questions)["turns"]
    for preset in ("json-con-separate", "json-con"):
        inst = _make(tmp_path, preset)
        fake = _FakeCall(error="timeout after 3 tries")
        result = inst.answer(ctx, fake)
        assert result.answer is None and result.reply is None
        assert result.error is not None and "timeout after 3 tries" in result.error
        assert len(result.calls) == 1  # the first call failed, nothing after it was sent


def test_answers_from_many_threads(
    shared_instruments: Path,
    tmp_path: Path,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    """Reading notes go through the calling thread's CallLLM, whatever runs beside it."""
    inst = _make(tmp_path, "json-con-separate")
    groups, questions = dataset
    ctx = _contexts(groups, questions)["turns"]
    expected = inst.answer(ctx, _FakeCall())
    barrier = threading.Barrier(8)
    results: dict[int, tuple[Any, list[ChatRequest]]] = {}

    def work(i: int) -> None:
        def slow_reply(messages: tuple[Mapping[str, str], ...]) -> str:
            barrier.wait(timeout=10) if len(fake.requests) == 1 else None
            return _reply(messages)

        fake = _FakeCall(slow_reply)
        results[i] = (inst.answer(ctx, fake), fake.requests)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 8
    for result, requests in results.values():
        assert result.answer == expected.answer
        assert len(requests) == len(expected.calls) == 5


# ---------------------------------------------------------------- files, options, wiring


@pytest.mark.parametrize("pinned", FILES, ids=lambda f: f.path.rsplit("/", 1)[-1])
def test_tampered_copy_is_refused_naming_both_hashes(
    pinned: Any, shared_instruments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of the three files, one byte changed: refused, both hashes in the message."""
    copy = tmp_path / "copy"
    shutil.copytree(shared_instruments / "longmemeval", copy / "longmemeval")
    target = copy / "longmemeval" / pinned.path
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    monkeypatch.setenv(DIR_ENV, str(copy))
    with pytest.raises(ChecksumMismatchError) as err:
        _make(tmp_path / "fresh")
    assert pinned.sha256 in str(err.value) and actual in str(err.value)
    assert isinstance(err.value, UserError)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def served(shared_instruments: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The shared copy behind a loopback HTTP server, as the only source."""
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(_QuietHandler, directory=str(shared_instruments))
    )
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    monkeypatch.delenv(DIR_ENV)
    monkeypatch.setenv(URL_ENV, base + "/{name}/{path}")
    try:
        yield base
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_files_downloaded_from_loopback_and_recorded(
    served: str, tmp_path: Path, dataset: tuple[list[HaystackGroup], list[Question]]
) -> None:
    inst = _make(tmp_path)
    assert [(r.path, r.sha256, r.pinned) for r in inst.files()] == [
        (f.path, f.sha256, True) for f in FILES
    ]
    _, questions = dataset
    fake = _FakeCall(lambda m: "yes")
    inst.judge(AnswerContext(questions[0], ()), "answer", "A border collie", fake)
    assert "Correct Answer: A border collie" in fake.requests[0].messages[0]["content"]


def test_options_and_wiring(shared_instruments: Path, tmp_path: Path) -> None:
    bench = get_benchmark("longmemeval")
    assert bench.answering is make_instrument
    inst = bench.answering(InstrumentOptions(tmp_path / "cache"))
    assert isinstance(inst, LongMemEvalInstrument)
    assert inst.preset.name == READER_PRESETS[0] == "json-con"
    assert (inst.preset.history_format, inst.preset.useronly, inst.preset.cot) == (
        "json",
        "false",
        "true",
    )
    assert inst.modes == ("answer",) and inst.reader is None and not inst.reader_is_judge
    assert inst.judge_metrics == {"answer": (LME_LABEL,)}
    assert inst.judge_pin.api_key_env == "OPENAI_API_KEY"
    assert "model_zoo['gpt-4o']" in inst.judge_pin.source
    assert inst.deviations() and all(isinstance(d, str) and d for d in inst.deviations())
    presets = {p: _make(tmp_path, p).preset for p in READER_PRESETS}
    assert {(p.reading_method, p.cot, p.con) for p in presets.values()} == {
        ("direct", "false", "false"),
        ("con", "true", "false"),
        ("con-separate", "true", "true"),
    }
    assert all(_make(tmp_path, p).gen_length == 800 for p in ("json-direct", "json-con"))
    info = metric_catalogue(["longmemeval"]).get(LME_LABEL)
    assert info is not None and info.higher_is_better is True
    with pytest.raises(ReaderPresetError, match="json-con"):
        _make(tmp_path, "yaml-con")
    with pytest.raises(UserError):
        LongMemEvalInstrument(InstrumentOptions(tmp_path, prompts="recallbench-v1"))
    with pytest.raises(UserError):
        LongMemEvalInstrument(InstrumentOptions(tmp_path, judge_variant="mem0-j"))


# ---------------------------------------------------------------- judge-check cases


def test_judge_cases(
    shared_instruments: Path,
    tmp_path: Path,
    dataset: tuple[list[HaystackGroup], list[Question]],
) -> None:
    inst = _make(tmp_path)
    _, questions = dataset
    cases = inst.judge_cases(questions, "answer")
    assert inst.judge_cases(questions, "memory") == []
    by = {(c.question.id, c.case_type): c for c in cases}
    assert all(c.metric == LME_LABEL for c in cases)
    # answerable: the gold verbatim is right, "I don't know" and an unrelated answer wrong
    assert by[("fx_ssu_1", "gold_verbatim")].answer == "A border collie"
    assert by[("fx_ssu_1", "gold_verbatim")].expected == 1.0
    assert by[("fx_ssu_1", "dont_know")].expected == 0.0
    assert by[("fx_ssu_1", "unrelated")].expected == 0.0
    # plausible wrong: the gold of the next question of the same type
    assert by[("fx_ssu_1", "plausible_wrong")].answer == "Marta"
    assert by[("syn_ssu_9", "plausible_wrong")].answer == "A border collie"
    assert by[("fx_ms_2", "plausible_wrong")].answer == "Porto and Lyon"
    assert all(c.expected == 0.0 for c in cases if c.case_type == "plausible_wrong")
    # one part of a several-part gold, where the prompt says a subset is wrong
    assert by[("syn_ms_8", "partial_multi")].answer == "Porto"
    assert by[("syn_ms_8", "partial_multi")].expected == 0.0
    assert SUBSET_WORD in inst.judge_prompt(questions[0], "")
    assert ("fx_ms_2", "partial_multi") not in by  # a count beside the items: not split
    assert not any(
        c.case_type == "partial_multi" and c.question.extra["question_type"] == "knowledge-update"
        for c in cases
    )
    # preference: its gold is a rubric, not a response
    assert ("syn_ssp_6", "gold_verbatim") not in by
    assert by[("syn_ssp_6", "dont_know")].expected == 0.0
    # abstention: "I don't know" is right, an invented value wrong
    for qid in ("fx_ku_4_abs", "syn_tr_11_abs"):
        assert by[(qid, "dont_know")].expected == 1.0
        assert by[(qid, "invented_abstain")].expected == 0.0
        assert by[(qid, "unrelated")].expected == 0.0
        assert (qid, "plausible_wrong") not in by
    assert by[("fx_ku_4_abs", "invented_abstain")].answer == "In the garage"


def test_first_part() -> None:
    assert first_part("Porto and Lyon") == "Porto"
    assert first_part("the cello, the piano, and the flute") == "the cello"
    assert first_part("Two: the cello and the piano") is None
    assert first_part("3 days and 2 nights") is None
    assert first_part("A border collie") is None


# ---------------------------------------------------------------- the pipeline, offline


def test_mock_answer_run_on_the_fixture_fills_label(
    shared_instruments: Path, tmp_path: Path
) -> None:
    """``recallbench run --mode answer --reader mock --judge mock-judge`` on the LongMemEval
    fixture: the official instrument scores every question, per type in the QA table."""
    from typer.testing import CliRunner

    from recallbench.cli import app

    out = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--systems",
            "bm25",
            "--datasets",
            f"longmemeval@{FIXTURE}",
            "--mode",
            "answer",
            "--reader",
            "mock",
            "--judge",
            "mock-judge",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    (run,) = list(out.iterdir())
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    label = {r["slice"]: r for r in rows if r["metric"] == LME_LABEL and r["system"] == "bm25"}
    assert set(label) >= {"all", *(q["question_type"] for q in json.loads(FIXTURE.read_text()))}
    assert label["all"]["value"] is not None and label["all"]["denominator"] == 5
    verdicts = [json.loads(x) for x in (run / "verdicts.jsonl").read_text().splitlines()]
    for v in verdicts:
        assert v["mode"] == "answer" and v["metrics"][LME_LABEL] in (0.0, 1.0)
        a = v["answering"]
        assert a["instrument"] == LongMemEvalInstrument.name
        assert a["reader"] == "mock" and a["judge"] == "mock-judge"
        assert a["reader_prompt_sha256"] and a["judgements"][LME_LABEL]["prompt_sha256"]
    answers = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
    assert {a["reader_preset"] for a in answers} == {"json-con"}
    summary = (run / "summary.md").read_text()
    assert "QA accuracy (judge label) by question type" in summary
    lines = {line.split(" | ")[0]: line for line in summary.splitlines() if line.startswith("| ")}
    (abstention,) = [
        v["metrics"][LME_LABEL]
        for v in verdicts
        if v["question_id"].endswith("_abs") and v["system"] == "bm25"
    ]
    # bm25 is the last column of the QA table (the baselines run beside it)
    assert lines["| abstention only"].endswith(f" {abstention:.3f} (n=1) |")
    assert lines["| overall"].endswith(f" {label['all']['value']:.3f} (n=5) |")
    assert "reader chosen by the operator (the benchmark pins none)" in summary
