"""The response cache: what the key covers, what is stored, hits, threads and processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from recallbench.llm.cache import (
    ResponseCache,
    cache_key,
    close_shared_response_caches,
    key_material,
    shared_response_cache,
)
from recallbench.llm.types import ChatRequest, Completion, Endpoint

REPO = Path(__file__).resolve().parents[2]
ENDPOINT = Endpoint("http://127.0.0.1:9/v1", "reader-a")
REQUEST = ChatRequest.user("Question: where?", "reader", temperature=0, max_tokens=200)


def completion(key: str, text: str | None = "an answer", error: str | None = None) -> Completion:
    return Completion(
        text=text,
        model="reader-a",
        cache_key=key,
        prompt_sha256=REQUEST.prompt_sha256,
        purpose="reader",
        finish_reason="stop",
        prompt_tokens=12,
        completion_tokens=2,
        provider="mock",
        response_model="reader-a-2024",
        latency_ms=5.0,
        error=error,
    )


def test_key_changes_with_model_setting_endpoint_and_sample_only():
    base = cache_key(ENDPOINT, REQUEST, 0)
    other_model = Endpoint(ENDPOINT.base_url, "reader-b")
    other_url = Endpoint("http://127.0.0.1:10/v1", "reader-a")
    other_setting = ChatRequest(REQUEST.messages, {"temperature": 0, "max_tokens": 201}, "reader")
    added_setting = ChatRequest(
        REQUEST.messages, {**REQUEST.settings, "provider": {"order": ["OpenAI"]}}, "reader"
    )
    keys = {
        "model": cache_key(other_model, REQUEST, 0),
        "setting": cache_key(ENDPOINT, other_setting, 0),
        "added setting": cache_key(ENDPOINT, added_setting, 0),
        "endpoint": cache_key(other_url, REQUEST, 0),
        "sample": cache_key(ENDPOINT, REQUEST, 1),
    }
    assert base not in keys.values() and len(set(keys.values())) == len(keys)
    relabelled = ChatRequest(REQUEST.messages, REQUEST.settings, "judge:answer")
    assert cache_key(ENDPOINT, relabelled, 0) == base  # purpose is never sent
    # what is hashed: everything that reaches the model, never the prompt text alone
    assert set(key_material(ENDPOINT, REQUEST, 0)) == {
        "base_url",
        "model",
        "settings",
        "messages",
        "sample",
    }


def test_key_covers_every_message_not_just_the_prompt_text():
    system = ChatRequest(
        ({"role": "system", "content": "Be terse."}, *REQUEST.messages), REQUEST.settings
    )
    assert cache_key(ENDPOINT, system) != cache_key(ENDPOINT, REQUEST)
    as_system = ChatRequest(({"role": "system", "content": "Question: where?"},))
    as_user = ChatRequest(({"role": "user", "content": "Question: where?"},))
    assert cache_key(ENDPOINT, as_system) != cache_key(ENDPOINT, as_user)


def test_round_trip_hit_is_marked_and_failures_are_not_stored(tmp_path: Path):
    cache = ResponseCache.for_cache_dir(tmp_path)
    assert cache.path == tmp_path / "llm" / "responses.sqlite3"
    key = cache_key(ENDPOINT, REQUEST)
    assert cache.get(key) is None
    assert cache.put(completion(key)) is True
    hit = cache.get(key, "reader")
    assert hit is not None and hit.cached and hit.attempts == ()
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ("an answer", 12, 2)
    assert (hit.provider, hit.response_model, hit.purpose) == ("mock", "reader-a-2024", "reader")

    failed_key = cache_key(ENDPOINT, REQUEST, 5)
    assert cache.put(completion(failed_key, text=None, error="HTTP 500")) is False
    assert cache.get(failed_key) is None
    assert cache.count() == 1

    assert cache.put(completion(key, text="a second reply")) is True  # first reply kept
    assert cache.get(key).text == "an answer"  # type: ignore[union-attr]
    cache.close()
    reopened = ResponseCache.for_cache_dir(tmp_path)
    assert reopened.get(key).text == "an answer"  # type: ignore[union-attr]
    reopened.close()


def test_one_shared_handle_serves_many_threads(tmp_path: Path):
    cache = shared_response_cache(tmp_path)
    assert cache is not None and shared_response_cache(tmp_path) is cache
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(20):
                key = cache_key(ENDPOINT, REQUEST, i * 100 + j)
                cache.put(completion(key))
                assert cache.get(key) is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and cache.count() == 160
    close_shared_response_caches()


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from recallbench.llm.cache import ResponseCache
    from recallbench.llm.types import Completion
    cache = ResponseCache.for_cache_dir(Path(sys.argv[1]))
    who = sys.argv[2]
    for i in range(60):
        key = f"shared-{i}" if i % 2 else f"{who}-{i}"
        cache.put(Completion(text=who, model="m", cache_key=key, prompt_sha256="p"))
        assert cache.get(key) is not None
    print("done")
    """
)


def test_several_processes_write_one_cache(tmp_path: Path):
    env_path = str(REPO / "src")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), f"w{n}"],
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    cache = ResponseCache.for_cache_dir(tmp_path)
    assert cache.count() == 3 * 30 + 30  # 30 own keys each, 30 shared kept once
    assert cache.get("shared-1").text in {"w0", "w1", "w2"}  # type: ignore[union-attr]
    cache.close()
