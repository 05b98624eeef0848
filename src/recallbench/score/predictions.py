"""Score predictions made by anyone: a JSONL file with one object per question.

Each line: ``{"id": ..., "answer": ..., "retrieved_turns": [...], "memories_returned": [...],
"answer_generated": ...}``; every field but ``id`` may be absent. Absent ``retrieved_turns``
means retrieval cannot be checked (null with a reason), while ``[]`` is a miss. A question of the
dataset with no line in the file is a miss (an empty answer, nothing retrieved) and stays in the
denominator; a line whose id is not a question of the dataset is an error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.contracts import Memory, MetricRow, Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.datasets.jsonl import read_jsonl
from recallbench.errors import DatasetFormatError
from recallbench.score.aggregate import aggregate
from recallbench.score.rules import RuleSet, ScoringContext
from recallbench.score.scorer import score_dataset

PREDICTIONS_SYSTEM = "external"
"""The system name of a predictions file's verdicts (a file made by anyone, outside a run)."""


@dataclass(frozen=True)
class PredictionsScore:
    run_id: str
    verdicts: tuple[Verdict, ...]
    metrics: tuple[MetricRow, ...]
    missing_ids: tuple[str, ...]


def record_to_observation(
    rec: Mapping[str, Any], dataset: LoadedDataset, run_id: str, group: str, k: int
) -> Observation:
    retrieved = rec.get("retrieved_turns")
    texts = rec.get("memories_returned")
    memories: list[Memory] = []
    if retrieved is not None:
        memories = [Memory(id=str(t), text="", source_turns=(str(t),)) for t in retrieved]
    if texts is not None:
        texts = [str(t) for t in texts]
        if retrieved is None:
            memories = [Memory(id=f"m{i}", text=t, source_turns=None) for i, t in enumerate(texts)]
        elif len(texts) == len(memories):  # one text per retrieved turn: keep the texts too
            memories = [
                Memory(id=m.id, text=t, source_turns=m.source_turns)
                for m, t in zip(memories, texts, strict=True)
            ]
    answer = rec.get("answer")
    answer = None if answer is None else str(answer)
    chars = rec.get("chars_returned")
    if chars is None:
        chars = sum(len(t) for t in texts) if texts else sum(len(m.text) for m in memories)
    returned_something = bool(memories) or bool(texts)
    latency = rec.get("latency_ms")
    return Observation(
        run_id=run_id,
        dataset=dataset.key,
        dataset_version=dataset.version_label,
        group=group,
        question_id=str(rec["id"]),
        system=PREDICTIONS_SYSTEM,
        k=k,
        attempt=1,
        observed_at="",
        latency_ms=None if latency is None else float(latency),
        memories=tuple(memories),
        chars_returned=int(chars),
        outcome="usable" if returned_something or (answer or "").strip() else "unusable",
        outcome_reason=None,
        network_ms=rec.get("network_ms"),
        answer=answer,
        answer_generated=bool(rec.get("answer_generated", answer is not None)),
        retrieval_reported=retrieved is not None or texts is not None,
    )


def score_predictions(
    path: Path,
    dataset: LoadedDataset,
    ks: Sequence[int],
    rules: RuleSet,
    mode: str | None = None,
) -> PredictionsScore:
    """Verdicts and metric rows for a predictions file, scored by the dataset's ``rules``."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    run_id = f"external-{digest[:12]}"
    groups = {q.id: q.group for q in dataset.questions}
    observations: list[Observation] = []
    seen: set[str] = set()
    for line, rec in read_jsonl(path):
        if "id" not in rec:
            raise DatasetFormatError(path, line, "missing field 'id'")
        qid = str(rec["id"])
        if qid not in groups:
            raise DatasetFormatError(path, line, f"id {qid!r} is not a question of {dataset.key}")
        if qid in seen:
            raise DatasetFormatError(path, line, f"duplicate id {qid!r}")
        for field in ("retrieved_turns", "memories_returned"):
            if rec.get(field) is not None and not isinstance(rec[field], list):
                raise DatasetFormatError(
                    path, line, f"{field} must be a list, got {type(rec[field]).__name__}"
                )
        seen.add(qid)
        observations.append(record_to_observation(rec, dataset, run_id, groups[qid], max(ks)))
    missing = tuple(q.id for q in dataset.questions if q.id not in seen)
    for qid in missing:  # an unanswered question is a miss, never dropped
        observations.append(
            record_to_observation(
                {"id": qid, "answer": "", "retrieved_turns": []},
                dataset,
                run_id,
                groups[qid],
                max(ks),
            )
        )
    context = ScoringContext(predictions=True, mode=mode, turn_chars=dataset.turn_chars)
    systems = (PREDICTIONS_SYSTEM,)
    verdicts, _ = score_dataset(dataset, observations, ks, systems, rules, context)
    metrics = aggregate(
        dataset, verdicts, observations, [], systems, run_id, rules.weighted_metrics
    )
    return PredictionsScore(run_id, tuple(verdicts), tuple(metrics), missing)


def per_question_lines(
    result: PredictionsScore, dataset: LoadedDataset, rules: RuleSet
) -> list[dict[str, Any]]:
    """One JSON object per question for ``--out``, shaped by the rule set."""
    questions = {q.id: q for q in dataset.questions}
    return [rules.prediction_line(questions[v.question_id], v) for v in result.verdicts]
