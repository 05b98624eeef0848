"""Subsets of a dataset: a seeded sample stratified by slice, haystack groups by id, question ids
from a file (SHA-256 recorded); unknown ids are named, a limit above the dataset's size refused."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from recallbench import testing
from recallbench.benchmarks import load_dataset
from recallbench.datasets.subset import questions_subset, select, stratified_sample
from recallbench.errors import OptionError
from recallbench.spec import RunSpec, SubsetSpec, subset_label


@pytest.fixture
def sample(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_dataset("sample", tmp_path / "data")


def test_limit_is_stratified_by_slice_in_proportion(sample) -> None:  # type: ignore[no-untyped-def]
    sizes = Counter(q.axis for q in sample.questions)  # 12, 8, 8, 8, 7, 7 of 50
    cut = select(sample, SubsetSpec(kind="limit", limit=25, seed=0))
    got = Counter(q.axis for q in cut.questions)
    assert sum(got.values()) == 25
    for axis, n in sizes.items():
        assert abs(got[axis] - n * 25 / 50) < 1  # each slice its share, rounded
    ids = [q.id for q in sample.questions]
    assert [q.id for q in cut.questions] == [i for i in ids if i in {q.id for q in cut.questions}]
    (group,) = cut.groups  # the one global haystack stays, with the chosen questions only
    assert group.question_ids == tuple(q.id for q in cut.questions)
    assert cut.checksum == sample.checksum  # the same files: a choice of questions
    assert "Subset: limit 25 (seed 0): 25 of 50 questions" in cut.card_notes[-1]


def test_limit_is_the_same_for_the_same_seed_and_differs_for_another(sample) -> None:  # type: ignore[no-untyped-def]
    a = stratified_sample(sample.questions, 10, 0, sample.key)
    assert a == stratified_sample(sample.questions, 10, 0, sample.key)
    assert a != stratified_sample(sample.questions, 10, 1, sample.key)
    assert len(a) == 10


def test_limit_of_every_question_is_the_whole_dataset(sample) -> None:  # type: ignore[no-untyped-def]
    cut = select(sample, SubsetSpec(kind="limit", limit=50, seed=3))
    assert [q.id for q in cut.questions] == [q.id for q in sample.questions]


def test_limit_above_the_dataset_is_refused_with_its_size(sample) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OptionError, match=r"--limit 51: sample has 50 questions; give at most 50"):
        select(sample, SubsetSpec(kind="limit", limit=51, seed=0))
    with pytest.raises(OptionError, match="at least 1"):
        select(sample, SubsetSpec(kind="limit", limit=0, seed=0))


def test_groups_by_id_and_unknown_ids_named(tmp_path: Path) -> None:
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=6)
    ds = load_dataset(f"longmemeval@{data}", tmp_path / "d")
    cut = select(ds, SubsetSpec(kind="groups", groups=("q4", "q1")))
    assert [g.group_id for g in cut.groups] == ["q1", "q4"]  # dataset order
    assert [q.id for q in cut.questions] == ["q1", "q4"]
    with pytest.raises(OptionError) as info:
        select(ds, SubsetSpec(kind="groups", groups=("q1", "conv-99", "nope")))
    assert "'conv-99', 'nope'" in str(info.value) and "'q0'" in str(info.value)


def test_questions_from_a_file_with_its_sha256(sample, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ids = [q.id for q in sample.questions][:3]
    path = tmp_path / "ids.txt"
    path.write_text(f"# three questions\n{ids[2]}\n\n{ids[0]}\n{ids[0]}\n{ids[1]}\n")
    subset = questions_subset(path)
    assert subset.questions_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert subset.questions == (ids[2], ids[0], ids[1]) and subset.questions_file == "ids.txt"
    cut = select(sample, subset)
    assert [q.id for q in cut.questions] == ids
    assert subset.label == f"subset: questions from ids.txt (sha256 {subset.questions_sha256[:12]})"


def test_unknown_question_ids_and_empty_files_are_refused(sample, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ids.txt"
    path.write_text(f"{sample.questions[0].id}\nq-missing\n")
    with pytest.raises(OptionError, match="sample has no question 'q-missing'"):
        select(sample, questions_subset(path))
    path.write_text("# nothing\n\n")
    with pytest.raises(OptionError, match="no question id"):
        questions_subset(path)
    with pytest.raises(OptionError, match="cannot read it"):
        questions_subset(tmp_path / "absent.txt")


def test_the_spec_of_a_full_single_run_hashes_as_before() -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample",))
    d = spec.to_dict()
    assert "subset" not in d and "repeats" not in d
    assert subset_label(spec) == "full"
    cut = RunSpec(
        systems=("bm25",), datasets=("sample",), repeats=3,
        subset=SubsetSpec(kind="limit", limit=5, seed=2),
    )  # fmt: skip
    assert cut.to_dict()["subset"] == {"kind": "limit", "limit": 5, "seed": 2}
    assert RunSpec.from_dict(cut.to_dict()) == cut
    assert cut.spec_hash != spec.spec_hash
    assert subset_label(cut) == "subset: limit 5 (seed 2)"
