"""Re-score a results folder from disk: observations + gold -> verdicts, metrics, summary.

Calls no system. Running it twice on the same observations gives byte-identical files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.contracts import (
    IngestRecord,
    MetricRow,
    Observation,
    Verdict,
    ingest_from_dict,
)
from recallbench.datasets.registry import load_dataset
from recallbench.datasets.spec import LoadedDataset
from recallbench.report.aggregate import aggregate
from recallbench.report.summary import render_summary
from recallbench.run import store
from recallbench.run.spec import RunSpec
from recallbench.score.rulesets import get_ruleset
from recallbench.score.scorer import score_dataset


class RunFolderError(RuntimeError):
    pass


@dataclass(frozen=True)
class ScoredRun:
    run_dir: Path
    manifest: dict[str, Any]
    datasets: tuple[LoadedDataset, ...]
    verdicts: tuple[Verdict, ...]
    metrics: tuple[MetricRow, ...]
    missing: dict[str, dict[str, int]]


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / store.RUN_JSON
    if not path.exists():
        raise RunFolderError(f"{run_dir} is not a recallbench results folder (no run.json)")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def load_run_datasets(manifest: dict[str, Any], data_dir: Path) -> list[LoadedDataset]:
    """Reload the datasets of a run and check they are the same bytes the run used."""
    spec = RunSpec.from_dict(manifest["spec"])
    out = []
    for ref, recorded in zip(spec.datasets, manifest["datasets"], strict=True):
        ds = load_dataset(ref, data_dir, spec.dataset_options)
        if ds.checksum != recorded["checksum"]:
            raise RunFolderError(
                f"dataset {ds.key}: files changed since the run (checksum {recorded['checksum']} "
                f"in run.json, {ds.checksum} now)"
            )
        out.append(ds)
    return out


def read_logs(run_dir: Path) -> tuple[list[Observation], list[IngestRecord]]:
    obs = store.read_observations(run_dir)
    ing = [ingest_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.INGEST)]
    return obs, ing


def score_run(
    run_dir: Path, data_dir: Path, datasets: Sequence[LoadedDataset] | None = None
) -> ScoredRun:
    manifest = read_manifest(run_dir)
    spec = RunSpec.from_dict(manifest["spec"])
    loaded = list(datasets) if datasets is not None else load_run_datasets(manifest, data_dir)
    observations, ingests = read_logs(run_dir)
    verdicts: list[Verdict] = []
    metrics: list[MetricRow] = []
    missing: dict[str, dict[str, int]] = {}
    for ds in loaded:
        v, miss = score_dataset(ds, observations, spec.k, spec.systems)
        verdicts.extend(v)
        metrics.extend(aggregate(ds, v, observations, ingests, spec.systems, manifest["run_id"]))
        if miss:
            missing[ds.key] = miss
        exports = getattr(get_ruleset(ds.scoring), "write_exports", None)
        if callable(exports):
            exports(run_dir, ds, observations, v)
    store.write_jsonl(run_dir / store.VERDICTS, verdicts)
    store.write_jsonl(run_dir / store.METRICS, metrics)
    scored = ScoredRun(run_dir, manifest, tuple(loaded), tuple(verdicts), tuple(metrics), missing)
    store.write_text(run_dir / store.SUMMARY, render_summary(scored))
    return scored
