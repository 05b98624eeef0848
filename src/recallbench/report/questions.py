"""The per-question part of a report: a line per verdict with what came back, the answer and
the judge's verdict, as the data the HTML page's filters and detail rows read.

A question's verdict label is read from the first charted figure its verdict holds
(:mod:`recallbench.report.figures`; its detail names it): ``right`` (1), ``wrong`` (0),
``partial`` (in between), ``unscored`` (null, with the reason), ``failed`` (the search failed;
scored as a miss). Memory texts are stored once (by the first 16 hex digits of their SHA-256,
as ``texts.jsonl`` does), and at most :data:`MAX_MEMORIES` memories of a question are shown,
the rest counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recallbench.contracts import Observation, sha256_text
from recallbench.report.figures import Figure, Series
from recallbench.report.records import RunRecords
from recallbench.results.store import TEXT_KEY_CHARS

MAX_MEMORIES = 25
"""Memories of one question shown in full; the others are counted, and read in
``observations.jsonl``."""

VERDICTS: tuple[str, ...] = ("right", "partial", "wrong", "unscored", "failed")

ANSWER_FIELDS = ("condition", "reader", "outcome", "answer", "reply", "error", "sample")
JUDGEMENT_FIELDS = ("judge", "metric", "outcome", "value", "reply", "error", "unparsed", "sample")


Key = tuple[str, str, str, int]
"""(dataset, system, question id, repeat) of a per-question record."""


def repeat_of(record: object) -> int:
    """The 0-based repeat a record belongs to (``--repeats``); 0 for a record that has no
    ``repeat`` field (a single run, or a folder written before repeats existed)."""
    return int(getattr(record, "repeat", 0) or 0)


def _key(record: Mapping[str, Any]) -> Key:
    return (record["dataset"], record["system"], record["question_id"],
            int(record.get("repeat") or 0))


def verdict_label(outcome: str, value: float | None) -> str:
    if outcome == "error":
        return "failed"
    if value is None:
        return "unscored"
    if value >= 1.0:
        return "right"
    return "wrong" if value <= 0.0 else "partial"


def _pick(record: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {f: record[f] for f in fields if record.get(f) is not None}


def question_data(
    runs: Sequence[RunRecords], series: Sequence[Series], figures: Mapping[str, Sequence[Figure]]
) -> dict[str, Any]:
    """``{"series", "rows", "texts", "reasons"}``: one row per verdict of every run
    (dataset, question, series index, slice, verdict label, the figure's value, and the detail:
    the observation, the question's metrics and null reasons, its answers and judgements).
    Null reasons repeat across questions: a detail names each by its index in ``reasons``."""
    index = {(s.run_id, s.system): i for i, s in enumerate(series)}
    texts: dict[str, str] = {}
    reasons: dict[str, int] = {}
    rows: list[list[Any]] = []
    for run in runs:
        observed: dict[Key, Observation] = {
            (o.dataset, o.system, o.question_id, repeat_of(o)): o for o in run.observations
        }
        answers: dict[Key, list[dict[str, Any]]] = {}
        for a in run.answers:
            answers.setdefault(_key(a), []).append(a)
        judged: dict[Key, list[dict[str, Any]]] = {}
        for j in run.judgements:
            judged.setdefault(_key(j), []).append(j)
        for v in run.verdicts:
            first = next((f for f in figures.get(v.dataset, ()) if f.key in v.metrics), None)
            value = v.metrics.get(first.key) if first else None
            repeat = repeat_of(v)
            key = (v.dataset, v.system, v.question_id, repeat)
            obs = observed.get(key)
            detail: dict[str, Any] = {
                "run": run.run_id,
                "repeat": repeat,
                "outcome": v.outcome,
                "outcome_reason": v.outcome_reason,
                "metrics": {k: v.metrics[k] for k in sorted(v.metrics)},
                "null_reasons": {
                    k: reasons.setdefault(why, len(reasons))
                    for k, why in sorted(v.null_reasons.items())
                },
                "chars": v.chars_returned,
                "returned": v.n_returned,
            }
            if obs is not None:
                shown = []
                for m in obs.memories[:MAX_MEMORIES]:
                    digest = sha256_text(m.text)[:TEXT_KEY_CHARS]
                    texts.setdefault(digest, m.text)
                    shown.append([m.id, digest])
                detail["memories"] = shown
                detail["more"] = max(len(obs.memories) - MAX_MEMORIES, 0)
                detail["latency_ms"] = obs.latency_ms
                if obs.answer is not None:
                    detail["answer"] = obs.answer
            detail["answers"] = [_pick(a, ANSWER_FIELDS) for a in answers.get(key, [])]
            detail["judgements"] = [_pick(j, JUDGEMENT_FIELDS) for j in judged.get(key, [])]
            label = verdict_label(v.outcome, value)
            detail["figure"] = first.key if first else None
            question = v.question_id if not repeat else f"{v.question_id} (repeat {repeat})"
            rows.append([v.dataset, question, index.get((run.run_id, v.system), -1),
                         v.slice, label, value, detail])
    return {
        "series": [s.label for s in series],
        "rows": rows,
        "texts": texts,
        "reasons": list(reasons),
    }


def verdict_counts(rows: Sequence[Sequence[Any]]) -> dict[tuple[str, int], dict[str, int]]:
    """``{(dataset, series): {label: count}}`` over the per-question rows."""
    out: dict[tuple[str, int], dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault((row[0], row[2]), dict.fromkeys(VERDICTS, 0))
        counts[row[4]] += 1
    return out
