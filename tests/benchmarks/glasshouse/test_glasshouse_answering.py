"""Glasshouse v0.1's official reader and judge (``benchmarks/glasshouse/answering.py``).

The prompts must be the official ones verbatim: for one question of every axis in the shared
question files, the shared copy of ``judge.py`` is exec'd here on its own (its ``urllib`` and
``time`` replaced after the exec, so its own ``judge_memory`` / ``judge_answer`` /
``judge_abstain`` / ``generate_answer`` run and the body they would post is captured) and
compared byte for byte with the request the instrument handed to a fake ``CallLLM``. Also:
the settings and pins, verdict parsing, judge errors, the pinned-on-first-use download from a
loopback server (and a changed byte refused), judge-check cases, and many threads at once.
Needs ``../shared/instruments`` (skips without it) and, for the question files, the shared data.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import http.server
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from recallbench.benchmarks import get_benchmark, metric_catalogue
from recallbench.benchmarks.glasshouse.answering import (
    ANSWER,
    DONT_KNOW,
    DONT_KNOW_PARTIAL_AXES,
    JUDGE_ABSTAIN,
    JUDGE_FILE,
    MEMORY,
    GlasshouseAbstainJudgeInstrument,
    GlasshouseInstrument,
    glasshouse_answering,
)
from recallbench.benchmarks.glasshouse.corpus import (
    read_probes,
    read_tier_questions,
    read_xling,
)
from recallbench.benchmarks.glasshouse.metrics import AXIS_WEIGHTS, grade, is_abstention_question
from recallbench.contracts import Question
from recallbench.errors import ChecksumMismatchError, UserError
from recallbench.instruments.pins import DIR_ENV, LOCK_NAME, URL_ENV, cached_path
from recallbench.instruments.protocol import (
    AnswerContext,
    InstrumentOptions,
    JudgeResult,
    Retrieved,
)
from recallbench.llm.types import ChatRequest, Completion

REPO = Path(__file__).resolve().parents[3]
INSTRUMENTS = Path(
    os.environ.get("RECALLBENCH_INSTRUMENTS_COPY") or REPO.parent / "shared" / "instruments"
)
JUDGE_COPY = INSTRUMENTS / JUDGE_FILE.name / JUDGE_FILE.path
MEMORIES = ("They have a plot of about 1/4 acre.", "Last week they switched to watering daily.")

pytestmark = pytest.mark.skipif(
    not JUDGE_COPY.is_file(),
    reason="shared instrument copies not available (../shared/instruments)",
)


# ----------------------------------------------------------------------------- helpers


def completion(req: ChatRequest, text: str | None, error: str | None = None) -> Completion:
    return Completion(
        text=text,
        model="fake",
        cache_key=req.prompt_sha256,
        prompt_sha256=req.prompt_sha256,
        purpose=req.purpose,
        prompt_tokens=None if text is None else 100,
        error=error,
    )


class FakeCall:
    """A CallLLM that records what it got and answers ``reply`` (or a function of the
    request)."""

    def __init__(self, reply: str | None | Callable[[ChatRequest], str | None] = "FULL",
                 error: str | None = None) -> None:  # fmt: skip
        self.reply = reply
        self.error = error
        self.requests: list[ChatRequest] = []

    def __call__(self, req: ChatRequest) -> Completion:
        self.requests.append(req)
        text = self.reply(req) if callable(self.reply) else self.reply
        return completion(req, None if self.error else text, self.error)


class Official:
    """The shared copy of judge.py exec'd independently of recallbench, its network stubbed."""

    def __init__(self, path: Path) -> None:
        self.ns: dict[str, Any] = {"__name__": "glasshouse_judge_copy"}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), self.ns)  # noqa: S102
        self.payloads: list[dict[str, Any]] = []
        self.reply = "FULL"

        official = self

        class Request:
            def __init__(self, url: str, data: bytes, headers: dict[str, str]) -> None:
                self.data = data

        class Response:
            def __init__(self, body: bytes) -> None:
                self.body = body

            def read(self, *_: Any) -> bytes:
                return self.body

            def __enter__(self) -> Response:
                return self

            def __exit__(self, *_: object) -> None:
                return None

        def urlopen(req: Request, timeout: float) -> Response:
            official.payloads.append(json.loads(req.data))
            body = {"choices": [{"message": {"content": official.reply}}], "usage": {}}
            return Response(json.dumps(body).encode())

        self.ns["urllib"] = SimpleNamespace(
            request=SimpleNamespace(Request=Request, urlopen=urlopen)
        )
        self.ns["time"] = SimpleNamespace(sleep=lambda s: None)

    def __getattr__(self, name: str) -> Any:
        return self.ns[name]

    def last(self) -> tuple[tuple[dict[str, str], ...], dict[str, Any]]:
        """The last body the official code would have posted: messages and the other fields."""
        payload = self.payloads[-1]
        settings = {k: v for k, v in payload.items() if k not in ("model", "messages")}
        return tuple(payload["messages"]), settings


@pytest.fixture
def official() -> Official:
    return Official(JUDGE_COPY)


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InstrumentOptions:
    monkeypatch.setenv(DIR_ENV, str(INSTRUMENTS))
    monkeypatch.delenv(URL_ENV, raising=False)
    return InstrumentOptions(cache_dir=tmp_path / "cache")


@pytest.fixture
def instrument(options: InstrumentOptions) -> GlasshouseInstrument:
    return glasshouse_answering(options)


@functools.lru_cache(maxsize=1)
def _shared_questions(data: str) -> tuple[Question, ...]:
    folder = Path(data) / "glasshouse-v0.1"
    tier = read_tier_questions(folder / "questions_full.jsonl")
    probes = read_probes(folder / "glasshouse_v0.1_probes.jsonl")
    xling, _ = read_xling(folder / "questions_xling.jsonl", tier, "questions_full.jsonl")
    return (*tier, *probes, *xling)


@pytest.fixture
def questions(shared_data: Path) -> tuple[Question, ...]:
    if not (shared_data / "glasshouse-v0.1" / "questions_full.jsonl").is_file():
        pytest.skip("the Glasshouse question files are not in the shared data")
    return _shared_questions(str(shared_data))


def one_per_axis(questions: tuple[Question, ...]) -> list[Question]:
    """The first question of every axis, plus the first abstention row of another axis."""
    seen: dict[str, Question] = {}
    for q in questions:
        seen.setdefault(q.axis, q)
    extra = [q for q in questions if is_abstention_question(q) and q.axis == "XLING_QUERY"][:1]
    return [seen[a] for a in sorted(seen)] + extra


def ctx(q: Question, memories: tuple[str, ...] = MEMORIES) -> AnswerContext:
    texts = (*memories, *[str(r) for r in (q.extra.get("required_memories") or [])][:1])
    return AnswerContext(question=q, memories=tuple(Retrieved(t) for t in texts))


def official_axis(row: dict[str, Any]) -> str:
    """score.py's judge_scores: an abstention row of another axis is judged as ABSTAIN."""
    no_memory = row.get("axis") in ("ABSTAIN", "FALSE_MEMORY") or row.get("expect") == "no_memory"
    if no_memory and row["axis"] not in ("ABSTAIN", "FALSE_MEMORY"):
        return "ABSTAIN"
    return str(row["axis"])


# ----------------------------------------------------------------------------- verbatim prompts


def test_the_shared_files_hold_every_axis(questions: tuple[Question, ...]) -> None:
    assert {q.axis for q in questions} == set(AXIS_WEIGHTS)


def test_memory_mode_prompts_are_the_official_ones_verbatim(
    instrument: GlasshouseInstrument, official: Official, questions: tuple[Question, ...]
) -> None:
    checked = 0
    for q in one_per_axis(questions):
        row, c = dict(q.extra), ctx(q)
        call = FakeCall("FULL")
        (result,) = instrument.judge(c, "memory", None, call)
        assert result.metric == MEMORY
        if is_abstention_question(q):
            # score.py: not scorable in memory mode, nothing sent
            assert result.value is None and result.null_reason
            assert result.null_reason.startswith("not_scorable:")
            assert call.requests == []
            continue
        mems = [m.text for m in c.memories]
        value, _votes = official.judge_memory(
            row["question_en"], row["gold_answer"], row.get("required_memories") or [], mems,
            row["axis"], "k", row.get("gold_alts"),
        )  # fmt: skip
        messages, settings = official.last()
        (sent,) = call.requests
        assert sent.messages == messages, q.axis
        assert dict(sent.settings) == settings
        assert sent.purpose == "judge:memory"
        assert result.value == value == 1.0
        assert result.prompt_sha256 == sent.prompt_sha256
        checked += 1
    assert checked >= 14


def test_answer_mode_prompts_are_the_official_ones_verbatim(
    instrument: GlasshouseInstrument, official: Official, questions: tuple[Question, ...]
) -> None:
    axes = set()
    for q in one_per_axis(questions):
        row, c = dict(q.extra), ctx(q)
        reader_call = FakeCall("  They said so. ")
        read = instrument.answer(c, reader_call)
        official.reply = "  They said so. "
        mems = [m.text for m in c.memories]
        asked = row.get("question") or row.get("question_en") or ""
        answer = official.generate_answer(asked, mems, "k")
        messages, settings = official.last()
        (sent,) = reader_call.requests
        assert sent.messages == messages, q.axis
        assert dict(sent.settings) == settings
        assert sent.purpose == "reader"
        assert read.answer == answer == "They said so."
        assert read.reply == "  They said so. " and read.error is None

        judge_call = FakeCall("PARTIAL")
        (result,) = instrument.judge(c, "answer", read.answer, judge_call)
        official.reply = "PARTIAL"
        value, _ = official.judge_answer(
            row.get("question_en") or "", row.get("gold_answer"),
            row.get("required_memories") or [], read.answer, official_axis(row), "k",
            row.get("gold_alts"),
        )  # fmt: skip
        messages, settings = official.last()
        (sent,) = judge_call.requests
        assert sent.messages == messages, q.axis
        assert dict(sent.settings) == settings
        assert result.metric == ANSWER and result.value == value == 0.5
        axes.add(q.axis)
    assert axes == set(AXIS_WEIGHTS)


def test_the_cross_language_reader_is_asked_in_the_question_language(
    instrument: GlasshouseInstrument, questions: tuple[Question, ...]
) -> None:
    q = next(q for q in questions if q.axis == "XLING_QUERY" and not is_abstention_question(q))
    reader, judge = FakeCall("x"), FakeCall("FULL")
    instrument.answer(ctx(q), reader)
    instrument.judge(ctx(q), "answer", "x", judge)
    assert q.extra["question"] in reader.requests[0].messages[0]["content"]
    assert q.extra["question_en"] not in reader.requests[0].messages[0]["content"]
    assert q.extra["question_en"] in judge.requests[0].messages[0]["content"]


def test_probe_and_abstention_rows_are_judged_under_their_rule_in_answer_mode(
    instrument: GlasshouseInstrument, official: Official, questions: tuple[Question, ...]
) -> None:
    probe = next(q for q in questions if q.axis == "FALSE_MEMORY")
    xq = next(q for q in questions if q.axis == "XLING_QUERY" and is_abstention_question(q))
    for q, axis in ((probe, "FALSE_MEMORY"), (xq, "ABSTAIN")):
        call = FakeCall("FULL")
        instrument.judge(ctx(q), "answer", "That was never said.", call)
        prompt = call.requests[0].messages[0]["content"]
        assert f"How to score this question type ({axis}):\n{official.rule_for(axis)}" in prompt
    call = FakeCall("FULL")
    instrument.judge(ctx(probe), "answer", "no", call)
    assert "(nothing required)" in call.requests[0].messages[0]["content"]
    assert "Also accepted" not in call.requests[0].messages[0]["content"]


def test_the_empty_reader_request_is_the_one_empty_prompt_tokens_builds(
    instrument: GlasshouseInstrument, official: Official
) -> None:
    request = instrument.empty_reader_request()
    official.reply = "x"
    official.empty_prompt_tokens("k")
    messages, settings = official.last()
    assert request.messages == messages
    assert dict(request.settings) == settings
    assert settings["max_tokens"] == 1
    assert "(none)" in messages[0]["content"]


# ----------------------------------------------------------------------------- settings and pins


def _call_defaults() -> dict[str, Any]:
    module = ast.parse(JUDGE_COPY.read_text(encoding="utf-8"))
    fn = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "_call")
    names = [a.arg for a in fn.args.args][-len(fn.args.defaults) :]
    return {n: ast.literal_eval(d) for n, d in zip(names, fn.args.defaults, strict=True)}


def test_settings_match_the_official_payload(instrument: GlasshouseInstrument) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    reader, judge = FakeCall("an acre"), FakeCall("FULL")
    instrument.answer(ctx(q), reader)
    instrument.judge(ctx(q), "answer", "an acre", judge)
    instrument.judge(ctx(q), "memory", None, judge)
    assert dict(reader.requests[0].settings) == {
        "temperature": 0,
        "max_tokens": 200,
        "provider": {"order": ["OpenAI"], "allow_fallbacks": False},
    }
    for sent in judge.requests:
        assert dict(sent.settings) == {
            "temperature": 0,
            "max_tokens": 2000,
            "provider": {"order": ["Google AI Studio", "Google Vertex"], "allow_fallbacks": False},
        }
        assert [m["role"] for m in sent.messages] == ["user"]


def test_pins_are_read_from_the_file(instrument: GlasshouseInstrument, official: Official) -> None:
    reader, judge = instrument.reader, instrument.judge_pin
    assert reader.model == official.ANSWER_MODEL == "openai/gpt-4o-mini"
    assert reader.settings["max_tokens"] == _call_defaults()["max_tokens"] == 200
    assert judge.model == official.JUDGES[0][0] == "google/gemini-3.7-flash"
    assert judge.settings["max_tokens"] == official.JUDGE_MAX_TOKENS == 2000
    assert judge.settings["provider"]["order"] == official.PROVIDER_ORDER[judge.model]
    for pin in (reader, judge):
        assert pin.settings["temperature"] == 0
        assert pin.base_url == "https://openrouter.ai/api/v1"
        assert official.OR_URL.startswith(pin.base_url)
        assert pin.api_key_env == "OPENROUTER_API_KEY"
        assert pin.tries == _call_defaults()["retries"] == 3
        assert pin.timeout_s == 90.0 and pin.empty_is_failure
        assert pin.backoff_s == (2.0, 4.0)
    assert instrument.reader_model == reader.model and instrument.judge_model == judge.model
    assert not instrument.reader_is_judge
    assert instrument.judge_metrics == {"memory": (MEMORY,), "answer": (ANSWER,)}
    assert set(instrument.weighted_metrics) == {MEMORY, ANSWER}
    (record,) = instrument.files()
    assert record.repo == "wontopos/glasshouse" and record.commit.startswith("2eeb19e")
    assert record.path == "glasshouse-v0.1/judge.py" and not record.pinned
    assert record.note == "pinned on first use"
    assert record.sha256 == hashlib.sha256(JUDGE_COPY.read_bytes()).hexdigest()
    assert instrument.deviations()


def test_other_models_get_the_official_provider_rule(instrument: GlasshouseInstrument) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    listed = instrument.with_models("anthropic/claude-haiku-4.5", "google/gemini-2.5-flash")
    unlisted = instrument.with_models("local/gemma", "local/judge")
    for inst, reader_provider, judge_provider in (
        (listed, {"order": ["Anthropic"], "allow_fallbacks": False},
         {"order": ["Google AI Studio", "Google Vertex"], "allow_fallbacks": False}),
        (unlisted, None, None),
    ):  # fmt: skip
        reader, judge = FakeCall("x"), FakeCall("FULL")
        inst.answer(ctx(q), reader)
        inst.judge(ctx(q), "memory", None, judge)
        assert reader.requests[0].settings.get("provider") == reader_provider
        assert judge.requests[0].settings.get("provider") == judge_provider
        assert inst.empty_reader_request().settings.get("provider") == reader_provider
        # what Glasshouse pins does not move
        assert inst.reader.model == "openai/gpt-4o-mini"
        assert inst.judge_pin.model == "google/gemini-3.7-flash"
    assert unlisted.reader_model == "local/gemma" and unlisted.judge_model == "local/judge"
    # the original instrument is untouched
    reader = FakeCall("x")
    instrument.answer(ctx(q), reader)
    assert reader.requests[0].settings["provider"] == {
        "order": ["OpenAI"],
        "allow_fallbacks": False,
    }


# ----------------------------------------------------------------------------- verdicts, errors


@pytest.mark.parametrize(
    ("reply", "value", "unparsed"),
    [
        ("FULL", 1.0, False),
        ("PARTIAL", 0.5, False),
        ("WRONG", 0.0, False),
        ("not PARTIAL, this is FULL", 1.0, False),
        ("FULL? No: WRONG", 0.0, False),
        ("full", 1.0, False),
        ("Verdict: partial.", 0.5, False),
        ("I cannot decide.", 0.0, True),
        ("CORRECT", 0.0, True),
    ],
)
def test_verdicts_are_parsed_the_official_way(
    instrument: GlasshouseInstrument, official: Official, reply: str, value: float, unparsed: bool
) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    for mode in ("memory", "answer"):
        (result,) = instrument.judge(ctx(q), mode, "an acre", FakeCall(reply))
        assert result.value == value == official._verdict(reply)
        assert result.unparsed is unparsed
        assert result.reply == reply and result.error is None


def test_a_failed_judge_call_is_null_with_its_error(instrument: GlasshouseInstrument) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    failing = FakeCall(error="HTTP 503 after 3 tries")
    for mode in ("memory", "answer"):
        (result,) = instrument.judge(ctx(q), mode, "an acre", failing)
        assert result.value is None and result.error == "HTTP 503 after 3 tries"
        assert not result.unparsed and result.prompt_sha256 is not None
        assert len(result.calls) == 1
    read = instrument.answer(ctx(q), failing)
    assert read.answer is None and read.error == "HTTP 503 after 3 tries"
    # one attempt per official call: the official retry loop is not re-run on top
    assert len(failing.requests) == 3


def test_an_empty_body_is_an_error_not_wrong(instrument: GlasshouseInstrument) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    empty = FakeCall("")
    (result,) = instrument.judge(ctx(q), "answer", "x", empty)
    assert result.value is None and result.error and "empty response" in result.error
    read = instrument.answer(ctx(q), empty)
    assert read.answer is None and read.error and "empty response" in read.error
    assert len(empty.requests) == 2


def test_an_exception_in_the_call_is_a_bug_with_its_traceback(
    instrument: GlasshouseInstrument,
) -> None:
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")

    def broken(req: ChatRequest) -> Completion:
        raise KeyError("a bug in the client")

    with pytest.raises(KeyError, match="a bug in the client"):
        instrument.judge(ctx(q), "answer", "x", broken)
    with pytest.raises(KeyError):
        instrument.answer(ctx(q), broken)


def test_the_abstain_judge_variant_keeps_the_official_quirk(
    options: InstrumentOptions, official: Official, questions: tuple[Question, ...]
) -> None:
    variant = glasshouse_answering(
        InstrumentOptions(cache_dir=options.cache_dir, judge_variant=JUDGE_ABSTAIN)
    )
    assert isinstance(variant, GlasshouseAbstainJudgeInstrument)
    assert not variant.official and "non-standard" in variant.name
    assert any("INCORRECT" in d for d in variant.deviations())
    abstain = next(q for q in questions if q.axis == "ABSTAIN")
    for reply, value, unparsed in (
        ("CORRECT", 1.0, False),
        ("INCORRECT", 1.0, False),  # "CORRECT" in reply.upper(): reproduced, not fixed
        ("WRONG", 0.0, False),
        ("hmm", 0.0, True),
    ):
        call = FakeCall(reply)
        (result,) = variant.judge(ctx(abstain), "memory", None, call)
        assert (result.metric, result.value, result.unparsed) == (MEMORY, value, unparsed)
        official.reply = reply
        ok, _ = official.judge_abstain(
            abstain.extra["question_en"], [m.text for m in ctx(abstain).memories], "k"
        )
        assert (1.0 if ok else 0.0) == value
        messages, settings = official.last()
        assert call.requests[0].messages == messages
        assert dict(call.requests[0].settings) == settings
        assert call.requests[0].purpose == "judge:abstain"
    # other questions as the official instrument
    basic = next(q for q in questions if q.axis == "BASIC")
    (result,) = variant.judge(ctx(basic), "memory", None, FakeCall("FULL"))
    assert result.value == 1.0


def test_options_glasshouse_does_not_offer_are_refused(options: InstrumentOptions) -> None:
    for bad in (
        InstrumentOptions(cache_dir=options.cache_dir, prompts="recallbench-v1"),
        InstrumentOptions(cache_dir=options.cache_dir, reader_preset="con"),
        InstrumentOptions(cache_dir=options.cache_dir, judge_variant="mem0-j"),
    ):
        with pytest.raises(UserError):
            glasshouse_answering(bad)
    with pytest.raises(UserError):
        q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "x", axis="BASIC")
        glasshouse_answering(options).judge(ctx(q), "dry", None, FakeCall())


# ----------------------------------------------------------------------------- the download


@pytest.fixture
def loopback() -> Iterator[Callable[[Path], str]]:
    """Serve a folder on a free loopback port; yields a function folder -> URL template."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def serve(folder: Path) -> str:
        handler = functools.partial(QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/{{name}}/{{path}}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_judge_py_from_a_loopback_server_is_pinned_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback: Callable[[Path], str]
) -> None:
    monkeypatch.delenv(DIR_ENV, raising=False)
    monkeypatch.setenv(URL_ENV, loopback(INSTRUMENTS))
    cache = tmp_path / "cache"
    instrument = glasshouse_answering(InstrumentOptions(cache_dir=cache))
    expected = hashlib.sha256(JUDGE_COPY.read_bytes()).hexdigest()
    (record,) = instrument.files()
    assert record.sha256 == expected and record.note == "pinned on first use"
    lock = json.loads((cache / "instruments" / LOCK_NAME).read_text(encoding="utf-8"))
    assert lock == {JUDGE_FILE.key: expected}
    q = Question("Q1", "glasshouse-v0.1", "all", "How big?", "a quarter acre", axis="BASIC")
    assert instrument.judge(ctx(q), "memory", None, FakeCall("FULL"))[0].value == 1.0

    # a copy with one changed byte, after the hash was recorded: refused, naming both hashes
    changed = tmp_path / "changed"
    shutil.copytree(INSTRUMENTS / "glasshouse", changed / "glasshouse")
    target = changed / "glasshouse" / JUDGE_FILE.path
    data = bytearray(target.read_bytes())
    data[data.index(b"FULL")] = ord("f")
    target.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    cached_path(JUDGE_FILE, cache).unlink()
    monkeypatch.setenv(URL_ENV, loopback(changed))
    with pytest.raises(ChecksumMismatchError) as caught:
        glasshouse_answering(InstrumentOptions(cache_dir=cache))
    assert expected in str(caught.value) and actual in str(caught.value)
    assert isinstance(caught.value, UserError)


# ----------------------------------------------------------------------------- judge-check


def test_judge_cases_have_the_rules_verdicts(
    instrument: GlasshouseInstrument, questions: tuple[Question, ...]
) -> None:
    cases = instrument.judge_cases(questions, "answer")
    assert cases == instrument.judge_cases(questions, "answer")  # deterministic
    by_type: dict[str, list[Any]] = {}
    for case in cases:
        by_type.setdefault(case.case_type, []).append(case)
        assert case.metric == ANSWER
    assert set(by_type) == {
        "gold_verbatim", "accepted_alternative", "plausible_wrong", "unrelated",
        "partial_multi", "dont_know", "invented_abstain",
    }  # fmt: skip
    assert {c.question.axis for c in by_type["gold_verbatim"]} == set(AXIS_WEIGHTS)
    for c in by_type["gold_verbatim"]:
        assert c.answer == c.question.extra["gold_answer"] and c.expected == 1.0
    for c in by_type["accepted_alternative"]:
        assert c.answer in c.question.extra["gold_alts"] and c.expected == 1.0
    for c in by_type["plausible_wrong"]:
        same = {q.extra.get("gold_answer") for q in questions if q.axis == c.question.axis}
        assert c.answer in same and c.answer != c.question.extra["gold_answer"]
        assert c.expected == 0.0
    for c in by_type["unrelated"]:
        assert c.expected == 0.0
    for c in by_type["partial_multi"]:
        assert c.question.axis == "GATHER" and c.expected == 0.5
        assert c.answer == c.question.extra["gold_parts"][0]
    dont_know = {c.question.axis: c.expected for c in by_type["dont_know"] if c.answer == DONT_KNOW}
    assert dont_know == {
        "UPDATE": 0.5, "STALE": 0.5, "CONTRADICT": 0.5,
        "ABSTAIN": 1.0, "FALSE_MEMORY": 1.0,
        "RECONCILE": 0.0, "BASIC": 0.0, "PARAPHRASE": 0.0, "IMAGE": 0.0, "TEMPORAL": 0.0,
        "GATHER": 0.0, "MULTI": 0.0, "IMPLICIT": 0.0, "CROSS": 0.0, "CONFLICT": 0.0,
        "XLING_QUERY": 0.0, "XLING_STORE": 0.0,
    }  # fmt: skip
    for c in by_type["invented_abstain"]:
        assert is_abstention_question(c.question) and c.expected == 0.0
        if c.question.axis == "FALSE_MEMORY":
            assert c.answer == c.question.extra["false_claim_en"]
    # another seed draws other questions
    other = InstrumentOptions(cache_dir=instrument.options.cache_dir, seed=7)
    assert glasshouse_answering(other).judge_cases(questions, "answer") != cases


def test_the_dont_know_reading_agrees_with_the_rules_and_the_dry_scorer(
    official: Official, questions: tuple[Question, ...]
) -> None:
    for axis, rule in official.AXIS_RULE.items():
        assert ("PARTIAL if it says it does not know" in rule) == (axis in DONT_KNOW_PARTIAL_AXES)
    for axis in ("ABSTAIN", "FALSE_MEMORY"):
        assert (
            "Nothing in the history answers this. FULL if the answer says so"
            in (official.AXIS_RULE[axis])
        )
    assert "WRONG if it says it does not know" in official.AXIS_RULE["RECONCILE"]
    for q in one_per_axis(questions):
        expected = (
            1.0 if is_abstention_question(q) else 0.5 if q.axis in DONT_KNOW_PARTIAL_AXES else 0.0
        )
        assert grade(q, DONT_KNOW) == expected, q.axis


def test_memory_mode_cases_leave_out_abstentions_and_dont_know(
    instrument: GlasshouseInstrument, questions: tuple[Question, ...]
) -> None:
    cases = instrument.judge_cases(questions, "memory")
    assert cases and all(c.metric == MEMORY for c in cases)
    assert not any(is_abstention_question(c.question) for c in cases)
    assert not {c.case_type for c in cases} & {"dont_know", "invented_abstain"}
    with pytest.raises(UserError):
        instrument.judge_cases(questions, "dry")


# ----------------------------------------------------------------------------- threads


def test_many_threads_at_once_never_cross_talk(
    instrument: GlasshouseInstrument, questions: tuple[Question, ...]
) -> None:
    pool = [q for q in questions if not is_abstention_question(q)][:64]
    verdicts = ("FULL", "PARTIAL", "WRONG")
    results: dict[tuple[int, str], tuple[Any, ...]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(16)

    def worker(n: int) -> None:
        try:
            barrier.wait()
            for i, q in enumerate(pool):
                if i % 16 != n % 4:
                    continue
                reply = f"{q.id} {verdicts[(n + i) % 3]}"
                call = FakeCall(reply)
                read = instrument.answer(ctx(q), FakeCall(f"answer {n} {q.id}"))
                (judged,) = instrument.judge(ctx(q), "answer", read.answer, call)
                (memory,) = instrument.judge(ctx(q), "memory", None, call)
                results[(n, q.id)] = (q, read, judged, memory, call, reply)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 16 * 4
    score = {"FULL": 1.0, "PARTIAL": 0.5, "WRONG": 0.0}
    for (n, qid), (q, read, judged, memory, call, reply) in results.items():
        assert read.answer == f"answer {n} {qid}"
        assert read.calls[0].prompt_sha256 == read.prompt_sha256
        for result in (judged, memory):
            assert isinstance(result, JudgeResult)
            assert result.reply == reply and result.value == score[reply.split()[-1]]
        assert len(call.requests) == 2
        assert f"answer {n} {qid}" in call.requests[0].messages[0]["content"]
        for sent in call.requests:
            assert q.extra["question_en"] in sent.messages[0]["content"]


# ----------------------------------------------------------------------------- the benchmark


def test_the_benchmark_builds_this_instrument_and_catalogues_its_metrics() -> None:
    bench = get_benchmark("glasshouse-v0.1")
    assert bench.answering is glasshouse_answering
    catalogue = metric_catalogue(["glasshouse-v0.1"])
    for name in (MEMORY, ANSWER):
        info = catalogue.get(name)
        assert info is not None and info.higher_is_better is True
