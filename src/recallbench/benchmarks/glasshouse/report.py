"""Glasshouse in the report: per-axis dry-mode tables (plain and weighted), STALE traps, the
tier view across tiers of one run, and the notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recallbench.benchmarks.glasshouse.export import write_exports
from recallbench.benchmarks.glasshouse.load import question_files
from recallbench.benchmarks.glasshouse.metrics import AXIS_WEIGHTS
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.benchmarks.glasshouse.rules import (
    DRY,
    EVIDENCE,
    GENERATED,
    RULE_VOID,
    RULER,
    STALE_OLD,
    STALE_REACHED,
)
from recallbench.benchmarks.glasshouse.submission import write_submissions
from recallbench.contracts import ALL, MetricRow, Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.report.hooks import BenchmarkReport
from recallbench.report.tables import Table, fmt
from recallbench.results.manifest import RunManifest
from recallbench.results.scored import ScoredRun


def options_of(ds: LoadedDataset) -> GlasshouseOptions:
    opts = ds.options
    return opts if isinstance(opts, GlasshouseOptions) else GlasshouseOptions(opts.image_mode)


def question_set_of(ds: LoadedDataset) -> str:
    return str(options_of(ds).questions or ds.variant)


def question_file_of(ds: LoadedDataset) -> str:
    label = question_set_of(ds)
    return question_files(ds.variant, "tier" if label == ds.variant else label)[0]


def _spec_line(scored: ScoredRun, ds: LoadedDataset) -> str:
    spec = scored.spec
    ks = ", ".join(str(k) for k in spec.k)
    if scored.predictions is not None:  # no chunking and no images: a file made elsewhere
        return f"k {ks or '-'}; scored from the predictions file {scored.predictions.name}"
    return f"k {ks or '-'}; chunking {spec.chunking}; image mode {ds.options.image_mode}"


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
        rows.append(_figures(axis, part, AXIS_WEIGHTS.get(axis, 1)).cells())
    return rows


@dataclass(frozen=True, slots=True)
class Figures:
    """One row of the per-axis table, each figure already formatted."""

    label: str
    weight: str
    questions: str
    ungraded: str
    plain: str
    weighted: str
    points: str
    evidence: str
    chars: str

    def cells(self) -> tuple[str, ...]:
        return (
            self.label,
            self.weight,
            self.questions,
            self.ungraded,
            self.plain,
            self.weighted,
            self.points,
            self.evidence,
            self.chars,
        )


def _figures(label: str, part: Sequence[Verdict], weight: float | None) -> Figures:
    graded = [(v, v.metrics[DRY]) for v in part if v.metrics.get(DRY) is not None]
    values = [float(x) for _, x in graded]  # type: ignore[arg-type]
    ungraded = len(part) - len(graded)
    weights = [float(AXIS_WEIGHTS.get(v.slice, 1)) for v, _ in graded]
    points = sum(w * x for w, x in zip(weights, values, strict=True))
    full = sum(weights)
    ev = [float(v.metrics[EVIDENCE]) for v in part if v.metrics.get(EVIDENCE) is not None]  # type: ignore[arg-type]
    chars = [v.chars_returned for v in part]
    return Figures(
        label=label,
        weight="-" if weight is None else f"{weight:g}",
        questions=str(len(part)),
        ungraded=str(ungraded),
        plain=fmt(_mean(values)),
        weighted=fmt(points / full if full else None),
        points=f"{points:.1f}/{full:.0f}",
        evidence=_cell(_mean(ev), len(ev)),
        chars=fmt(_mean(chars), 0),
    )


def summary_tables(scored: ScoredRun, ds: LoadedDataset) -> list[Table]:
    """Per system: the per-axis table (plain and weighted), then the STALE trap counts."""
    systems = list(scored.systems)
    mine = [v for v in scored.verdicts if v.dataset == ds.key]
    axes = list(dict.fromkeys(q.axis for q in ds.questions))
    qfile = question_file_of(ds)
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
        rows.append(_figures(ALL, part, None).cells())
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


def tier_view(scored: ScoredRun, datasets: Sequence[LoadedDataset]) -> list[Table]:
    """Several tiers in one run: the questions common to all of them, side by side per tier."""
    tiers = [ds for ds in datasets if question_set_of(ds) == ds.variant]
    if len({ds.variant for ds in tiers}) < 2:
        return []
    common = set.intersection(*({q.id for q in ds.questions} for ds in tiers))
    if not common:
        return []
    systems = list(scored.systems)
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
        for name, field in (
            ("dry plain", "plain"),
            ("dry weighted", "weighted"),
            ("evidence came back", "evidence"),
            ("chars/q", "chars"),
            ("ungraded", "ungraded"),
        ):
            rows.append((system, name, *(getattr(f, field) for f in per_tier)))
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
    mode = ds.options.image_mode
    caption = options_of(ds).caption_model
    notes = [
        "answers scored by Glasshouse's dry-mode string rules; a run without an answer model "
        "grades the returned memories joined (answer_generated: false): a development ruler, "
        "not a reported score, with abstention questions (expect no_memory, ABSTAIN, "
        "FALSE_MEMORY) ungraded",
        f"image mode {mode}" + (f" (captions by {caption})" if caption else ""),
        "an XLING_QUERY question asked in English is void for that axis (null, reported)",
    ]
    return notes


class GlasshouseReport(BenchmarkReport):
    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        return summary_tables(scored, dataset)

    def cross_dataset_tables(
        self, scored: ScoredRun, datasets: Sequence[LoadedDataset]
    ) -> list[Table]:
        return tier_view(scored, datasets)

    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return summary_notes(dataset)

    export_formats = ("glasshouse",)

    def write_exports(
        self,
        run_dir: Path,
        dataset: LoadedDataset,
        observations: Sequence[Observation],
        verdicts: Sequence[Verdict],
    ) -> None:
        write_exports(run_dir, dataset, observations, verdicts, question_set_of(dataset))

    def write_submission(
        self,
        run_dir: Path,
        manifest: RunManifest,
        dataset: LoadedDataset,
        verdicts: Sequence[Verdict],
        rows: Sequence[MetricRow],
    ) -> None:
        """Glasshouse's ``submission.json`` per system, in memory and answer mode
        (:mod:`recallbench.benchmarks.glasshouse.submission`)."""
        write_submissions(run_dir, manifest, dataset, question_set_of(dataset), verdicts, rows)
