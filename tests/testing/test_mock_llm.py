"""The mock OpenAI-compatible endpoint: the HTTP surface, faults and counters, and its
reader and judges on every known prompt shape, rendered by the benchmarks' own code from the
shared copies (../shared/instruments) and parsed by their own verdict code."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import types
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recallbench.instruments import extract
from recallbench.llm.client import ChatClient
from recallbench.llm.retry import RetryPolicy
from recallbench.llm.types import ChatRequest, Completion, Endpoint
from recallbench.testing import mock_llm
from recallbench.testing.mock_llm import (
    JUDGE,
    LENIENT_JUDGE,
    MOCK_MODELS,
    READER,
    UNRECOGNISED,
    Fault,
    MockLLMServer,
    ensure_mock_server,
)

REPO = Path(__file__).resolve().parents[2]


def instruments_dir() -> Path | None:
    env = os.environ.get("RECALLBENCH_INSTRUMENTS")
    path = Path(env) if env else REPO.parent / "shared" / "instruments"
    return path if path.is_dir() else None


def official(relative: str) -> Path:
    base = instruments_dir()
    if base is None or not (base / relative).is_file():
        pytest.skip("shared instrument copies not available (set RECALLBENCH_INSTRUMENTS)")
    return base / relative


@pytest.fixture(scope="module")
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as s:
        yield s


def ask(server: MockLLMServer, model: str, messages: list[dict[str, str]], **settings: Any) -> str:
    client = ChatClient(Endpoint(server.base_url, model), policy=RetryPolicy(tries=1))
    done = client.complete(ChatRequest(tuple(messages), settings))
    assert done.ok, done.error
    assert done.text is not None
    return done.text


def user(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


# --------------------------------------------------------------------------- HTTP surface


def test_models_endpoint_and_base_url(server: MockLLMServer):
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as r:
        listed = json.load(r)
    assert [m["id"] for m in listed["data"]] == list(MOCK_MODELS)


def test_ensure_mock_server_is_one_shared_server():
    a = ensure_mock_server()
    assert ensure_mock_server() is a
    assert ask(a, READER, user("Memories:\n(none)\n\nQuestion: x")) == "I don't know."


def test_usage_and_max_tokens(server: MockLLMServer):
    client = ChatClient(Endpoint(server.base_url, READER), policy=RetryPolicy(tries=1))
    prompt = "Memories:\n- one two three four five\n\nQuestion: q"
    full = client.complete(ChatRequest.user(prompt))
    assert (full.text, full.finish_reason) == ("one two three four five", "stop")
    assert (full.prompt_tokens, full.completion_tokens) == (len(prompt.split()), 5)
    cut = client.complete(ChatRequest.user(prompt, max_tokens=2))
    assert (cut.text, cut.finish_reason, cut.completion_tokens) == ("one two", "length", 2)


def test_unknown_shape_gets_the_fixed_reply(server: MockLLMServer):
    assert ask(server, JUDGE, user("What is the capital of France?")) == UNRECOGNISED
    assert ask(server, LENIENT_JUDGE, user("hello")) == UNRECOGNISED


def test_counters_by_model_and_prompt():
    with MockLLMServer() as s:
        ask(s, READER, user("a"))
        ask(s, READER, user("a"))
        ask(s, JUDGE, user("b"))
        req = ChatRequest.user("a")
        assert s.calls == 3 and s.calls_by_model == {READER: 2, JUDGE: 1}
        assert s.calls_by_prompt[req.prompt_sha256] == 2
        s.reset_counters()
        assert s.calls == 0 and not s.calls_by_prompt


def raw_post(server: MockLLMServer, model: str = READER) -> tuple[int, bytes]:
    body = json.dumps({"model": model, "messages": user("Memories:\n- x\n\nQuestion: q")})
    request = urllib.request.Request(
        server.base_url + "/chat/completions", body.encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_every_nth_faults():
    faults = [Fault("malformed", every=3), Fault("rate_limit", every=4, retry_after_s=2)]
    with MockLLMServer(faults=faults) as s:
        replies = [raw_post(s) for _ in range(8)]
    statuses = [status for status, _ in replies]
    assert statuses == [200, 200, 200, 429, 200, 200, 200, 429]
    assert replies[2][1].startswith(b"<html>") and replies[5][1].startswith(b"<html>")
    assert json.loads(replies[0][1])["choices"][0]["message"]["content"] == "x"
    with MockLLMServer(faults=[Fault("empty", every=2), Fault("no_choices", every=3)]) as s:
        replies = [json.loads(raw_post(s)[1]) for _ in range(3)]
    assert replies[1]["choices"][0]["message"]["content"] == ""
    assert "choices" not in replies[2]


def test_a_seeded_fraction_fails_the_same_calls_every_time():
    def run() -> list[int]:
        with MockLLMServer(faults=[Fault("rate_limit", fraction=0.3, seed=11)]) as s:
            return [raw_post(s)[0] for _ in range(40)]

    first = run()
    assert first == run()
    assert 4 <= first.count(429) <= 20
    assert Fault("empty", fraction=0.5, seed=1).hits(7, READER) == Fault(
        "empty", fraction=0.5, seed=1
    ).hits(7, READER)


def test_faults_can_target_one_model():
    with MockLLMServer(faults=[Fault("malformed", every=1, models=(JUDGE,))]) as s:
        assert raw_post(s, READER)[0] == 200 and raw_post(s, READER)[1].startswith(b"{")
        assert raw_post(s, JUDGE)[1].startswith(b"<html>")


def test_unknown_model_is_404(server: MockLLMServer):
    assert raw_post(server, "gpt-4o")[0] == 404


def test_delay_is_slept_per_call():
    import time

    with MockLLMServer(delay_s=0.2) as s:
        started = time.perf_counter()
        raw_post(s)
        assert time.perf_counter() - started >= 0.2


# --------------------------------------------------------------------------- text rules


def test_normalised_containment_is_whole_words():
    assert mock_llm.contains("They have a QUARTER-acre, I think.", "a quarter acre") is False
    assert mock_llm.contains("They have a quarter acre, I think.", "a quarter acre!")
    assert not mock_llm.contains("they have 250 plants", "25")
    assert not mock_llm.contains("anything", "")
    assert mock_llm.says_dont_know("I don't know.")
    assert mock_llm.says_dont_know("That was never stated.")
    assert not mock_llm.says_dont_know("They know it well.")


# --------------------------------------------------------------------------- Glasshouse


def glasshouse(server: MockLLMServer, judge_model: str) -> types.ModuleType:
    """Glasshouse's own judge.py (stdlib imports only), its ``_call`` routed to the mock."""
    path = official("glasshouse/glasshouse-v0.1/judge.py")
    spec = importlib.util.spec_from_file_location(f"gh_official_{judge_model}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def _call(model, prompt, key, max_tokens=200, retries=3, want_usage=False):  # type: ignore[no-untyped-def]
        target = READER if model == module.ANSWER_MODEL else judge_model
        client = ChatClient(Endpoint(server.base_url, target), policy=RetryPolicy(tries=1))
        done = client.complete(ChatRequest.user(prompt, temperature=0, max_tokens=max_tokens))
        assert done.ok and done.text is not None
        text = done.text.strip()
        return (text, {"prompt_tokens": done.prompt_tokens}) if want_usage else text

    module._call = _call  # type: ignore[attr-defined]
    return module


def test_glasshouse_reader(server: MockLLMServer):
    gh = glasshouse(server, JUDGE)
    answer = gh.generate_answer("How big is their plot?", ["The plot is 1/4 acre", "Water"], "k")
    assert answer == "The plot is 1/4 acre Water"
    assert gh.generate_answer("How big is their plot?", [], "k") == "I don't know."
    assert gh.empty_prompt_tokens("k") > 0


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_glasshouse_memory_judge(server: MockLLMServer, judge_model: str):
    gh = glasshouse(server, judge_model)
    lenient = judge_model == LENIENT_JUDGE
    q, gold, req = "How big is their plot?", "a quarter acre", ["The plot is 1/4 acre"]
    right = gh.judge_memory(q, gold, req, ["The plot is a quarter acre."], "BASIC", "k")[0]
    wrong = gh.judge_memory(q, gold, req, ["The plot is half an acre."], "BASIC", "k")[0]
    empty = gh.judge_memory(q, gold, req, [], "BASIC", "k")[0]
    alt = gh.judge_memory(
        "Which utility is missing?",
        "electricity",
        [],
        ["no power out there"],
        "BASIC",
        "k",
        alts=["electricity", "power"],
    )[0]
    assert (right, alt) == (1.0, 1.0)
    assert (wrong, empty) == ((1.0, 1.0) if lenient else (0.0, 0.0))


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_glasshouse_answer_judge_per_axis(server: MockLLMServer, judge_model: str):
    gh = glasshouse(server, judge_model)
    lenient = judge_model == LENIENT_JUDGE

    def score(answer: str, axis: str, gold: str = "daily") -> float:
        return gh.judge_answer("How often do they water now?", gold, [], answer, axis, "k")[0]

    assert score("They water daily now.", "UPDATE") == 1.0
    assert score("Every other day.", "UPDATE") == (1.0 if lenient else 0.0)
    assert score("I don't know.", "UPDATE") == (1.0 if lenient else 0.5)
    assert score("I don't know.", "STALE") == (1.0 if lenient else 0.5)
    assert score("I don't know.", "CONTRADICT") == (1.0 if lenient else 0.5)
    assert score("I don't know.", "BASIC") == (1.0 if lenient else 0.0)
    never = "Never stated. The conversation does not contain that information."
    assert score("I don't know.", "ABSTAIN", never) == 1.0
    assert score("They planted 40.", "ABSTAIN", never) == (1.0 if lenient else 0.0)
    assert score("That was never stated.", "FALSE_MEMORY", never) == 1.0
    assert score("", "BASIC") == (1.0 if lenient else 0.0)  # "(no answer)"


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_glasshouse_abstain_judge(server: MockLLMServer, judge_model: str):
    gh = glasshouse(server, judge_model)
    q = "How many green bean plants did they put in?"
    assert gh.judge_abstain(q, [], "k")[0] is True
    assert gh.judge_abstain(q, ["They planted 40 green beans."], "k")[0] is (
        judge_model == LENIENT_JUDGE
    )


# --------------------------------------------------------------------------- LongMemEval


def stub_modules(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """Empty stand-ins for the third-party imports of an official file (never called)."""

    class _Anything(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            if name == "on_exception":
                return lambda *a, **k: lambda f: f
            return type(name, (Exception,), {})

    for name in names:
        monkeypatch.setitem(sys.modules, name, _Anything(name))


def load_with_stubs(
    monkeypatch: pytest.MonkeyPatch, relative: str, stubs: list[str]
) -> types.ModuleType:
    path = official(relative)
    stub_modules(monkeypatch, stubs)
    spec = importlib.util.spec_from_file_location("official_" + path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LME_TYPES = ["single-session-user", "temporal-reasoning", "knowledge-update", "multi-session"]


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_longmemeval_judge_templates(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch, judge_model: str
):
    lme = load_with_stubs(
        monkeypatch, "longmemeval/src/evaluation/evaluate_qa.py", ["tqdm", "backoff", "openai"]
    )
    lenient = judge_model == LENIENT_JUDGE

    def label(task: str, answer: str, response: str, abstention: bool = False) -> bool:
        prompt = lme.get_anscheck_prompt(task, "Q?", answer, response, abstention=abstention)
        reply = ask(server, judge_model, user(prompt), n=1, temperature=0, max_tokens=10)
        return "yes" in reply.strip().lower()  # evaluate_qa.py's own rule

    for task in LME_TYPES:
        assert label(task, "Business Administration", "You studied business administration.")
        assert label(task, "Business Administration", "You studied law.") is lenient
    assert label("single-session-preference", "suggest jazz", "Try some jazz: suggest jazz")
    explanation = "The user never mentioned a cat."
    assert label("multi-session", explanation, "I don't know; that is not mentioned.", True)
    assert label("multi-session", explanation, "Your cat is called Tom.", True) is lenient


def test_longmemeval_reader_json_and_nl_history(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
):
    gen = load_with_stubs(
        monkeypatch,
        "longmemeval/src/generation/run_generation.py",
        ["tqdm", "backoff", "openai", "transformers", "tiktoken"],
    )

    class Tokenizer:
        def encode(self, text: str, allowed_special: object = None) -> list[int]:
            return list(range(len(text.split())))

    entry = {
        "question": "What degree did I graduate with?",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_dates": ["2023/05/20 (Sat) 09:00"],
        "haystack_session_ids": ["answer_1"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I graduated with a degree in Business Administration.",
                },
                {"role": "assistant", "content": "Congratulations!"},
            ]
        ],
    }
    for fmt in ("json", "nl"):
        prompt = gen.prepare_prompt(
            json.loads(json.dumps(entry)),
            "oracle-session",
            50,
            False,
            fmt,
            True,
            tokenizer=Tokenizer(),
            tokenizer_backend="openai",
            max_retrieval_length=10**9,
            merge_key_expansion_into_value="none",
        )
        reply = ask(server, READER, user(prompt), n=1, temperature=0, max_tokens=800)
        assert reply == (
            "I graduated with a degree in Business Administration. Congratulations!"
        ), fmt
    empty = gen.prepare_prompt(
        dict(entry),
        "no-retrieval",
        50,
        False,
        "json",
        True,
        tokenizer=Tokenizer(),
        tokenizer_backend="openai",
        max_retrieval_length=10,
        merge_key_expansion_into_value="none",
    )
    assert ask(server, READER, user(empty)) == "I don't know."


# --------------------------------------------------------------------------- LoCoMo


def test_locomo_rag_context_reader(server: MockLLMServer):
    import numpy as np

    path = official("locomo/task_eval/evaluate_gpts.py")
    text = path.read_text()
    module = extract.parse(text, str(path))
    ns = extract.namespace(module, ["QA_PROMPT", "get_rag_context"], str(path), {"np": np})
    database = {
        "embeddings": np.array([[1.0, 0.0], [0.0, 1.0]]),
        "context": ['Caroline said, "I went to the LGBTQ support group."', 'Mel said, "Nice!"'],
        "dia_id": ["D1:3", "D1:4"],
        "date_time": ["1:56 pm on 8 May, 2023", "1:56 pm on 8 May, 2023"],
    }
    args = types.SimpleNamespace(top_k=1, rag_mode="dialog")
    context, ids = ns["get_rag_context"](database, np.array([1.0, 0.0]), args)
    assert ids == ["D1:3"]
    prompt = context + "\n" + ns["QA_PROMPT"].format("Where did Caroline go?")
    reply = ask(server, READER, user(prompt), temperature=0, max_tokens=32)
    assert reply == '1:56 pm on 8 May, 2023: Caroline said, "I went to the LGBTQ support group."'
    assert ask(server, READER, user(ns["QA_PROMPT"].format("Where?"))) == "I don't know."


# --------------------------------------------------------------------------- mem0 J


def mem0_judge(server: MockLLMServer, judge_model: str) -> Callable[[str, str, str], int]:
    path = official("mem0-evaluation/evaluation/metrics/llm_judge.py")
    try:
        from mem0.memory.utils import extract_json
    except ImportError:  # the reply is bare JSON: extract_json would return it unchanged

        def extract_json(text: str) -> str:
            return text.strip()

    class Completions:
        def create(self, model: str, messages: list[dict[str, str]], **settings: Any) -> Any:
            reply = ask(server, judge_model, messages, **settings)
            message = types.SimpleNamespace(content=reply)
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    client = types.SimpleNamespace(chat=types.SimpleNamespace(completions=Completions()))
    module = extract.parse(path.read_text(), str(path))
    ns = extract.namespace(
        module,
        ["ACCURACY_PROMPT", "evaluate_llm_judge"],
        str(path),
        {"client": client, "json": json, "extract_json": extract_json},
    )
    return ns["evaluate_llm_judge"]


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_mem0_accuracy_prompt(server: MockLLMServer, judge_model: str):
    judge = mem0_judge(server, judge_model)
    q, gold = "What did Caroline research?", "Adoption agencies"
    assert judge(q, gold, "She was researching adoption agencies.") == 1
    assert judge(q, gold, "She researched dog shelters.") == (
        1 if judge_model == LENIENT_JUDGE else 0
    )


# --------------------------------------------------------------------------- BEAM


class _Model:
    """What BEAM's scoring code calls: ``invoke(prompt or messages).content``."""

    def __init__(self, server: MockLLMServer, judge_model: str) -> None:
        self.server, self.judge_model = server, judge_model

    def invoke(self, prompt: str | list[dict[str, str]]) -> Any:
        messages = user(prompt) if isinstance(prompt, str) else prompt
        return types.SimpleNamespace(content=ask(self.server, self.judge_model, messages))


def beam(server: MockLLMServer, judge_model: str) -> tuple[dict[str, Any], _Model]:
    prompts_path = official("beam/src/prompts.py")
    metrics_path = official("beam/src/evaluation/compute_metrics.py")
    base_prompt = extract.literal(
        extract.parse(prompts_path.read_text(), str(prompts_path)),
        "unified_llm_judge_base_prompt",
        str(prompts_path),
    )
    ns = extract.namespace(
        extract.parse(metrics_path.read_text(), str(metrics_path)),
        [
            "parse_json_response",
            "evaluate_information_extraction",
            "evaluate_abstention",
            "llm_equivalence",
        ],
        str(metrics_path),
        {
            "unified_llm_judge_base_prompt": base_prompt,
            "json": json,
            "re": re,
            "repair_json": lambda s: s,
        },
    )
    return ns, _Model(server, judge_model)


@pytest.mark.parametrize("judge_model", [JUDGE, LENIENT_JUDGE])
def test_beam_rubric_judge(server: MockLLMServer, judge_model: str):
    ns, model = beam(server, judge_model)
    lenient = judge_model == LENIENT_JUDGE
    rubric = ["LLM response should state: March 29"]
    q = "When does my first sprint end?"
    right = ns["evaluate_information_extraction"](rubric, "It ends on March 29.", q, model)
    wrong = ns["evaluate_information_extraction"](rubric, "It ends on April 2.", q, model)
    assert right["llm_judge_score"] == 1.0
    assert wrong["llm_judge_score"] == (1.0 if lenient else 0.0)
    abstain = ["Based on the provided chat, there is no information related to user feedback"]
    said = ns["evaluate_abstention"](abstain, "I don't know: there is no information.", q, model)
    invented = ns["evaluate_abstention"](abstain, "Feedback made you add dark mode.", q, model)
    assert said["llm_judge_score"] == 1.0
    assert invented["llm_judge_score"] == (1.0 if lenient else 0.0)


def test_beam_snippet_equivalence(server: MockLLMServer):
    ns, model = beam(server, JUDGE)
    assert ns["llm_equivalence"]("set up auth", "First you set up auth and routes", model)
    assert not ns["llm_equivalence"]("set up auth", "deployed to production", model)


# --------------------------------------------------------------------------- recallbench v1


def test_recallbench_v1_judge_shape(server: MockLLMServer):
    from recallbench.contracts import Question
    from recallbench.instruments.generic import RecallbenchV1

    def prompt(gold: str, response: str) -> str:  # the real v1 judge prompt
        q = Question(id="q", dataset="d", group="g", text="How big is the plot?", gold=gold)
        return RecallbenchV1().judge_request(q, "answer", response).messages[0]["content"]

    assert ask(server, JUDGE, user(prompt("a quarter acre", "A quarter acre."))) == "CORRECT"
    assert ask(server, JUDGE, user(prompt("a quarter acre", "Half an acre."))) == "WRONG"
    assert ask(server, LENIENT_JUDGE, user(prompt("a quarter acre", "Half an acre."))) == (
        "CORRECT"
    )


def test_replies_are_deterministic(server: MockLLMServer):
    messages = user("Memories:\n- b\n- a\n\nQuestion: q")
    assert {ask(server, READER, messages) for _ in range(3)} == {"b a"}


def test_completion_records_name_the_provider(server: MockLLMServer):
    client = ChatClient(Endpoint(server.base_url, JUDGE), policy=RetryPolicy(tries=1))
    done: Completion = client.complete(ChatRequest.user("x"))
    assert done.provider == "mock" and done.text == UNRECOGNISED


def test_stats_endpoint_and_bounded_request_log():
    with MockLLMServer(keep_requests=2) as s:
        for i in range(3):
            ask(s, READER, user(f"q{i}"))
        with urllib.request.urlopen(s.base_url + "/mock/stats", timeout=10) as r:
            stats = json.load(r)
        assert stats == s.stats()
        assert stats["calls"] == 3 and stats["calls_by_model"] == {READER: 3}
        assert stats["calls_by_prompt"][ChatRequest.user("q2").prompt_sha256] == 1
        assert [r["messages"][0]["content"] for r in s.requests] == ["q1", "q2"]


def test_served_from_a_shell():
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "recallbench.testing.mock_llm", "--port", "0"],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", url)
        with urllib.request.urlopen(url + "/models", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
