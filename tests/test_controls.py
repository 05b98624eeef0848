"""Do-nothing controls: fixed answers with nothing retrieved, scored by each benchmark's own
rules through the one scorer, and the floor a run's summary shows beside its systems."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import benchmark_of, load_dataset
from recallbench.contracts import ALL, MetricRow
from recallbench.controls import (
    CONTROL_ANSWERS,
    CONTROL_SYSTEM,
    EMPTY_LABEL,
    RETRIEVAL_LABEL,
    control_answers,
    control_observations,
    dataset_controls,
    floor_lines,
    floor_of,
)
from recallbench.pipeline import score_run, start_run, tables
from recallbench.report.floor import control_cell
from recallbench.results import store
from recallbench.results.scored import Control, Floor
from recallbench.score.predictions import score_predictions
from recallbench.score.rules import ScoringContext
from recallbench.score.scorer import score_dataset
from recallbench.spec import RunSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LONGMEMEVAL = FIXTURES / "longmemeval" / "longmemeval_fixture.json"
IDK = "I don't know."
NO_INFO = "No information available."
NOT_MENTIONED = "Not mentioned in the conversation."


def _row(control: Control, metric: str, slice_: str = ALL, k: int | None = None) -> MetricRow:
    [row] = [r for r in control.metrics if (r.metric, r.slice, r.k) == (metric, slice_, k)]
    return row


def _control(floor: Floor, answer: str | None) -> Control:
    [control] = [c for c in floor.controls if c.answer == answer]
    return control


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not in the shared data")
    return path


# ----------------------------------------------------------------------------- the answers


def test_control_answers_are_a_documented_constant() -> None:
    assert CONTROL_ANSWERS == ("", IDK, NO_INFO, NOT_MENTIONED)
    assert control_answers(["unknown", IDK, "unknown", "n/a"]) == (
        *CONTROL_ANSWERS,
        "unknown",
        "n/a",
    )


def test_a_control_cell_says_value_percent_and_denominator() -> None:
    row = MetricRow("r", "d", "d@1", "x", "s", ALL, "gh_dry", None, 0.0125, "q", 800, 0)
    assert control_cell(row) == "0.013 (1.3%, n=800)"  # the percent agrees with the value
    excluded = dataclasses.replace(row, value=None, denominator=0, n_excluded=5)
    assert control_cell(excluded) == "null (n=0) +5 excl."
    assert control_cell(None) == "-"


# ----------------------------------------------------------------------------- Glasshouse


def test_glasshouse_full_idk_floor_needs_no_corpus(shared_data: Path) -> None:
    """Glasshouse publishes 6.7% plain and 12.1% weighted for "I don't know." on
    questions_full; the full tier's corpus is not needed (nor, here, present)."""
    _need(shared_data / "glasshouse-v0.1" / "questions_full.jsonl")
    ds, floor = dataset_controls("glasshouse-v0.1:full", shared_data, {"questions": "full"})
    assert len(ds.questions) == 1547
    assert floor.rules == "glasshouse" and floor.scores_answers and floor.measured
    idk = _control(floor, IDK)
    plain, weighted = _row(idk, "gh_dry"), _row(idk, "gh_dry:weighted")
    assert (round(plain.value or 0, 3), plain.denominator) == (0.067, 1547)
    assert (round(weighted.value or 0, 3), weighted.denominator) == (0.121, 1547)
    assert plain.n_excluded == 0  # written by an answer model: every abstention graded
    empty = _control(floor, "")
    assert empty.label == EMPTY_LABEL and _row(empty, "gh_dry").value == 0.0
    # the abstention axis credits every phrasing of "I don't know"
    for answer in (IDK, NO_INFO, NOT_MENTIONED):
        assert _row(_control(floor, answer), "gh_dry", "ABSTAIN").value == 1.0
    # nothing retrieved is a miss, in the denominator, never null
    hit = _row(idk, "evidence_hit", k=10)
    assert hit.value == 0.0 and hit.denominator > 0


# ----------------------------------------------------------------------------- LoCoMo


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_locomo_category_5_rewards_one_phrasing_and_not_another(shared_data: Path) -> None:
    _need(shared_data / "locomo" / "locomo10.json")
    _, floor = dataset_controls("locomo", shared_data, extra_answers=["unknown"])
    adversarial = {c.answer: _row(c, "f1", "adversarial") for c in floor.controls}
    assert {a: (r.value, r.denominator) for a, r in adversarial.items()} == {
        "": (0.0, 446),
        IDK: (0.0, 446),
        NO_INFO: (1.0, 446),
        NOT_MENTIONED: (1.0, 446),
        "unknown": (0.0, 446),
    }
    # over categories 1-4 the adversarial questions are left out, by rule and count
    excl = _row(_control(floor, NO_INFO), "f1:excl_cat5")
    assert (excl.denominator, excl.n_excluded) == (1540, 446)
    assert excl.exclusion_rule == "adversarial (446)"
    every = _row(_control(floor, NO_INFO), "f1")
    assert every.denominator == 1986 and every.value is not None and every.value > 0.2


def _official_locomo_evaluation() -> types.ModuleType:
    """LoCoMo's own ``task_eval/evaluation.py`` from the shared copy of the instruments.

    Its ``bert_score`` import serves only the ``bertscore`` metric, which is not used here: it
    is stubbed with a function that fails if called."""
    root = Path(__file__).resolve().parents[1].parent / "shared" / "instruments"
    path = root / "locomo" / "task_eval" / "evaluation.py"
    if not path.exists():
        pytest.skip("LoCoMo's evaluation.py not in the shared instruments")
    pytest.importorskip("regex")
    stub = types.ModuleType("bert_score")

    def score(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("bert_score is not part of LoCoMo's F1 rules")

    stub.score = score  # type: ignore[attr-defined]
    saved = sys.modules.get("bert_score")
    sys.modules["bert_score"] = stub
    try:
        spec = importlib.util.spec_from_file_location("locomo_official_evaluation", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("bert_score", None)
        else:
            sys.modules["bert_score"] = saved
    return module


def test_locomo_controls_agree_with_the_official_evaluation(
    shared_data: Path, tmp_path: Path
) -> None:
    """Every control answer on every LoCoMo question: recallbench's per-question F1 equals what
    LoCoMo's own ``eval_question_answering`` gives (category 5 is its substring test)."""
    _need(shared_data / "locomo" / "locomo10.json")
    official = _official_locomo_evaluation()
    ds = load_dataset("locomo", shared_data, predictions=True)
    rules = benchmark_of(ds).rules
    raw = json.loads((shared_data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    qa = [item for conv in raw for item in conv["qa"]]
    assert len(qa) == len(ds.questions)
    for answer in CONTROL_ANSWERS:
        lines = [{**item, "answer": item.get("answer", ""), "prediction": answer} for item in qa]
        path = tmp_path / "predictions.json"
        path.write_text(json.dumps({"qa": lines}), encoding="utf-8")
        expected, _, _ = official.eval_question_answering(str(path))
        obs = control_observations(ds, answer, 10, "x")
        context = ScoringContext(predictions=True)
        verdicts, _ = score_dataset(ds, obs, (10,), (CONTROL_SYSTEM,), rules, context)
        got = [v.metrics["f1"] for v in verdicts]
        assert got == pytest.approx([float(x) for x in expected]), answer


def test_controls_are_what_recallbench_score_gives_the_same_file(
    shared_data: Path, tmp_path: Path
) -> None:
    """One scorer: a control's rows are the rows of a predictions file of the same lines."""
    _need(shared_data / "locomo" / "locomo10.json")
    ds = load_dataset("locomo", shared_data, predictions=True)
    rules = benchmark_of(ds).rules
    floor = floor_of(ds, rules, ds.default_k, (NO_INFO,))
    path = tmp_path / "no_info.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"id": q.id, "answer": NO_INFO, "retrieved_turns": [], "answer_generated": True}
            )
            + "\n"
            for q in ds.questions
        )  # fmt: skip
    )
    result = score_predictions(path, ds, ds.default_k, rules)

    same_id = [dataclasses.replace(r, run_id=result.run_id) for r in floor.controls[0].metrics]
    assert same_id == list(result.metrics)  # confidence intervals included


# ----------------------------------------------------------------------------- judge-only


def test_judge_only_benchmarks_are_null_with_the_reason() -> None:
    _, floor = dataset_controls(f"longmemeval@{LONGMEMEVAL}", Path("."))
    assert floor.scores_answers and not floor.measured
    for control in floor.controls:
        row = _row(control, "label")
        assert row.value is None and row.denominator == 0
        assert row.null_reason is not None and row.null_reason.startswith("no_judge:")
        assert "LLM judge" in row.null_reason


def test_beam_controls_are_null_with_the_reason(shared_data: Path) -> None:
    folder = _need(shared_data / "beam" / "chats" / "100K" / "1" / "chat.json").parent
    _, floor = dataset_controls(f"beam@{folder}", shared_data)
    assert not floor.measured
    row = _row(_control(floor, IDK), "rubric")
    assert row.value is None and row.null_reason and "LLM judge" in row.null_reason


# ----------------------------------------------------------------------------- retrieval only


def test_sample_floor_returns_nothing_and_scores_zero_over_the_same_denominator() -> None:
    _, floor = dataset_controls("sample", Path("."), extra_answers=["ignored"])
    assert not floor.scores_answers and floor.rules == "retrieval"
    [control] = floor.controls
    assert control.answer is None and control.label == RETRIEVAL_LABEL
    retrieval = [r for r in control.metrics if r.k is not None]
    assert retrieval and all(r.value == 0.0 for r in retrieval if r.slice != "abstain")
    # the abstentions have no evidence by design: null with the reason, as for any system
    assert all(r.value is None for r in retrieval if r.slice == "abstain")
    hit = _row(control, "evidence_hit", k=10)
    assert (hit.denominator, hit.n_excluded) == (43, 7)  # 7 abstentions: no evidence by design
    assert _row(control, "unusable_rate").value == 1.0  # every search came back empty


def test_floor_is_deterministic() -> None:
    ds = load_dataset("sample", Path("."))
    rules = benchmark_of(ds).rules
    a, b = floor_of(ds, rules, (1, 10)), floor_of(ds, rules, (1, 10))
    assert a == b
    assert floor_lines(a) == floor_lines(b)
    assert all("system" not in line for line in floor_lines(a))


# ----------------------------------------------------------------------------- a run's summary


def test_sample_run_summary_carries_the_retrieval_floor(tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample",), k=(1, 10))
    scored = start_run(spec, tmp_path, tmp_path / "out")
    [retrieval] = [
        t for t in tables(scored) if t.title == "sample: retrieval from gold evidence ids"
    ]
    floor_row = retrieval.rows[-1]
    assert floor_row[0] == RETRIEVAL_LABEL
    bm25_row = retrieval.rows[0]
    assert floor_row[1] == bm25_row[1] == "43"  # the same denominator as the system
    assert floor_row[2:8] == ("0.000",) * 6
    assert "is a control, not a system" in retrieval.caption
    run_dir = scored.run_dir
    summary = (run_dir / store.SUMMARY).read_text()
    assert f"| {RETRIEVAL_LABEL} | 43 | 0.000 | 0.000 |" in summary
    # never in the logs as if it were a system
    for name in (store.VERDICTS, store.METRICS):
        records = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
        assert {r["system"] for r in records} == {"bm25"}
        assert {r["run_id"] for r in records} == {scored.manifest.run_id}
    # computed at scoring time, deterministic: re-scoring gives the same summary
    score_run(run_dir, tmp_path)
    assert (run_dir / store.SUMMARY).read_text() == summary
