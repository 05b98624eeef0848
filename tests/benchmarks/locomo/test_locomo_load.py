"""The LoCoMo loader: a small hand-written file in LoCoMo's format, and the real file if present."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import load_dataset
from recallbench.benchmarks.locomo import load as locomo
from recallbench.errors import ChecksumMismatchError, DatasetFormatError


def _conversation() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                {
                    "speaker": "Bo",
                    "dia_id": "D1:2",
                    "text": "Look at this.",
                    "img_url": ["https://example.invalid/cat.jpg"],
                    "blip_caption": "a photo of a grey cat",
                    "query": "grey cat",
                },
                {"speaker": "Ann", "dia_id": "D1:3", "text": "I ran 3 marathons."},
            ],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "I went to Paris and Rome."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Nice!"},
            ],
            # a date key without a session, as in one conversation of the release
            "session_3_date_time": "10:00 am on 2 June, 2023",
        },
        "qa": [
            {"question": "How many marathons?", "answer": 3, "evidence": ["D1:3"], "category": 1},
            {
                "question": "Where did Bo go?",
                "answer": "Paris, Rome",
                "evidence": ["D2:1; D1:2"],
                "category": 1,
            },
            {"question": "Pet?", "answer": "a cat", "evidence": [], "category": 4},
            {
                "question": "What did Ann realise?",
                "adversarial_answer": "nothing",
                "evidence": ["D01:01", "D9:9"],
                "category": 5,
            },
            {
                "question": "Likely to travel?",
                "answer": "Yes; she likes it",
                "evidence": ["D2:1", "D2:1"],
                "category": 3,
            },
        ],
    }


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return _write(tmp_path, [_conversation()])


def test_small_file_loads_faithfully(small: Path) -> None:
    ds = load_dataset(f"locomo@{small}", small.parent)
    assert ds.haystack == "conversation" and ds.benchmark == "locomo"
    (group,) = ds.groups
    assert group.group_id == "conv-x"
    assert [s.session_id for s in group.sessions] == ["conv-x:session_1", "conv-x:session_2"]
    assert group.sessions[0].date == "1:56 pm on 8 May, 2023"
    turns = {t.turn_id: t for s in group.sessions for t in s.turns}
    assert turns["D1:2"].text == "Look at this. and shared a photo of a grey cat."
    assert turns["D1:2"].image == "https://example.invalid/cat.jpg"
    assert turns["D1:1"].image is None and turns["D1:1"].speaker == "Ann"
    assert all(t.date == "9:00 am on 1 June, 2023" for t in group.sessions[1].turns)
    assert [q.id for q in ds.questions] == [f"conv-x:{i}" for i in range(5)]
    assert group.question_ids == tuple(q.id for q in ds.questions)
    q = {x.id: x for x in ds.questions}
    assert q["conv-x:0"].gold == "3" and q["conv-x:0"].extra["answer_is_int"]
    assert q["conv-x:0"].axis == "multi-hop" and q["conv-x:0"].extra["category"] == 1
    assert q["conv-x:1"].evidence_turns == ("D2:1", "D1:2")
    assert q["conv-x:1"].evidence_sessions == ("conv-x:session_2", "conv-x:session_1")
    assert q["conv-x:2"].evidence_turns is None
    assert "empty evidence list" in (q["conv-x:2"].evidence_unknown_reason or "")
    adversarial = q["conv-x:3"]
    assert adversarial.gold is None and adversarial.expect == "no_memory"
    assert adversarial.axis == "adversarial" and adversarial.evidence_turns == ("D1:1",)
    assert adversarial.extra["adversarial_answer"] == "nothing"
    assert q["conv-x:4"].evidence_turns == ("D2:1",)
    assert ds.default_k == (1, 5, 10)


def test_every_defect_is_reported_with_its_question_id(small: Path) -> None:
    ds = load_dataset(f"locomo@{small}", small.parent)
    report = list(ds.load_report)
    assert report[0].startswith("conv-x: 1 session_N_date_time key(s) without a session")
    assert any(r.startswith("conv-x:1: evidence malformed entry 'D2:1; D1:2'") for r in report)
    assert any(r.startswith("conv-x:2: evidence empty evidence list") for r in report)
    assert any(r.startswith("conv-x:3: evidence zero-padded id 'D01:01'") for r in report)
    assert any(r.startswith("conv-x:3: evidence id 'D9:9' names no turn") for r in report)
    assert any(r.startswith("conv-x:4: evidence duplicate id 'D2:1'") for r in report)
    assert len(report) == 6


def test_local_file_is_marked_not_pinned(small: Path) -> None:
    ds = load_dataset(f"locomo@{small}", small.parent)
    (record,) = ds.files
    assert record.pinned is False and record.note == "local file, not the pinned release"
    assert record.sha256 == hashlib.sha256(small.read_bytes()).hexdigest()
    assert ds.version == "local" and not ds.pinned
    assert any("not the pinned release" in n for n in ds.card_notes)


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="expected a JSON list"):
        locomo.parse_locomo({"not": "a list"})
    with pytest.raises(DatasetFormatError, match="unknown category 9"):
        bad = _conversation()
        bad["qa"][0]["category"] = 9
        locomo.parse_locomo([bad])
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="not valid JSON"):
        load_dataset(f"locomo@{broken}", tmp_path)
    with pytest.raises(DatasetFormatError, match="file not found"):
        load_dataset(f"locomo@{tmp_path / 'absent.json'}", tmp_path)


def test_spec_pins_the_release() -> None:
    (f,) = locomo.SPEC.variant_files("", {})
    assert f.sha256 == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    assert f.url is not None and locomo.COMMIT in f.url
    assert f.url.endswith("/data/locomo10.json") and len(locomo.COMMIT) == 40


def test_tampered_data_file_is_refused(small: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    shutil.copy(small, data / "locomo" / "locomo10.json")
    actual = hashlib.sha256(small.read_bytes()).hexdigest()
    with pytest.raises(ChecksumMismatchError) as info:
        load_dataset("locomo", data)
    message = str(info.value)
    assert locomo.FILE.sha256 is not None and locomo.FILE.sha256 in message
    assert actual in message and "locomo10.json" in message


# ---------------------------------------------------------------- the real file


EXPECTED_DEFECTS = {
    "conv-26:30",
    "conv-26:37",
    "conv-26:46",
    "conv-42:58",
    "conv-42:88",
    "conv-43:18",
    "conv-47:38",
    "conv-49:31",
    "conv-49:38",
    "conv-49:46",
    "conv-50:5",
    "conv-50:39",
    "conv-50:42",
    "conv-50:69",
}


def test_real_file(shared_data: Path) -> None:
    if not (shared_data / "locomo" / "locomo10.json").is_file():
        pytest.skip("locomo10.json not in the shared data")
    ds = load_dataset("locomo", shared_data)
    assert ds.pinned and ds.files[0].sha256 == locomo.FILE.sha256
    assert len(ds.groups) == 10 and len(ds.questions) == 1986
    assert sum(len(g.sessions) for g in ds.groups) == 272
    assert sum(len(s.turns) for g in ds.groups for s in g.sessions) == 5882
    assert [q.id for q in ds.questions if q.extra.get("answer_is_int")] == [
        "conv-26:1",
        "conv-26:26",
        "conv-26:40",
        "conv-26:49",
        "conv-26:72",
        "conv-26:75",
    ]
    evidence_lines = [r for r in ds.load_report if ": evidence " in r]
    assert {r.split(": ", 1)[0] for r in evidence_lines} == EXPECTED_DEFECTS
    assert any(r.startswith("conv-26: 16 session_N_date_time") for r in ds.load_report)
    # the three ids naming no turn (the bare 'D' token included)
    assert sum("names no turn" in r or "unusable tokens" in r for r in ds.load_report) == 3
    unknown = sorted(q.id for q in ds.questions if q.evidence_turns is None)
    assert unknown == ["conv-26:30", "conv-26:46", "conv-50:39", "conv-50:42"]
    adversarial = [q for q in ds.questions if q.extra["category"] == 5]
    assert len(adversarial) == 446 and all(q.expect == "no_memory" for q in adversarial)
    assert sum(q.gold is not None for q in adversarial) == 2
    raw = json.loads((shared_data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    texts = {
        (c["sample_id"], t["dia_id"]): f"{t['text']} and shared {t['blip_caption']}."
        for c in raw
        for key, turns in c["conversation"].items()
        if isinstance(turns, list)
        for t in turns
        if t.get("blip_caption")
    }
    assert len(texts) == 1226
    handed = {
        (g.group_id, t.turn_id): t.text for g in ds.groups for s in g.sessions for t in s.turns
    }
    assert all(handed[key] == text for key, text in texts.items())
