"""Start, resume and finish a run: load and verify datasets first (so bad input never leaves a
partial results folder), write ``run.json``, execute, then score from disk."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recallbench.datasets.registry import load_dataset
from recallbench.datasets.spec import LoadedDataset
from recallbench.run import store
from recallbench.run.runner import Progress, Runner, image_paths, new_run_manifest
from recallbench.run.spec import RunSpec
from recallbench.score.score_run import ScoredRun, load_run_datasets, read_manifest, score_run
from recallbench.systems.registry import (
    SystemUnavailableError,
    UnknownSystemError,
    available_systems,
    resolve_target,
)

CACHE_ENV = "RECALLBENCH_CACHE"


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recallbench" / "cache"


def check_systems(names: Sequence[str]) -> None:
    """Fail before any work if a system is unknown or its extra is not installed."""
    entries = available_systems()
    for name in names:
        if name not in entries:
            raise UnknownSystemError(
                f"unknown system {name!r}; registered systems: {', '.join(entries)}"
            )
        try:
            resolve_target(entries[name].target)
        except ImportError as exc:
            raise SystemUnavailableError(name, entries[name].extra, exc) from exc


def load_datasets(spec: RunSpec, data_dir: Path) -> list[LoadedDataset]:
    return [load_dataset(ref, data_dir, spec.dataset_options) for ref in spec.datasets]


def check_images(spec: RunSpec, datasets: Sequence[LoadedDataset]) -> None:
    """Before any folder exists: image files must be present if a system will be handed them."""
    entries = available_systems()
    wants_images = any(
        getattr(
            getattr(resolve_target(entries[n].target), "capabilities", None),
            "accepts_images",
            False,
        )
        for n in spec.systems
    )
    if wants_images:
        for ds in datasets:
            if ds.options.get("image_mode", "native") == "native":
                image_paths(ds)  # raises naming the missing file


def _finish(run_dir: Path, manifest: dict[str, Any], runner: Runner) -> None:
    for record in manifest["systems"]:  # the capabilities each built system declared
        if record["name"] in runner.capabilities:
            record["capabilities"] = runner.capabilities[record["name"]]
    shutil.rmtree(run_dir / "work", ignore_errors=True)  # systems' private state, not a record
    manifest["ended_at"] = datetime.now(UTC).astimezone().isoformat(timespec="seconds")
    manifest["status"] = "complete"
    store.write_json(run_dir / store.RUN_JSON, manifest)


def start_run(
    spec: RunSpec,
    data_dir: Path,
    out_dir: Path,
    progress: Progress | None = None,
    cache_dir: Path | None = None,
    datasets: Sequence[LoadedDataset] | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
) -> ScoredRun:
    check_systems(spec.systems)
    loaded = list(datasets) if datasets is not None else load_datasets(spec, data_dir)
    check_images(spec, loaded)
    run_id, manifest = new_run_manifest(spec, loaded)
    manifest.update(extra_manifest or {})
    run_dir = out_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    store.write_json(run_dir / store.RUN_JSON, manifest)
    runner = Runner(spec, loaded, run_dir, run_id, progress, cache_dir or default_cache_dir())
    runner.execute()
    _finish(run_dir, manifest, runner)
    return score_run(run_dir, data_dir, loaded)


def resume_run(
    run_dir: Path, data_dir: Path, progress: Progress | None = None, cache_dir: Path | None = None
) -> ScoredRun:
    """Continue an interrupted run under the same run id: nothing lost, nothing duplicated."""
    manifest = read_manifest(run_dir)
    spec = RunSpec.from_dict(manifest["spec"])
    check_systems(spec.systems)
    loaded = load_run_datasets(manifest, data_dir)
    manifest.setdefault("resumed_at", []).append(
        datetime.now(UTC).astimezone().isoformat(timespec="seconds")
    )
    manifest["status"] = "running"
    store.write_json(run_dir / store.RUN_JSON, manifest)
    runner = Runner(
        spec, loaded, run_dir, manifest["run_id"], progress, cache_dir or default_cache_dir()
    )
    runner.execute()
    _finish(run_dir, manifest, runner)
    return score_run(run_dir, data_dir, loaded)
