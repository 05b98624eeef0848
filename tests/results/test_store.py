"""The results folder's files: JSONL split on newlines only, finite JSON, synced writes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

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
