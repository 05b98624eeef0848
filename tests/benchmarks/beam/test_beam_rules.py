"""The BEAM rule set: rubric and event ordering stay null, with a reason, until a judge exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.benchmarks.beam import load as beam
from recallbench.benchmarks.beam.rules import EVENT_ORDER, RUBRIC, BeamRules
from recallbench.contracts import Memory, Observation
from recallbench.datasets.dataset import LoadedDataset
from recallbench.pipeline import start_run, tables
from recallbench.score.predictions import per_question_lines, score_predictions
from recallbench.spec import RunSpec

RULES = BeamRules()


@pytest.fixture
def ds(tmp_path: Path) -> LoadedDataset:
    folder = tmp_path / "chats" / "100K" / "1"
    (folder / "probing_questions").mkdir(parents=True)
    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    {"role": "user", "id": 0, "content": "I use Flask for my budget app."},
                    {"role": "assistant", "id": 1, "content": "Flask is light."},
                ],
                [
                    {"role": "user", "id": 2, "content": "I moved the app to FastAPI."},
                    {"role": "assistant", "id": 3, "content": "FastAPI is fast."},
                ],
            ],
        }
    ]
    questions = {
        "abstention": [{"question": "What is my dog called?", "rubric": ["no information"]}],
        "event_ordering": [
            {
                "question": "In which order did I use frameworks?",
                "answer": "Flask, then FastAPI",
                "source_chat_ids": [0, 2],
                "rubric": ["Flask", "FastAPI"],
            }
        ],
        "knowledge_update": [
            {
                "question": "Which framework does my budget app use?",
                "answer": "FastAPI",
                "source_chat_ids": {"original_info": [0], "updated_info": [2]},
                "rubric": ["LLM response should state: FastAPI"],
            }
        ],
    }
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / beam.QUESTIONS).write_text(json.dumps(questions), encoding="utf-8")
    return load_dataset(f"beam@{folder}", tmp_path)


def _obs(qid: str, turns: list[str], answer: str | None = None) -> Observation:
    return Observation(
        run_id="r",
        dataset="beam",
        dataset_version="v",
        group="1",
        question_id=qid,
        system="s",
        k=5,
        attempt=1,
        observed_at="",
        latency_ms=None,
        memories=tuple(Memory(id=t, text="", source_turns=(t,)) for t in turns),
        chars_returned=0,
        outcome="usable" if turns else "unusable",
        answer=answer,
        answer_generated=answer is not None,
    )


def test_registered(ds: LoadedDataset) -> None:
    assert isinstance(get_benchmark(ds.benchmark).rules, BeamRules)


def test_rubric_null_with_reason(ds: LoadedDataset) -> None:
    q = next(x for x in ds.questions if x.axis == "knowledge_update")
    m, reasons = RULES.question_metrics(q, _obs(q.id, ["2"]), (1,), {})
    assert m == {RUBRIC: None} and reasons[RUBRIC].startswith("no_answer:")
    m, reasons = RULES.question_metrics(q, _obs(q.id, ["2"], answer="FastAPI"), (1,), {})
    assert m == {RUBRIC: None} and reasons[RUBRIC].startswith("no_judge:")


def test_event_ordering_only_for_its_questions(ds: LoadedDataset) -> None:
    q = next(x for x in ds.questions if x.axis == "event_ordering")
    m, reasons = RULES.question_metrics(q, _obs(q.id, [], answer="Flask, FastAPI"), (1,), {})
    assert m == {RUBRIC: None, EVENT_ORDER: None}
    assert reasons[EVENT_ORDER].startswith("no_judge:")


def test_external_lines_carry_generic_retrieval_and_nulls(
    ds: LoadedDataset, tmp_path: Path
) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"id": "1:knowledge_update:0", "retrieved_turns": ["2", "1"]}) + "\n",
        encoding="utf-8",
    )
    result = score_predictions(preds, ds, (1, 2), benchmark_of(ds).rules)
    lines = {x["id"]: x for x in per_question_lines(result, ds, benchmark_of(ds).rules)}
    ku = lines["1:knowledge_update:0"]
    assert ku["slice"] == "knowledge_update"
    assert ku["evidence_recall@1"] == 0.5 and ku["evidence_recall@2"] == 0.5
    assert ku[RUBRIC] is None and ku["null_reasons"][RUBRIC].startswith("no_answer")
    assert lines["1:abstention:0"]["null_reasons"]["evidence_recall@1"].startswith("no_evidence")
    assert EVENT_ORDER in lines["1:event_ordering:0"] and EVENT_ORDER not in ku


def test_summary_table_by_ability(ds: LoadedDataset, tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("beam@x",), k=(1, 2))
    scored = start_run(spec, tmp_path, tmp_path / "out", datasets=[ds])
    table = next(t for t in tables(scored) if t.title.endswith("by ability"))
    assert [r[0] for r in table.rows] == [
        "abstention",
        "event_ordering",
        "knowledge_update",
        "all",
    ]
    assert "null (n=0) +1 excl." in table.rows[0][1]  # abstention: no evidence by design
    assert "(n=2) +1 excl." in table.rows[-1][1]
    assert "rubric null (n=0) +3 excl." in table.rows[-1][1]
