"""Verdicts (and, for timings, observations) -> long-format metric rows with denominators.

Every row is recomputable from ``verdicts.jsonl`` (and ``observations.jsonl`` / ``ingest.jsonl``
for timing rows): a mean over the per-question values that are not null; nulls are excluded,
counted in ``n_excluded`` and named by their rule. Confidence intervals are a seeded percentile
bootstrap (1,000 draws, 95%) that resamples haystack groups when the dataset has at least 20, and
questions stratified by slice otherwise (:mod:`recallbench.score.stats`); every row with an
interval names its unit, draws and seed, and the same verdicts always give the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from recallbench.contracts import ALL, IngestRecord, MetricRow, Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.score.metrics import MetricKey
from recallbench.score.stats import Interval, bootstrap_interval, resampling_unit, seed_of

DENOM_WITH_FAILURES = "questions_scored (failed searches count as misses)"
DENOM_ALL = "questions_asked"
DENOM_USABLE = "usable_searches (failed searches excluded)"
NOT_ASKED = "not_asked"
"""The exclusion rule of a question an incomplete run never asked (scored with --incomplete)."""
INCOMPLETE_NOTE = " [incomplete run]"


def _rule_summary(reasons: Iterable[str]) -> str | None:
    counts: dict[str, int] = {}
    for r in reasons:
        rule = r.split(":", 1)[0]
        counts[rule] = counts.get(rule, 0) + 1
    return "; ".join(f"{rule} ({n})" for rule, n in sorted(counts.items())) or None


@dataclass(frozen=True, slots=True)
class _Base:
    run_id: str
    dataset: str
    dataset_version: str
    dataset_sha256: str
    system: str


@dataclass(frozen=True, slots=True)
class Resampling:
    """How one dataset's intervals are drawn: each question's haystack group, and the unit
    (:func:`recallbench.score.stats.resampling_unit` of the dataset's groups), the same for
    every row of the dataset."""

    group_of: Mapping[str, str]
    unit: str

    @classmethod
    def of(cls, dataset: LoadedDataset) -> Resampling:
        group_of = {q.id: q.group for q in dataset.questions}
        return cls(group_of, resampling_unit(list(group_of.values())))

    def interval(
        self, verdicts: Sequence[Verdict], values: Sequence[float], label: str
    ) -> Interval | None:
        """The interval of the mean of ``values`` (one per verdict), seeded by ``label``."""
        groups = [self.group_of.get(v.question_id, v.question_id) for v in verdicts]
        slices = [v.slice for v in verdicts]
        return bootstrap_interval(values, groups, slices, seed=seed_of(label), unit=self.unit)


def _row(
    base: _Base,
    slice_: str,
    metric: str,
    k: int | None,
    value: float | None,
    denominator_name: str,
    denominator: int,
    n_excluded: int = 0,
    exclusion_rule: str | None = None,
    null_reason: str | None = None,
    ci: Interval | None = None,
) -> MetricRow:
    return MetricRow(
        run_id=base.run_id,
        dataset=base.dataset,
        dataset_version=base.dataset_version,
        dataset_sha256=base.dataset_sha256,
        system=base.system,
        slice=slice_,
        metric=metric,
        k=k,
        value=None if value is None else round(value, 6),
        denominator_name=denominator_name,
        denominator=denominator,
        n_excluded=n_excluded,
        exclusion_rule=exclusion_rule,
        null_reason=null_reason,
        ci_low=None if ci is None else ci.low,
        ci_high=None if ci is None else ci.high,
        ci_unit=None if ci is None else ci.unit,
        ci_iterations=None if ci is None else ci.iterations,
        ci_seed=None if ci is None else ci.seed,
    )


def _mean_rows(
    base: _Base,
    slice_: str,
    verdicts: Sequence[Verdict],
    weights: dict[str, float],
    weighted: set[str],
    resampling: Resampling | None,
) -> list[MetricRow]:
    rows: list[MetricRow] = []
    keys = sorted({k for v in verdicts for k in v.metrics})
    for key in keys:
        parsed = MetricKey.parse(key)
        metric, k = parsed.metric, parsed.k
        present = [v for v in verdicts if key in v.metrics]
        scored = [v for v in present if v.metrics[key] is not None]
        nulls = [v.null_reasons.get(key, "unspecified") for v in present if v.metrics[key] is None]
        rule = _rule_summary(nulls)
        if not scored:
            rows.append(
                _row(
                    base,
                    slice_,
                    metric,
                    k,
                    None,
                    DENOM_WITH_FAILURES,
                    0,
                    len(nulls),
                    rule,
                    null_reason=nulls[0] if nulls else "no question applies",
                )
            )
            continue
        values = [float(v.metrics[key]) for v in scored]  # type: ignore[arg-type]
        label = f"{base.dataset}|{base.system}|{slice_}|{key}"
        rows.append(
            _row(
                base,
                slice_,
                metric,
                k,
                sum(values) / len(values),
                DENOM_WITH_FAILURES,
                len(values),
                len(nulls),
                rule,
                ci=resampling.interval(scored, values, label) if resampling else None,
            )
        )
        if metric in weighted:
            w = [weights.get(v.question_id, 1.0) for v in scored]
            total = sum(w)
            value = sum(wi * x for wi, x in zip(w, values, strict=True)) / total if total else None
            rows.append(
                _row(
                    base,
                    slice_,
                    f"{metric}:weighted",
                    k,
                    value,
                    "questions_scored (weighted by question weight)",
                    len(values),
                    len(nulls),
                    rule,
                )
            )
    n = len(verdicts)
    chars = [v.chars_returned for v in verdicts]
    rows.append(
        _row(base, slice_, "chars_returned_mean", None, sum(chars) / n if n else None, DENOM_ALL, n)
    )
    rows.append(
        _row(
            base,
            slice_,
            "memories_returned_mean",
            None,
            sum(v.n_returned for v in verdicts) / n if n else None,
            DENOM_ALL,
            n,
        )
    )
    for outcome in ("error", "unusable"):
        count = sum(1 for v in verdicts if v.outcome == outcome)
        rows.append(
            _row(base, slice_, f"{outcome}_rate", None, count / n if n else None, DENOM_ALL, n)
        )
    return rows


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


DENOM_TIMED = "timed_attempts (usable searches; failed searches excluded)"
LATENCY_POINTS: tuple[tuple[str, float], ...] = (
    ("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("max", 100.0),
)  # fmt: skip
"""The latency rows after ``latency_ms_p50`` and ``latency_ms_p95`` (kept as they were):
``<figure>_p90``, ``_p99`` and ``_max``, over all questions and per slice."""
NO_NETWORK = "no_network: the run was given no network file for this system's host (--network)"


def _latency_rows(
    base: _Base,
    slice_: str,
    observations: Sequence[Observation],
    figure: str,
    points: Sequence[tuple[str, float]],
) -> list[MetricRow]:
    """``<figure>_<point>`` rows (numpy's linear percentiles; ``max`` the largest) over the
    usable searches that carry ``figure``; the failed ones are excluded and counted. For
    ``latency_minus_rtt_ms`` a usable search without it (no network file) is a null with
    :data:`NO_NETWORK`."""
    values = [
        getattr(o, figure) for o in observations
        if o.outcome == "usable" and getattr(o, figure, None) is not None
    ]  # fmt: skip
    failed = sum(1 for o in observations if o.outcome != "usable")
    excl = f"failed_search ({failed})" if failed else None
    usable = sum(1 for o in observations if o.outcome == "usable")
    if values:
        reason = None
    elif figure == "latency_minus_rtt_ms" and usable:
        reason = NO_NETWORK
    else:
        reason = "no usable search to time"
    return [
        _row(base, slice_, f"{figure}_{name}", None,
             _percentile(values, q) if values else None, DENOM_TIMED, len(values), failed, excl,
             null_reason=reason)
        for name, q in points
    ]  # fmt: skip


def latency_rows(
    base: _Base,
    observations: Sequence[Observation],
    slice_of: Mapping[str, str],
    slice_order: Sequence[str],
) -> list[MetricRow]:
    """Per system: ``latency_ms`` p90, p99 and max over all questions, then p50, p90, p95,
    p99 and max per slice (the ``all`` p50 and p95 are written by :func:`_timing_rows`); when
    any search carries it (``run --network``), the same for ``latency_minus_rtt_ms`` (latency
    with one round trip removed) and the ``network_ms`` subtracted (p50). The denominator is
    :data:`DENOM_TIMED`."""
    extra = [p for p in LATENCY_POINTS if p[0] not in ("p50", "p95")]
    rows = _latency_rows(base, ALL, observations, "latency_ms", extra)
    networked = any(getattr(o, "latency_minus_rtt_ms", None) is not None for o in observations)
    if networked:
        rows += _latency_rows(base, ALL, observations, "latency_minus_rtt_ms", LATENCY_POINTS)
        rows += _latency_rows(base, ALL, observations, "network_ms", LATENCY_POINTS[:1])
    for slice_ in slice_order:
        if slice_ == ALL:
            continue
        part = [o for o in observations if slice_of.get(o.question_id) == slice_]
        if not part:
            continue
        rows += _latency_rows(base, slice_, part, "latency_ms", LATENCY_POINTS)
        if networked:
            rows += _latency_rows(base, slice_, part, "latency_minus_rtt_ms", LATENCY_POINTS)
    return rows


def _timing_rows(
    base: _Base, observations: Sequence[Observation], ingests: Sequence[IngestRecord]
) -> list[MetricRow]:
    rows: list[MetricRow] = []
    lat = [o.latency_ms for o in observations if o.outcome == "usable" and o.latency_ms is not None]
    failed = sum(1 for o in observations if o.outcome != "usable")
    excl = f"failed_search ({failed})" if failed else None
    for name, q in (("latency_ms_p50", 50.0), ("latency_ms_p95", 95.0)):
        if lat:
            rows.append(
                _row(
                    base, ALL, name, None, _percentile(lat, q), DENOM_USABLE, len(lat), failed, excl
                )
            )
        else:
            rows.append(
                _row(
                    base,
                    ALL,
                    name,
                    None,
                    None,
                    DENOM_USABLE,
                    0,
                    failed,
                    excl,
                    null_reason="no usable search to time",
                )
            )
    ok = [i for i in ingests if i.outcome == "usable" and i.ingest_ms is not None]
    bad = len(ingests) - len(ok)
    rows.append(
        _row(
            base,
            ALL,
            "ingest_ms_total",
            None,
            sum(i.ingest_ms for i in ok) if ok else None,  # type: ignore[misc]
            "haystack_groups_ingested",
            len(ok),
            bad,
            f"failed_ingest ({bad})" if bad else None,
            null_reason=None if ok else "no successful ingest",
        )
    )
    rows.extend(_ingest_split_rows(base, ok, bad))
    sessions = sum(i.sessions for i in ok)
    rows.append(
        _row(base, ALL, "ingest_ms_per_session", None,
             sum(i.ingest_ms for i in ok) / sessions if ok and sessions else None,  # type: ignore[misc]
             "sessions_ingested", sessions, bad, f"failed_ingest ({bad})" if bad else None,
             null_reason=None if ok and sessions else "no successful ingest")
    )  # fmt: skip
    turns = sum(i.turns for i in ok)
    total_ms = sum(i.ingest_ms for i in ok)  # type: ignore[misc]
    rows.append(
        _row(
            base,
            ALL,
            "ingest_turns_per_s",
            None,
            turns / (total_ms / 1000.0) if ok and total_ms > 0 else None,
            "haystack_groups_ingested",
            len(ok),
            bad,
            null_reason=None if ok and total_ms > 0 else "no successful ingest",
        )
    )
    return rows


NO_FINISH_HOOK = "no_finish_hook: the system declares no finish_ingest hook, so no wait is timed"


def _ingest_split_rows(base: _Base, ok: Sequence[IngestRecord], bad: int) -> list[MetricRow]:
    """``ingest_ms_total`` split in two over the same usable ingests: the time of the
    ``finish_ingest`` hook (``ingest_index_wait_ms_total``: building an index, or waiting for a
    hosted service to finish indexing) and the rest (``ingest_add_ms_total``: ``reset`` and
    every ``add``). Without the hook the wait is null (:data:`NO_FINISH_HOOK`), never 0."""
    excl = f"failed_ingest ({bad})" if bad else None
    if not ok:
        return [
            _row(base, ALL, name, None, None, "haystack_groups_ingested", 0, bad, excl,
                 null_reason="no successful ingest")
            for name in ("ingest_add_ms_total", "ingest_index_wait_ms_total")
        ]  # fmt: skip
    waits = [i.finish_ms for i in ok if i.finish_ms is not None]
    wait = sum(waits) if waits else None
    add = sum(i.ingest_ms for i in ok) - (wait or 0.0)  # type: ignore[misc]
    return [
        _row(base, ALL, "ingest_add_ms_total", None, add, "haystack_groups_ingested", len(ok),
             bad, excl),
        _row(base, ALL, "ingest_index_wait_ms_total", None, wait, "haystack_groups_ingested",
             len(ok), bad, excl, null_reason=None if waits else NO_FINISH_HOOK),
    ]  # fmt: skip


def _merge_rule(rule: str | None, name: str, n: int) -> str:
    parts = [p for p in (rule or "").split("; ") if p]
    return "; ".join(sorted([*parts, f"{name} ({n})"]))


def mark_incomplete(row: MetricRow, n: int) -> MetricRow:
    """``row`` with ``n`` unasked questions excluded under :data:`NOT_ASKED` and its
    denominator name marked ``[incomplete run]`` (only the mark when ``n`` is 0: every question
    of its slice was asked); a null value without a reason gets one."""
    if n == 0:
        return dataclasses.replace(row, denominator_name=row.denominator_name + INCOMPLETE_NOTE)
    reason = row.null_reason
    if row.value is None and reason is None:
        reason = f"{NOT_ASKED}: no question here was asked (incomplete run)"
    return dataclasses.replace(
        row,
        denominator_name=row.denominator_name + INCOMPLETE_NOTE,
        n_excluded=row.n_excluded + n,
        exclusion_rule=_merge_rule(row.exclusion_rule, NOT_ASKED, n),
        null_reason=reason,
    )


def aggregate(
    dataset: LoadedDataset,
    verdicts: Sequence[Verdict],
    observations: Sequence[Observation],
    ingests: Sequence[IngestRecord],
    systems: Sequence[str],
    run_id: str,
    weighted_metrics: Sequence[str] = (),
    *,
    timing: bool = True,
    not_asked: Mapping[str, Mapping[str, int]] | None = None,
    intervals: bool = True,
) -> list[MetricRow]:
    """Metric rows of one dataset, per system: every slice's means (with ``<metric>:weighted``
    rows for ``weighted_metrics``, the rule set's), counts, rates and, unless ``timing`` is
    False (a predictions file, which records no timing recallbench measured), timing rows.

    ``not_asked`` (``{system: {slice: n}}``, an incomplete run scored with ``--incomplete``):
    every row of such a system counts its slice's unasked questions (the ``all`` count for
    timing rows) as excluded under :data:`NOT_ASKED` (:func:`mark_incomplete`), never as misses;
    a slice none of whose questions was asked still gets its count rows. ``intervals=False``
    leaves the bootstrap intervals out (a run's floor controls, shown without them)."""
    missing_of = not_asked or {}
    weights = {q.id: q.weight for q in dataset.questions}
    weighted = set(weighted_metrics)
    slice_order = list(dict.fromkeys(q.axis or ALL for q in dataset.questions))
    slice_of = {q.id: q.axis or ALL for q in dataset.questions}
    resampling = Resampling.of(dataset) if intervals else None
    rows: list[MetricRow] = []
    for system in systems:
        base = _Base(run_id, dataset.key, dataset.version_label, dataset.checksum, system)
        mine = [v for v in verdicts if v.system == system and v.dataset == dataset.key]
        unasked = missing_of.get(system, {})
        mine_rows = _mean_rows(base, ALL, mine, weights, weighted, resampling)
        for slice_ in slice_order:
            if slice_ == ALL:
                continue
            part = [v for v in mine if v.slice == slice_]
            if part or unasked.get(slice_):
                mine_rows.extend(_mean_rows(base, slice_, part, weights, weighted, resampling))
        obs = [o for o in observations if o.system == system and o.dataset == dataset.key]
        ing = [i for i in ingests if i.system == system and i.dataset == dataset.key]
        if timing:
            mine_rows.extend(_timing_rows(base, obs, ing))
            mine_rows.extend(latency_rows(base, obs, slice_of, slice_order))
        if unasked:
            total = unasked.get(ALL, 0)
            mine_rows = [
                mark_incomplete(r, total if r.slice == ALL else unasked.get(r.slice, 0))
                for r in mine_rows
            ]
        rows.extend(mine_rows)
    return rows


DENOM_ANSWERED = "usable_answers (reader errors and failed searches excluded)"
DENOM_JUDGED = "judgements_recorded"


def _mean_of(values: Sequence[float | int | None]) -> tuple[float | None, int, int]:
    got = [float(v) for v in values if v is not None]
    return (sum(got) / len(got) if got else None), len(got), len(values) - len(got)


def answering_rows(
    dataset: LoadedDataset, verdicts: Sequence[Verdict], systems: Sequence[str], run_id: str
) -> list[MetricRow]:
    """The accounting rows of a memory- or answer-mode run, per system, over all questions:
    unparsed judge replies (the official rule's default applied), judge and reader errors,
    retries-free token figures from the API's usage fields, memory tokens (reader prompt minus
    the empty-prompt baseline) beside characters returned, cost and cost per usable answer.
    Every figure names its denominator; what was not measured (no usage fields, no price) is
    null with a reason, never 0."""
    rows: list[MetricRow] = []
    for system in systems:
        base = _Base(run_id, dataset.key, dataset.version_label, dataset.checksum, system)
        mine = [v for v in verdicts if v.system == system and v.answering]
        if not mine:
            continue
        judged = [j for v in mine for j in v.answering.get("judgements", {}).values()]
        n_j = len(judged)
        unparsed = sum(1 for j in judged if j.get("unparsed"))
        errors = sum(1 for j in judged if j.get("outcome") == "judge_error")
        rows.append(_row(base, ALL, "judge_unparsed_rate", None,
                         unparsed / n_j if n_j else None, DENOM_JUDGED, n_j,
                         null_reason=None if n_j else "no judgement recorded"))
        rows.append(_row(base, ALL, "judge_error_count", None, float(errors), DENOM_JUDGED, n_j))
        retries = sum(int(j.get("retries") or 0) for j in judged) + sum(
            int(v.answering.get("reader_retries") or 0) for v in mine
        )
        rows.append(_row(base, ALL, "llm_retry_count", None, float(retries),
                         "calls made (reader and judge; a retry is a try after the first)",
                         n_j + sum(1 for v in mine if v.answering.get("reader_prompt_sha256"))))
        answer_mode = any(v.answering.get("mode") == "answer" for v in mine)
        usd: list[float | None] = [j.get("billed_usd") for j in judged]
        if answer_mode:
            outcomes = [v.answering.get("answer_outcome") for v in mine]
            answered = [v for v in mine if v.answering.get("answer_outcome") == "answered"]
            rows.append(_row(base, ALL, "reader_error_count", None,
                             float(outcomes.count("reader_error")), DENOM_ALL, len(mine)))
            for name, field in (
                ("reader_prompt_tokens_mean", "reader_prompt_tokens"),
                ("reader_completion_tokens_mean", "reader_completion_tokens"),
                ("memory_tokens_mean", "memory_tokens"),
                ("memory_chars_mean", "memory_chars"),
            ):
                value, n, missing = _mean_of([v.answering.get(field) for v in answered])
                rows.append(_row(
                    base, ALL, name, None, value, DENOM_ANSWERED, n, missing,
                    "not_reported (the API gave no usage)" if missing else None,
                    null_reason=None if value is not None else (
                        "not_reported: no usable answer carries it" if not answered else
                        "not_reported: the API gave no usage fields"
                    ),
                ))
            usd += [v.answering.get("reader_billed_usd") for v in answered]
            priced = all(u is not None for u in usd) and bool(usd)
            total = sum(u for u in usd if u is not None) if priced else None
            why = None if priced else "no_price: a call has no price (give --prices FILE)"
            rows.append(_row(base, ALL, "billed_usd_total", None, total, DENOM_ALL, len(mine),
                             null_reason=why))
            per = total / len(answered) if total is not None and answered else None
            rows.append(_row(base, ALL, "cost_per_usable_answer_usd", None, per,
                             DENOM_ANSWERED, len(answered),
                             null_reason=None if per is not None else (why or "no usable answer")))
        else:
            priced = all(u is not None for u in usd) and bool(usd)
            total = sum(u for u in usd if u is not None) if priced else None
            rows.append(_row(base, ALL, "billed_usd_total", None, total, DENOM_JUDGED, n_j,
                             null_reason=None if priced else
                             "no_price: a call has no price (give --prices FILE)"))
    return rows
