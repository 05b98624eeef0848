"""Checked-in dataset statistics: recomputed from the data when it is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import recallbench.benchmarks
from recallbench.benchmarks import dataset_specs, load_dataset
from recallbench.benchmarks.stats import main
from recallbench.datasets.dataset import parse_dataset_ref
from recallbench.datasets.stats import DATA_PLACEHOLDER, compute_stats, render
from recallbench.errors import ChecksumMismatchError, DataFileError, DatasetFormatError

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval" / "longmemeval_fixture.json"
)
BENCHMARKS_DIR = Path(recallbench.benchmarks.__file__).parent
STATS_FILES = sorted(BENCHMARKS_DIR.glob("*/stats/*.json"))


def test_stats_files_are_checked_in() -> None:
    names = {p.stem for p in STATS_FILES}
    assert {"locomo", "beam-100k-1"} <= names
    for path in STATS_FILES:
        stats = json.loads(path.read_text(encoding="utf-8"))
        for key in ("ref", "sessions", "turns", "questions_by_slice", "mean_turns_per_haystack"):
            assert key in stats, f"{path.name}: no {key}"
        assert sum(stats["questions_by_slice"].values()) == stats["questions"]


@pytest.mark.parametrize("path", STATS_FILES, ids=lambda p: p.stem)
def test_stats_match_the_data(path: Path, shared_data: Path) -> None:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    ref = recorded["ref"].replace(DATA_PLACEHOLDER, str(shared_data))
    name, variant, local = parse_dataset_ref(ref)
    if local is None:  # never download in a test: the pinned files must be here already
        spec = dataset_specs()[name]
        files = spec.variant_files(variant or spec.default_variant)
        if not all((shared_data / name / f.name).is_file() for f in files):
            pytest.skip(f"{recorded['ref']}: data not in the shared copy")
    try:
        ds = load_dataset(ref, shared_data, {})
    except ChecksumMismatchError:
        raise
    except (DataFileError, DatasetFormatError) as exc:  # files not in the shared copy
        pytest.skip(f"{recorded['ref']}: data not available ({exc})")
    assert render(compute_stats(ds), recorded["ref"]) == path.read_text(encoding="utf-8")


def test_locomo_stats_hold_the_known_facts() -> None:
    stats = json.loads((BENCHMARKS_DIR / "locomo" / "stats" / "locomo.json").read_text("utf-8"))
    assert (stats["haystack_groups"], stats["sessions"], stats["turns"]) == (10, 272, 5882)
    assert stats["questions_by_slice"] == {
        "adversarial": 446,
        "multi-hop": 282,
        "open-domain": 96,
        "single-hop": 841,
        "temporal": 321,
    }
    assert stats["evidence_defects"] == 14


def test_compute_stats_on_the_longmemeval_fixture(tmp_path: Path) -> None:
    ds = load_dataset(f"longmemeval@{FIXTURE}", tmp_path)
    stats = compute_stats(ds)
    assert stats["haystack_groups"] == 5 and stats["questions"] == 5
    assert stats["sessions"] == 14 and stats["turns"] == 34
    assert stats["mean_turns_per_haystack"] == 6.8
    assert stats["evidence"] == {
        "with_evidence": 3,
        "no_evidence_by_design": 1,
        "evidence_unknown": 1,
        "evidence_turns_total": 5,
    }
    assert stats["turns_by_speaker"] == {"assistant": 17, "user": 17}


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.json"
    main([f"longmemeval@{FIXTURE}", "--data-dir", str(tmp_path), "--out", str(out)])
    assert json.loads(out.read_text())["questions"] == 5
    main([f"longmemeval@{FIXTURE}", "--data-dir", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["ref"] == f"longmemeval@{FIXTURE}"
