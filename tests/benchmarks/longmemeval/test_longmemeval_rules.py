"""The LongMemEval rule set on the fixture: conformance cases worked out by hand."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.benchmarks import benchmark_of, get_benchmark, load_dataset
from recallbench.benchmarks.longmemeval.rules import (
    LABEL,
    LABEL_ABSTENTION,
    RANKING_EXHAUSTED,
    LongMemEvalRules,
    flag_keys,
    retrieval_keys,
)
from recallbench.cli import app
from recallbench.contracts import Memory, Observation, Question
from recallbench.datasets.dataset import LoadedDataset
from recallbench.pipeline import start_run, tables
from recallbench.score.predictions import per_question_lines, score_predictions
from recallbench.spec import RunSpec

FILE = Path(__file__).resolve().parents[2] / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
RULES = LongMemEvalRules()
KS = (1, 3, 5, 10)
L3, L4, L6 = (math.log2(n) for n in (3, 4, 6))


@pytest.fixture(scope="module")
def ds() -> LoadedDataset:
    return load_dataset(f"longmemeval@{FILE}", Path("."))


def _q(ds: LoadedDataset, qid: str) -> Question:
    return next(q for q in ds.questions if q.id == qid)


def _obs(
    qid: str,
    ranked: list[tuple[str, ...] | None],
    outcome: str = "usable",
    answer: str | None = None,
    reported: bool = True,
) -> Observation:
    return Observation(
        run_id="r",
        dataset="longmemeval",
        dataset_version="v",
        group=qid,
        question_id=qid,
        system="s",
        k=10,
        attempt=1,
        observed_at="",
        latency_ms=None,
        memories=tuple(Memory(id=f"m{i}", text="", source_turns=t) for i, t in enumerate(ranked)),
        chars_returned=0,
        outcome=outcome,  # type: ignore[arg-type]
        answer=answer,
        answer_generated=answer is not None,
        retrieval_reported=reported,
    )


def _metrics(ds: LoadedDataset, obs: Observation) -> tuple[dict[str, Any], dict[str, str]]:
    return RULES.question_metrics(_q(ds, obs.question_id), obs, KS, ds.options)


# fx_ms_2: gold user turns answer_fx_ms_2a_1 and answer_fx_ms_2b_1 (answer sessions 2a, 2b).
# answer_fx_ms_2a_3 is an unmarked user turn of an answer session (pseudo-session noans_...),
# answer_fx_ms_2a_4 an assistant turn (dropped), sharegpt_x1_1 / _3 two user turns of one session.
RANKED = [
    ("answer_fx_ms_2a_3",),
    ("answer_fx_ms_2a_4",),
    ("sharegpt_x1_1",),
    ("sharegpt_x1_3",),
    ("answer_fx_ms_2a_1",),
    ("ultrachat_y2_1",),
    ("answer_fx_ms_2b_1",),
]


def test_registered(ds: LoadedDataset) -> None:
    assert isinstance(get_benchmark(ds.benchmark).rules, LongMemEvalRules)


def test_turn_granularity(ds: LoadedDataset) -> None:
    m, reasons = _metrics(ds, _obs("fx_ms_2", list(RANKED)))
    # user turns ranked: 2a_3, x1_1, x1_3, 2a_1, y2_1, 2b_1 (gold at ranks 4 and 6)
    assert m["turn:recall_any@3"] == 0.0 and m["turn:ndcg_any@3"] == 0.0
    assert m["turn:recall_any@5"] == 1.0 and m["turn:recall_all@5"] == 0.0
    assert m["turn:ndcg_any@5"] == pytest.approx((1 / L4) / 2)  # ideal: 1 + 1 = 2
    assert m["turn:recall_all@10"] == 1.0
    assert m["turn:ndcg_any@10"] == pytest.approx((1 / L4 + 1 / L6) / 2)
    assert not {k for k in reasons if k.startswith("turn:")}


def test_session_granularity_k_grows_over_distinct_sessions(ds: LoadedDataset) -> None:
    m, reasons = _metrics(ds, _obs("fx_ms_2", list(RANKED)))
    # sessions: noans_answer_fx_ms_2a, sharegpt_x1 (two turns), answer_fx_ms_2a, ultrachat_y2,
    # answer_fx_ms_2b. At k=3 the turn ranking has no gold, but the first three distinct
    # sessions (four turns) include answer_fx_ms_2a.
    assert m["session:recall_any@1"] == 0.0
    assert m["session:recall_any@3"] == 1.0 and m["session:recall_all@3"] == 0.0
    # nDCG per ranked turn over those four turns, as the official function scores them:
    # relevances 0, 0, 0, 1 -> DCG 1/log2(4) = 0.5; ideal: the two gold turns of the corpus
    # (answer_fx_ms_2a_1, answer_fx_ms_2b_1) -> 1 + 1 = 2; nDCG 0.25
    assert m["session:ndcg_any@3"] == pytest.approx(0.25)
    # k=5: six turns, relevances 0, 0, 0, 1, 0, 1 -> (1/log2(4) + 1/log2(6)) / 2 = 0.44343
    assert m["session:recall_all@5"] == 1.0
    assert m["session:ndcg_any@5"] == pytest.approx((1 / L4 + 1 / L6) / 2)
    # k=10: five sessions only; the grown k runs past the ranking, and past the corpus's seven
    # user turns: the same six turns are scored
    assert m["session:ndcg_any@10"] == m["session:ndcg_any@5"]
    assert m[f"{RANKING_EXHAUSTED}@5"] == 0.0 and f"{RANKING_EXHAUSTED}@5" not in reasons
    # sharegpt_z3_1 is left unranked: the official value assumed it would add nothing
    assert m[f"{RANKING_EXHAUSTED}@10"] == 1.0
    assert reasons[f"{RANKING_EXHAUSTED}@10"] == (
        "ranking_exhausted: LongMemEval grows k=10 until the top turns cover 10 distinct "
        "sessions, but the ranking ends first (ranked user turns 6, distinct (pseudo-)sessions "
        "5; corpus user turns 7, unranked 1; effective_k 10). The session values are the "
        "official function's on this ranking; the official evaluation assumes a ranking of the "
        "whole corpus"
    )


def test_tie_inside_one_memory(ds: LoadedDataset) -> None:
    """A memory covering both gold turns places them at consecutive ranks, listed order first."""
    m, _ = _metrics(
        ds, _obs("fx_ms_2", [("sharegpt_x1_1",), ("answer_fx_ms_2b_1", "answer_fx_ms_2a_1")])
    )
    assert m["turn:recall_all@3"] == 1.0 and m["turn:recall_any@1"] == 0.0
    assert m["turn:ndcg_any@3"] == pytest.approx((1 + 1 / L3) / 2)  # gold at ranks 2 and 3
    assert m["session:ndcg_any@3"] == pytest.approx((1 + 1 / L3) / 2)


def test_empty_and_failed_searches_are_misses(ds: LoadedDataset) -> None:
    for obs in (_obs("fx_ssu_1", []), _obs("fx_ssu_1", [("answer_fx_ssu_1_1",)], "error")):
        m, reasons = _metrics(ds, obs)
        assert all(m[k] == 0.0 for k in retrieval_keys(KS))
        assert not any(k in reasons for k in retrieval_keys(KS))
        # nothing ranked: every grown k runs past the (empty) ranking, flagged with its reason
        assert all(m[k] == 1.0 for k in flag_keys(KS))
        assert all(reasons[k].startswith("ranking_exhausted: ") for k in flag_keys(KS))


def test_nulls_with_their_rules(ds: LoadedDataset) -> None:
    keys = retrieval_keys(KS) + flag_keys(KS)
    m, reasons = _metrics(ds, _obs("fx_ku_4_abs", [("answer_fx_ku_4_1",)]))
    assert all(m[k] is None for k in keys) and reasons[keys[0]].startswith("abstention:")
    m, reasons = _metrics(ds, _obs("fx_ssa_3", [("answer_fx_ssa_3_1",)]))
    assert all(m[k] is None for k in keys) and reasons[keys[0]].startswith("no_evidence_turn:")
    m, reasons = _metrics(ds, _obs("fx_ssu_1", [None]))
    assert all(m[k] is None for k in keys) and reasons[keys[0]].startswith("no_source_turns:")
    m, reasons = _metrics(ds, _obs("fx_ssu_1", [], answer="a dog", reported=False))
    assert all(m[k] is None for k in keys) and "reports no retrieved" in reasons[keys[0]]


def test_label_is_null_until_a_judge_exists(ds: LoadedDataset) -> None:
    m, reasons = _metrics(ds, _obs("fx_ssu_1", [], answer="A border collie"))
    assert m[LABEL] is None and reasons[LABEL].startswith("no_judge:")
    assert LABEL_ABSTENTION not in m
    m, reasons = _metrics(ds, _obs("fx_ku_4_abs", []))
    assert m[LABEL] is None and reasons[LABEL].startswith("no_answer:")
    assert m[LABEL_ABSTENTION] is None


def test_keys_follow_the_run_k(ds: LoadedDataset) -> None:
    m, _ = RULES.question_metrics(_q(ds, "fx_ssu_1"), _obs("fx_ssu_1", []), (2, 7), ds.options)
    assert set(m) == set(retrieval_keys((2, 7))) | set(flag_keys((2, 7))) | {LABEL}
    assert "turn:recall_any@7" in m and "session:ndcg_any@2" in m


def test_external_lines_and_default_k(ds: LoadedDataset, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    rows = [
        {"id": "fx_ms_2", "retrieved_turns": [t[0] for t in RANKED]},
        {"id": "fx_ku_4_abs", "answer": "You never told me."},
    ]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "score",
            str(preds),
            "--dataset",
            f"longmemeval@{FILE}",
            "--out",
            str(out),
            "-q",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert set(lines) == {q.id for q in ds.questions}
    ms = lines["fx_ms_2"]
    assert ms["slice"] == "multi-session" and ms["abstention"] is False
    assert {k for k in ms if k.startswith(("turn:", "session:"))} == set(
        retrieval_keys((1, 3, 5, 10, 30, 50))
    ) | set(flag_keys((1, 3, 5, 10, 30, 50)))
    # six ranked user turns in five sessions, seven in the corpus: exhausted from k=10
    assert ms[f"{RANKING_EXHAUSTED}@5"] == 0.0 and ms[f"{RANKING_EXHAUSTED}@10"] == 1.0
    assert ms["null_reasons"][f"{RANKING_EXHAUSTED}@10"].startswith("ranking_exhausted: ")
    assert f"{RANKING_EXHAUSTED}@5" not in ms["null_reasons"]
    assert ms["session:recall_any@3"] == 1.0 and ms["turn:recall_any@3"] == 0.0
    # fx_ms_2 has no answer while another line has one: the empty answer (a miss), which only
    # a judge could grade, so the label is null for want of a judge, as for every answer
    assert ms[LABEL] is None and ms["null_reasons"][LABEL].startswith("no_judge")
    assert ms["scored_as_miss"]["answer"].startswith("absent_field: line 1 has no 'answer'")
    abs_line = lines["fx_ku_4_abs"]
    assert abs_line["abstention"] is True and abs_line["turn:recall_any@1"] is None
    assert abs_line["null_reasons"]["turn:recall_any@1"].startswith("abstention")
    assert abs_line["null_reasons"][LABEL].startswith("no_judge")
    # a question with no line is a miss: zeros, not nulls
    assert lines["fx_ssu_1"]["turn:recall_any@50"] == 0.0


def test_exclusions_are_counted_in_metric_rows(ds: LoadedDataset, tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "fx_ssu_1", "retrieved_turns": ["answer_fx_ssu_1_1"]}\n')
    result = score_predictions(preds, ds, (1, 5), benchmark_of(ds).rules)
    row = next(
        r for r in result.metrics if r.metric == "turn:recall_any" and r.k == 1 and r.slice == "all"
    )
    assert row.denominator == 3 and row.n_excluded == 2
    assert row.exclusion_rule == "abstention (1); no_evidence_turn (1)"
    assert row.value == pytest.approx(1 / 3)
    assert len(per_question_lines(result, ds, benchmark_of(ds).rules)) == 5


def test_summary_tables_by_question_type(ds: LoadedDataset, tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=(f"longmemeval@{FILE}",), k=(1, 5))
    scored = start_run(spec, tmp_path, tmp_path / "out", datasets=[ds])
    by_title = {t.title: t for t in tables(scored)}
    turn = by_title["longmemeval: turn recall_any@5 by question type"]
    assert [r[0] for r in turn.rows] == [
        "single-session-user",
        "single-session-assistant",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
        "all",
    ]
    assert turn.rows[-1][1].endswith("(n=3) +2 excl.")
    qa = by_title["longmemeval: QA accuracy (judge label) by question type"]
    assert [r[0] for r in qa.rows][-3:] == [
        "task-averaged (mean of type accuracies)",
        "overall",
        "abstention only",
    ]
    assert qa.rows[-1][1] == "null (n=0) +1 excl."
    assert "no_answer (5)" in qa.caption


def test_ranking_exhausted_reaches_verdicts_with_its_reason(
    ds: LoadedDataset, tmp_path: Path
) -> None:
    spec = RunSpec(systems=("bm25",), datasets=(f"longmemeval@{FILE}",), k=(1, 10))
    scored = start_run(spec, tmp_path, tmp_path / "out", datasets=[ds])
    lines = [json.loads(x) for x in (scored.run_dir / "verdicts.jsonl").read_text().splitlines()]
    flagged = 0
    for line in lines:
        for key in flag_keys((1, 10)):
            value, reason = line["metrics"][key], line["null_reasons"].get(key)
            if value is None:  # abstention, no evidence turn: null with the retrieval reason
                assert reason == line["null_reasons"]["session:ndcg_any@1"]
            elif value == 1.0:
                flagged += 1
                assert reason is not None and reason.startswith("ranking_exhausted: ")
            else:
                assert value == 0.0 and reason is None
    # the fixture's haystacks hold at most five sessions: k=10 exhausts every partial ranking
    assert flagged > 0
    rows = [
        r
        for r in scored.metrics
        if r.metric == RANKING_EXHAUSTED and r.k == 10 and r.slice == "all" and r.system == "bm25"
    ]
    assert len(rows) == 1 and rows[0].denominator == 3 and rows[0].n_excluded == 2


def test_a_run_with_another_system_is_deterministic(ds: LoadedDataset, tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25", "naive"), datasets=(f"longmemeval@{FILE}",), k=(1, 3))
    a = start_run(spec, tmp_path, tmp_path / "a", datasets=[ds])
    b = start_run(spec, tmp_path, tmp_path / "b", datasets=[dataclasses.replace(ds)])
    def same(run: Any) -> str:  # the run id and date (when it started) differ, nothing else
        text = (run.run_dir / "verdicts.jsonl").read_text()
        return text.replace(run.manifest.run_id, "X").replace(run.manifest.started_at, "D")

    assert same(a) == same(b)
