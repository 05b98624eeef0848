"""The LongMemEval loader, on fixtures written in the benchmark's published format."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import DatasetRefError, load_dataset
from recallbench.benchmarks.longmemeval import load as longmemeval
from recallbench.benchmarks.longmemeval.metrics import QUESTION_TYPES
from recallbench.errors import DatasetFormatError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "longmemeval"
FILE = FIXTURE / "longmemeval_fixture.json"


def _raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FILE.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def ds(tmp_path: Path) -> Any:
    return load_dataset(f"longmemeval@{FILE}", tmp_path)


def test_one_group_per_question(ds: Any) -> None:
    assert ds.haystack == "question" and ds.benchmark == "longmemeval"
    assert [g.group_id for g in ds.groups] == [q.id for q in ds.questions]
    assert all(g.question_ids == (g.group_id,) for g in ds.groups)
    assert all(q.group == q.id for q in ds.questions)
    assert ds.default_k == (1, 3, 5, 10, 30, 50)


def test_turn_ids_count_every_turn_from_one(ds: Any) -> None:
    group = next(g for g in ds.groups if g.group_id == "fx_ms_2")
    session = next(s for s in group.sessions if s.session_id == "answer_fx_ms_2a")
    assert [t.turn_id for t in session.turns] == [f"answer_fx_ms_2a_{n}" for n in (1, 2, 3, 4)]
    assert [t.speaker for t in session.turns] == ["user", "assistant", "user", "assistant"]
    assert all(t.date == "2023/05/02 (Tue) 09:00" for t in session.turns)
    assert session.date == "2023/05/02 (Tue) 09:00"


def test_gold_is_user_turns_marked_has_answer_in_answer_sessions(ds: Any) -> None:
    q = {x.id: x for x in ds.questions}
    # an assistant turn and a turn of a non-answer session are marked too: neither is gold
    assert q["fx_ms_2"].evidence_turns == ("answer_fx_ms_2a_1", "answer_fx_ms_2b_1")
    assert q["fx_ms_2"].evidence_sessions == ("answer_fx_ms_2a", "answer_fx_ms_2b")
    assert q["fx_ms_2"].extra["has_answer_turns"] == q["fx_ms_2"].evidence_turns
    assert "sharegpt_x1_1" in q["fx_ms_2"].extra["user_turns"]
    assert "sharegpt_x1_2" not in q["fx_ms_2"].extra["user_turns"]
    # evidence said by the assistant only: no user evidence turn, null with the reason
    assert q["fx_ssa_3"].evidence_turns is None
    assert "has_answer" in (q["fx_ssa_3"].evidence_unknown_reason or "")


def test_abstention_has_no_evidence_by_design(ds: Any) -> None:
    q = next(x for x in ds.questions if x.id == "fx_ku_4_abs")
    assert q.evidence_turns == () and q.expect == "no_memory"
    assert q.extra["is_abstention"] and q.axis == "knowledge-update"
    assert q.evidence_sessions == ()


def test_types_answers_and_dates(ds: Any) -> None:
    q = {x.id: x for x in ds.questions}
    assert {x.axis for x in ds.questions} <= set(QUESTION_TYPES)
    assert q["fx_tr_5"].gold == "3"  # an integer answer is kept as its string
    assert q["fx_ssu_1"].extra["question_date"] == "2023/06/01 (Thu) 10:00"
    assert q["fx_ssu_1"].text == "What breed is my dog?"
    # sessions listed out of date order (as in the oracle file) are handed chronologically
    group = next(g for g in ds.groups if g.group_id == "fx_tr_5")
    assert [s.session_id for s in group.sessions] == ["answer_fx_tr_5a", "answer_fx_tr_5b"]


def test_systems_get_the_published_turns_only(ds: Any) -> None:
    raw = {inst["question_id"]: inst for inst in _raw()}
    for g in ds.groups:
        inst = raw[g.group_id]
        published = dict(zip(inst["haystack_session_ids"], inst["haystack_sessions"], strict=True))
        for s in g.sessions:
            assert [(t.speaker, t.text) for t in s.turns] == [
                (m["role"], m["content"]) for m in published[s.session_id]
            ]


def test_local_file_is_marked_not_pinned(ds: Any) -> None:
    (record,) = ds.files
    assert record.pinned is False and "not the pinned release" in (record.note or "")
    assert ds.version == "local"


def test_duplicate_session_ids_are_renamed_and_reported(tmp_path: Path) -> None:
    data = _raw()[:1]
    inst = data[0]
    inst["haystack_session_ids"].append("sharegpt_p1_0")
    inst["haystack_dates"].append("2023/05/25 (Thu) 08:00")
    inst["haystack_sessions"].append([{"role": "user", "content": "again"}])
    groups, _, report = longmemeval.parse_longmemeval(data)
    ids = [s.session_id for s in groups[0].sessions]
    assert ids[-1] == "sharegpt_p1_0#2"
    assert groups[0].sessions[-1].turns[0].turn_id == "sharegpt_p1_0#2_1"
    assert report == [
        "fx_ssu_1: haystack session id 'sharegpt_p1_0' repeats: the repeat is 'sharegpt_p1_0#2'"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d[0].pop("question"), "missing field 'question'"),
        (lambda d: d[0]["haystack_dates"].pop(), "differ in length"),
        (lambda d: d[0]["haystack_sessions"][0].append({"role": "user"}), "lacks role or content"),
        (lambda d: d.append(copy.deepcopy(d[0])), "duplicate question_id"),
        (lambda d: d.append(7), "is not a JSON object"),
    ],
)
def test_malformed_instances_are_clear_errors(change: Any, message: str) -> None:
    data = _raw()
    change(data)
    with pytest.raises(DatasetFormatError, match=message):
        longmemeval.parse_longmemeval(data)


def test_unknown_type_and_missing_answer_session_are_reported() -> None:
    data = _raw()[:1]
    data[0]["question_type"] = "open-domain"
    data[0]["answer_session_ids"] = ["answer_fx_ssu_1", "answer_gone"]
    _, _, report = longmemeval.parse_longmemeval(data)
    assert "fx_ssu_1: answer session(s) ['answer_gone'] not in the haystack" in report
    assert "fx_ssu_1: unknown question_type 'open-domain'" in report


def test_not_a_list_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="JSON list"):
        longmemeval.parse_longmemeval({})
    bad = tmp_path / "x.json"
    bad.write_text("[", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="not valid JSON"):
        load_dataset(f"longmemeval@{bad}", tmp_path)


def test_spec_variants_and_pins() -> None:
    spec = longmemeval.SPEC
    assert spec.variants == ("oracle", "s", "m") and spec.default_variant == "s"
    (s,) = spec.variant_files("s", {})
    assert s.name == "longmemeval_s_cleaned.json" and s.size == 277_383_467
    assert s.sha256 == "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"
    for variant in ("oracle", "s", "m"):
        (f,) = spec.variant_files(variant, {})
        assert f.url is not None and longmemeval.REVISION in f.url
        assert f.url.startswith("https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/")
    assert spec.variant_files("oracle", {})[0].sha256 is None  # pinned on first use
    assert spec.variant_files("m", {})[0].sha256 is None


def test_unknown_variant_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetRefError, match="choose one of oracle, s, m"):
        load_dataset("longmemeval:xl", tmp_path)


def test_pinned_variant_reads_the_data_folder(tmp_path: Path) -> None:
    """A file placed where the pinned-on-first-use oracle file goes is read and locked."""
    folder = tmp_path / "longmemeval"
    folder.mkdir()
    (folder / "longmemeval_oracle.json").write_bytes(FILE.read_bytes())
    ds = load_dataset("longmemeval:oracle", tmp_path)
    assert ds.key == "longmemeval:oracle" and len(ds.questions) == 5
    assert ds.files[0].note == "pinned on first use"
    assert any("pinned on first use" in n for n in ds.card_notes)
    assert (folder / "recallbench.lock.json").exists()
