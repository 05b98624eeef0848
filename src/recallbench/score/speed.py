"""The Glasshouse speed score, with the network round trip removed, and the codes N1..N8 that
say why speed could not be measured (pure functions).

**Per question.** The remainder is the search's total latency minus the subtracted round trip
(``network_ms``): "latency with one round trip removed", which still holds the response's
transfer and is not compute time. As Glasshouse's ``glasshouse-v0.1/score.py`` (commit
``2eeb19e``) computes it: ``target = max(50, flow limit - the paired model's time to first
token)`` (defaults 1000 and 500 ms, so 500 ms), or a target given directly; ``r = remainder /
target``; +1 when ``r <= 0.5``, -1 when ``r >= 4``, otherwise ``-log2(r)`` on the fast side and
``-log2(r) / 2`` on the slow side (``r = 1`` gives 0). With a round trip given, a remainder in
``[0, 1)`` ms counts as 1 ms (``max(1.0, latency - network)`` in ``score.py``); without one, a
latency of 0 or less has no score (``score.py``: ``latency_ms <= 0`` gives None).

**One deviation, stated:** ``score.py`` also lifts a *negative* remainder (the round trip
longer than the whole search) to 1 ms, a full +1; recallbench leaves it null with the reason
``not on the list: remainder below zero``, as recallbench's issue 12 requires.

**Not measurable** is null with a code, never 0 (:data:`CODES`). N1, N2 and N4-N7 are decided
before any measurement, from the system's declarations and the network files
(:func:`codes_before_measuring`); N3 and N8 per call, from the records
(:func:`question_speed`). A failed search has no latency and no speed and is counted apart
(rule ``failed``). Accuracy is unaffected by any of these.

**Speed sample** (``run --speed-sample N``): a run that searches in parallel (``--concurrency``
or ``--group-concurrency`` above 1) can have a seeded sample of N questions per dataset
(:func:`speed_sample`) searched alone, one at a time; their observations carry ``speed_sample:
true``, and only they are scored for speed (the others are null with the rule
:data:`NOT_SAMPLED`, counted apart like the codes).

**Per system** the scores are averaged, never summed (:func:`summarise`); a combined figure
(accuracy plus ``weight`` times the average speed, Glasshouse's ``acc + speed_weight *
sp_avg``) exists only when a weight is given (:func:`combined`).
"""

from __future__ import annotations

import ipaddress
import json
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.contracts import ALL, MetricRow, Observation
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import UserError

FLOW_LIMIT_MS = 1000.0
"""Glasshouse's ``--flow-limit`` default: the 1 s within which a person feels the flow holds."""
LLM_TTFT_MS = 500.0
"""Glasshouse's ``--llm-ttft`` default: the paired model's time to first token (a round figure,
not a measurement of any model)."""
TARGET_FLOOR_MS = 50.0
"""The least time allowed for memory, whatever the flow limit and TTFT (``score.py``)."""
N3_SHARE = 0.9
"""N3: a round trip of this share of the total or more leaves a remainder lost in noise."""
N2_SPREAD_MS = 10.0
"""N2: round trips measured from two or more different locations whose medians all lie within
this many milliseconds of each other "barely differ" (a unicast server seen from two cities
differs by tens to hundreds of milliseconds; an anycast edge answers each city nearby)."""

CODES: Mapping[str, str] = {
    "N1": "the server is in a known CDN range, so the round trip only reaches the edge",
    "N2": "round trips from different locations barely differ (appears to be anycast)",
    "N3": "the round trip is 90% or more of the total, so what remains is lost in noise",
    "N4": "retrieval cannot be called on its own",
    "N5": "no per-call timing",
    "N6": "batch-only interface",
    "N7": "nothing crosses a network (in-process system)",
    "N8": "the clock includes queueing (a 429 or Retry-After, or another call to the same host "
    "in flight)",
}
"""The list of reasons speed cannot be measured, fixed before any measurement."""
BEFORE_MEASURING = ("N1", "N2", "N4", "N5", "N6", "N7")
"""Codes decided before measuring; N3 and N8 are decided per call."""
NEGATIVE = "not on the list: remainder below zero"
"""The null reason of a remainder below zero (no code: it is not on the list)."""
QUEUED_FLAG = "queued"
"""The observation flag rule that marks N8 (``queued: saw HTTP 429``)."""
FAILED = "failed"
"""The rule of a failed search: no latency, no speed, counted apart."""
NOT_SAMPLED = "not sampled"
"""The rule of a search outside the run's speed sample (``run --speed-sample``)."""


class SpeedInputError(UserError):
    """A network file or CDN ranges file that cannot be read as one."""


@dataclass(frozen=True, slots=True)
class SpeedSettings:
    """How speed is scored: the target's parts, the optional combined weight, and the codes
    decided before measuring (which make every question's speed null)."""

    flow_limit_ms: float = FLOW_LIMIT_MS
    llm_ttft_ms: float = LLM_TTFT_MS
    target_override_ms: float | None = None
    weight: float | None = None
    before: tuple[str, ...] = ()
    sampled: bool = False
    """The run had a speed sample: only observations marked ``speed_sample`` are scored."""

    @property
    def target_ms(self) -> float:
        """``target_override_ms`` when given, else :func:`speed_target` of the two parts."""
        if self.target_override_ms is not None:
            return self.target_override_ms
        return speed_target(self.flow_limit_ms, self.llm_ttft_ms)


@dataclass(frozen=True, slots=True)
class QuestionSpeed:
    """One question's speed: ``points`` in [-1, +1], or None with ``reason`` (``rule:
    explanation``; the rule is a code N1..N8, ``failed`` or ``not on the list``)."""

    points: float | None
    remainder_ms: float | None = None
    reason: str | None = None

    @property
    def rule(self) -> str | None:
        """The reason's rule (the text before the first colon), None when scored."""
        return None if self.reason is None else self.reason.split(":", 1)[0]


@dataclass(frozen=True, slots=True)
class SpeedSummary:
    """A system's speed: the mean of the scored questions (``scored`` is the denominator), the
    questions left null by rule, and the failed searches counted apart."""

    score: float | None
    scored: int
    questions: int
    failed: int
    target_ms: float
    not_measurable: Mapping[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``+0.42 (n=50)``, or ``speed not measurable, N3`` (the codes that left it null)."""
        if self.score is not None:
            return f"{self.score:+.2f} (n={self.scored})"
        codes = [c for c in self.not_measurable if c in CODES]
        if codes:
            return "speed not measurable, " + ", ".join(sorted(codes))
        if self.not_measurable:
            return "speed not measurable, " + ", ".join(sorted(self.not_measurable))
        return "speed not measurable"


def speed_target(flow_limit_ms: float = FLOW_LIMIT_MS, llm_ttft_ms: float = LLM_TTFT_MS) -> float:
    """Time allowed for memory: ``max(50, flow_limit_ms - llm_ttft_ms)``."""
    return max(TARGET_FLOOR_MS, flow_limit_ms - llm_ttft_ms)


def speed_points(latency_ms: float | None, target_ms: float) -> float | None:
    """Glasshouse's per-question points for a time ``latency_ms`` against ``target_ms``: None
    when either is missing or not above 0; +1 at ``r <= 0.5``, -1 at ``r >= 4``, else
    ``-log2(r)``, halved when negative, kept in [-1, +1]."""
    if latency_ms is None or latency_ms <= 0 or target_ms <= 0:
        return None
    r = latency_ms / float(target_ms)
    if r <= 0.5:
        return 1.0
    if r >= 4.0:
        return -1.0
    v = -math.log(r, 2)  # as score.py writes it (not log2, which can differ in the last bit)
    return max(-1.0, min(1.0, v if v >= 0 else v / 2.0))


def _null(rule: str, detail: str = "") -> QuestionSpeed:
    text = CODES.get(rule, "")
    return QuestionSpeed(None, None, f"{rule}: {text}{detail}")


def question_speed(
    latency_ms: float | None,
    network_ms: float | None,
    target_ms: float,
    *,
    failed: bool = False,
    flags: Sequence[str] = (),
    before: Sequence[str] = (),
) -> QuestionSpeed:
    """One search's speed. In order: a code decided before measuring (``before``) leaves it
    null with the first code; a ``failed`` search is null (rule ``failed``); no latency is N5;
    a flag ``queued: ...`` is N8; a remainder below zero is null (:data:`NEGATIVE`); a round
    trip of 90% of the total or more is N3; otherwise :func:`speed_points` of the remainder
    (lifted to 1 ms when a round trip was subtracted, as ``score.py`` does)."""
    if before:
        return _null(before[0])
    if failed:
        return QuestionSpeed(None, None, f"{FAILED}: the search failed; no latency, no speed")
    if latency_ms is None:
        return _null("N5", ": the record has no latency")
    if any(f.split(":", 1)[0].strip() == QUEUED_FLAG for f in flags):
        return _null("N8")
    if network_ms:
        remainder = latency_ms - network_ms
        if remainder < 0:
            return QuestionSpeed(
                None,
                remainder,
                f"{NEGATIVE}: the round trip {network_ms:.1f} ms is longer than the whole "
                f"search {latency_ms:.1f} ms",
            )
        if network_ms >= N3_SHARE * latency_ms:
            return QuestionSpeed(
                None,
                remainder,
                f"N3: {CODES['N3']} ({network_ms:.1f} of {latency_ms:.1f} ms)",
            )
        remainder = max(1.0, remainder)
    else:
        remainder = latency_ms
    points = speed_points(remainder, target_ms)
    if points is None:
        return QuestionSpeed(
            None, remainder, "not on the list: a latency of 0 ms or less has no speed score"
        )
    return QuestionSpeed(points, remainder)


def summarise(speeds: Iterable[QuestionSpeed], target_ms: float) -> SpeedSummary:
    """The mean of the scored questions (never the sum), with the scored count as the
    denominator, the null ones counted by rule and the failed ones apart."""
    scored: list[float] = []
    nulls: Counter[str] = Counter()
    failed = 0
    total = 0
    for s in speeds:
        total += 1
        if s.points is not None:
            scored.append(s.points)
        elif s.rule == FAILED:
            failed += 1
        else:
            nulls[s.rule or ""] += 1
    score = sum(scored) / len(scored) if scored else None
    return SpeedSummary(score, len(scored), total, failed, target_ms, dict(sorted(nulls.items())))


def combined(accuracy: float, speed: float | None, weight: float) -> float | None:
    """Glasshouse's total: ``accuracy + weight * speed`` (accuracy in points out of 100, so at
    most ``weight`` points move); None when speed is not measurable."""
    if speed is None:
        return None
    return accuracy + weight * speed


# --- codes decided before measuring ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NetworkFile:
    """What speed reads from a ``network.json`` (``recallbench network``): host, resolved IP,
    location label and median round trip in milliseconds."""

    path: Path
    host: str
    ip: str | None
    location: str | None
    median_ms: float


def _first(data: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if data.get(n) is not None:
            return data[n]
    return None


def read_network_file(path: Path) -> NetworkFile:
    """Read ``host``, ``ip`` (or ``resolved_ip``), ``location`` and ``median_ms`` (or
    ``median``) from a network file; raises :class:`SpeedInputError` naming what is missing."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SpeedInputError(f"{path}: not a readable network file ({e})") from None
    if not isinstance(data, dict):
        raise SpeedInputError(f"{path}: a network file is a JSON object")
    median = _first(data, "median_ms", "median")
    if not isinstance(median, int | float) or isinstance(median, bool):
        raise SpeedInputError(f"{path}: the network file has no median round trip (median_ms)")
    host = _first(data, "host")
    ip = _first(data, "ip", "resolved_ip")
    location = _first(data, "location")
    return NetworkFile(
        path,
        str(host or ""),
        None if ip is None else str(ip),
        None if location is None else str(location),
        float(median),
    )


def read_cdn_ranges(path: Path) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """A ranges file: one CIDR range a line (``104.16.0.0/13``), ``#`` starts a comment, blank
    lines skipped. Raises :class:`SpeedInputError` naming a line that is not a range."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SpeedInputError(f"{path}: cannot read the CDN ranges file ({e})") from None
    out = []
    for n, raw in enumerate(lines, 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            out.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise SpeedInputError(f"{path}:{n}: {text!r} is not an IP range (CIDR)") from None
    return tuple(out)


def in_cdn(ip: str | None, ranges: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    """Whether ``ip`` lies in any of ``ranges`` (False for no IP or an unparsable one)."""
    if not ip:
        return False
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return any(addr.version == r.version and addr in r for r in ranges)


def anycast_like(files: Sequence[NetworkFile], spread_ms: float = N2_SPREAD_MS) -> bool:
    """N2: two or more files from different locations whose median round trips all lie within
    ``spread_ms`` of each other. Fewer than two distinct locations decide nothing (False)."""
    by_location: dict[str, float] = {}
    for f in files:
        if f.location:
            by_location.setdefault(f.location, f.median_ms)
    if len(by_location) < 2:
        return False
    medians = by_location.values()
    return max(medians) - min(medians) < spread_ms


def codes_before_measuring(
    *,
    in_process: bool,
    retrieval_alone: bool = True,
    per_call_timing: bool = True,
    batch_only: bool = False,
    network_files: Sequence[NetworkFile] = (),
    cdn_ranges: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network] = (),
) -> tuple[str, ...]:
    """The codes fixed before any measurement, in code order: N1 (a network file's resolved
    IP in a CDN range), N2 (:func:`anycast_like`), N4 (retrieval cannot be called on its own),
    N5 (no per-call timing), N6 (batch-only interface), N7 (an in-process system)."""
    codes = []
    if any(in_cdn(f.ip, cdn_ranges) for f in network_files):
        codes.append("N1")
    if anycast_like(network_files):
        codes.append("N2")
    if not retrieval_alone:
        codes.append("N4")
    if not per_call_timing:
        codes.append("N5")
    if batch_only:
        codes.append("N6")
    if in_process:
        codes.append("N7")
    return tuple(codes)


def settings_from_files(
    *,
    llm_ttft_ms: float = LLM_TTFT_MS,
    flow_limit_ms: float = FLOW_LIMIT_MS,
    weight: float | None = None,
    network_paths: Sequence[Path] = (),
    cdn_ranges_path: Path | None = None,
    in_process: bool = False,
    retrieval_alone: bool = True,
    per_call_timing: bool = True,
    batch_only: bool = False,
) -> SpeedSettings:
    """:class:`SpeedSettings` from the command line: the network files (``--network``, read by
    :func:`read_network_file`) and the CDN ranges file (``--cdn-ranges``) decide N1 and N2, the
    system's declarations N4-N7, all before any measurement. A CDN ranges file without a
    network file is refused (nothing to look up). TTFT below 0 or a weight below 0 is refused."""
    if llm_ttft_ms < 0:
        raise SpeedInputError(f"--llm-ttft must be at least 0 ms, got {llm_ttft_ms:g}")
    if weight is not None and weight < 0:
        raise SpeedInputError(f"--speed-weight must be at least 0, got {weight:g}")
    files = tuple(read_network_file(p) for p in network_paths)
    ranges: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    if cdn_ranges_path is not None:
        if not files:
            raise SpeedInputError(
                "--cdn-ranges needs a network file (--network FILE, written by recallbench "
                "network) for the server's resolved IP"
            )
        ranges = read_cdn_ranges(cdn_ranges_path)
    before = codes_before_measuring(
        in_process=in_process,
        retrieval_alone=retrieval_alone,
        per_call_timing=per_call_timing,
        batch_only=batch_only,
        network_files=files,
        cdn_ranges=ranges,
    )
    return SpeedSettings(
        flow_limit_ms=flow_limit_ms, llm_ttft_ms=llm_ttft_ms, weight=weight, before=before
    )


SPEED = "speed_points"
"""The metric row of a system's speed: the mean of its questions' speed points (a timing row:
:data:`recallbench.score.metrics.TIMING`)."""
SPEED_DENOMINATOR = "searches scored for speed"


def speed_sample(question_ids: Sequence[str], seed: int, dataset: str, n: int) -> frozenset[str]:
    """The speed sample of a dataset: ``n`` of its question ids (all when it has fewer), drawn
    with a generator seeded by the run's seed and the dataset's key, so every system of a run,
    and every run with the same seed, times the same questions."""
    if n < 1:
        raise SpeedInputError(f"--speed-sample must be at least 1, got {n}")
    ids = list(dict.fromkeys(question_ids))
    rng = random.Random(f"recallbench speed sample|{seed}|{dataset}")
    return frozenset(rng.sample(ids, min(n, len(ids))))


def observation_speed(
    obs: Observation, target_ms: float, before: Sequence[str], sampled: bool = False
) -> QuestionSpeed:
    """:func:`question_speed` of one observation: ``network_ms`` is the subtracted round trip,
    an ``error`` outcome a failed search, its flags carry N8 (``queued: ...``). With
    ``sampled`` (the run had a speed sample) an observation outside it is null
    (:data:`NOT_SAMPLED`)."""
    if sampled and not before and not obs.speed_sample:
        return QuestionSpeed(
            None,
            None,
            f"{NOT_SAMPLED}: searched with other calls; the run's speed sample (--speed-sample) "
            "times its questions alone",
        )
    return question_speed(
        obs.latency_ms,
        obs.network_ms,
        target_ms,
        failed=obs.outcome == "error",
        flags=obs.flags,
        before=before,
    )


def speed_rows(
    dataset: LoadedDataset,
    observations: Sequence[Observation],
    systems: Sequence[str],
    run_id: str,
    settings: Mapping[str, SpeedSettings],
) -> list[MetricRow]:
    """One :data:`SPEED` row per system of ``settings`` over all questions of ``dataset``: the
    mean of the scored questions (denominator: how many were scored), the rest excluded and
    counted by rule in ``exclusion_rule`` (``failed`` apart); null, with the reason of the
    commonest rule, when none was scored (``N7: nothing crosses a network ...``)."""
    rows: list[MetricRow] = []
    for system in systems:
        if system not in settings:
            continue
        cfg = settings[system]
        target = cfg.target_ms
        mine = [o for o in observations if o.system == system and o.dataset == dataset.key]
        speeds = [observation_speed(o, target, cfg.before, cfg.sampled) for o in mine]
        summary = summarise(speeds, target)
        excluded = {**summary.not_measurable}
        if summary.failed:
            excluded[FAILED] = summary.failed
        rule = ", ".join(f"{k} {v}" for k, v in excluded.items()) or None
        null_reason = None
        if summary.score is None:
            reasons = Counter(s.reason for s in speeds if s.reason is not None)
            null_reason = reasons.most_common(1)[0][0] if reasons else "no search was recorded"
        rows.append(
            MetricRow(
                run_id=run_id,
                dataset=dataset.key,
                dataset_version=dataset.version_label,
                dataset_sha256=dataset.checksum,
                system=system,
                slice=ALL,
                metric=SPEED,
                k=None,
                value=None if summary.score is None else round(summary.score, 6),
                denominator_name=SPEED_DENOMINATOR,
                denominator=summary.scored,
                n_excluded=summary.questions - summary.scored,
                exclusion_rule=rule,
                null_reason=null_reason,
            )
        )
    return rows


def row_label(row: MetricRow) -> str:
    """A :data:`SPEED` row as the report shows it: ``+0.42 (n=50)``, or ``speed not measurable,
    N3`` (the rule of its null reason) in place of a number."""
    if row.value is not None:
        return f"{row.value:+.2f} (n={row.denominator})"
    rule = (row.null_reason or "").split(":", 1)[0].strip()
    return f"speed not measurable, {rule}" if rule else "speed not measurable"
