"""The figures of a report, as data both renderers draw (``report.md`` and ``report.html``).

Every value is a row of some run's ``metrics.jsonl`` (with its interval and denominator) or is
counted here from the per-question records, and then its caption says so: the characters of
the first k memories (the k sweep) and the latency distributions come from
``observations.jsonl``. A series is one system of one run; with several runs its label names
the run. A null figure stays null with its reason; it is never drawn as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recallbench.contracts import ALL, MetricRow, Observation
from recallbench.report.records import ReportHints, RunRecords

RETRIEVAL = "evidence_recall"
SPEED_SAMPLE = "speed sample"


@dataclass(frozen=True)
class Series:
    run_id: str
    system: str
    label: str


@dataclass(frozen=True)
class Figure:
    """A metric a report charts per slice: ``metric`` as written in rows, ``k`` or None."""

    metric: str
    k: int | None
    label: str

    @property
    def key(self) -> str:
        return self.metric if self.k is None else f"{self.metric}@{self.k}"


@dataclass(frozen=True)
class SliceCell:
    series: int
    row: MetricRow | None


@dataclass(frozen=True)
class SliceFigure:
    dataset: str
    figure: Figure
    slices: tuple[str, ...]
    cells: tuple[tuple[SliceCell, ...], ...]
    """Per slice (in ``slices`` order), one cell per series that ran the dataset."""


@dataclass(frozen=True)
class SweepPoint:
    k: int | None
    """None: a system that ignores k (one point: everything it returned)."""
    chars: float
    row: MetricRow | None
    questions: int


@dataclass(frozen=True)
class Sweep:
    dataset: str
    series: int
    points: tuple[SweepPoint, ...]


@dataclass(frozen=True)
class TierPoint:
    variant: str
    dataset: str
    row: MetricRow | None


@dataclass(frozen=True)
class TierCurve:
    name: str
    figure: Figure
    series: int
    points: tuple[TierPoint, ...]


@dataclass(frozen=True)
class Latency:
    dataset: str
    series: int
    n: int
    """Usable searches timed (failed searches and nulls left out)."""
    low: float
    q1: float
    median: float
    q3: float
    p95: float
    high: float
    part: str = ""
    """``""`` for every usable search; ``speed sample`` for the searches of the run's speed
    sample (``--speed-sample``: searched alone), drawn beside them."""


def series_of(runs: Sequence[RunRecords]) -> list[Series]:
    """A series per system of each run, in run order then the run's system order (the
    condition rows of answer modes after the systems)."""
    many = len(runs) > 1
    out = []
    for run in runs:
        systems = list(run.manifest.spec.systems)
        systems += [v.system for v in run.verdicts if v.system not in systems]
        for system in dict.fromkeys(systems):
            label = f"{system} ({run.run_id})" if many else system
            out.append(Series(run.run_id, system, label))
    return out


def dataset_keys(runs: Sequence[RunRecords]) -> list[str]:
    return list(dict.fromkeys(d.key for run in runs for d in run.manifest.datasets))


def _rows(runs: Sequence[RunRecords]) -> dict[tuple[str, str, str, str, str, int | None],
                                              MetricRow]:
    return {
        (r.run_id, r.dataset, r.system, r.slice, r.metric, r.k): r
        for run in runs
        for r in run.metrics
    }


def figures_of(runs: Sequence[RunRecords], key: str, hints: ReportHints) -> list[Figure]:
    """What to chart per slice for one dataset: the judged metrics of a memory or answer run,
    the rule set's answer figures (those shown per slice), then evidence recall at the largest
    k; only those some run holds a valued row of."""
    wanted: list[Figure] = []
    kmax = 0
    for run in runs:
        record = run.manifest.dataset(key)
        if record is None:
            continue
        kmax = max(kmax, run.manifest.spec.k_max)
        answering = (run.manifest.answering.get("datasets") or {}).get(key) or {}
        wanted += [Figure(m, None, m) for m in answering.get("metrics") or ()]
        wanted += [
            Figure(f.metric, None, f.label)
            for f in hints.figures.get(record.name, ())
            if f.per_slice
        ]
    wanted.append(Figure(RETRIEVAL, kmax, f"evidence recall@{kmax}"))
    valued = {
        (r.metric, r.k) for run in runs for r in run.metrics
        if r.dataset == key and r.value is not None
    }
    return [f for f in dict.fromkeys(wanted) if (f.metric, f.k) in valued]


def slice_figures(
    runs: Sequence[RunRecords], series: Sequence[Series], hints: ReportHints
) -> list[SliceFigure]:
    """Per dataset and figure: every slice (over all questions first, then the slices in the
    order the rows were written, which is the benchmark's), a cell per series."""
    rows = _rows(runs)
    out = []
    for key in dataset_keys(runs):
        done = {(v.run_id, v.system) for run in runs for v in run.verdicts if v.dataset == key}
        ran = [i for i, s in enumerate(series) if (s.run_id, s.system) in done]
        for figure in figures_of(runs, key, hints):
            slices = list(dict.fromkeys(
                r.slice for run in runs for r in run.metrics
                if r.dataset == key and r.metric == figure.metric and r.k == figure.k
                and r.slice != ALL
            ))
            cells = tuple(
                tuple(
                    SliceCell(i, rows.get((series[i].run_id, key, series[i].system, s,
                                            figure.metric, figure.k)))
                    for i in ran
                )
                for s in [ALL, *slices]
            )
            out.append(SliceFigure(key, figure, (ALL, *slices), cells))
    return out


def _by_series(runs: Sequence[RunRecords]) -> dict[tuple[str, str, str], list[Observation]]:
    out: dict[tuple[str, str, str], list[Observation]] = {}
    for run in runs:
        for obs in run.observations:
            out.setdefault((run.run_id, obs.dataset, obs.system), []).append(obs)
    return out


def sweeps(runs: Sequence[RunRecords], series: Sequence[Series]) -> list[Sweep]:
    """Evidence recall against characters returned, a point per k of the run: the characters
    of the first k memories' texts, averaged over every question asked (failed searches count
    0), against the ``evidence_recall@k`` row over all questions. A system that ignores k gives
    one point: everything it returned (``chars_returned``) against
    ``evidence_recall_all_returned``."""
    rows = _rows(runs)
    observed = _by_series(runs)
    by_run = {run.run_id: run for run in runs}
    out = []
    for key in dataset_keys(runs):
        for i, s in enumerate(series):
            obs = observed.get((s.run_id, key, s.system))
            if not obs:
                continue
            run = by_run[s.run_id]
            record = next((r for r in run.manifest.systems if r.name == s.system), None)
            ignores = bool(((record.capabilities if record else None) or {}).get("ignores_k"))
            if ignores:
                chars = sum(o.chars_returned for o in obs) / len(obs)
                row = rows.get((s.run_id, key, s.system, ALL, "evidence_recall_all_returned",
                                None))
                points = (SweepPoint(None, chars, row, len(obs)),)
            else:
                points = tuple(
                    SweepPoint(
                        k,
                        sum(sum(len(m.text) for m in o.memories[:k]) for o in obs) / len(obs),
                        rows.get((s.run_id, key, s.system, ALL, RETRIEVAL, k)),
                        len(obs),
                    )
                    for k in run.manifest.spec.k
                )
            if any(p.row is not None and p.row.value is not None for p in points):
                out.append(Sweep(key, i, points))
    return out


def tier_curves(
    runs: Sequence[RunRecords], series: Sequence[Series], hints: ReportHints
) -> list[TierCurve]:
    """For a benchmark of which two or more variants (tiers) ran: per series, the first figure
    of each variant over all its questions, variants in the benchmark's own order."""
    rows = _rows(runs)
    records = {d.key: d for run in runs for d in run.manifest.datasets}
    by_name: dict[str, list[str]] = {}
    for key, d in records.items():
        by_name.setdefault(d.name, []).append(key)
    out = []
    for name, keys in by_name.items():
        if len({records[k].variant for k in keys}) < 2:
            continue
        order = list(hints.variants.get(name, ()))
        ran = list(keys)
        keys = sorted(ran, key=lambda k: (
            order.index(records[k].variant) if records[k].variant in order else len(order),
            ran.index(k),
        ))
        shared = [figures_of(runs, k, hints) for k in keys]
        common = [f for f in shared[0] if all(f in other for other in shared[1:])]
        if not common:
            continue
        figure = common[0]
        for i, s in enumerate(series):
            points = tuple(
                TierPoint(records[k].variant, k,
                          rows.get((s.run_id, k, s.system, ALL, figure.metric, figure.k)))
                for k in keys
            )
            if sum(p.row is not None for p in points) >= 2:
                out.append(TierCurve(name, figure, i, points))
    return out


def latencies(runs: Sequence[RunRecords], series: Sequence[Series]) -> list[Latency]:
    """The distribution of search latency per dataset and series, over usable searches with a
    measured latency (the population of the ``latency_ms_*`` rows), then, where the run had a
    speed sample, over the searches of that sample alone."""
    observed = _by_series(runs)
    out = []
    for key in dataset_keys(runs):
        for i, s in enumerate(series):
            timed = [
                o for o in observed.get((s.run_id, key, s.system), ())
                if o.outcome == "usable" and o.latency_ms is not None
            ]
            sampled = [o for o in timed if o.speed_sample]
            for part, chosen in (("", timed), (SPEED_SAMPLE, sampled)):
                if not chosen:
                    continue
                values = np.asarray([o.latency_ms for o in chosen], dtype=float)
                q = [float(v) for v in np.percentile(values, [0, 25, 50, 75, 95, 100])]
                out.append(Latency(key, i, len(chosen), *q, part=part))
    return out
