"""The BEAM loader: small conversations in the repository's layout, and the shared sample."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import DatasetRefError, load_dataset
from recallbench.benchmarks.beam import load as beam
from recallbench.benchmarks.beam.metrics import ABILITIES
from recallbench.errors import DatasetFormatError


def _chat() -> list[dict[str, Any]]:
    def msg(i: int, role: str, text: str, anchor: str | None = None) -> dict[str, Any]:
        m: dict[str, Any] = {"role": role, "id": i, "content": text}
        if anchor:
            m["time_anchor"] = anchor
        return m

    return [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    msg(0, "user", "My deadline is March 15. ->-> 1,1", "March-01-2024"),
                    msg(1, "assistant", "Noted."),
                ],
                [msg(2, "user", "I use Flask."), msg(3, "assistant", "Good choice.")],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [[msg(4, "user", "I switched to FastAPI."), msg(5, "assistant", "OK.")]],
        },
    ]


def _questions() -> dict[str, list[dict[str, Any]]]:
    return {
        "abstention": [
            {"question": "What is my cat called?", "ideal_response": "Not said.", "rubric": ["x"]}
        ],
        "knowledge_update": [
            {
                "question": "Which framework do I use?",
                "answer": "FastAPI",
                "source_chat_ids": {"original_info": [2], "updated_info": [4]},
                "rubric": ["LLM response should state: FastAPI"],
            }
        ],
        "event_ordering": [
            {
                "question": "Order?",
                "answer": "Flask then FastAPI",
                "source_chat_ids": [2, 4, 99],
                "rubric": ["Flask", "FastAPI"],
            }
        ],
        "information_extraction": [
            {"question": "Deadline?", "answer": "March 15", "rubric": ["March 15"]}
        ],
    }


def _write_conversation(folder: Path, chat_name: str = "chat.json") -> None:
    (folder / "probing_questions").mkdir(parents=True, exist_ok=True)
    (folder / chat_name).write_text(json.dumps(_chat()), encoding="utf-8")
    (folder / beam.QUESTIONS).write_text(json.dumps(_questions()), encoding="utf-8")


def test_conversation_folder_loads_faithfully(tmp_path: Path) -> None:
    _write_conversation(tmp_path / "7")
    ds = load_dataset(f"beam@{tmp_path / '7'}", tmp_path)
    assert ds.haystack == "conversation" and ds.benchmark == "beam"
    (group,) = ds.groups
    assert group.group_id == "7"
    assert [s.session_id for s in group.sessions] == ["7:batch_1", "7:batch_2"]
    # the batch time_anchor is null: the first message's anchor dates the batch; batch 2 has none
    assert [s.date for s in group.sessions] == ["March-01-2024", None]
    turns = [t for s in group.sessions for t in s.turns]
    assert [t.turn_id for t in turns] == ["0", "1", "2", "3", "4", "5"]
    assert turns[0].text.endswith("->-> 1,1") and turns[0].speaker == "user"
    q = {x.id: x for x in ds.questions}
    assert set(q) == {
        "7:abstention:0",
        "7:knowledge_update:0",
        "7:event_ordering:0",
        "7:information_extraction:0",
    }
    assert q["7:abstention:0"].evidence_turns == () and q["7:abstention:0"].expect == "no_memory"
    assert q["7:abstention:0"].gold == "Not said."
    assert q["7:knowledge_update:0"].evidence_turns == ("2", "4")
    assert q["7:knowledge_update:0"].evidence_sessions == ("7:batch_1", "7:batch_2")
    assert q["7:event_ordering:0"].evidence_turns == ("2", "4")
    assert q["7:event_ordering:0"].extra["rubric"] == ("Flask", "FastAPI")
    assert q["7:information_extraction:0"].evidence_turns is None
    assert ds.load_report == (
        "7:event_ordering:0: source_chat_id 99 names no message: dropped",
        "7:information_extraction:0: no source_chat_ids",
    )
    assert not ds.pinned and ds.version == "local"


def test_split_folder_and_truncated_chat(tmp_path: Path) -> None:
    split = tmp_path / "100K"
    _write_conversation(split / "2")
    _write_conversation(split / "10", chat_name=beam.TRUNCATED_CHAT)
    ds = load_dataset(f"beam@{split}", tmp_path)
    assert [g.group_id for g in ds.groups] == ["2", "10"]  # numeric order
    assert "100K/10/chat_trunecated.json" in {f.name for f in ds.files}
    assert any("chat_trunecated.json" in r for r in ds.load_report)


def test_not_a_beam_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="not a BEAM conversation folder"):
        load_dataset(f"beam@{tmp_path}", tmp_path)
    (tmp_path / "1" / "probing_questions").mkdir(parents=True)
    (tmp_path / "1" / beam.QUESTIONS).write_text("{}", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="no chat.json"):
        load_dataset(f"beam@{tmp_path / '1'}", tmp_path)


@pytest.mark.parametrize("variant", ["10m", "1m-full"])
def test_unsupported_sets_say_so(variant: str, tmp_path: Path) -> None:
    with pytest.raises(DatasetRefError, match="not supported yet") as info:
        load_dataset(f"beam:{variant}", tmp_path)
    assert "Hugging Face" in str(info.value)


def test_variant_files_follow_the_repository_layout() -> None:
    files = beam.SPEC.variant_files("100k", {})
    assert len(files) == 40
    first = {f.name: f for f in files[:2]}
    assert set(first) == {"chats/100K/1/chat.json", beam.questions_file("100K", 1)}
    assert all(f.sha256 is not None for f in first.values())
    assert all(f.url and beam.COMMIT in f.url and f.url.endswith(f.name) for f in files)
    assert "chats/100K/11/chat_trunecated.json" in {f.name for f in files}
    assert len(beam.SPEC.variant_files("500k", {})) == 70
    assert beam.SPEC.variants == ("100k", "500k", "1m")
    assert len(beam.COMMIT) == 40 and beam.COMMIT.startswith("b2a3ee8")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "repo"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_partial_1m_split_skips_what_the_repository_lacks(
    repo: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, root = repo
    for n in (1, 3):
        _write_conversation(root / "chats" / "1M" / str(n))
    monkeypatch.setattr(beam, "BASE_URL", base)
    monkeypatch.setattr(beam, "SPLITS", {**beam.SPLITS, "1m": ("1M", 3)})
    monkeypatch.setattr(beam, "TRUNCATED", frozenset())
    data = tmp_path / "data"
    ds = load_dataset("beam:1m", data)
    assert [g.group_id for g in ds.groups] == ["1", "3"]
    assert any(r.startswith("1M: conversation(s) 2 not in the repository") for r in ds.load_report)
    assert all(f.note == "pinned on first use" for f in ds.files) and len(ds.files) == 4
    assert (data / "beam" / "recallbench.lock.json").exists()
    assert any("pinned on first use" in n for n in ds.card_notes)


def test_full_splits_are_strict(
    repo: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallbench.errors import DataFileError

    base, root = repo
    _write_conversation(root / "chats" / "500K" / "1")
    monkeypatch.setattr(beam, "BASE_URL", base)
    monkeypatch.setattr(beam, "SPLITS", {**beam.SPLITS, "500k": ("500K", 2)})
    with pytest.raises(DataFileError, match="404"):
        load_dataset("beam:500k", tmp_path / "data")


# ---------------------------------------------------------------- the shared sample


def test_shared_sample(shared_data: Path) -> None:
    folder = shared_data / "beam" / "chats" / "100K" / "1"
    if not (folder / "chat.json").is_file():
        pytest.skip("BEAM sample not in the shared data")
    ds = load_dataset(f"beam@{folder}", shared_data)
    assert {f.name: f.sha256 for f in ds.files} == {
        "1/chat.json": beam.KNOWN_SHA256["chats/100K/1/chat.json"],
        "1/probing_questions/probing_questions.json": beam.KNOWN_SHA256[
            "chats/100K/1/probing_questions/probing_questions.json"
        ],
    }
    (group,) = ds.groups
    assert len(group.sessions) == 3
    assert sum(len(s.turns) for s in group.sessions) == 188
    assert [s.date for s in group.sessions] == ["March-15-2024", "April-05-2024", "April-25-2024"]
    assert len(ds.questions) == 20
    assert {q.axis for q in ds.questions} == set(ABILITIES)
    assert all(q.evidence_turns == () for q in ds.questions if q.axis == "abstention")
    assert all(q.evidence_turns for q in ds.questions if q.axis != "abstention")
    assert ds.load_report == ()
    q = next(x for x in ds.questions if x.id == "1:contradiction_resolution:0")
    assert q.evidence_turns == ("58", "24")


def test_shared_sample_as_the_pinned_split_start(shared_data: Path, tmp_path: Path) -> None:
    """The first 100K conversation verifies against its pinned hashes under the data layout."""
    folder = shared_data / "beam" / "chats" / "100K" / "1"
    if not (folder / "chat.json").is_file():
        pytest.skip("BEAM sample not in the shared data")
    from recallbench.datasets.fetch import ensure_file

    for spec in beam.SPEC.variant_files("100k", {})[:2]:
        path, record = ensure_file("beam", spec, shared_data, allow_download=False)
        assert record.pinned and path.is_file()
