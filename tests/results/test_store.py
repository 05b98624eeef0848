"""The results folder's files: JSONL split on newlines only, finite JSON, synced writes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from recallbench.contracts import Observation
from recallbench.datasets.jsonl import read_jsonl
from recallbench.results import store

SEPARATORS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c\r"


def test_store_logs_keep_unicode_line_separators_inside_strings(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = store.AppendLog(path)
    log.append({"text": f"a{SEPARATORS}b"})
    log.append({"text": "second"})
    log.close()
    assert [r["text"] for r in store.read_jsonl_tolerant(path)] == [f"a{SEPARATORS}b", "second"]
    store.write_jsonl(tmp_path / "derived.jsonl", [{"text": f"x{SEPARATORS}y"}])
    rows = list(store.read_jsonl_tolerant(tmp_path / "derived.jsonl"))
    assert rows == [{"text": f"x{SEPARATORS}y"}]


def test_dataset_jsonl_splits_on_newline_only(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_text(
        json.dumps({"text": f"one{SEPARATORS}two"}, ensure_ascii=False) + "\n" + '{"n": 2}\n',
        encoding="utf-8",
    )
    assert list(read_jsonl(path)) == [(1, {"text": f"one{SEPARATORS}two"}), (2, {"n": 2})]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_every_record_writer_refuses_non_finite_floats(tmp_path: Path, bad: float) -> None:
    record = {"metric": "x", "value": bad}
    with pytest.raises(store.NonFiniteValueError, match=r"derived\.jsonl.*value"):
        store.write_jsonl(tmp_path / "derived.jsonl", [record])
    with pytest.raises(store.NonFiniteValueError, match=r"run\.json.*value"):
        store.write_json(tmp_path / "run.json", record)
    log = store.AppendLog(tmp_path / "log.jsonl")
    with pytest.raises(store.NonFiniteValueError, match=r"log\.jsonl.*value"):
        log.append({"nested": [{"value": bad}]})
    log.close()
    # nothing half-written: no derived file, no tmp file, an empty log
    assert not (tmp_path / "derived.jsonl").exists()
    assert not (tmp_path / "run.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl"]
    assert (tmp_path / "log.jsonl").read_bytes() == b""


def test_atomic_writes_sync_the_file_and_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if Path("/proc/self/fd").exists() else "?")
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    store.write_json(tmp_path / "run.json", {"a": 1})
    store.write_jsonl(tmp_path / "m.jsonl", [{"a": 1}])
    store.write_text(tmp_path / "s.md", "x\n")
    assert len(synced) == 6  # each file's bytes, then the folder that holds the new name
    assert synced.count(str(tmp_path)) == 3
    log = store.AppendLog(tmp_path / "obs.jsonl")
    log.append({"a": 1})
    synced.clear()
    log.sync()
    assert synced == [str(tmp_path / "obs.jsonl")]
    log.close()


def _obs(qid: str, memories: tuple, system: str = "naive") -> Observation:
    return Observation(
        run_id="r", dataset="d", dataset_version="d@1", group="all", question_id=qid,
        system=system, k=10, attempt=1, observed_at="2026-01-01T00:00:00+00:00",
        latency_ms=1.0, memories=memories, chars_returned=sum(len(m.text) for m in memories),
        outcome="usable" if memories else "unusable",
    )  # fmt: skip


def test_a_repeated_memory_list_is_stored_once_and_read_back_whole(tmp_path: Path) -> None:
    from recallbench.contracts import Memory

    same = tuple(Memory(f"m{i}", f"text {i}", (f"t{i}",), None) for i in range(50))
    other = (Memory("x", "text 1", ("t1",), 0.5),)
    written = [_obs(f"q{i}", same) for i in range(20)] + [_obs("q20", other), _obs("q21", ())]
    log = store.ObservationLog(tmp_path)
    for o in written[:10]:
        log.append(o)
    log.close()
    log = store.ObservationLog(tmp_path)  # a resume: what is stored is not stored again
    for o in written[10:]:
        log.append(o)
    log.close()
    lists = list(store.read_jsonl_tolerant(tmp_path / store.LISTS))
    assert len(lists) == 2  # the naive-style list once, the other once; an empty one inline
    texts = list(store.read_jsonl_tolerant(tmp_path / store.TEXTS))
    assert len(texts) == 50  # "text 1" is shared by both lists and stored once
    lines = list(store.read_jsonl_tolerant(tmp_path / store.OBSERVATIONS))
    assert all("memories" not in o and len(o["memories_sha256"]) == 16 for o in lines[:21])
    assert lines[21]["memories"] == []
    assert store.read_observations(tmp_path) == written


def test_a_format_3_folder_with_inline_lists_still_reads(tmp_path: Path) -> None:
    from recallbench.contracts import Memory, to_json_dict

    o = _obs("q1", (Memory("m1", "hello", ("t1",), 1.5),))
    d = to_json_dict(o)
    d["memories"][0]["text_sha256"] = "abcd"
    del d["memories"][0]["text"]
    (tmp_path / store.OBSERVATIONS).write_text(json.dumps(d) + "\n", encoding="utf-8")
    (tmp_path / store.TEXTS).write_text('{"sha256": "abcd", "text": "hello"}\n', "utf-8")
    assert store.read_observations(tmp_path) == [o]


def test_a_missing_memory_list_names_the_damaged_file(tmp_path: Path) -> None:
    from recallbench.contracts import Memory
    from recallbench.errors import RunFolderError

    log = store.ObservationLog(tmp_path)
    log.append(_obs("q1", (Memory("m1", "hello", ("t1",)),)))
    log.close()
    (tmp_path / store.LISTS).write_text("", encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"memory list .* lists\.jsonl"):
        store.read_observations(tmp_path)
