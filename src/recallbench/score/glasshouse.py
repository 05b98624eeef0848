"""Glasshouse v0.1 rule set: the benchmark's own string-mode (``dry``) scoring, per question.

Per question (beside the generic retrieval metrics):

- ``gh_dry``: Glasshouse's dry-mode value (0, 0.5, 1, or a fraction for GATHER), from
  :func:`recallbench.score.glasshouse_rules.grade`; also reported weighted by the axis weights
  (``gh_dry:weighted``). Without an answer model (``answer_generated: false``) the "answer" is
  the returned memories joined, the figure is a development ruler rather than a reported score,
  and abstention questions are ungraded (null with a reason);
- ``gh_evidence``: 1 when any evidence came back (turn ids, or without them the returned text
  containing the gold), 0 when not, null when it cannot be told (unknown evidence, none by
  design, or a record that reports neither turn ids nor memories);
- ``gh_answer_generated``: 1 when an answer model wrote the answer, else 0;
- STALE questions only: ``gh_stale_old`` (the old value given as current) and
  ``gh_stale_reached`` (the new value was among the returned memories, so the question was no
  trap for that system); the report shows the trap count both ways;
- when scoring a predictions file (``options["mode"]``), ``gh_chars_ok``: the record's
  characters checked as Glasshouse's scorer and CI check them: ``chars_returned`` must agree with
  the text of ``memories_returned`` (within max(20, 5%)), and with the corpus present
  (``options["turn_chars"]``) every retrieved turn id must be a turn of the tier and the text
  must not be under half the corpus text of the turns it claims; null when there is nothing to
  check.

A cross-language ``XLING_QUERY`` question asked in English (its recorded query hash is the hash
of ``question_en``) is void: null with that reason, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallbench.contracts import Observation, Question, Verdict, sha256_text
from recallbench.report.aggregate import ALL
from recallbench.report.summary import Table, fmt
from recallbench.score.glasshouse_rules import (
    AXIS_WEIGHTS,
    contains,
    evidence_returned,
    grade,
    is_abstention_question,
    stale_trap_hit,
)

if TYPE_CHECKING:
    from recallbench.datasets.spec import LoadedDataset
    from recallbench.score.score_run import ScoredRun

DRY = "gh_dry"
EVIDENCE = "gh_evidence"
GENERATED = "gh_answer_generated"
STALE_OLD = "gh_stale_old"
STALE_REACHED = "gh_stale_reached"
CHARS_OK = "gh_chars_ok"
EXPORT_DIR = ("exports", "glasshouse")
RULER = (
    "a development ruler, not a reported score: no answer model ran, so the 'answer' is the "
    "returned memories joined (answer_generated: false)"
)
RULE_UNGRADED = "ungraded"
RULE_VOID = "void_axis"
RULE_EVIDENCE_UNKNOWN = "evidence_unknown"
RULE_NO_EVIDENCE = "no_evidence"
RULE_NOT_REPORTED = "not_reported"


# ------------------------------------------------------------------------------ per question


def memory_texts(obs: Observation) -> list[str]:
    return [m.text for m in obs.memories if m.text]


def answer_of(obs: Observation) -> str:
    """The text graded: the model's answer, else a record's answer slot, else memories joined.

    Glasshouse's own no-reader baselines put the retrieved text in ``answer`` with
    ``answer_generated: false``; a recallbench run without an answer model leaves ``answer``
    empty, and the memories are joined with a space as those baselines do.
    """
    if obs.answer_generated:
        return obs.answer or ""
    if obs.answer is not None:
        return obs.answer
    return " ".join(memory_texts(obs))


def returned_text(obs: Observation) -> str:
    """The text that came back: the memories, or the answer slot of a no-reader record."""
    texts = memory_texts(obs)
    if texts:
        return " ".join(texts)
    return "" if obs.answer_generated else (obs.answer or "")


def retrieved_turn_ids(obs: Observation) -> list[str] | None:
    """Turn ids that came back, in order, or ``None`` when the memories name none."""
    if not obs.memories:
        return []
    if all(m.source_turns is None for m in obs.memories):
        return None
    return list(dict.fromkeys(t for m in obs.memories for t in m.source_turns or ()))


def asked_in_english(q: Question, obs: Observation) -> bool:
    """An XLING_QUERY question whose recorded query is its English text (a void ask)."""
    if q.axis != "XLING_QUERY" or not obs.query_sha256:
        return False
    english = q.extra.get("question_en") if q.extra else None
    if not isinstance(english, str) or english == q.text:
        return False
    return obs.query_sha256 == sha256_text(english)


def chars_check(
    obs: Observation, turn_chars: Mapping[str, int] | None
) -> tuple[float | None, str | None]:
    """Glasshouse's character checks of one record: 1 passes, 0 fails (reason), null can't tell."""
    ids = retrieved_turn_ids(obs) if obs.memories else None
    if turn_chars is not None and ids:
        unknown = [t for t in ids if t not in turn_chars]
        if unknown:
            return 0.0, (
                f"chars_check: retrieved turn id(s) {', '.join(unknown[:3])} are not turns of "
                "this tier (turn ids restart in every tier)"
            )
    text = returned_text(obs)
    if not text:
        return None, (
            "chars_check: no returned text to count (none came back, or its memories were "
            "not one text per retrieved turn and an answer model wrote the answer)"
        )
    actual = len(text)
    said = obs.chars_returned
    if abs(said - actual) > max(20, actual * 0.05):
        return 0.0, f"chars_check: chars_returned says {said}, the memories hold {actual}"
    if turn_chars is not None and ids:
        source = sum(turn_chars[t] for t in ids)
        if source and actual < source * 0.5:
            return 0.0, (
                f"chars_check: {actual} characters returned for turns holding {source} in the "
                "corpus (shortened text under the same turn ids)"
            )
    return 1.0, None


def _evidence(q: Question, obs: Observation) -> tuple[float | None, str | None]:
    if q.evidence_turns is None:
        why = q.evidence_unknown_reason or "the dataset gives no evidence turns"
        return None, f"{RULE_EVIDENCE_UNKNOWN}: {why}"
    if not q.evidence_turns:
        return None, (
            f"{RULE_NO_EVIDENCE}: nothing to retrieve by design (expect={q.expect}, axis {q.axis})"
        )
    if not obs.retrieval_reported:
        return None, (
            f"{RULE_NOT_REPORTED}: the record gives neither retrieved_turns nor "
            "memories_returned, so whether evidence came back cannot be told"
        )
    turns = retrieved_turn_ids(obs)
    texts = None if turns is not None else memory_texts(obs)
    hit = evidence_returned(q, turns, texts)
    if hit is None:
        return None, f"{RULE_NOT_REPORTED}: no turn ids and no gold to look for in the text"
    return (1.0 if hit else 0.0), None


class GlasshouseRules:
    name = "glasshouse"
    weighted_metrics: tuple[str, ...] = (DRY,)

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        options: Mapping[str, object],
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        q, obs = question, observation
        metrics: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        answer = answer_of(obs)
        value: float | None
        if asked_in_english(q, obs):
            value = None
            reasons[DRY] = (
                f"{RULE_VOID}: an XLING_QUERY question was asked in question_en instead of "
                "its `question` (query_lang); the axis measures nothing for this run"
            )
        else:
            value = grade(q, answer, answer_generated=obs.answer_generated)
            if value is None:
                reasons[DRY] = (
                    f"{RULE_UNGRADED}: an abstention question (expect={q.expect}, axis "
                    f"{q.axis}) cannot be graded on returned memories without an answer model"
                )
        metrics[DRY] = value
        metrics[EVIDENCE], why = _evidence(q, obs)
        if why:
            reasons[EVIDENCE] = why
        metrics[GENERATED] = 1.0 if obs.answer_generated else 0.0
        if options.get("mode") is not None:  # a predictions file made by anyone
            raw = options.get("turn_chars")
            turn_chars = raw if isinstance(raw, Mapping) else None
            metrics[CHARS_OK], why = chars_check(obs, turn_chars)
            if why and metrics[CHARS_OK] is None:
                reasons[CHARS_OK] = why
        if q.axis == "STALE":
            if value is None:
                metrics[STALE_OLD] = None
                metrics[STALE_REACHED] = None
                reasons[STALE_OLD] = reasons[STALE_REACHED] = reasons[DRY]
            else:
                golds = [g for g in (q.gold, *q.alternates) if g]
                text = returned_text(obs)
                reached = any(contains(text, g) for g in golds)
                metrics[STALE_OLD] = 1.0 if stale_trap_hit(q, answer) else 0.0
                metrics[STALE_REACHED] = 1.0 if reached else 0.0
        return metrics, reasons

    # -------------------------------------------------------------------- optional hooks

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        return summary_tables(scored, dataset)

    def cross_dataset_tables(self, scored: ScoredRun) -> list[Table]:
        return tier_view(scored)

    def write_exports(
        self,
        run_dir: Path,
        dataset: LoadedDataset,
        observations: Iterable[Observation],
        verdicts: Sequence[Verdict],
    ) -> None:
        write_exports(run_dir, dataset, observations, verdicts)

    def external_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        ev = verdict.metrics.get(EVIDENCE)
        return {
            "id": question.id,
            "axis": question.axis,
            "weight": question.weight,
            "value": verdict.metrics.get(DRY),
            "evidence_returned": None if ev is None else bool(ev),
        }

    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return summary_notes(dataset)


# ------------------------------------------------------------------------------ reporting


def question_set_of(ds: LoadedDataset) -> str:
    return str(ds.options.get("questions") or ds.variant)


def _spec_line(scored: ScoredRun, ds: LoadedDataset) -> str:
    spec = scored.manifest.get("spec", {})
    ks = ", ".join(str(k) for k in spec.get("k", ()))
    image = ds.options.get("image_mode", "native")
    return f"k {ks or '-'}; chunking {spec.get('chunking', '-')}; image mode {image}"


def _generated(verdicts: Sequence[Verdict]) -> bool | None:
    flags = {v.metrics.get(GENERATED) for v in verdicts}
    if flags == {1.0}:
        return True
    if flags == {0.0}:
        return False
    return None  # mixed, or nothing


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _cell(value: float | None, n: int) -> str:
    return f"{fmt(value)} (n={n})"


def _axis_rows(verdicts: Sequence[Verdict], axes: Sequence[str]) -> list[tuple[str, ...]]:
    rows = []
    for axis in axes:
        part = [v for v in verdicts if v.slice == axis]
        if not part:
            continue
        rows.append(_figures(axis, part, AXIS_WEIGHTS.get(axis, 1)))
    return rows


def _figures(label: str, part: Sequence[Verdict], weight: float | None) -> tuple[str, ...]:
    graded = [(v, v.metrics[DRY]) for v in part if v.metrics.get(DRY) is not None]
    values = [float(x) for _, x in graded]  # type: ignore[arg-type]
    ungraded = len(part) - len(graded)
    weights = [float(AXIS_WEIGHTS.get(v.slice, 1)) for v, _ in graded]
    points = sum(w * x for w, x in zip(weights, values, strict=True))
    full = sum(weights)
    ev = [float(v.metrics[EVIDENCE]) for v in part if v.metrics.get(EVIDENCE) is not None]  # type: ignore[arg-type]
    chars = [v.chars_returned for v in part]
    return (
        label,
        "-" if weight is None else f"{weight:g}",
        str(len(part)),
        str(ungraded),
        fmt(_mean(values)),
        fmt(points / full if full else None),
        f"{points:.1f}/{full:.0f}",
        _cell(_mean(ev), len(ev)),
        fmt(_mean(chars), 0),
    )


def summary_tables(scored: ScoredRun, ds: LoadedDataset) -> list[Table]:
    """Per system: the per-axis table (plain and weighted), then the STALE trap counts."""
    systems = list(scored.manifest["spec"]["systems"])
    mine = [v for v in scored.verdicts if v.dataset == ds.key]
    axes = list(dict.fromkeys(q.axis for q in ds.questions))
    qfile = ds.options.get("question_file", "")
    out: list[Table] = []
    columns = (
        "axis",
        "weight",
        "questions",
        "ungraded",
        "dry plain",
        "dry weighted",
        "points/max",
        "evidence came back",
        "chars/q",
    )
    for system in systems:
        part = [v for v in mine if v.system == system]
        if not part:
            continue
        rows = _axis_rows(part, axes)
        rows.append(_figures(ALL, part, None))
        generated = _generated(part)
        void = sum(1 for v in part if v.null_reasons.get(DRY, "").startswith(RULE_VOID))
        label = (
            RULER
            if generated is False
            else ("answers written by an answer model" if generated else "answers partly generated")
        )
        caption = (
            f"Glasshouse dry mode (string rules), {label}. dry plain = mean over graded "
            "questions; dry weighted = sum(weight x value) / sum(weight) over the same "
            "questions; ungraded = null with a reason (abstentions without an answer model, "
            "void asks), never 0; evidence came back: n = questions whose evidence can be "
            "checked; chars/q = mean characters returned over all questions. "
            f"{_spec_line(scored, ds)}."
        )
        if void:
            caption += f" VOID: {void} XLING_QUERY question(s) were asked in English."
        out.append(
            Table(
                f"{ds.key} {qfile}: {system}, Glasshouse dry score by axis",
                columns,
                tuple(rows),
                caption,
            )
        )
    stale = _stale_table(ds, mine, systems)
    if stale is not None:
        out.append(stale)
    return out


def _stale_table(
    ds: LoadedDataset, verdicts: Sequence[Verdict], systems: Sequence[str]
) -> Table | None:
    rows = []
    for system in systems:
        part = [v for v in verdicts if v.system == system and STALE_OLD in v.metrics]
        if not part:
            continue
        graded = [v for v in part if v.metrics[STALE_OLD] is not None]
        traps = [v for v in graded if v.metrics.get(STALE_REACHED) == 0.0]
        old_all = sum(1 for v in graded if v.metrics[STALE_OLD] == 1.0)
        old_traps = sum(1 for v in traps if v.metrics[STALE_OLD] == 1.0)
        rows.append(
            (
                system,
                str(len(part)),
                str(len(part) - len(graded)),
                f"{old_all}/{len(graded)}",
                str(len(graded) - len(traps)),
                f"{old_traps}/{len(traps)}",
            )
        )
    if not rows:
        return None
    return Table(
        f"{ds.key}: STALE traps (old value given as current)",
        (
            "system",
            "STALE questions",
            "ungraded",
            "old value, all graded",
            "no trap (new value came back)",
            "old value, actual traps",
        ),
        tuple(rows),
        "A STALE question whose new value came back in the returned memories was no trap for "
        "that system; it is removed from the second count (Glasshouse's precondition check).",
    )


def tier_view(scored: ScoredRun) -> list[Table]:
    """Several tiers in one run: the questions common to all of them, side by side per tier."""
    tiers = [
        ds
        for ds in scored.datasets
        if ds.scoring == "glasshouse" and ds.options.get("questions") == ds.variant
    ]
    if len({ds.variant for ds in tiers}) < 2:
        return []
    common = set.intersection(*({q.id for q in ds.questions} for ds in tiers))
    if not common:
        return []
    systems = list(scored.manifest["spec"]["systems"])
    columns = ("system", "figure", *(ds.variant for ds in tiers))
    rows = []
    for system in systems:
        per_tier = []
        for ds in tiers:
            part = [
                v
                for v in scored.verdicts
                if v.dataset == ds.key and v.system == system and v.question_id in common
            ]
            per_tier.append(_figures(ds.variant, part, None))
        # _figures: label, weight, n, ungraded, plain, weighted, points, evidence, chars
        for name, idx in (
            ("dry plain", 4),
            ("dry weighted", 5),
            ("evidence came back", 7),
            ("chars/q", 8),
            ("ungraded", 3),
        ):
            rows.append((system, name, *(f[idx] for f in per_tier)))
    return [
        Table(
            f"Glasshouse tier view: the {len(common)} questions common to "
            f"{', '.join(ds.variant for ds in tiers)}",
            columns,
            tuple(rows),
            "Same questions, more filler per tier: a figure that falls with the tier is retrieval "
            "failing under volume, one that is low everywhere is the ability missing. Computed "
            "from verdicts.jsonl over those question ids (not rows of metrics.jsonl).",
        )
    ]


def summary_notes(ds: LoadedDataset) -> list[str]:
    mode = ds.options.get("image_mode", "native")
    caption = ds.options.get("caption_model")
    notes = [
        "answers scored by Glasshouse's dry-mode string rules; a run without an answer model "
        "grades the returned memories joined (answer_generated: false): a development ruler, "
        "not a reported score, with abstention questions (expect no_memory, ABSTAIN, "
        "FALSE_MEMORY) ungraded",
        f"image mode {mode}" + (f" (captions by {caption})" if caption else ""),
        "an XLING_QUERY question asked in English is void for that axis (null, reported)",
    ]
    return notes


# -------------------------------------------------------------------------------- exports


def export_path(run_dir: Path, system: str, ds: LoadedDataset) -> Path:
    name = f"{ds.variant}-{question_set_of(ds)}.jsonl"
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
) -> None:
    """``<run dir>/exports/glasshouse/<system>/<tier>-<question set>.jsonl``, question order."""
    by_system: dict[str, dict[str, Observation]] = {}
    for o in observations:
        if o.dataset == ds.key:
            by_system.setdefault(o.system, {})[o.question_id] = o
    order = [q.id for q in ds.questions]
    for system in dict.fromkeys(v.system for v in verdicts):
        obs = by_system.get(system, {})
        path = export_path(run_dir, system, ds)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for qid in order:
                if qid in obs:
                    fh.write(json.dumps(export_record(obs[qid]), ensure_ascii=False) + "\n")
        tmp.replace(path)


__all__ = [
    "CHARS_OK",
    "DRY",
    "EVIDENCE",
    "GENERATED",
    "STALE_OLD",
    "STALE_REACHED",
    "GlasshouseRules",
    "answer_of",
    "chars_check",
    "export_path",
    "export_record",
    "is_abstention_question",
    "returned_text",
    "summary_tables",
    "tier_view",
    "write_exports",
]
