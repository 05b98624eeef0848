"""The ``http`` system against the reference server: bm25's answers, retries, failures."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from http_support import http_section

from recallbench.chunking import with_chunks
from recallbench.contracts import Session, Turn
from recallbench.systems.base import SystemContext, declared_hooks
from recallbench.systems.bm25 import BM25System
from recallbench.systems.http.reference import FailureSchedule, ReferenceServer
from recallbench.systems.http.system import HttpCallError, HttpSystem


def _sessions() -> list[Session]:
    lines = [
        ("s1", "2024-01-02", ["I adopted a grey cat named Pixel.", "Pixel is a lovely name."]),
        ("s2", "2024-02-03", ["We moved to Lisbon in March.", "Lisbon has great tiles."]),
        ("s3", "2024-03-04", ["My sister plays the cello.", "The cello suits her."]),
    ]
    out = []
    for sid, date, texts in lines:
        turns = tuple(
            Turn(f"{sid}-t{i}", sid, "user" if i % 2 == 0 else "assistant", text, date)
            for i, text in enumerate(texts)
        )
        out.append(with_chunks(Session(sid, date, turns), "turn"))
    return out


QUERIES = ("What is the cat called?", "Where did we move?", "cello", "nothing matches zzz")


def _build(server: ReferenceServer, **overrides: Any) -> HttpSystem:
    return HttpSystem(SystemContext(config=http_section(server, **overrides)))


def test_answers_are_the_in_process_bm25_systems(reference: ReferenceServer) -> None:
    local, remote = BM25System(), _build(reference)
    assert declared_hooks(remote) == {"finish_ingest"}
    assert not remote.capabilities.in_process and remote.capabilities.returns_source_turns
    for system in (local, remote):
        system.reset()
        for s in _sessions():
            system.add(s)
        system.finish_ingest()
    for query in QUERIES:
        want = [(m.text, m.source_turns, m.score) for m in local.search(query, 3)]
        got = [(m.text, m.source_turns, m.score) for m in remote.search(query, 3)]
        assert got == want
    assert all(m.id.startswith("m-") for m in remote.search(QUERIES[0], 3))  # server-issued
    assert reference.counters["add"] == 6 and reference.counters["status"] >= 1


def test_a_reset_moves_to_a_fresh_namespace_and_forgets(reference: ReferenceServer) -> None:
    system = _build(reference)
    system.add(_sessions()[0])
    before = system.namespace
    system.reset()
    assert system.namespace != before
    assert system.search("Pixel", 5) == []
    assert reference.counters["reset"] == 1
    system.reset()  # nothing added since: no request
    assert reference.counters["reset"] == 1


def test_transient_failures_are_retried_and_every_try_is_kept() -> None:
    schedule = FailureSchedule(rate=0.3, seed=0, max_in_row=2, retry_after_s=0.01)
    with ReferenceServer(failures=schedule) as server:
        system = _build(server)
        tries: list[int] = []
        for s in _sessions():
            system.add(s)
            tries.append(len(system.last_attempts()))
        system.finish_ingest()
        answers = [system.search(q, 3) for q in QUERIES for _ in range(5)]
        search_tries = []
        for q in QUERIES * 5:
            system.search(q, 3)
            search_tries.append(system.last_attempts())
    failed = server.counters["failed"]
    assert failed > 0 and server.counters["failed_429"] > 0 and server.counters["failed_503"] > 0
    assert any(a for a in answers)
    retried = [a for a in search_tries if len(a) > 1]
    assert retried, "the seeded schedule fails some searches"
    for attempts in retried:
        assert [a.attempt for a in attempts] == list(range(1, len(attempts) + 1))
        assert all(a.status in (429, 503) and a.error for a in attempts[:-1])
        assert attempts[-1].status == 200 and attempts[-1].error is None
        assert attempts[-1].wait_s == 0.0
        for a in attempts[:-1]:
            if a.status == 429:
                assert a.wait_s >= 0.01  # Retry-After honoured
    assert sum(tries) >= 6  # one try at least per add request


def _always_failing(status: int) -> tuple[ThreadingHTTPServer, list[int]]:
    seen: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(status)
            data = json.dumps({"error": "down", "echo": self.headers.get("Authorization")})
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.mark.parametrize(("status", "tries"), [(503, 3), (404, 1)])
def test_a_call_that_still_fails_raises_naming_the_cause(
    status: int, tries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REF_TOKEN", "tok-very-secret-value")
    server, seen = _always_failing(status)
    try:
        config = http_section(
            ReferenceServer(port=server.server_address[1]),
            retry={"tries": 3, "backoff_base_s": 0.0},
            headers={"Authorization": "Bearer ${REF_TOKEN}"},
        )
        system = HttpSystem(SystemContext(config=config))
        with pytest.raises(HttpCallError) as info:
            system.add(_sessions()[0])
        message = str(info.value)
        assert message.startswith(f"add POST /v1/memories: HTTP {status}")
        assert message.endswith(f"(after {tries} tr{'y' if tries == 1 else 'ies'})")
        assert "tok-very-secret-value" not in message and "${REF_TOKEN}" in message
        assert len(seen) == tries and len(system.last_attempts()) == tries
        assert all("tok-very-secret-value" not in (a.error or "") for a in system.last_attempts())
        with pytest.raises(HttpCallError, match=r"^search POST /v1/search: HTTP"):
            system.search("cat", 3)
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_connection_is_retried_then_raised() -> None:
    server = ReferenceServer().start()
    port = server.port
    server.stop()
    system = _build(ReferenceServer(port=port), retry={"tries": 2, "backoff_base_s": 0.0})
    with pytest.raises(HttpCallError, match=r"ConnectionRefusedError.*\(after 2 tries\)"):
        system.search("cat", 3)
    assert [a.status for a in system.last_attempts()] == [None, None]


def test_session_granularity_and_the_idempotency_key(reference: ReferenceServer) -> None:
    system = _build(reference, add_unit="session")
    system.add(_sessions()[0])
    assert reference.counters["add"] == 1
    memories = system.search("Pixel", 5)
    assert [m.source_turns for m in memories] == [("s1-t0", "s1-t1")]
    again = _build(reference)
    again.add(_sessions()[1])
    again.add(_sessions()[1])  # the same units again: the Idempotency-Key stores them once
    assert len(again.search("Lisbon", 10)) == 2


def test_the_hook_polls_the_status_until_indexing_is_done(reference: ReferenceServer) -> None:
    system = _build(reference)
    for s in _sessions():
        system.add(s)
    system.finish_ingest()
    polls = reference.counters["status"]
    assert polls >= 2  # "indexing" first, then "done"
    assert [a.status for a in system.last_attempts()] == [200] * polls


def test_text_that_looks_like_a_reference_is_sent_as_written(
    reference: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RB_PRICE", "should-not-appear")
    monkeypatch.delenv("RB_UNSET", raising=False)
    text = "The ticket cost ${RB_PRICE} and ${RB_UNSET} in Zanzibar."
    turns = (Turn("z-t0", "z", "user", text, "2024-05-05"),)
    system = _build(reference)
    system.add(with_chunks(Session("z", "2024-05-05", turns), "turn"))
    assert [m.text for m in system.search("Zanzibar ${RB_PRICE}", 3)] == [f"user: {text}"]


def test_max_concurrency_holds_across_threads() -> None:
    with ReferenceServer(delay_ms=5) as server:
        system = _build(server, limits={"max_concurrency": 1})
        threads = [
            threading.Thread(target=lambda: [system.search("cat", 3) for _ in range(5)])
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert server.counters["search"] == 20 and server.counters["max_in_flight"] == 1


def test_a_dropped_connection_is_retried() -> None:
    schedule = FailureSchedule(rate=0.5, seed=0, max_in_row=2, kinds=("reset",))
    with ReferenceServer(failures=schedule) as server:
        system = _build(server, retry={"tries": 3, "backoff_base_s": 0.0})
        tries = []
        for _ in range(10):
            assert system.search("cat", 3) == []
            tries.append(system.last_attempts())
    assert server.counters["failed_reset"] > 0
    dropped = [a for attempts in tries for a in attempts if a.status is None]
    assert dropped and all("RemoteDisconnected" in (a.error or "") for a in dropped)
    assert all(attempts[-1].status == 200 for attempts in tries)
