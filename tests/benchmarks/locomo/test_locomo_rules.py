"""The LoCoMo rule set wired onto observations: conformance cases worked out by hand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.benchmarks.locomo.rules import (
    EVIDENCE_RECALL,
    EVIDENCE_RECALL_EXCL,
    F1,
    F1_EXCL,
    LocomoRules,
)
from recallbench.cli import app
from recallbench.contracts import Memory, Observation, Question
from recallbench.pipeline import start_run, tables
from recallbench.score.predictions import per_question_lines, score_predictions
from recallbench.spec import RunSpec

RULES = LocomoRules()


def _q(category: int, gold: str | None, evidence: tuple[str, ...] | None = ("D1:1",)) -> Question:
    return Question(
        id="conv-x:0",
        dataset="locomo",
        group="conv-x",
        text="q?",
        gold=gold,
        evidence_turns=evidence,
        axis="x",
        evidence_unknown_reason=None if evidence is not None else "empty evidence list",
        extra={"category": category},
    )


def _obs(
    answer: str | None = None,
    turns: list[tuple[str, ...] | None] | None = None,
    outcome: str = "usable",
    generated: bool | None = None,
    reported: bool = True,
) -> Observation:
    memories = tuple(Memory(id=f"m{i}", text="", source_turns=t) for i, t in enumerate(turns or []))
    return Observation(
        run_id="r",
        dataset="locomo",
        dataset_version="v",
        group="conv-x",
        question_id="conv-x:0",
        system="s",
        k=10,
        attempt=1,
        observed_at="",
        latency_ms=None,
        memories=memories,
        chars_returned=0,
        outcome=outcome,  # type: ignore[arg-type]
        answer=answer,
        answer_generated=answer is not None if generated is None else generated,
        retrieval_reported=reported,
    )


def _metrics(q: Question, o: Observation) -> tuple[dict[str, Any], dict[str, str]]:
    return RULES.question_metrics(q, o, (1, 5), {})


def test_registered_under_the_dataset_scoring_name() -> None:
    assert isinstance(get_benchmark("locomo").rules, LocomoRules)


# ---------------------------------------------------------------- f1


@pytest.mark.parametrize(
    ("category", "gold", "answer", "expected"),
    [
        # integer gold kept as text: "In 2022." -> [in, 2022] vs [2022]: P 1/2, R 1
        (2, "2022", "In 2022.", 2 / 3),
        (2, "2022", "2022", 1.0),
        # category 1: best prediction part per gold part, averaged: 1, 1, 0
        (1, "painting, pottery, camping", "pottery, painting", 2 / 3),
        # category 3: gold cut at the first ';' -> "Likely yes" = [like, ye] vs [ye]
        (3, "Likely yes; because she loves it", "yes", 2 / 3),
        # category 4: plain F1, "cat sat" vs "cat sat down" -> 0.8
        (4, "a cat sat down", "The cat sat", 0.8),
        # category 5: declining phrases score 1, anything else 0, whatever the gold
        (5, None, "That is not mentioned in the conversation.", 1.0),
        (5, None, "No information available", 1.0),
        (5, "No", "No", 0.0),
        # empty predictions score 0 in every category
        (1, "a, b", "", 0.0),
        (5, None, "", 0.0),
    ],
)
def test_f1_on_generated_answers(
    category: int, gold: str | None, answer: str, expected: float
) -> None:
    metrics, reasons = _metrics(_q(category, gold), _obs(answer))
    assert metrics[F1] == pytest.approx(expected)
    assert F1 not in reasons


def test_f1_is_null_without_a_generated_answer() -> None:
    # memories whose text would match the gold are never scored as an answer
    o = dataclasses.replace(
        _obs(None), memories=(Memory(id="m", text="2022", source_turns=("D1:1",)),)
    )
    metrics, reasons = _metrics(_q(2, "2022"), o)
    assert metrics[F1] is None
    assert reasons[F1].startswith("no_answer: no answer generated")


def test_category_5_excluded_figure() -> None:
    metrics, reasons = _metrics(_q(5, None), _obs("not mentioned", [("D1:1",)]))
    assert metrics[F1] == 1.0 and metrics[F1_EXCL] is None
    assert reasons[F1_EXCL].startswith("adversarial:")
    assert metrics[EVIDENCE_RECALL] == 1.0 and metrics[EVIDENCE_RECALL_EXCL] is None
    metrics, _ = _metrics(_q(4, "x"), _obs("x", [("D1:1",)]))
    assert metrics[F1_EXCL] == metrics[F1] == 1.0
    assert metrics[EVIDENCE_RECALL_EXCL] == metrics[EVIDENCE_RECALL] == 1.0


# ---------------------------------------------------------------- evidence_recall


def test_evidence_recall_counts_every_returned_memory() -> None:
    q = _q(1, "a", ("D1:1", "D2:3", "D3:4"))
    turns: list[tuple[str, ...] | None] = [("D9:9",)] * 20 + [("D1:1", "D2:3")]
    metrics, _ = _metrics(q, _obs(None, turns))
    assert metrics[EVIDENCE_RECALL] == pytest.approx(2 / 3)


def test_evidence_recall_edge_cases() -> None:
    q = _q(1, "a", ("D1:1", "D2:2"))
    assert _metrics(q, _obs(None, []))[0][EVIDENCE_RECALL] == 0.0  # empty prediction
    assert _metrics(q, _obs(None, [("D1:1",)], outcome="error"))[0][EVIDENCE_RECALL] == 0.0
    metrics, reasons = _metrics(q, _obs(None, [None, None]))
    assert metrics[EVIDENCE_RECALL] is None and reasons[EVIDENCE_RECALL].startswith(
        "no_source_turns"
    )
    metrics, reasons = _metrics(q, _obs("a", [], reported=False))
    assert metrics[EVIDENCE_RECALL] is None and "reports no retrieved" in reasons[EVIDENCE_RECALL]
    metrics, reasons = _metrics(_q(3, "a", None), _obs(None, [("D1:1",)]))
    assert metrics[EVIDENCE_RECALL] is None
    assert reasons[EVIDENCE_RECALL] == "evidence_unknown: empty evidence list"


# ---------------------------------------------------------------- end to end


def _conversation() -> dict[str, Any]:
    turns = [
        ("Ann", "D1:1", "I adopted a grey cat named Miso."),
        ("Bo", "D1:2", "I ran 3 marathons this year."),
        ("Ann", "D1:3", "My sister lives in Lisbon."),
        ("Bo", "D1:4", "I like painting and pottery."),
    ]
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns],
        },
        "qa": [
            {
                "question": "What is the cat's name?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "How many marathons did Bo run?",
                "answer": 3,
                "evidence": ["D1:2"],
                "category": 2,
            },
            {
                "question": "What does Bo like?",
                "answer": "painting, pottery",
                "evidence": ["D1:4"],
                "category": 1,
            },
            {
                "question": "Where does Ann's brother live?",
                "adversarial_answer": "Lisbon",
                "evidence": ["D1:3"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    path = tmp_path / "mini_locomo.json"
    path.write_text(json.dumps([_conversation()]), encoding="utf-8")
    return path


def test_run_prints_per_category_figures_with_denominators(mini: Path, tmp_path: Path) -> None:
    ds = load_dataset(f"locomo@{mini}", tmp_path)
    spec = RunSpec(systems=("bm25",), datasets=(f"locomo@{mini}",), k=(1, 5))
    scored = start_run(spec, tmp_path, tmp_path / "out", datasets=[ds])
    by_title = {t.title: t for t in tables(scored)}
    recall = by_title["locomo: evidence recall (all returned) by category"]
    labels = [r[0] for r in recall.rows]
    assert labels[:5] == [
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
        "5 adversarial",
    ]
    assert labels[5:] == [
        "all 1-5 (category 5 in the denominator)",
        "1-4 (category 5 not in the denominator)",
    ]
    assert recall.rows[5][1].endswith("(n=4)")
    assert "(n=3)" in recall.rows[6][1] and "+1 null" in recall.rows[6][1]
    assert recall.rows[2][1] == "-"  # no open-domain question here
    f1 = by_title["locomo: QA F1 by category"]
    assert len(f1.rows) == 2 and "null (n=0) +4 null" in f1.rows[0][1]
    assert "no_answer (4)" in f1.caption
    summary = (scored.run_dir / "summary.md").read_text()
    assert "category 5 (adversarial) in the denominator" in summary
    # the floor beside the systems: LoCoMo F1 of fixed answers, labelled a control
    floor = by_title["locomo: floor (says nothing): fixed answers, nothing retrieved"]
    assert floor.columns == (
        "slice",
        "figure",
        "(empty answer)",
        "I don't know.",
        "No information available.",
        "Not mentioned in the conversation.",
    )
    rows = {(r[0], r[1]): r[2:] for r in floor.rows}
    assert rows[("adversarial", "F1")] == (
        "0.000 (0.0%, n=1)",
        "0.000 (0.0%, n=1)",
        "1.000 (100.0%, n=1)",
        "1.000 (100.0%, n=1)",
    )
    assert rows[("all", "F1 over categories 1-4 (5 left out)")][0] == "0.000 (0.0%, n=3) +1 excl."
    assert "A control, not a system" in floor.caption
    assert "floor (says nothing)" in summary


def test_external_predictions(mini: Path, tmp_path: Path) -> None:
    ds = load_dataset(f"locomo@{mini}", tmp_path)
    preds = tmp_path / "preds.jsonl"
    lines = [
        {"id": "conv-x:0", "answer": "Miso", "retrieved_turns": ["D1:1"]},
        {"id": "conv-x:1", "answer": "3", "retrieved_turns": []},
        {"id": "conv-x:3", "answer": "Not mentioned.", "retrieved_turns": ["D1:3", "D1:1"]},
    ]
    preds.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    result = score_predictions(preds, ds, (1, 5, 10), benchmark_of(ds).rules)
    out = {x["id"]: x for x in per_question_lines(result, ds, benchmark_of(ds).rules)}
    assert out["conv-x:0"] == {
        "id": "conv-x:0",
        "slice": "single-hop",
        "category": 4,
        F1: 1.0,
        EVIDENCE_RECALL: 1.0,
        "null_reasons": {},
    }
    assert out["conv-x:1"][F1] == 1.0 and out["conv-x:1"][EVIDENCE_RECALL] == 0.0  # int answer
    assert out["conv-x:2"][F1] == 0.0 and out["conv-x:2"][EVIDENCE_RECALL] == 0.0  # no line: miss
    assert out["conv-x:3"][F1] == 1.0 and out["conv-x:3"]["category"] == 5
    assert result.missing_ids == ("conv-x:2",)


def test_cli_score_writes_one_line_per_question(mini: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "conv-x:0", "answer": "Miso"}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "score",
            str(preds),
            "--dataset",
            f"locomo@{mini}",
            "--out",
            str(out),
            "-q",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == [f"conv-x:{i}" for i in range(4)]
    first = lines[0]
    assert first[F1] == 1.0 and first[EVIDENCE_RECALL] is None
    assert first["null_reasons"][EVIDENCE_RECALL].startswith("no_source_turns")
    assert (tmp_path / "preds.scored" / "verdicts.jsonl").exists()
