"""Metric names as structured keys, and the catalogue that says what each metric means.

On disk a metric is a string: ``<name>[:<variant>][@<k>]`` (``evidence_hit@10``,
``f1:excl_cat5``, ``gh_dry:weighted``, ``turn:recall_any@5``, ``f1:errata``). :class:`MetricKey`
is the one place that writes and reads that form. Names may contain ``:`` (LongMemEval's
``turn:`` and ``session:`` families); a variant is one of :data:`VARIANTS`.

The catalogue (:class:`MetricInfo`) says whether higher is better, the unit and what the figure
is, so run diffs and reports can say "better" or "worse" without guessing. Each benchmark adds
its own metrics when it is registered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

VARIANTS: tuple[str, ...] = ("weighted", "excl_cat5", "abstention", "errata")
"""``weighted``: weighted by question weight; ``excl_cat5``: LoCoMo category 5 left out by
definition; ``abstention``: abstention questions only; ``errata``: scored with a third-party
errata overlay applied to the gold (LoCoMo's ``locomo-audit``), beside the official figure."""


@dataclass(frozen=True, slots=True, order=True)
class MetricKey:
    name: str
    k: int | None = None
    variant: str | None = None

    @property
    def metric(self) -> str:
        """The name with its variant, as in ``MetricRow.metric``."""
        return self.name if self.variant is None else f"{self.name}:{self.variant}"

    def __str__(self) -> str:
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    @classmethod
    def parse(cls, text: str) -> MetricKey:
        head, sep, k = text.rpartition("@")
        depth: int | None = None
        if sep and k.isdigit():
            depth = int(k)
        else:
            head = text
        name, sep, variant = head.rpartition(":")
        if sep and variant in VARIANTS:
            return cls(name, depth, variant)
        return cls(head, depth, None)

    def with_variant(self, variant: str) -> MetricKey:
        return MetricKey(self.name, self.k, variant)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    name: str
    higher_is_better: bool | None
    """None: a count or a property, neither better nor worse (memories returned, say)."""
    unit: str
    description: str


GENERIC: tuple[MetricInfo, ...] = (
    MetricInfo("evidence_hit", True, "share", "any evidence turn among the first k memories"),
    MetricInfo("evidence_recall", True, "share", "share of evidence turns in the first k"),
    MetricInfo("all_evidence", True, "share", "every evidence turn in the first k"),
    MetricInfo("mrr", True, "score", "reciprocal rank of the first evidence memory, cut at k"),
    MetricInfo("ndcg", True, "score", "nDCG of the ranking against the evidence turns, cut at k"),
    MetricInfo(
        "evidence_recall_all_returned", True, "share", "evidence recall over every memory returned"
    ),
    MetricInfo("chars_returned_mean", False, "characters", "characters returned per question"),
    MetricInfo("memories_returned_mean", None, "memories", "memories returned per question"),
    MetricInfo("error_rate", False, "share", "searches that failed (exception or timeout)"),
    MetricInfo("unusable_rate", False, "share", "searches that returned nothing"),
    MetricInfo("latency_ms_p50", False, "ms", "median search latency over usable searches"),
    MetricInfo("latency_ms_p95", False, "ms", "95th percentile search latency"),
    MetricInfo("ingest_ms_total", False, "ms", "time to ingest every haystack group"),
    MetricInfo(
        "ingest_add_ms_total", False, "ms", "ingest time outside finish_ingest (reset and adds)"
    ),
    MetricInfo(
        "ingest_index_wait_ms_total",
        False,
        "ms",
        "time of the finish_ingest hook (index build, or waiting for a service to index)",
    ),
    MetricInfo("ingest_turns_per_s", True, "turns/s", "turns ingested per second"),
    MetricInfo(
        "speed_points",
        True,
        "points",
        "Glasshouse speed points per question (-1..+1, latency with one round trip removed "
        "against the target), averaged",
    ),
    MetricInfo("ingest_ms_per_session", False, "ms", "ingest time per session ingested"),
    MetricInfo("latency_ms_p90", False, "ms", "90th percentile search latency"),
    MetricInfo("latency_ms_p99", False, "ms", "99th percentile search latency"),
    MetricInfo("latency_ms_max", False, "ms", "slowest usable search"),
    *(
        MetricInfo(
            f"latency_minus_rtt_ms_{p}",
            False,
            "ms",
            f"{what} search latency with one round trip removed (run --network); not compute time",
        )
        for p, what in (
            ("p50", "median"), ("p90", "90th percentile"), ("p95", "95th percentile"),
            ("p99", "99th percentile"), ("max", "largest"),
        )
    ),  # fmt: skip
    MetricInfo("network_ms_p50", None, "ms", "the round trip subtracted (network file median)"),
)
TIMING: frozenset[str] = frozenset(
    (
        "latency_ms_p50",
        "latency_ms_p90",
        "latency_ms_p95",
        "latency_ms_p99",
        "latency_ms_max",
        "latency_minus_rtt_ms_p50",
        "latency_minus_rtt_ms_p90",
        "latency_minus_rtt_ms_p95",
        "latency_minus_rtt_ms_p99",
        "latency_minus_rtt_ms_max",
        "network_ms_p50",
        "ingest_ms_per_session",
        "ingest_ms_total",
        "ingest_add_ms_total",
        "ingest_index_wait_ms_total",
        "ingest_turns_per_s",
        "speed_points",
    )
)
"""Rows derived from wall-clock time: they differ between two runs of the same spec."""


class MetricCatalogue:
    """Metric name -> :class:`MetricInfo`; a name registered twice must agree."""

    def __init__(self, infos: Iterable[MetricInfo] = GENERIC) -> None:
        self._infos: dict[str, MetricInfo] = {}
        self.add(infos)

    def add(self, infos: Iterable[MetricInfo]) -> None:
        for info in infos:
            seen = self._infos.get(info.name)
            if seen is not None and seen != info:
                raise ValueError(f"metric {info.name!r} declared twice, differently")
            self._infos[info.name] = info

    def get(self, key: MetricKey | str) -> MetricInfo | None:
        key = MetricKey.parse(key) if isinstance(key, str) else key
        return self._infos.get(key.name)

    def higher_is_better(self, key: MetricKey | str) -> bool | None:
        info = self.get(key)
        return None if info is None else info.higher_is_better

    def names(self) -> Mapping[str, MetricInfo]:
        return dict(self._infos)
