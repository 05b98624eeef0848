"""The chat client against the mock endpoint on loopback: what is sent, what is parsed,
retries, failures as records, the cache, prices, the concurrency limit, and the API key kept
out of everything written."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recallbench.errors import UserError
from recallbench.llm.cache import ResponseCache, cache_key
from recallbench.llm.client import ChatClient, ClientPool, MissingApiKeyError
from recallbench.llm.prices import PriceTable
from recallbench.llm.retry import RetryPolicy
from recallbench.llm.types import ChatRequest, Endpoint
from recallbench.testing.mock_llm import Fault, MockLLMServer

SECRET = "sk-test-9f8e7d6c5b4a-never-print-me"
PROMPT = "Memories:\n- The plot is a quarter acre\n\nQuestion: How big is the plot?"


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as s:
        yield s


def fast(tries: int = 3, **kw: object) -> RetryPolicy:
    return RetryPolicy(tries=tries, backoff_base_s=0.001, rng=random.Random(0), **kw)  # type: ignore[arg-type]


def test_body_as_sent_and_reply_parsed(server: MockLLMServer):
    client = ChatClient(Endpoint(server.base_url, "mock"), policy=fast())
    settings = {"temperature": 0, "max_tokens": 200, "provider": {"order": ["OpenAI"]}}
    request = ChatRequest(({"role": "user", "content": PROMPT},), settings, "reader")
    done = client.complete(request)
    assert server.requests == [
        {"model": "mock", "messages": [{"role": "user", "content": PROMPT}], **settings}
    ]
    assert done.ok and done.text == "The plot is a quarter acre"
    assert (done.prompt_tokens, done.completion_tokens) == (len(PROMPT.split()), 6)
    assert (done.provider, done.response_model, done.finish_reason) == ("mock", "mock", "stop")
    assert done.purpose == "reader" and not done.cached and len(done.attempts) == 1
    assert done.cache_key == cache_key(client.endpoint, request, 0)
    assert done.prompt_sha256 == request.prompt_sha256
    assert server.calls_by_prompt[request.prompt_sha256] == 1
    assert client.as_call(3)(request).cache_key == cache_key(client.endpoint, request, 3)


def test_settings_may_not_override_model_or_messages(server: MockLLMServer):
    client = ChatClient(Endpoint(server.base_url, "mock"))
    with pytest.raises(ValueError, match="model"):
        client.complete(ChatRequest.user("x", model="other"))


def test_429_is_retried_honouring_retry_after():
    waits: list[float] = []
    policy = RetryPolicy(tries=3, backoff_base_s=0.0, sleep=waits.append)
    with MockLLMServer(faults=[Fault("rate_limit", every=1, retry_after_s=1.5)]) as s:
        done = ChatClient(Endpoint(s.base_url, "mock"), policy=policy).complete(
            ChatRequest.user(PROMPT)
        )
        assert s.calls == 3
    assert not done.ok and done.text is None
    assert done.error is not None and done.error.startswith("HTTP 429")
    assert [a.status for a in done.attempts] == [429, 429, 429]
    assert waits == [1.5, 1.5]


@pytest.mark.parametrize("kind", ["malformed", "no_choices", "rate_limit"])
def test_a_bad_reply_then_a_good_one(kind: str):
    with MockLLMServer(faults=[Fault(kind, every=2)]) as s:
        client = ChatClient(Endpoint(s.base_url, "mock"), policy=fast())
        client.complete(ChatRequest.user("warm up"))  # call 1
        done = client.complete(ChatRequest.user(PROMPT))  # call 2 fails, call 3 succeeds
    assert done.ok and len(done.attempts) == 2
    assert done.attempts[0].error is not None and done.attempts[1].error is None


def test_errors_left_after_the_retries_are_completions_not_exceptions():
    with MockLLMServer(faults=[Fault("malformed", every=1)]) as s:
        done = ChatClient(Endpoint(s.base_url, "mock"), policy=fast()).complete(
            ChatRequest.user(PROMPT)
        )
    assert done.text is None and done.error is not None and "malformed" in done.error
    assert len(done.attempts) == 3
    # nothing listening: connection refused, still a record
    with MockLLMServer() as s:
        url = s.base_url
    gone = ChatClient(Endpoint(url, "mock", timeout_s=2), policy=fast(2)).complete(
        ChatRequest.user(PROMPT)
    )
    assert gone.text is None and "refused" in (gone.error or "").lower()
    assert [a.status for a in gone.attempts] == [None, None]


def test_unknown_model_is_a_final_error(server: MockLLMServer):
    done = ChatClient(Endpoint(server.base_url, "gpt-9"), policy=fast()).complete(
        ChatRequest.user(PROMPT)
    )
    assert done.error is not None and done.error.startswith("HTTP 404")
    assert len(done.attempts) == 1 and server.calls == 1


def test_an_empty_body_is_a_failure_only_when_asked():
    with MockLLMServer(faults=[Fault("empty", every=1)]) as s:
        strict = ChatClient(Endpoint(s.base_url, "mock"), policy=fast(empty_is_failure=True))
        failed = strict.complete(ChatRequest.user(PROMPT))
        lax = ChatClient(Endpoint(s.base_url, "mock"), policy=fast(empty_is_failure=False))
        empty = lax.complete(ChatRequest.user(PROMPT))
    assert failed.text is None and "empty reply" in (failed.error or "")
    assert len(failed.attempts) == 3
    assert empty.ok and empty.text == "" and len(empty.attempts) == 1


def test_cache_answers_the_same_call_and_only_successes(server: MockLLMServer, tmp_path: Path):
    cache = ResponseCache.for_cache_dir(tmp_path)
    prices = PriceTable.from_mapping({"mock": {"prompt_per_1m": 1.0, "completion_per_1m": 2.0}})
    client = ChatClient(Endpoint(server.base_url, "mock"), cache, fast(), prices)
    request = ChatRequest.user(PROMPT, "reader", temperature=0)
    first = client.complete(request)
    assert not first.cached and server.calls == 1
    assert first.billed_usd == pytest.approx((first.prompt_tokens + 2 * 6) / 1e6)
    again = client.complete(ChatRequest.user(PROMPT, "reader:again", temperature=0))
    assert again.cached and again.attempts == () and server.calls == 1
    assert again.text == first.text and again.purpose == "reader:again"
    assert again.billed_usd == 0.0  # nothing billed for a cache hit
    assert again.latency_ms is not None and again.latency_ms < first.latency_ms  # the lookup's
    other_sample = client.complete(request, sample=1)
    assert not other_sample.cached and server.calls == 2

    with MockLLMServer(faults=[Fault("malformed", every=1)]) as broken:
        failing = ChatClient(Endpoint(broken.base_url, "mock"), cache, fast(1))
        assert not failing.complete(ChatRequest.user("new")).ok
        assert not failing.complete(ChatRequest.user("new")).ok
        assert broken.calls == 2  # a failure is asked again, never served from the cache


def test_unknown_model_price_is_none(server: MockLLMServer):
    prices = PriceTable.from_mapping({"other": {"prompt_per_1m": 1.0, "completion_per_1m": 1.0}})
    done = ChatClient(Endpoint(server.base_url, "mock"), prices=prices).complete(
        ChatRequest.user(PROMPT)
    )
    assert done.ok and done.billed_usd is None


def test_calls_in_flight_never_exceed_the_endpoint_limit():
    with MockLLMServer(delay_s=0.1) as s:
        pool = ClientPool()
        endpoint = Endpoint(s.base_url, "mock", max_concurrency=3)
        a = pool.client(endpoint, fast())
        b = pool.client(endpoint, fast(5))  # another policy, the same endpoint limit
        assert pool.client(endpoint, fast()) is a and a is not b
        requests = [ChatRequest.user(f"{PROMPT} {i}") for i in range(12)]
        with ThreadPoolExecutor(12) as ex:
            done = list(
                ex.map(lambda ir: (a if ir[0] % 2 else b).complete(ir[1]), enumerate(requests))
            )
        assert all(d.ok for d in done) and s.calls == 12
        assert s.max_in_flight == 3


def test_the_key_is_sent_and_never_written(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("RB_TEST_KEY", SECRET)
    texts: list[str] = []
    with MockLLMServer(api_key=SECRET) as s:
        endpoint = Endpoint(s.base_url, "mock", api_key_env="RB_TEST_KEY", label="mock")
        client = ChatClient(endpoint, policy=fast())
        ok = client.complete(ChatRequest.user(PROMPT))
        assert ok.ok and s.authorization_seen == {f"Bearer {SECRET}"}
        texts += [repr(client), repr(ok), repr(endpoint), str(endpoint.describe())]
    with MockLLMServer(api_key="a-different-key") as s:
        refused = ChatClient(
            Endpoint(s.base_url, "mock", api_key_env="RB_TEST_KEY"), policy=fast()
        ).complete(ChatRequest.user(PROMPT))
        assert refused.error is not None and refused.error.startswith("HTTP 401")
        texts += [repr(refused), refused.error]
    texts.append(caplog.text)
    assert all(SECRET not in t for t in texts)
    assert all(SECRET[4:20] not in t for t in texts)


def test_an_error_echoing_the_key_is_redacted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RB_TEST_KEY", SECRET)
    # a server that echoes the Authorization header in its error body
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = f"bad key {self.headers['Authorization']}".encode()
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        done = ChatClient(Endpoint(url, "m", api_key_env="RB_TEST_KEY"), policy=fast()).complete(
            ChatRequest.user("x")
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert done.error == "HTTP 401: bad key Bearer [redacted]"
    assert SECRET not in repr(done)


def test_a_named_but_unset_key_variable_is_a_user_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("RB_UNSET_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match=r"\$RB_UNSET_KEY") as info:
        ChatClient(Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="RB_UNSET_KEY"))
    assert isinstance(info.value, UserError)


def test_loopback_endpoints_bypass_a_configured_proxy(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    done = ChatClient(Endpoint(server.base_url, "mock"), policy=fast(1)).complete(
        ChatRequest.user(PROMPT)
    )
    assert done.ok, done.error
