"""A benchmark assembled in one place: its dataset spec, rules, report, depths and headline."""

from __future__ import annotations

from dataclasses import dataclass, field

from recallbench.datasets.dataset import DatasetOptions, DatasetSpec
from recallbench.report.hooks import BenchmarkReport
from recallbench.score.metrics import MetricInfo, MetricKey
from recallbench.score.rules import RuleSet
from recallbench.spec import DEFAULT_K


@dataclass(frozen=True)
class Benchmark:
    """Everything recallbench knows about one benchmark, registered by name.

    ``spec`` says what the data is and how to load it; ``rules`` add its per-question metrics;
    ``report`` its tables, notes and exports; ``options`` is the typed form of the dataset
    options it accepts; ``default_k`` its own retrieval depths; ``headline`` the figures a
    report leads with; ``metrics`` the catalogue entries of its own metrics.
    """

    spec: DatasetSpec
    rules: RuleSet = field(default_factory=RuleSet)
    report: BenchmarkReport = field(default_factory=BenchmarkReport)
    options: type[DatasetOptions] = DatasetOptions
    default_k: tuple[int, ...] = DEFAULT_K
    headline: tuple[MetricKey, ...] = (MetricKey("evidence_hit", 10),)
    metrics: tuple[MetricInfo, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name
