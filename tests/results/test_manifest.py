"""The typed run manifest: same JSON as written, version checked and upgraded on read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallbench.contracts import FORMAT_VERSION
from recallbench.errors import ManifestVersionError, RunFolderError
from recallbench.pipeline import start_run
from recallbench.results import manifest as manifest_module
from recallbench.results.manifest import RunManifest, read_manifest
from recallbench.spec import RunSpec


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("manifest")
    scored = start_run(RunSpec(systems=("bm25",), datasets=("sample",)), tmp, tmp / "out")
    return scored.run_dir


def test_round_trip_gives_the_same_json(run_dir: Path) -> None:
    raw = json.loads((run_dir / "run.json").read_text())
    assert RunManifest.from_dict(raw).to_dict() == raw
    m = read_manifest(run_dir)
    assert m.spec.systems == ("bm25",) and m.datasets[0].key == "sample"
    assert m.status == "complete" and m.environment["recallbench_version"]


def test_unknown_keys_survive_a_rewrite(run_dir: Path) -> None:
    raw = {**json.loads((run_dir / "run.json").read_text()), "vendor_note": {"x": 1}}
    assert RunManifest.from_dict(raw).to_dict()["vendor_note"] == {"x": 1}


def test_newer_version_refused_with_both_versions(run_dir: Path) -> None:
    newer = str(int(FORMAT_VERSION) + 1)
    raw = {**json.loads((run_dir / "run.json").read_text()), "format_version": newer}
    with pytest.raises(ManifestVersionError) as info:
        RunManifest.from_dict(raw)
    assert f"format_version {newer}" in str(info.value)
    assert f"format_version {FORMAT_VERSION}" in str(info.value)


def test_older_version_is_upgraded_step_by_step(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = {**json.loads((run_dir / "run.json").read_text()), "format_version": "1"}
    monkeypatch.setattr(manifest_module, "FORMAT_VERSION", "3")
    monkeypatch.setitem(manifest_module.UPGRADES, "1", lambda d: {**d, "step": ["1->2"]})
    monkeypatch.setitem(
        manifest_module.UPGRADES, "2", lambda d: {**d, "step": [*d["step"], "2->3"]}
    )
    m = RunManifest.from_dict(raw)
    assert m.format_version == "3" and m.extra["step"] == ["1->2", "2->3"]


def test_missing_upgrade_and_garbage_are_clear_errors(run_dir: Path) -> None:
    raw = json.loads((run_dir / "run.json").read_text())
    with pytest.raises(ManifestVersionError, match="not a version"):
        RunManifest.from_dict({**raw, "format_version": "one"})
    with pytest.raises(RunFolderError, match="no format_version"):
        RunManifest.from_dict({k: v for k, v in raw.items() if k != "format_version"})
    with pytest.raises(RunFolderError, match="not a recallbench run manifest"):
        RunManifest.from_dict({"format_version": "1"})


@pytest.mark.parametrize("old", ["1", "2", "3"])
def test_an_older_manifest_reads_as_format_4(run_dir: Path, old: str) -> None:
    raw = {**json.loads((run_dir / "run.json").read_text()), "format_version": old}
    assert RunManifest.from_dict(raw).format_version == FORMAT_VERSION == "4"
