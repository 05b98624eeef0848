"""The Glasshouse v0.1 loader on the real files (skipped when the shared folder is absent).

Pinning and verification, tiers and question sets, evidence borrowing for the cross-language
file, hygiene (neutral turns; each question asked in the field the benchmark prescribes), image
modes, and refusals: a tampered or truncated file, a question file of another tier, the
cross-language file on core, the full tier's absent corpus.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

from recallbench.benchmarks import dataset_specs, get_benchmark, load_dataset
from recallbench.benchmarks.glasshouse import corpus as gh_corpus
from recallbench.benchmarks.glasshouse import files as gh_files
from recallbench.benchmarks.glasshouse import images as gh_images
from recallbench.benchmarks.glasshouse import load as gh
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.contracts import Memory, Session, Turn
from recallbench.datasets import fetch
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import ChecksumMismatchError, DataFileError, DatasetFormatError
from recallbench.pipeline import start_run
from recallbench.run.runner import image_paths, point_images, prepare_sessions
from recallbench.spec import RunSpec
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.registry import SystemEntry

NAME = "glasshouse-v0.1"


@pytest.fixture
def gh_dir(shared_data: Path) -> Path:
    folder = shared_data / NAME
    if not (folder / "questions_core.jsonl").exists():
        pytest.skip("Glasshouse v0.1 files not in the shared data folder")
    return folder


def _copy(src: Path, dest_root: Path, *names: str) -> Path:
    """A data directory holding copies of some Glasshouse files."""
    folder = dest_root / NAME
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copyfile(src / n, folder / n)
    return dest_root


def _offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    tried: list[str] = []

    def refuse(url: str, dest: Path, timeout: float = 60.0) -> None:
        tried.append(url)
        raise DataFileError(f"could not download {url} to {dest}: offline (test)")

    monkeypatch.setattr(fetch, "download", refuse)
    return tried


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


# ------------------------------------------------------------------------------- the spec


def test_spec_pins_every_file_by_hash_and_commit_url(gh_dir: Path) -> None:
    spec = dataset_specs()[NAME]
    assert spec.variants == ("core", "small", "medium", "full")
    assert spec.default_variant == "core"
    published = json.loads((gh_dir / "HASHES.json").read_text())
    assert published == gh_files.HASHES
    prefix = (
        "https://raw.githubusercontent.com/wontopos/glasshouse/"
        "2eeb19eaa587dfa9685a9bdcaec6a9a397a8c109/glasshouse-v0.1/"
    )
    for tier in spec.variants:
        files = spec.variant_files(tier, {})
        assert gh_files.corpus_file(tier) in {f.name for f in files}
        for f in files:
            assert f.sha256 == published[f.name]
            assert f.url == prefix + f.name
    assert "questions_xling.jsonl" not in {f.name for f in spec.variant_files("core", {})}


# ----------------------------------------------------------------------------- loading


def test_core_loads_neutral_turns_and_tier_questions(shared_data: Path, gh_dir: Path) -> None:
    ds = load_dataset(NAME, shared_data)
    assert ds.key == "glasshouse-v0.1:core"
    assert ds.benchmark == "glasshouse-v0.1" and ds.haystack == "global" and ds.pinned
    assert len(ds.groups) == 1 and ds.groups[0].group_id == "all"
    turns = [t for s in ds.groups[0].sessions for t in s.turns]
    assert len(turns) == 1882 and len(ds.groups[0].sessions) == 96
    assert {f.name for f in dataclasses.fields(Turn)} == {
        "turn_id", "session_id", "speaker", "text", "date", "image",
    }  # fmt: skip
    first = _rows(gh_dir / "glasshouse_v0.1_core.jsonl")[0]
    assert turns[0] == Turn("1", "1", first["speaker"], first["text"], first["date"], None)
    assert len(ds.questions) == 633
    q = {x.id: x for x in ds.questions}["Q003"]
    assert q.text == "Which utility does the plot not have?"  # question_en
    assert q.gold == "electricity" and q.alternates == ("electricity", "power")
    assert q.evidence_turns == ("9",) and q.axis == "BASIC" and q.weight == 1.0
    assert q.extra["evidence_sessions"] == [1] and q.extra["id"] == "Q003"  # the raw row
    assert ds.options.tier == "core" and ds.options.questions == "core"
    assert ds.facts["question_file"] == "questions_core.jsonl"
    # the one published disagreement between an evidence turn and its story session is reported
    assert any("Q366" in line for line in ds.load_report)
    assert any("evidence_sessions" in n and "never used" in n for n in ds.card_notes)


def test_evidence_sessions_are_corpus_sessions_never_story_numbers(shared_data: Path) -> None:
    ds = load_dataset("glasshouse-v0.1:small", shared_data)
    turn_session = {t.turn_id: t.session_id for s in ds.groups[0].sessions for t in s.turns}
    for q in ds.questions:
        if q.evidence_turns:
            assert q.evidence_sessions == tuple(sorted({turn_session[e] for e in q.evidence_turns}))
    q1 = {x.id: x for x in ds.questions}["Q001"]
    assert q1.extra["evidence_sessions"] == [1]  # the story's session number
    assert q1.evidence_sessions != ("1",)  # the corpus session holding turn 285


def test_abstention_questions_have_no_evidence_by_design(shared_data: Path) -> None:
    ds = load_dataset("glasshouse-v0.1:medium", shared_data)
    abstain = [q for q in ds.questions if q.expect == "no_memory"]
    assert len(abstain) == 49
    assert all(q.evidence_turns == () for q in abstain)


def test_xling_borrows_evidence_and_asks_in_the_prescribed_field(shared_data: Path) -> None:
    ds = load_dataset("glasshouse-v0.1:small", shared_data, {"questions": "xling"})
    assert ds.options.questions == "xling" and len(ds.questions) == 800
    rows = {r["id"]: r for r in _rows(shared_data / NAME / "questions_xling.jsonl")}
    tier = {r["id"]: r for r in _rows(shared_data / NAME / "questions_small.jsonl")}
    borrowed = unknown = by_design = 0
    for q in ds.questions:
        row = rows[q.id]
        if q.axis == "XLING_QUERY":
            assert q.text == row["question"] and q.text != row["question_en"]
            assert q.lang == row["query_lang"]
        else:
            assert q.text == row["question_en"] and "question" not in row
        if q.evidence_turns is None:
            unknown += 1
            assert q.evidence_unknown_reason
        elif q.evidence_turns == ():
            by_design += 1
            assert q.expect == "no_memory"
        else:
            borrowed += 1
            src = tier[row["source_id"]]
            assert q.evidence_turns == tuple(str(e) for e in src["evidence_turns"])
    assert (borrowed, unknown, by_design) == (390, 400, 10)
    store = [q for q in ds.questions if q.axis == "XLING_STORE"]
    assert len(store) == 300 and all(q.evidence_turns is None for q in store)
    relay = [q for q in ds.questions if str(rows[q.id].get("source_id", "")).startswith("L1-")]
    assert len(relay) == 100 and all("cross-language" in str(q.evidence_unknown_reason)
                                     for q in relay)  # fmt: skip
    assert ds.facts["xling_evidence"] == {
        "borrowed": 390, "store": 300, "xling_source": 100, "missing_source": 0, "by_design": 10
    }  # fmt: skip
    assert any("390 of 800" in n for n in ds.card_notes)  # the note renders the counts
    # "image": "None" is the string for no image
    assert sum(1 for r in rows.values() if r.get("image") == "None") == 350
    assert gh_corpus._image_ref("None") is None
    assert gh_corpus._image_ref("img/img01.png") == "img/img01.png"


def test_probes_load_against_a_tier(shared_data: Path) -> None:
    ds = load_dataset("glasshouse-v0.1:small", shared_data, {"questions": "probes"})
    assert len(ds.questions) == 500 and ds.options.questions == "probes"
    assert all(q.axis == "FALSE_MEMORY" and q.evidence_turns == () for q in ds.questions)
    assert all(q.weight == 3.0 for q in ds.questions)


def test_tier_name_as_question_set(shared_data: Path) -> None:
    ds = load_dataset("glasshouse-v0.1:small", shared_data, {"questions": "small"})
    assert ds.options.questions == "small" and len(ds.questions) == 833


# ----------------------------------------------------------------------------- refusals


def test_xling_refused_on_core(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="core has no foreign-language sessions"):
        load_dataset(NAME, shared_data, {"questions": "xling"})


def test_question_file_of_another_tier_refused_by_name(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="turn_id restarts in every tier"):
        load_dataset("glasshouse-v0.1:small", shared_data, {"questions": "medium"})


@pytest.mark.parametrize("wrong", ["questions_medium.jsonl", "questions_core.jsonl"])
def test_question_file_of_another_tier_refused_by_content(
    gh_dir: Path, tmp_path: Path, wrong: str
) -> None:
    """A local copy whose questions_small.jsonl is really another tier's file."""
    local = tmp_path / "copy"
    local.mkdir()
    shutil.copyfile(gh_dir / "glasshouse_v0.1_small.jsonl", local / "glasshouse_v0.1_small.jsonl")
    shutil.copyfile(gh_dir / wrong, local / "questions_small.jsonl")
    spec = dataset_specs()[NAME]
    with pytest.raises(DatasetFormatError, match="does not belong to the corpus"):
        gh.load(spec, "small", tmp_path, GlasshouseOptions(), local)
    # the genuine file passes the same check
    shutil.copyfile(gh_dir / "questions_small.jsonl", local / "questions_small.jsonl")
    ds = gh.load(spec, "small", tmp_path, GlasshouseOptions(), local)
    assert len(ds.questions) == 833 and ds.pinned  # a local copy matching the pinned hashes
    # from the command line: glasshouse-v0.1@PATH names the tier by its corpus file
    ds = load_dataset(f"{NAME}@{local / 'glasshouse_v0.1_small.jsonl'}", tmp_path)
    assert ds.key == "glasshouse-v0.1:small" and len(ds.questions) == 833


@pytest.mark.parametrize("how", ["tampered", "truncated"])
@pytest.mark.parametrize("name", ["glasshouse_v0.1_core.jsonl", "questions_core.jsonl"])
def test_tampered_or_truncated_file_refused(
    gh_dir: Path, tmp_path: Path, how: str, name: str
) -> None:
    data = _copy(gh_dir, tmp_path, "glasshouse_v0.1_core.jsonl", "questions_core.jsonl")
    path = data / NAME / name
    raw = path.read_bytes()
    if how == "tampered":
        assert b"acre" in raw
        raw = raw.replace(b"acre", b"acer", 1)  # one letter moved, same length
    else:
        raw = raw[: len(raw) // 2]
    path.write_bytes(raw)
    with pytest.raises(ChecksumMismatchError) as info:
        load_dataset(NAME, data)
    message = str(info.value)
    assert name in message
    assert gh_files.HASHES[name] in message  # expected
    assert fetch.sha256_file(path) in message  # actual


def test_full_tier_absent_is_a_clear_error(
    gh_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copy(gh_dir, tmp_path, "questions_full.jsonl")
    tried = _offline(monkeypatch)
    with pytest.raises(DataFileError) as info:
        load_dataset("glasshouse-v0.1:full", data)
    message = str(info.value)
    assert "glasshouse_v0.1_full.jsonl" in message
    assert gh_files.file_spec("glasshouse_v0.1_full.jsonl").url in message
    assert "103,572 turns" in message
    assert tried == [gh_files.file_spec("glasshouse_v0.1_full.jsonl").url]


def test_scoring_a_file_needs_only_the_question_file(
    gh_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copy(gh_dir, tmp_path, "questions_full.jsonl")
    tried = _offline(monkeypatch)
    ds = load_dataset("glasshouse-v0.1:full", data, {"questions": "full"}, predictions=True)
    assert tried == []  # the absent corpus is not fetched
    assert len(ds.questions) == 1547 and ds.facts["corpus_read"] is False
    assert any("not read" in n for n in ds.card_notes)
    with pytest.raises(ValueError, match="dry mode"):
        get_benchmark(NAME).rules.check_mode("memory")


def test_unknown_options_refused(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="unknown question set"):
        load_dataset(NAME, shared_data, {"questions": "everything"})
    with pytest.raises(ValueError, match="unknown image mode"):
        load_dataset(NAME, shared_data, {"image_mode": "pixels"})


# -------------------------------------------------------------------------------- images


def test_image_modes(shared_data: Path) -> None:
    native = load_dataset("glasshouse-v0.1:small", shared_data)
    images = [t for s in native.groups[0].sessions for t in s.turns if t.image]
    assert len(images) == 50 and all(t.image.startswith("img/img") for t in images)  # type: ignore[union-attr]
    assert isinstance(native.image_resolver, gh_images.ImageFiles)
    assert any("image mode native" in n for n in native.card_notes)
    # a text-only system gets the turn's text alone
    text_only = prepare_sessions(native.groups[0].sessions, "pair", False, "native")
    assert not any(t.image for s in text_only for t in s.turns)
    skip = load_dataset("glasshouse-v0.1:small", shared_data, {"image_mode": "skip"})
    assert not any(t.image for s in skip.groups[0].sessions for t in s.turns)
    assert skip.image_resolver is None
    assert len(skip.questions) == len(native.questions)  # image questions still asked
    assert any("image mode skip" in n for n in skip.card_notes)
    with pytest.raises(ValueError, match="caption model"):
        load_dataset("glasshouse-v0.1:small", shared_data, {"image_mode": "caption"})


def test_caption_mode_needs_the_models_captions(gh_dir: Path, tmp_path: Path) -> None:
    data = _copy(gh_dir, tmp_path, "glasshouse_v0.1_small.jsonl", "questions_small.jsonl")
    options = {"image_mode": "caption", "caption_model": "acme/vision-1"}
    with pytest.raises(DataFileError, match=r"captions.*acme__vision-1\.jsonl"):
        load_dataset("glasshouse-v0.1:small", data, options)
    captions = data / NAME / "captions" / "acme__vision-1.jsonl"
    captions.parent.mkdir()
    captions.write_text(
        "".join(
            json.dumps({"image": f"img/img{i:02d}.png", "caption": f"photo number {i}"}) + "\n"
            for i in range(1, 51)
        )
    )
    ds = load_dataset("glasshouse-v0.1:small", data, options)
    turns = [t for s in ds.groups[0].sessions for t in s.turns]
    assert not any(t.image for t in turns)
    assert sum("[photo: photo number" in t.text for t in turns) == 50
    assert ds.options.caption_model == "acme/vision-1"
    assert any(f.name == "captions/acme__vision-1.jsonl" and not f.pinned for f in ds.files)


def test_native_images_missing_is_a_clear_error_only_when_needed(
    gh_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copy(gh_dir, tmp_path, "glasshouse_v0.1_small.jsonl", "questions_small.jsonl")
    tried = _offline(monkeypatch)
    ds = load_dataset("glasshouse-v0.1:small", data)  # loading never needs the images
    assert tried == []
    with pytest.raises(DataFileError) as info:
        image_paths(ds)  # what the runner calls when a system that accepts images runs
    message = str(info.value)
    assert "img/img" in message and gh_files.BASE_URL + "img/img" in message
    assert "--image-mode skip" in message


def test_native_images_resolved_from_a_local_copy(gh_dir: Path, tmp_path: Path) -> None:
    local = tmp_path / "copy"
    (local / "img").mkdir(parents=True)
    for n in ("glasshouse_v0.1_small.jsonl", "questions_small.jsonl"):
        shutil.copyfile(gh_dir / n, local / n)
    for i in range(1, 51):
        (local / "img" / f"img{i:02d}.png").write_bytes(b"png")
    ds = gh.load(dataset_specs()[NAME], "small", tmp_path, GlasshouseOptions(), local)
    paths = image_paths(ds)
    assert len(paths) == 50
    assert all(Path(p).is_file() and Path(p).is_absolute() for p in paths.values())
    sessions = [point_images(s, paths) for s in ds.groups[0].sessions]
    handed = [t.image for s in sessions for t in s.turns if t.image]
    assert len(handed) == 50 and set(handed) == set(paths.values())  # every ref resolved


class ImageSpy:
    """A system that accepts images and records the image each ingested turn carried."""

    name = "image-spy"
    capabilities = Capabilities(accepts_images=True)
    seen: ClassVar[list[str]] = []

    def __init__(self, context: SystemContext | None = None) -> None:
        pass

    def add(self, session: Session) -> None:
        ImageSpy.seen.extend(t.image for t in session.turns if t.image)

    def search(self, query: str, k: int) -> list[Memory]:
        return []

    def reset(self) -> None:
        ImageSpy.seen.clear()


def _few_questions(ds: LoadedDataset, n: int = 3) -> LoadedDataset:
    qs = ds.questions[:n]
    group = dataclasses.replace(ds.groups[0], question_ids=tuple(q.id for q in qs))
    return dataclasses.replace(ds, questions=qs, groups=(group,))


@pytest.fixture
def image_spy(monkeypatch: pytest.MonkeyPatch) -> type[ImageSpy]:
    monkeypatch.setitem(
        registry.BUILTINS, "image-spy", SystemEntry("image-spy", f"{__name__}:ImageSpy", "test")
    )
    ImageSpy.seen.clear()
    return ImageSpy


def test_runner_hands_image_files_only_to_systems_that_accept_them(
    gh_dir: Path, tmp_path: Path, image_spy: type[ImageSpy]
) -> None:
    local = tmp_path / "copy"
    (local / "img").mkdir(parents=True)
    for n in ("glasshouse_v0.1_small.jsonl", "questions_small.jsonl"):
        shutil.copyfile(gh_dir / n, local / n)
    for i in range(1, 51):
        (local / "img" / f"img{i:02d}.png").write_bytes(b"png")
    spec = dataset_specs()[NAME]
    ds = _few_questions(gh.load(spec, "small", tmp_path, GlasshouseOptions(), local))
    spec = RunSpec(systems=("image-spy", "bm25"), datasets=(f"{NAME}@{local}",), k=(1,))
    scored = start_run(spec, tmp_path, tmp_path / "out", datasets=[ds])
    assert len(image_spy.seen) == 50
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in image_spy.seen)
    assert {v.system for v in scored.verdicts} == {"image-spy", "bm25"}


def test_runner_stops_with_a_clear_error_when_images_are_missing(
    gh_dir: Path, tmp_path: Path, image_spy: type[ImageSpy], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copy(gh_dir, tmp_path, "glasshouse_v0.1_small.jsonl", "questions_small.jsonl")
    _offline(monkeypatch)
    ds = _few_questions(load_dataset("glasshouse-v0.1:small", data))
    text_only = RunSpec(systems=("bm25",), datasets=("glasshouse-v0.1:small",), k=(1,))
    start_run(text_only, data, tmp_path / "a", datasets=[ds])  # no image needed: runs
    with_images = RunSpec(systems=("image-spy",), datasets=("glasshouse-v0.1:small",), k=(1,))
    with pytest.raises(DataFileError, match=r"img/img\d\d\.png"):
        start_run(with_images, data, tmp_path / "b", datasets=[ds])
