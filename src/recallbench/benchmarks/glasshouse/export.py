"""Glasshouse's own run-record format (its SUBMITTING.md), written beside recallbench's records:
``<run dir>/exports/glasshouse/<system>/<tier>-<question set>.jsonl``, and declared as the
predictions shape ``recallbench score FILE`` accepts for Glasshouse (:data:`RUN_RECORDS`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from recallbench.benchmarks.glasshouse.rules import answer_of, retrieved_turn_ids
from recallbench.contracts import Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.score.predictions import (
    ANSWER,
    CHARS,
    GENERATED,
    LATENCY,
    MEMORIES,
    NETWORK,
    NOT_SCORED,
    RETRIEVED,
    PredictionFormat,
)

EXPORT_DIR = ("exports", "glasshouse")

RUN_RECORDS = PredictionFormat(
    name="glasshouse",
    id_field="id",
    fields={
        "answer": ANSWER,
        "answer_generated": GENERATED,
        "retrieved_turns": RETRIEVED,
        "chars_returned": CHARS,
        "memories_returned": MEMORIES,
        "latency_ms": LATENCY,
        "network_ms": NETWORK,
        "prompt_tokens": NOT_SCORED,
    },
    description="Glasshouse's run records, glasshouse-v0.1/SUBMITTING.md",
)
"""A question line of Glasshouse's run records: the required, recommended and timing fields of
SUBMITTING.md (``turn_id`` belongs to ingestion-side records, not to question lines).
``prompt_tokens`` is accepted and not scored."""


def export_path(run_dir: Path, system: str, ds: LoadedDataset, question_set: str) -> Path:
    name = f"{ds.variant}-{question_set}.jsonl"
    return run_dir.joinpath(*EXPORT_DIR, system, name)


def _turn_id(t: str) -> int | str:
    return int(t) if t.isdigit() else t


def export_record(obs: Observation) -> dict[str, Any]:
    """One line of Glasshouse's run-record format (SUBMITTING.md) for one observation."""
    turns = retrieved_turn_ids(obs)
    return {
        "id": obs.question_id,
        "answer": answer_of(obs),
        "answer_generated": obs.answer_generated,
        "retrieved_turns": [_turn_id(t) for t in turns or ()],
        "memories_returned": [m.text for m in obs.memories],
        "chars_returned": obs.chars_returned,
        "latency_ms": obs.latency_ms,
        "network_ms": obs.network_ms,
    }


def write_exports(
    run_dir: Path,
    ds: LoadedDataset,
    observations: Iterable[Observation],
    verdicts: Sequence[Verdict],
    question_set: str,
) -> None:
    """``<run dir>/exports/glasshouse/<system>/<tier>-<question set>.jsonl``, question order."""
    by_system: dict[str, dict[str, Observation]] = {}
    for o in observations:
        if o.dataset == ds.key:
            by_system.setdefault(o.system, {})[o.question_id] = o
    order = [q.id for q in ds.questions]
    for system in dict.fromkeys(v.system for v in verdicts):
        obs = by_system.get(system, {})
        path = export_path(run_dir, system, ds, question_set)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for qid in order:
                if qid in obs:
                    fh.write(json.dumps(export_record(obs[qid]), ensure_ascii=False) + "\n")
        tmp.replace(path)
