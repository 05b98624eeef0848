"""The Glasshouse rule set on hand-made questions and observations (no data files needed).

What the string rules themselves do is tested in ``test_glasshouse_rules.py``; here: which text
is graded (answer model or not), ungraded abstentions, the evidence figure, STALE trap flags,
the void cross-language ask, weighted aggregation, the report tables, the tier view, the
Glasshouse run-record export, and scoring a predictions file made by anyone.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from recallbench.benchmarks import get_benchmark
from recallbench.benchmarks.glasshouse.export import export_path, write_exports
from recallbench.benchmarks.glasshouse.metrics import AXIS_WEIGHTS
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.benchmarks.glasshouse.report import summary_tables, tier_view
from recallbench.benchmarks.glasshouse.rules import (
    CHARS_OK,
    DRY,
    EVIDENCE,
    GENERATED,
    STALE_OLD,
    STALE_REACHED,
    GlasshouseRules,
    chars_check,
)
from recallbench.contracts import Memory, Observation, Question, sha256_text
from recallbench.datasets.dataset import HaystackGroup, LoadedDataset
from recallbench.results.scored import ScoredRun
from recallbench.score.aggregate import aggregate
from recallbench.score.predictions import per_question_lines, score_predictions
from recallbench.score.scorer import score_dataset
from recallbench.testing import manifest_for

RULES = GlasshouseRules()
IDK = "I don't know."


def _q(
    qid: str = "Q1",
    axis: str = "BASIC",
    gold: str = "five weeks",
    alternates: tuple[str, ...] = (),
    expect: str = "answer",
    evidence: tuple[str, ...] | None = ("3",),
    text: str | None = None,
    **extra: Any,
) -> Question:
    row = {"id": qid, "axis": axis, "gold_answer": gold, "expect": expect, **extra}
    return Question(
        id=qid,
        dataset="glasshouse-v0.1",
        group="all",
        text=text or f"question {qid}?",
        gold=gold,
        alternates=alternates,
        expect=expect,
        evidence_turns=evidence,
        axis=axis,
        weight=float(AXIS_WEIGHTS[axis]),
        evidence_unknown_reason=None if evidence is not None else "unknown by design of test",
        extra=row,
    )


def _obs(
    qid: str = "Q1",
    memories: tuple[tuple[str, tuple[str, ...] | None], ...] = (),
    answer: str | None = None,
    generated: bool = False,
    reported: bool = True,
    system: str = "sys",
    dataset: str = "glasshouse-v0.1:core",
    query: str = "",
) -> Observation:
    mems = tuple(
        Memory(id=f"m{i}", text=text, source_turns=turns)
        for i, (text, turns) in enumerate(memories)
    )
    return Observation(
        run_id="r",
        dataset=dataset,
        dataset_version="v",
        group="all",
        question_id=qid,
        system=system,
        k=10,
        attempt=1,
        observed_at="",
        latency_ms=1.5,
        memories=mems,
        chars_returned=sum(len(m.text) for m in mems),
        outcome="usable" if mems or answer else "unusable",
        answer=answer,
        answer_generated=generated,
        retrieval_reported=reported,
        query_sha256=sha256_text(query) if query else "",
    )


def _score(q: Question, o: Observation) -> tuple[dict[str, float | None], dict[str, str]]:
    return RULES.question_metrics(q, o, (1, 10))


def test_registered_under_glasshouse_with_weighted_dry() -> None:
    rules = get_benchmark("glasshouse-v0.1").rules
    assert isinstance(rules, GlasshouseRules)
    assert rules.weighted_metrics == (DRY,)


# --------------------------------------------------------------------- what text is graded


def test_without_answer_model_the_memories_joined_are_graded() -> None:
    q = _q(gold="five weeks")
    o = _obs(memories=(("user: it took 5 weeks", ("3",)), ("assistant: nice", ("4",))))
    m, reasons = _score(q, o)
    assert m[DRY] == 1.0 and m[GENERATED] == 0.0 and m[EVIDENCE] == 1.0
    assert not reasons


def test_with_answer_model_the_answer_is_graded_not_the_memories() -> None:
    q = _q(gold="five weeks")
    o = _obs(memories=(("it took 5 weeks", ("3",)),), answer="about a month", generated=True)
    m, _ = _score(q, o)
    assert m[DRY] == 0.0 and m[GENERATED] == 1.0 and m[EVIDENCE] == 1.0


def test_a_record_with_retrieved_text_in_the_answer_slot_is_graded_as_is() -> None:
    """Glasshouse's own baselines: answer = retrieved text, answer_generated false."""
    q = _q(gold="five weeks")
    m, _ = _score(q, _obs(answer="it took 5 weeks", generated=False, reported=False))
    assert m[DRY] == 1.0
    assert m[EVIDENCE] is None  # neither retrieved_turns nor memories_returned


def test_abstention_questions_ungraded_without_answer_model() -> None:
    for q in (
        _q(axis="ABSTAIN", expect="no_memory", evidence=()),
        _q(axis="FALSE_MEMORY", expect="no_memory", evidence=()),
        _q(axis="XLING_QUERY", expect="no_memory", evidence=()),  # abstention by expect
    ):
        m, reasons = _score(q, _obs(memories=(("I don't know anything", ("1",)),)))
        assert m[DRY] is None and reasons[DRY].startswith("ungraded:")
        m, reasons = _score(q, _obs(answer="That never came up.", generated=True))
        assert m[DRY] == 1.0 and DRY not in reasons
        m, _ = _score(q, _obs(answer="Yes, on Tuesday.", generated=True))
        assert m[DRY] == 0.0


def test_empty_answer_and_failed_search_score_zero_in_the_denominator() -> None:
    q = _q()
    m, reasons = _score(q, _obs())  # nothing came back, no answer model
    assert m[DRY] == 0.0 and DRY not in reasons
    assert m[EVIDENCE] == 0.0  # returned nothing: a miss, not "cannot tell"
    abstain = _q(axis="ABSTAIN", expect="no_memory", evidence=())
    m, _ = _score(abstain, _obs(answer="", generated=True))
    assert m[DRY] == 0.0  # an empty answer is not an abstention


# ------------------------------------------------------------------- rules named in the issue


@pytest.mark.parametrize(
    ("q", "answer", "expected"),
    [
        # a gold answer of "never" is not itself "I don't know"-shaped (the official scorer
        # exempts only golds that are), so an answer saying "never said" is zeroed first
        (_q(gold="never"), "He never said it", 0.0),
        (_q(gold="never"), "never, he goes by bus", 1.0),
        (_q(gold="never"), IDK, 0.0),
        # a two-letter answer must not match inside a longer word
        (_q(gold="on"), "the conversation", 0.0),
        (_q(gold="on"), "the light was on", 1.0),
        # number words and digits
        (_q(gold="five weeks"), "5 weeks", 1.0),
        (_q(gold="5 weeks"), "five weeks", 1.0),
        (_q(gold="a quarter acre"), "1/4 acre", 1.0),
        # "I don't know" shapes score 0 outside the exempt axes, before any matching
        (_q(gold="daily"), "I don't know if it's daily", 0.0),
        # UPDATE: new 1, "I don't know" 0.5, else 0
        (_q(axis="UPDATE", gold="daily"), "daily now", 1.0),
        (_q(axis="UPDATE", gold="daily"), IDK, 0.5),
        (_q(axis="UPDATE", gold="daily"), "weekly", 0.0),
        # STALE: both new and old given -> the new value is checked first
        (_q(axis="STALE", gold="daily", stale_answer="weekly"), "was weekly, now daily", 1.0),
        (_q(axis="STALE", gold="daily", stale_answer="weekly"), "weekly", 0.0),
        (_q(axis="STALE", gold="daily", stale_answer="weekly"), IDK, 0.5),
        # CONTRADICT: both clash values, or words naming it; "I don't know" 0.5
        (_q(axis="CONTRADICT", clash_a="200", clash_b="300"), "first 200 then 300", 1.0),
        (_q(axis="CONTRADICT", clash_a="200", clash_b="300"), "the notes are inconsistent", 1.0),
        (_q(axis="CONTRADICT", clash_a="200", clash_b="300"), IDK, 0.5),
        (_q(axis="CONTRADICT", clash_a="200", clash_b="300"), "it was 200", 0.0),
        # RECONCILE: both sides 1, one 0.5, "I don't know" nothing
        (_q(axis="RECONCILE", gold="x", side_a="weekdays", side_b="weekends"),
         "on weekdays and on weekends", 1.0),
        (_q(axis="RECONCILE", gold="x", side_a="weekdays", side_b="weekends"), "weekdays", 0.5),
        (_q(axis="RECONCILE", gold="x", side_a="weekdays", side_b="weekends"), IDK, 0.0),
        # CONFLICT: current value with a correction 1, value alone 0.5
        (_q(axis="CONFLICT", gold="no, it's daily now"), "No, it's daily.", 1.0),
        (_q(axis="CONFLICT", gold="no, it's daily now"), "daily", 0.5),
        (_q(axis="CONFLICT", gold="no, it's daily now"), "no", 0.0),
        # GATHER: fraction of parts
        (_q(axis="GATHER", gold="eggs and toast", gold_parts=["eggs", "toast", "tea"]),
         "eggs and tea", 0.667),  # the official scorer rounds fractions to 3 places
    ],
)  # fmt: skip
def test_issue_rules_through_the_rule_set(q: Question, answer: str, expected: float) -> None:
    m, _ = _score(q, _obs(answer=answer, generated=True))
    assert m[DRY] == pytest.approx(expected)


# ----------------------------------------------------------------------------- evidence


def test_evidence_figure() -> None:
    q = _q(gold="five weeks", evidence=("3", "7"))
    hit = _obs(memories=(("x", ("1", "7")),))
    assert _score(q, hit)[0][EVIDENCE] == 1.0
    miss = _obs(memories=(("it took five weeks", ("1", "2")),))
    assert _score(q, miss)[0][EVIDENCE] == 0.0  # turn ids win over the text
    text_only = _obs(memories=(("it took 5 weeks", None),))
    assert _score(q, text_only)[0][EVIDENCE] == 1.0  # no ids: the text contains the gold
    text_miss = _obs(memories=(("nothing relevant", None),))
    assert _score(q, text_miss)[0][EVIDENCE] == 0.0
    m, reasons = _score(q, _obs(answer="five weeks", generated=True, reported=False))
    assert m[EVIDENCE] is None and reasons[EVIDENCE].startswith("not_reported")
    m, reasons = _score(_q(evidence=None), hit)
    assert m[EVIDENCE] is None and reasons[EVIDENCE].startswith("evidence_unknown")
    m, reasons = _score(_q(axis="ABSTAIN", expect="no_memory", evidence=()), hit)
    assert m[EVIDENCE] is None and reasons[EVIDENCE].startswith("no_evidence")


# ---------------------------------------------------------------------------------- STALE


def test_stale_trap_flags() -> None:
    q = _q(axis="STALE", gold="daily", stale_answer="weekly")
    m, _ = _score(q, _obs(memories=(("I water it weekly", ("1",)),)))
    assert (m[DRY], m[STALE_OLD], m[STALE_REACHED]) == (0.0, 1.0, 0.0)  # a trap that sprang
    m, _ = _score(q, _obs(memories=(("weekly", ("1",)), ("now daily", ("2",)))))
    assert (m[DRY], m[STALE_OLD], m[STALE_REACHED]) == (1.0, 0.0, 1.0)  # no trap at all
    m, _ = _score(
        q, _obs(memories=(("now daily", ("2",)),), answer="weekly", generated=True)
    )  # the new value came back, the reader still gave the old one
    assert (m[DRY], m[STALE_OLD], m[STALE_REACHED]) == (0.0, 1.0, 1.0)
    m, _ = _score(_q(), _obs(answer="x", generated=True))
    assert STALE_OLD not in m and STALE_REACHED not in m


# ----------------------------------------------------------------------------------- void


def test_xling_query_asked_in_english_is_void() -> None:
    q = _q(axis="XLING_QUERY", text="그게 얼마였지?", question_en="How much was it?")
    m, reasons = _score(q, _obs(answer="five weeks", generated=True, query="How much was it?"))
    assert m[DRY] is None and reasons[DRY].startswith("void_axis")
    m, _ = _score(q, _obs(answer="five weeks", generated=True, query="그게 얼마였지?"))
    assert m[DRY] == 1.0


# ------------------------------------------------------------------- aggregation and report


def _dataset(questions: list[Question], key_variant: str = "core") -> LoadedDataset:
    return LoadedDataset(
        name="glasshouse-v0.1",
        variant=key_variant,
        version="t",
        haystack="global",
        files=(),
        groups=(HaystackGroup("all", (), tuple(q.id for q in questions)),),
        questions=tuple(questions),
        benchmark="glasshouse-v0.1",
        options=GlasshouseOptions(image_mode="native", questions=key_variant, tier=key_variant),
    )


def _scored(datasets: list[LoadedDataset], observations: list[Observation]) -> ScoredRun:
    verdicts, metrics = [], []
    for ds in datasets:
        v, _ = score_dataset(ds, observations, (1, 10), ("sys",), RULES)
        verdicts += v
        metrics += aggregate(ds, v, observations, [], ("sys",), "r", RULES.weighted_metrics)
    manifest = manifest_for(["sys"], [1, 10])
    return ScoredRun(Path("."), manifest, tuple(datasets), tuple(verdicts), tuple(metrics), {})


QUESTIONS = [
    _q("Q1", "BASIC", gold="daily"),
    _q("Q2", "MULTI", gold="daily"),
    _q("Q3", "ABSTAIN", expect="no_memory", evidence=()),
    _q("Q4", "STALE", gold="daily", stale_answer="weekly"),
]


def test_weighted_and_plain_aggregates() -> None:
    ds = _dataset(QUESTIONS)
    obs = [
        _obs("Q1", memories=(("daily", ("3",)),)),  # 1, weight 1
        _obs("Q2", memories=(("nope", ("9",)),)),  # 0, weight 3
        _obs("Q3", memories=(("x", ("1",)),)),  # ungraded
        _obs("Q4", memories=(("weekly", ("1",)),)),  # 0, weight 3, trap sprang
    ]
    scored = _scored([ds], obs)
    rows = {(r.slice, r.metric): r for r in scored.metrics if r.k is None}
    plain, weighted = rows[("all", DRY)], rows[("all", f"{DRY}:weighted")]
    assert plain.value == pytest.approx(1 / 3) and plain.denominator == 3
    assert plain.n_excluded == 1 and "ungraded (1)" in str(plain.exclusion_rule)
    assert weighted.value == pytest.approx(1 / 7) and weighted.denominator == 3
    tables = summary_tables(scored, ds)
    axis_table = tables[0]
    assert "dry plain" in axis_table.columns and "dry weighted" in axis_table.columns
    assert "evidence came back" in axis_table.columns and "chars/q" in axis_table.columns
    total = axis_table.rows[-1]
    assert total[0] == "all" and total[4] == "0.333" and total[5] == "0.143"
    assert "development ruler" in axis_table.caption and "k 1, 10" in axis_table.caption
    stale = tables[1]
    assert stale.rows == (("sys", "1", "0", "1/1", "0", "1/1"),)


def test_tier_view_sets_common_questions_side_by_side() -> None:
    core = _dataset(QUESTIONS[:2], "core")
    small = _dataset([*QUESTIONS[:2], _q("I001", "IMAGE", gold="open")], "small")
    obs = [
        _obs("Q1", memories=(("daily", ("3",)),), dataset="glasshouse-v0.1:core"),
        _obs("Q2", memories=(("daily", ("3",)),), dataset="glasshouse-v0.1:core"),
        _obs("Q1", memories=(("daily", ("3",)),), dataset="glasshouse-v0.1:small"),
        _obs("Q2", memories=(("nope", ("8",)),), dataset="glasshouse-v0.1:small"),
        _obs("I001", memories=(("open", ("8",)),), dataset="glasshouse-v0.1:small"),
    ]
    scored = _scored([core, small], obs)
    (table,) = tier_view(scored, scored.datasets)
    assert "2 questions common" in table.title and table.columns[2:] == ("core", "small")
    plain = next(r for r in table.rows if r[1] == "dry plain")
    assert plain[2:] == ("1.000", "0.500")  # I001 is not common: left out
    assert tier_view(_scored([core], obs[:2]), [core]) == []


# -------------------------------------------------------------------------------- interop


def test_export_is_glasshouse_run_record_format(tmp_path: Path) -> None:
    ds = _dataset(QUESTIONS)
    obs = [
        _obs("Q1", memories=(("user: daily\nassistant: ok", ("12", "13")), ("b", ("40",)))),
        _obs("Q2"),
    ]
    verdicts, _ = score_dataset(ds, obs, (1, 10), ("sys",), RULES)
    write_exports(tmp_path, ds, obs, verdicts, "core")
    path = export_path(tmp_path, "sys", ds, "core")
    assert path == tmp_path / "exports" / "glasshouse" / "sys" / "core-core.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["Q1", "Q2"]  # question order, observed only
    assert list(lines[0]) == [
        "id", "answer", "answer_generated", "retrieved_turns", "memories_returned",
        "chars_returned", "latency_ms", "network_ms",
    ]  # fmt: skip
    assert lines[0]["retrieved_turns"] == [12, 13, 40]  # integers, as in the corpus
    assert lines[0]["answer"] == "user: daily\nassistant: ok b"
    assert lines[0]["answer_generated"] is False
    assert lines[0]["memories_returned"] == ["user: daily\nassistant: ok", "b"]
    assert lines[1]["retrieved_turns"] == [] and lines[1]["answer"] == ""


def test_external_line_shape() -> None:
    ds = _dataset(QUESTIONS)
    obs = [_obs("Q1", memories=(("daily", ("3",)),))]
    verdicts, _ = score_dataset(ds, obs, (1,), ("sys",), RULES)
    line = RULES.prediction_line(QUESTIONS[0], verdicts[0])
    assert line == {"id": "Q1", "axis": "BASIC", "weight": 1.0, "value": 1.0,
                    "evidence_returned": True}  # fmt: skip


def test_scoring_a_predictions_file(tmp_path: Path) -> None:
    ds = _dataset(QUESTIONS)
    path = tmp_path / "run.jsonl"
    records = [
        {"id": "Q1", "answer": "It's daily."},  # no answer_generated: a reader answered
        {"id": "Q3", "answer": "That never came up."},
        {
            "id": "Q4",
            "answer": "weekly",
            "answer_generated": True,
            "retrieved_turns": [5, 6],
            "memories_returned": ["weekly", "switched to daily"],
        },
    ]  # Q2 has no line: a miss that stays in the denominator
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = score_predictions(path, ds, (1, 10), RULES)
    assert result.missing_ids == ("Q2",)
    lines = {x["id"]: x for x in per_question_lines(result, ds, RULES)}
    # Q4 reports retrieved turns, so Q1's line without them retrieved nothing: a miss
    assert lines["Q1"] == {"id": "Q1", "axis": "BASIC", "weight": 1.0, "value": 1.0,
                           "evidence_returned": False, "scored_as_miss": {"retrieved_turns": (
                               "absent_field: line 1 has no 'retrieved_turns' while 1 line(s) of "
                               "the file do: scored as a miss (nothing retrieved)")}}  # fmt: skip
    assert lines["Q2"]["value"] == 0.0 and lines["Q2"]["evidence_returned"] is False
    assert lines["Q3"]["value"] == 1.0  # graded: answered by a reader
    assert lines["Q4"]["value"] == 0.0 and lines["Q4"]["evidence_returned"] is False
    q4 = next(v for v in result.verdicts if v.question_id == "Q4")
    # the memories' text is kept beside the turn ids: the new value came back, no trap
    assert q4.metrics[STALE_REACHED] == 1.0 and q4.metrics[STALE_OLD] == 1.0


def test_character_checks_of_a_predictions_file(tmp_path: Path) -> None:
    base = _dataset(QUESTIONS)
    turn_chars = {"5": 6, "6": 17, "7": 400}
    ds = dataclasses.replace(base, turn_chars=turn_chars)
    records = [
        {"id": "Q1", "answer": "x", "retrieved_turns": [5, 6],
         "memories_returned": ["weekly", "switched to daily"], "chars_returned": 24},  # ok
        {"id": "Q2", "answer": "x", "retrieved_turns": [5],
         "memories_returned": ["weekly"], "chars_returned": 900},  # misreported
        {"id": "Q3", "answer": "x", "retrieved_turns": [99],
         "memories_returned": ["a text"], "chars_returned": 6},  # not a turn of the tier
        {"id": "Q4", "answer": "x", "retrieved_turns": [7],
         "memories_returned": ["short"], "chars_returned": 5},  # shortened under the same id
    ]  # fmt: skip
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = score_predictions(path, ds, (1,), RULES, "dry")
    got = {v.question_id: v.metrics[CHARS_OK] for v in result.verdicts}
    assert got == {"Q1": 1.0, "Q2": 0.0, "Q3": 0.0, "Q4": 0.0}
    # a run's own observations are not checked (nothing to distrust)
    m, _ = _score(_q(), _obs(memories=(("a", ("1",)),)))
    assert CHARS_OK not in m
    # without text there is nothing to count
    value, why = chars_check(_obs(answer="x", generated=True, reported=False), None)
    assert value is None and why and why.startswith("chars_check")
