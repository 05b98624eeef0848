"""``recallbench diff A B``: what changed between two results of one system (or two systems) on
one dataset: the instrument, the metrics (with paired intervals) and each question's verdict.

A difference between two runs is the system's only when the instrument is the same: the same
dataset bytes, question set and options, the same depths k and chunking, the same mode, reader,
judge and prompts, the same scoring rules and the same subset. :func:`instrument_changes` lists
every such field that differs, and the report leads with a loud note when any does. Other
differences (recallbench version, machine, concurrency, seed, the system's own configuration)
are listed as conditions, without the alarm.

Metrics are paired by their key; when the deepest k of the two sides differs, each metric is
also paired at each side's deepest k (``evidence_hit@5|@10``), since that is what each run
measured at its own depth. A question's verdict changed when its outcome changed or a paired
metric's value did (null against a value included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recallbench.contracts import ALL, Verdict
from recallbench.report.compare import (
    NOT_SIGNIFICANT,
    Gap,
    check_sides,
    correct,
    gap_cells,
    gap_dict,
    paired,
    side_dict,
)
from recallbench.report.instrument import (
    LOUD,
    Change,
    condition_changes,
    instrument_changes,
    unrecorded,
)
from recallbench.report.sides import Side
from recallbench.report.tables import Table, fmt
from recallbench.score.aggregate import Resampling
from recallbench.score.metrics import MetricKey

SHOWN_QUESTIONS = 50
"""Changed questions a table shows (``--max-questions``); JSON always holds all of them."""
SHOWN_MEMORIES = 3
"""Memory ids shown per side of a changed question in a table (JSON holds every memory)."""
SHOWN_CHANGES = 3
"""Metric changes shown per changed question in a table."""
TEXT_CHARS = 60


def _deepest(keys: Sequence[str]) -> dict[str, MetricKey]:
    out: dict[str, MetricKey] = {}
    for text in keys:
        key = MetricKey.parse(text)
        if key.k is not None and (key.metric not in out or key.k > out[key.metric].k):  # type: ignore[operator]
            out[key.metric] = key
    return out


def metric_pairs(a: Side, b: Side) -> list[tuple[str, str]]:
    """The metric keys compared: for each metric measured at a different deepest k on the two
    sides, the pair of deepest keys (first: with k changed, these are the figures that moved),
    then the keys both sides hold."""
    ka, kb = a.keys(), b.keys()
    da, db = _deepest(ka), _deepest(kb)
    pairs = [
        (str(key_a), str(db[metric])) for metric, key_a in sorted(da.items())
        if metric in db and db[metric].k != key_a.k
    ]  # fmt: skip
    return pairs + [(k, k) for k in ka if k in set(kb)]


def pair_label(key_a: str, key_b: str) -> str:
    """``key`` when both sides use it, else ``metric@ka|@kb``."""
    if key_a == key_b:
        return key_a
    return f"{key_a}|@{MetricKey.parse(key_b).k}"


@dataclass(frozen=True)
class Delta:
    """One paired metric over all questions: A's and B's means and the gap B minus A."""

    key_a: str
    key_b: str
    a: float | None
    b: float | None
    gap: Gap


@dataclass(frozen=True)
class QuestionChange:
    question_id: str
    slice: str
    a: Verdict | None
    b: Verdict | None
    changed: tuple[tuple[str, float | None, float | None], ...]
    """``(metric label, A's value, B's value)`` of each paired metric that changed."""


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    instrument: tuple[Change, ...]
    conditions: tuple[Change, ...]
    deltas: tuple[Delta, ...]
    questions: tuple[QuestionChange, ...]
    alpha: float
    unrecorded: tuple[str, ...] = ()


def _mean(values: Mapping[str, float]) -> float | None:
    return round(sum(values.values()) / len(values), 6) if values else None


def _first(verdicts: Sequence[Verdict]) -> dict[str, Verdict]:
    """Each question's verdict of repeat 0 (the first one recorded when none says)."""
    out: dict[str, Verdict] = {}
    for v in verdicts:
        current = out.get(v.question_id)
        if current is None or (getattr(current, "repeat", 0) and not getattr(v, "repeat", 0)):
            out[v.question_id] = v
    return out


def changed_questions(a: Side, b: Side, pairs: Sequence[tuple[str, str]]) -> list[QuestionChange]:
    """The questions (in dataset order) whose outcome or a paired metric's value changed, or
    that only one side scored."""
    va, vb = _first(a.verdicts), _first(b.verdicts)
    values = [(pair_label(x, y), a.values(x), b.values(y)) for x, y in pairs]
    out = []
    for q in a.dataset.questions:
        x, y = va.get(q.id), vb.get(q.id)
        if x is None and y is None:
            continue
        changed = tuple(
            (label, xa.get(q.id), xb.get(q.id))
            for label, xa, xb in values
            if xa.get(q.id) != xb.get(q.id)
        )
        outcome = (x.outcome if x else None) != (y.outcome if y else None)
        if changed or outcome or x is None or y is None:
            out.append(QuestionChange(q.id, q.axis or ALL, x, y, changed))
    return out


def diff(a: Side, b: Side, alpha: float = 0.05) -> Diff:
    """The diff of ``b`` against ``a`` (same dataset and version, checked)."""
    check_sides([a, b])
    resampling = Resampling.of(a.dataset)
    pairs = metric_pairs(a, b)
    gaps = [Gap(0, 1, paired(a, b, x, y, ALL, resampling)) for x, y in pairs]
    gaps = correct(gaps, alpha)
    deltas = tuple(
        Delta(x, y, _mean(a.values(x)), _mean(b.values(y)), g)
        for (x, y), g in zip(pairs, gaps, strict=True)
    )
    return Diff(
        a, b, tuple(instrument_changes(a, b)), tuple(condition_changes(a, b)), deltas,
        tuple(changed_questions(a, b, pairs)), alpha, tuple(unrecorded(a, b)),
    )  # fmt: skip


def instrument_lines(d: Diff) -> list[str]:
    """The loud note (or the statement that the instrument is the same), then the
    conditions that differ."""
    lines: list[str] = []
    if d.instrument:
        lines.append(
            f"{LOUD} ({', '.join(c.field for c in d.instrument)}): a difference below is NOT "
            "the system's alone, it also measures the change of instrument:"
        )
        lines += [f"  {c.field}: A {c.a} | B {c.b}" for c in d.instrument]
    elif d.unrecorded:
        lines.append(
            f"instrument not fully checked: {', '.join(d.unrecorded)} is a predictions file "
            "with no run.json (its dataset version and checksum match; reader, judge, k and "
            "chunking are not recorded)"
        )
    else:
        lines.append("instrument: the same (dataset, options, k, chunking, mode, reader, judge, "
                     "prompts, rules, subset)")  # fmt: skip
    if d.conditions:
        lines.append("conditions that differ (not the instrument): " + "; ".join(
            f"{c.field}: A {c.a} | B {c.b}" for c in d.conditions
        ))  # fmt: skip
    return lines


def delta_table(d: Diff) -> Table:
    rows = []
    for delta in d.deltas:
        diff_cell, p_cell = gap_cells(delta.gap)
        n = delta.gap.result.n if delta.gap.result else 0
        rows.append((pair_label(delta.key_a, delta.key_b), fmt(delta.a), fmt(delta.b), diff_cell,
                     p_cell, str(n)))  # fmt: skip
    caption = (
        f"A = {d.a.name}, {d.a.run_date}; B = {d.b.name}, {d.b.run_date}. Dataset "
        f"{d.a.dataset.version_label} sha256 {d.a.dataset.checksum}. Over all questions both "
        "scored; B-A with a 95% paired bootstrap interval, p-values Holm-corrected over this "
        f"table; {NOT_SIGNIFICANT}: not significant at {d.alpha}."
    )
    return Table("metric deltas (B - A)", ("metric", "A", "B", "B-A", "p (Holm)", "n"),
                 tuple(rows), caption)  # fmt: skip


def _returned(side: Side, v: Verdict | None) -> str:
    """What came back for one side of a question: its answer if it has one, else how many
    memories and the ids of the first ones, else the outcome (JSON holds the texts)."""
    if v is None:
        return "not scored"
    obs = side.observations.get(v.question_id)
    answer = side.answers.get(v.question_id)
    if answer is not None:
        return f"answer: {_short(str(answer))}"
    if obs is None:
        return f"{v.outcome}, {v.n_returned} returned (memories not recorded)"
    if not obs.memories:
        return f"{v.outcome}: nothing returned"
    ids = ", ".join(m.id for m in obs.memories[:SHOWN_MEMORIES])
    more = ", …" if len(obs.memories) > SHOWN_MEMORIES else ""
    return f"{len(obs.memories)} returned: {ids}{more}"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_CHARS else flat[: TEXT_CHARS - 1] + "…"


def _changed_text(qc: QuestionChange) -> str:
    """The outcome change, then the first :data:`SHOWN_CHANGES` metric changes (and how many
    more: JSON holds them all)."""
    parts = [f"{label}: {fmt(x)} -> {fmt(y)}" for label, x, y in qc.changed[:SHOWN_CHANGES]]
    if len(qc.changed) > SHOWN_CHANGES:
        parts.append(f"+{len(qc.changed) - SHOWN_CHANGES} more")
    oa = qc.a.outcome if qc.a else "not scored"
    ob = qc.b.outcome if qc.b else "not scored"
    if oa != ob:
        parts.insert(0, f"outcome: {oa} -> {ob}")
    return "; ".join(parts)


def question_table(d: Diff, limit: int = SHOWN_QUESTIONS) -> Table:
    rows = [
        (qc.question_id, qc.slice, _changed_text(qc),
         _returned(d.a, qc.a), _returned(d.b, qc.b))
        for qc in d.questions[:limit]
    ]  # fmt: skip
    more = len(d.questions) - limit
    caption = f"{len(d.questions)} of {len(d.a.dataset.questions)} questions changed"
    if more > 0:
        caption += f"; {more} more not shown (--max-questions, or --format json for all)"
    return Table("questions whose verdict changed", ("question", "slice", "changed", "A returned",
                 "B returned"), tuple(rows), caption + ".")  # fmt: skip


def _side_question(side: Side, v: Verdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    obs = side.observations.get(v.question_id)
    return {
        "outcome": v.outcome,
        "metrics": dict(v.metrics),
        "answer": side.answers.get(v.question_id),
        "memories": None if obs is None else [
            {"id": m.id, "text": m.text, "source_turns": m.source_turns} for m in obs.memories
        ],
    }  # fmt: skip


def diff_dict(d: Diff) -> dict[str, Any]:
    """The diff as JSON (no clock time: the same folders give the same bytes)."""
    names = ("A", "B")
    return {
        "a": side_dict("A", d.a),
        "b": side_dict("B", d.b),
        "dataset": d.a.dataset.key,
        "dataset_version": d.a.dataset.version_label,
        "dataset_sha256": d.a.dataset.checksum,
        "instrument_changed": bool(d.instrument),
        "instrument_changes": [vars_of(c) for c in d.instrument],
        "instrument_unrecorded": list(d.unrecorded),
        "condition_changes": [vars_of(c) for c in d.conditions],
        "correction": "Holm",
        "alpha": d.alpha,
        "deltas": [
            {"metric_a": x.key_a, "metric_b": x.key_b, "a": x.a, "b": x.b,
             **gap_dict(x.gap, names)}
            for x in d.deltas
        ],  # fmt: skip
        "questions": [
            {
                "question_id": qc.question_id,
                "slice": qc.slice,
                "changed": [{"metric": m, "a": x, "b": y} for m, x, y in qc.changed],
                "a": _side_question(d.a, qc.a),
                "b": _side_question(d.b, qc.b),
            }
            for qc in d.questions
        ],
    }


def vars_of(c: Change) -> dict[str, str]:
    return {"field": c.field, "a": c.a, "b": c.b}
