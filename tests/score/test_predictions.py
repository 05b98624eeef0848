"""Predictions files are read strictly: declared shapes, misses that stay in the denominator,
turn ids that must name turns, missing questions marked, no timing rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.benchmarks.glasshouse.export import export_record
from recallbench.contracts import Memory, MetricRow, Observation
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import DatasetFormatError, OptionError
from recallbench.score.metrics import TIMING
from recallbench.score.predictions import (
    ANSWER,
    NOT_SCORED,
    RECALLBENCH_FORMAT,
    RETRIEVED,
    PredictionFormat,
    PredictionsScore,
    per_question_lines,
    score_predictions,
)

LME_FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
)


def _conversation() -> dict[str, Any]:
    turns = [
        ("Ann", "D1:1", "I adopted a grey cat named Miso."),
        ("Bo", "D1:2", "I ran 3 marathons this year."),
        ("Ann", "D1:3", "My sister lives in Lisbon."),
        ("Bo", "D1:4", "I like painting and pottery."),
    ]
    qa = [
        ("What is the cat's name?", "Miso", "D1:1"),
        ("Where does Ann's sister live?", "Lisbon", "D1:3"),
        ("How many marathons did Bo run?", "3", "D1:2"),
        ("What does Bo like?", "painting and pottery", "D1:4"),
    ]
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns],
        },
        "qa": [{"question": q, "answer": a, "evidence": [e], "category": 4} for q, a, e in qa],
    }


@pytest.fixture
def locomo(tmp_path: Path) -> LoadedDataset:
    path = tmp_path / "mini_locomo.json"
    path.write_text(json.dumps([_conversation()]), encoding="utf-8")
    return load_dataset(f"locomo@{path}", tmp_path, predictions=True)


@pytest.fixture
def lme(tmp_path: Path) -> LoadedDataset:
    return load_dataset(f"longmemeval@{LME_FIXTURE}", tmp_path, predictions=True)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _score(
    path: Path, ds: LoadedDataset, ks: tuple[int, ...] = (1, 5), **kw: Any
) -> PredictionsScore:
    bench = benchmark_of(ds)
    return score_predictions(path, ds, ks, bench.rules, formats=bench.accepted_formats, **kw)


def _row(result: PredictionsScore, metric: str, k: int | None = None) -> MetricRow:
    return next(r for r in result.metrics if r.metric == metric and r.k == k and r.slice == "all")


def _lines(result: PredictionsScore, ds: LoadedDataset) -> dict[str, dict[str, Any]]:
    return {x["id"]: x for x in per_question_lines(result, ds, benchmark_of(ds).rules)}


# ------------------------------------------------------------ absent answers / retrieved turns


def test_a_line_without_answer_is_a_miss_when_the_file_carries_answers(
    locomo: LoadedDataset, tmp_path: Path
) -> None:
    """Every id present, the answer only on the one line that was right: F1 over all four."""
    rows = [{"id": "conv-x:0", "answer": "Miso"}] + [{"id": f"conv-x:{i}"} for i in (1, 2, 3)]
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    f1 = _row(result, "f1")
    assert (f1.value, f1.denominator, f1.n_excluded) == (0.25, 4, 0)  # not 1.000 (n=1)
    lines = _lines(result, locomo)
    assert lines["conv-x:0"]["f1"] == 1.0 and "scored_as_miss" not in lines["conv-x:0"]
    assert lines["conv-x:1"]["f1"] == 0.0
    reason = lines["conv-x:1"]["scored_as_miss"][ANSWER]
    assert reason.startswith("absent_field: line 2 has no 'answer'")
    assert "1 line(s) of the file do" in reason
    verdict = next(v for v in result.verdicts if v.question_id == "conv-x:1")
    assert verdict.outcome_reason and verdict.outcome_reason.startswith("absent_field:")
    assert any("3 line(s) have no 'answer'" in n for n in result.notes())


def test_no_answer_on_any_line_is_null_not_zero(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [{"id": "conv-x:0", "retrieved_turns": ["D1:1"]}, {"id": "conv-x:1"}]
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    f1 = _row(result, "f1")
    assert f1.value is None and f1.denominator == 0 and f1.n_excluded == 4  # missing ones too
    assert f1.exclusion_rule == "no_answer (4)"
    assert not any(ANSWER in x.get("scored_as_miss", {}) for x in _lines(result, locomo).values())


def test_a_line_without_retrieved_turns_is_a_miss_when_the_file_carries_them(
    locomo: LoadedDataset, tmp_path: Path
) -> None:
    rows = [
        {"id": "conv-x:0", "answer": "Miso", "retrieved_turns": ["D1:1"]},
        {"id": "conv-x:1", "answer": "Lisbon"},
        {"id": "conv-x:2", "answer": "3"},
        {"id": "conv-x:3", "answer": "painting and pottery"},
    ]
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    hit = _row(result, "evidence_hit", 1)
    assert (hit.value, hit.denominator, hit.n_excluded) == (0.25, 4, 0)
    recall = _row(result, "evidence_recall")
    assert (recall.value, recall.denominator) == (0.25, 4)
    line = _lines(result, locomo)["conv-x:2"]
    assert line["evidence_recall"] == 0.0
    assert line["scored_as_miss"][RETRIEVED].startswith("absent_field: line 3 has no")


def test_no_retrieved_turns_on_any_line_is_null(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [{"id": f"conv-x:{i}", "answer": "Miso"} for i in range(3)]  # conv-x:3: no line
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    hit = _row(result, "evidence_hit", 1)
    assert hit.value is None and hit.n_excluded == 4
    assert hit.exclusion_rule == "no_source_turns (4)"
    assert _row(result, "f1").denominator == 4  # the missing question's answer is a miss


# ------------------------------------------------------------------------------ file shapes


@pytest.mark.parametrize("field", ["prediction", "retrieved"])
def test_unrecognised_fields_are_refused(locomo: LoadedDataset, tmp_path: Path, field: str) -> None:
    rows = [{"id": "conv-x:0", "answer": "Miso"}, {"id": "conv-x:1", field: "Lisbon"}]
    with pytest.raises(DatasetFormatError) as info:
        _score(_write(tmp_path / "p.jsonl", rows), locomo)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'p.jsonl'}:2: ")
    assert f"field {field!r}" in message
    for name in ("id", "answer", "retrieved_turns", "memories_returned", "latency_ms"):
        assert name in message
    assert info.value.line == 2


def test_an_explicit_format_refuses_the_fields_of_another(
    lme: LoadedDataset, tmp_path: Path
) -> None:
    rows = [{"id": "fx_ssu_1", "answer": "x"}]
    path = _write(tmp_path / "p.jsonl", rows)
    with pytest.raises(DatasetFormatError, match=r":1: .*'id'.*longmemeval.*question_id"):
        _score(path, lme, format_name="longmemeval")
    with pytest.raises(OptionError, match="choose one of longmemeval, recallbench"):
        _score(path, lme, format_name="glasshouse")


def test_longmemeval_hypotheses_are_detected(lme: LoadedDataset, tmp_path: Path) -> None:
    """``question_id`` / ``hypothesis``: the fields LongMemEval's evaluate_qa.py reads."""
    rows = [
        {"question_id": "fx_ssu_1", "hypothesis": "Your dog is called Rex."},
        {"question_id": "fx_ku_4_abs", "hypothesis": "You never told me."},
    ]
    result = _score(_write(tmp_path / "h.jsonl", rows), lme)
    assert result.format.name == "longmemeval"
    lines = _lines(result, lme)
    assert lines["fx_ssu_1"]["null_reasons"]["label"].startswith("no_judge")  # answered
    assert lines["fx_ms_2"]["missing"] is True  # no line: the empty answer
    assert lines["fx_ms_2"]["null_reasons"]["label"].startswith("no_judge")
    with pytest.raises(DatasetFormatError, match=r"h2.jsonl:1: .*'autoeval_label'"):
        bad = [{"question_id": "fx_ssu_1", "hypothesis": "x", "autoeval_label": {"label": 1}}]
        _score(_write(tmp_path / "h2.jsonl", bad), lme)


def test_formats_are_declared_per_benchmark() -> None:
    names = {b: [f.name for f in get_benchmark(b).accepted_formats] for b in
             ("locomo", "longmemeval", "glasshouse-v0.1", "beam", "sample")}  # fmt: skip
    assert names == {
        "locomo": ["recallbench"],
        "longmemeval": ["longmemeval", "recallbench"],
        "glasshouse-v0.1": ["glasshouse", "recallbench"],
        "beam": ["recallbench"],
        "sample": ["recallbench"],
    }
    assert RECALLBENCH_FORMAT.id_field == "id"
    assert set(RECALLBENCH_FORMAT.fields) == {
        "answer", "retrieved_turns", "memories_returned", "answer_generated",
        "chars_returned", "latency_ms", "network_ms",
    }  # fmt: skip
    (gh,) = get_benchmark("glasshouse-v0.1").prediction_formats
    assert gh.fields["prompt_tokens"] == NOT_SCORED
    # recallbench's own Glasshouse export writes exactly the declared run-record shape
    obs = Observation("r", "d", "v", "all", "Q1", "s", 10, 1, "", 1.5,
                      (Memory("m", "t", ("12",)),), 1, "usable")  # fmt: skip
    assert set(export_record(obs)) <= set(gh.accepted)
    (lme_format,) = get_benchmark("longmemeval").prediction_formats
    assert (lme_format.id_field, dict(lme_format.fields)) == ("question_id", {"hypothesis": ANSWER})


def test_a_format_is_declared_as_data() -> None:
    with pytest.raises(ValueError, match="meaning"):
        PredictionFormat("x", "id", {"guess": "prediction"})
    with pytest.raises(ValueError, match="twice"):
        PredictionFormat("x", "id", {"a": ANSWER, "b": ANSWER})
    fmt = PredictionFormat("x", "qid", {"text": ANSWER})
    assert hash(fmt) == hash(PredictionFormat("x", "qid", {"text": ANSWER}))


def test_field_types_are_checked(locomo: LoadedDataset, tmp_path: Path) -> None:
    for bad, what in (
        ({"answer_generated": "false"}, "answer_generated must be true or false"),
        ({"chars_returned": "12"}, "chars_returned must be an integer"),
        ({"latency_ms": "fast"}, "latency_ms must be a number"),
        ({"retrieved_turns": [["D1:1"]]}, "turn ids are strings or integers"),
    ):
        path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "x", **bad}])
        with pytest.raises(DatasetFormatError, match=what):
            _score(path, locomo)


# ------------------------------------------------------------------------------ turn ids


@pytest.mark.parametrize("turn", ["D1-3", "d1:3", "D2:1"])
def test_retrieved_turn_ids_that_name_no_turn_are_refused(
    locomo: LoadedDataset, tmp_path: Path, turn: str
) -> None:
    rows = [
        {"id": "conv-x:0", "answer": "Miso", "retrieved_turns": ["D1:1"]},
        {"id": "conv-x:1", "answer": "Lisbon", "retrieved_turns": ["D1:3", turn]},
    ]
    path = _write(tmp_path / "p.jsonl", rows)
    with pytest.raises(DatasetFormatError) as info:
        _score(path, locomo)
    message = str(info.value)
    assert message.startswith(f"{path}:2: ") and repr(turn) in message
    assert "--unknown-turns warn" in message and "'D1:1'" in message  # what ids look like
    result = _score(path, locomo, unknown_turns="warn")
    assert [(u.line, u.question_id, u.turn_id) for u in result.unknown_turns] == [
        (2, "conv-x:1", turn)
    ]
    assert any("1 retrieved turn id(s) on 1 line(s) name no turn" in n for n in result.notes())
    assert _lines(result, locomo)["conv-x:1"]["evidence_recall"] == 1.0  # D1:3 still counts


def test_unknown_turns_option_is_checked(locomo: LoadedDataset, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0"}])
    with pytest.raises(OptionError, match="--unknown-turns must be one of refuse, warn"):
        _score(path, locomo, unknown_turns="ignore")


def _glasshouse(turn_ids: tuple[str, ...] | None) -> LoadedDataset:
    from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
    from recallbench.contracts import Question, Session, Turn
    from recallbench.datasets.dataset import HaystackGroup

    qs = tuple(
        Question(
            id=f"Q{i}",
            dataset="glasshouse-v0.1",
            group="all",
            text="q?",
            gold="daily",
            evidence_turns=("12",),
            axis="BASIC",
        )  # fmt: skip
        for i in (1, 2)
    )
    sessions: tuple[Session, ...] = ()
    if turn_ids is not None:
        turns = tuple(Turn(t, "s1", "user", "daily") for t in turn_ids)
        sessions = (Session("s1", None, turns),)
    return LoadedDataset(
        name="glasshouse-v0.1", variant="core", version="t", haystack="global", files=(),
        groups=(HaystackGroup("all", sessions, ("Q1", "Q2")),), questions=qs,
        benchmark="glasshouse-v0.1",
        options=GlasshouseOptions(image_mode="native", questions="core", tier="core"),
    )  # fmt: skip


def test_glasshouse_integer_and_string_turn_ids_are_the_same_turn(tmp_path: Path) -> None:
    ds = _glasshouse(("11", "12"))
    rows = [
        {"id": "Q1", "answer": "daily", "retrieved_turns": [12, 11], "prompt_tokens": 40},
        {"id": "Q2", "answer": "daily", "retrieved_turns": ["12"]},
    ]
    result = _score(_write(tmp_path / "r.jsonl", rows), ds, (1,))
    assert result.format.name == "glasshouse" and result.turns_checked
    hits = {v.question_id: v.metrics["evidence_hit@1"] for v in result.verdicts}
    assert hits == {"Q1": 1.0, "Q2": 1.0}
    with pytest.raises(DatasetFormatError, match=r"r2.jsonl:1: .*'13'"):
        _score(_write(tmp_path / "r2.jsonl", [{"id": "Q1", "retrieved_turns": [13]}]), ds, (1,))


def test_turn_ids_are_not_checked_when_the_corpus_was_not_read(tmp_path: Path) -> None:
    ds = _glasshouse(None)
    rows = [{"id": "Q1", "answer": "daily", "retrieved_turns": [99]}]
    result = _score(_write(tmp_path / "r.jsonl", rows), ds, (1,))
    assert not result.turns_checked and result.unknown_turns == ()
    assert any("not checked" in n and "turns were not read" in n for n in result.notes())


# ------------------------------------------------------------------- --out, name, timing rows


def test_a_question_with_no_line_is_marked_in_out(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [{"id": "conv-x:0", "answer": "Miso", "retrieved_turns": ["D1:2"]}]
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    lines = _lines(result, locomo)
    assert "missing" not in lines["conv-x:0"]
    missing = lines["conv-x:2"]
    assert missing["missing"] is True and missing["f1"] == 0.0
    assert missing["missing_reason"].startswith("missing_line: p.jsonl has no line")
    assert "the empty answer" in missing["missing_reason"]
    assert "nothing retrieved" in missing["missing_reason"]
    assert result.missing_ids == ("conv-x:1", "conv-x:2", "conv-x:3")


def test_the_system_is_named(locomo: LoadedDataset, tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "Miso"}])
    result = _score(path, locomo, system="my-memory")
    assert {v.system for v in result.verdicts} == {"my-memory"}
    assert {r.system for r in result.metrics} == {"my-memory"}
    assert result.system == "my-memory"
    assert {v.system for v in _score(path, locomo).verdicts} == {"external"}


def test_no_timing_rows(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [{"id": "conv-x:0", "answer": "Miso", "latency_ms": 12.5, "network_ms": 3}]
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    assert not [r for r in result.metrics if r.metric in TIMING]


def test_same_file_same_bytes(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [{"id": "conv-x:0", "answer": "Miso"}, {"id": "conv-x:2"}]
    path = _write(tmp_path / "p.jsonl", rows)
    a, b = _score(path, locomo), _score(path, locomo)
    assert a == b


def test_speed_on_lines_with_latency(locomo: LoadedDataset, tmp_path: Path) -> None:
    rows = [
        {"id": "conv-x:0", "answer": "Miso", "latency_ms": 320.0, "network_ms": 100.0},  # +1
        {"id": "conv-x:1", "answer": "Lisbon", "latency_ms": 1100.0, "network_ms": 100.0},
        {"id": "conv-x:2", "answer": "3", "latency_ms": 100.0, "network_ms": 95.0},  # N3
    ]  # conv-x:3 has no line: a failed search, counted apart
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo)
    lines = _lines(result, locomo)
    assert lines["conv-x:0"]["speed"] == 1.0 and "speed_null_reason" not in lines["conv-x:0"]
    assert lines["conv-x:1"]["speed"] == pytest.approx(-0.5)
    assert lines["conv-x:2"]["speed"] is None
    assert lines["conv-x:2"]["speed_null_reason"].startswith("N3: ")
    assert lines["conv-x:3"]["speed"] is None
    assert lines["conv-x:3"]["speed_null_reason"].startswith("failed: ")
    s = result.speed_summary
    assert s is not None and s.scored == 2 and s.failed == 1 and s.score == pytest.approx(0.25)
    assert any(n.startswith("speed (Glasshouse speed points") for n in result.notes())
    # accuracy is unaffected by speed
    untimed = [{k: v for k, v in r.items() if not k.endswith("_ms")} for r in rows]
    plain = _score(_write(tmp_path / "q.jsonl", untimed), locomo)
    assert [(r.metric, r.value) for r in result.metrics] == [
        (r.metric, r.value) for r in plain.metrics
    ]
    assert [v.metrics for v in result.verdicts] == [v.metrics for v in plain.verdicts]


def test_no_speed_without_latency(locomo: LoadedDataset, tmp_path: Path) -> None:
    result = _score(_write(tmp_path / "p.jsonl", [{"id": "conv-x:0", "answer": "Miso"}]), locomo)
    assert result.speed == {} and result.speed_summary is None
    assert all("speed" not in line for line in _lines(result, locomo).values())


def test_speed_settings_codes_before_measuring(locomo: LoadedDataset, tmp_path: Path) -> None:
    from recallbench.score.speed import SpeedSettings

    rows = [{"id": "conv-x:0", "answer": "Miso", "latency_ms": 320.0}]
    settings = SpeedSettings(before=("N1",), llm_ttft_ms=800.0)
    result = _score(_write(tmp_path / "p.jsonl", rows), locomo, speed=settings)
    assert result.speed["conv-x:0"].rule == "N1"
    assert result.speed_summary is not None
    assert result.speed_summary.label == "speed not measurable, N1"
    assert result.speed_summary.target_ms == 200.0
