"""``recallbench.report.compare`` and ``recallbench.report.diff`` on hand-made verdicts of the
bundled sample: figures equal the aggregate's, gaps are paired and corrected, the instrument
check names every field that differs, and deeper k is paired with deeper k."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from recallbench.benchmarks import load_dataset
from recallbench.contracts import ALL, Verdict
from recallbench.datasets.dataset import FileRecord, LoadedDataset
from recallbench.report.compare import compare, comparison_dict, default_metric
from recallbench.report.diff import changed_questions, diff, metric_pairs
from recallbench.report.instrument import condition_changes, instrument_changes
from recallbench.report.sides import Side
from recallbench.results.manifest import DatasetRecord, RunManifest
from recallbench.score.aggregate import aggregate
from recallbench.score.metrics import MetricKey
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> LoadedDataset:
    return load_dataset("sample", tmp_path_factory.mktemp("data"))


def _verdicts(ds: LoadedDataset, system: str, right: set[int], key: str = "evidence_hit@5",
              run_id: str = "run-a") -> tuple[Verdict, ...]:  # fmt: skip
    return tuple(
        Verdict(run_id, ds.key, ds.version_label, system, q.id, q.axis or ALL, "usable", None,
                5, 100, {key: float(i in right)})  # fmt: skip
        for i, q in enumerate(ds.questions)
    )


def _manifest(ds: LoadedDataset, spec: RunSpec, run_id: str = "run-a") -> RunManifest:
    return RunManifest(run_id, spec, spec.spec_hash, 1, [DatasetRecord.of(ds, "retrieval")], [],
                       "2026-12-01T00:00:00+00:00")  # fmt: skip


def _side(ds: LoadedDataset, system: str, right: set[int], spec: RunSpec | None = None,
          key: str = "evidence_hit@5") -> Side:  # fmt: skip
    spec = spec or RunSpec(systems=(system,), datasets=("sample",), k=(1, 5))
    return Side(Path("x"), "run-a", system, ds, _verdicts(ds, system, right, key),
                _manifest(ds, spec), run_date="2026-12-01")  # fmt: skip


def test_a_sides_figures_are_the_aggregate_rows(sample: LoadedDataset) -> None:
    side = _side(sample, "bm25", set(range(0, 50, 2)))
    rows = aggregate(sample, side.verdicts, [], [], ["bm25"], "run-a", timing=False)
    c = compare([side, _side(sample, "other", set(range(0, 50, 3)))], "evidence_hit@5")
    by_slice = {r.slice: r for r in rows if r.metric == "evidence_hit" and r.k == 5}
    for line in c.lines:
        f, row = line.figures[0], by_slice[line.slice]
        assert (f.value, f.n, f.ci_low, f.ci_high) == (row.value, row.denominator, row.ci_low,
                                                      row.ci_high)  # fmt: skip
        assert (f.ci_unit, f.ci_iterations, f.ci_seed) == (row.ci_unit, row.ci_iterations,
                                                          row.ci_seed)  # fmt: skip


def test_every_gap_of_a_table_is_corrected_together(sample: LoadedDataset) -> None:
    sides = [_side(sample, "a", set(range(50))), _side(sample, "b", set(range(25))),
             _side(sample, "c", set(range(50)))]  # fmt: skip
    c = compare(sides, "evidence_hit@5")
    gaps = [g for line in c.lines for g in line.gaps]
    assert len(gaps) == 2 * len(c.lines)  # b and c against a, on every slice
    for g in gaps:
        assert g.result is not None and g.p_holm is not None
        assert g.p_holm >= g.result.p_value
    c_gaps = [g for g in gaps if g.b == 2]
    assert all(g.result.difference == 0 and not g.significant for g in c_gaps)  # type: ignore[union-attr]
    whole = next(g for g in gaps if g.b == 1)
    assert whole.significant and whole.result.discordant == (25, 0)  # type: ignore[union-attr]
    d = comparison_dict(c)
    assert d["correction"] == "Holm" and d["instrument_changes"] == {"B": [], "C": []}


def test_repeats_of_a_question_are_averaged(sample: LoadedDataset) -> None:
    side = _side(sample, "a", set(range(50)))
    doubled = dataclasses.replace(side, verdicts=side.verdicts + _verdicts(sample, "a", set()))
    assert set(doubled.values("evidence_hit@5").values()) == {0.5}


def test_another_version_of_the_data_is_refused(sample: LoadedDataset) -> None:
    other_files = tuple(dataclasses.replace(f, sha256="0" * 64) for f in sample.files)
    assert all(isinstance(f, FileRecord) for f in other_files)
    changed = dataclasses.replace(sample, files=other_files)
    a, b = _side(sample, "a", set()), _side(changed, "b", set())
    with pytest.raises(ValueError, match="not the same questions"):
        compare([a, b], "evidence_hit@5")
    with pytest.raises(ValueError, match="at least two"):
        compare([a], "evidence_hit@5")


def test_the_instrument_check_names_every_field_that_differs(sample: LoadedDataset) -> None:
    base = RunSpec(systems=("bm25",), datasets=("sample",), k=(1, 5))
    a = _side(sample, "bm25", set(), base)
    judge = AnsweringSpec("answer", reader=ModelChoice("r1"), judge=ModelChoice("j1"))
    cases = {
        "k": dataclasses.replace(base, k=(1, 10)),
        "chunking": dataclasses.replace(base, chunking="turn"),
        "dataset options": dataclasses.replace(base, dataset_options={"questions": "all"}),
    }
    for field, spec in cases.items():
        assert [c.field for c in instrument_changes(a, _side(sample, "bm25", set(), spec))] == [
            field
        ], field
    with_judge = _side(sample, "bm25", set(), dataclasses.replace(base, answering=judge))
    other = dataclasses.replace(judge, judge=ModelChoice("j2"), reader=ModelChoice("r2"))
    moved = _side(sample, "bm25", set(), dataclasses.replace(base, answering=other))
    assert {c.field for c in instrument_changes(with_judge, moved)} == {"reader", "judge"}
    reseeded = _side(sample, "bm25", set(), dataclasses.replace(base, seed=3, timeout_s=5.0))
    assert instrument_changes(a, reseeded) == []
    assert {c.field for c in condition_changes(a, reseeded)} == {"seed", "timeout_s"}
    # compare says it too
    c = compare([a, _side(sample, "bm25", set(), cases["k"])], "evidence_hit@5")
    assert [ch.field for ch in c.changes[0]] == ["k"]


def test_deeper_k_is_paired_with_deeper_k(sample: LoadedDataset) -> None:
    a = _side(sample, "bm25", set(range(10)), key="evidence_hit@3")
    b = _side(sample, "bm25", set(range(20)), key="evidence_hit@10")
    assert metric_pairs(a, b) == [("evidence_hit@3", "evidence_hit@10")]
    changed = changed_questions(a, b, metric_pairs(a, b))
    assert [q.question_id for q in changed] == [q.id for q in sample.questions[10:20]]
    d = diff(a, b)
    [delta] = d.deltas
    assert delta.gap.result is not None and delta.gap.result.difference == 0.2


def test_a_question_only_one_side_scored_is_listed(sample: LoadedDataset) -> None:
    a = _side(sample, "bm25", set(range(50)))
    b = dataclasses.replace(a, verdicts=a.verdicts[1:])
    [only] = changed_questions(a, b, metric_pairs(a, b))
    assert only.question_id == sample.questions[0].id and only.b is None


def test_the_default_metric_is_the_headline_both_hold(sample: LoadedDataset) -> None:
    a, b = _side(sample, "a", set()), _side(sample, "b", set())
    assert default_metric([a, b], (MetricKey("f1"), MetricKey("evidence_hit", 5))) == (
        "evidence_hit@5"
    )
    assert default_metric([a, b], (MetricKey("f1"),)) == "evidence_hit@5"
    c = _side(sample, "c", set(), key="f1")
    with pytest.raises(ValueError, match="share no metric"):
        default_metric([a, c], ())


def test_the_answering_record_is_compared_field_by_field(sample: LoadedDataset) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample",), k=(1, 5),
                   answering=AnsweringSpec("answer", reader=ModelChoice("mock"),
                                           judge=ModelChoice("mock-judge")))  # fmt: skip

    def side(port: int, sha: str) -> Side:
        s = _side(sample, "bm25", set(), spec)
        record = {
            "instrument": "recallbench prompts v1", "judge_label": "mock-judge",
            "reader": {"label": "mock", "base_url": f"http://127.0.0.1:{port}/v1"},
            "files": [{"path": "prompts.json", "sha256": sha}], "conditions": [],
            "judge_check": f"measured on port {port}",
        }  # fmt: skip
        assert s.manifest is not None
        s.manifest.answering = {"mode": "answer", "datasets": {sample.key: record}}
        return s

    # the in-process mock listens on a new port every run: not a change of instrument
    assert instrument_changes(side(4001, "aa"), side(4002, "aa")) == []
    [change] = instrument_changes(side(4001, "aa"), side(4001, "bb"))
    assert change.field == "prompt files" and "bb" in change.b
    retrieval = _side(sample, "bm25", set())
    fields = [c.field for c in instrument_changes(retrieval, side(4001, "aa"))]
    assert fields[:3] == ["mode", "reader", "judge"] and "conditions" not in fields


def test_all_pairs_are_one_family(sample: LoadedDataset) -> None:
    sides = [_side(sample, "a", set(range(50))), _side(sample, "b", set(range(25))),
             _side(sample, "c", set(range(40)))]  # fmt: skip
    first = compare(sides, "evidence_hit@5")
    every = compare(sides, "evidence_hit@5", all_pairs=True)
    assert [(g.a, g.b) for g in every.lines[0].gaps] == [(0, 1), (0, 2), (1, 2)]
    ab = [line.gaps[0] for line in first.lines]
    ab_all = [line.gaps[0] for line in every.lines]
    for one, two in zip(ab, ab_all, strict=True):  # a larger family: corrected harder
        assert one.result == two.result and two.p_holm >= one.p_holm  # type: ignore[operator]
