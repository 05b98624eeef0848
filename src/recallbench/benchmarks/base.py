"""A benchmark assembled in one place: its dataset spec, rules, report, depths and headline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from recallbench.contracts import AppliedRules, RulesSource
from recallbench.datasets.dataset import DatasetOptions, DatasetSpec
from recallbench.instruments.protocol import AnswerInstrument, InstrumentOptions
from recallbench.report.hooks import BenchmarkReport
from recallbench.score.metrics import MetricInfo, MetricKey
from recallbench.score.predictions import RECALLBENCH_FORMAT, PredictionFormat
from recallbench.score.rules import RuleSet
from recallbench.spec import DEFAULT_K


@dataclass(frozen=True)
class Benchmark:
    """Everything recallbench knows about one benchmark, registered by name.

    ``spec`` says what the data is and how to load it; ``rules`` add its per-question metrics;
    ``report`` its tables, notes and exports; ``options`` is the typed form of the dataset
    options it accepts; ``default_k`` its own retrieval depths; ``headline`` the figures a
    report leads with; ``metrics`` the catalogue entries of its own metrics.

    ``rules_source`` names the official scoring the rules follow (repository, files, commit;
    None when the benchmark publishes none) and ``deviations`` every known way recallbench's
    scoring differs from it, one sentence each: every run and score names both.
    ``prediction_formats`` are the benchmark's own predictions-file shapes, accepted by
    ``recallbench score FILE`` beside recallbench's (:attr:`accepted_formats`).
    ``answering`` builds the benchmark's answer/judge instrument for the operator's choices
    (None: recallbench's own labelled prompts, ``recallbench prompts v1``, are the only ones).
    """

    spec: DatasetSpec
    rules: RuleSet = field(default_factory=RuleSet)
    report: BenchmarkReport = field(default_factory=BenchmarkReport)
    options: type[DatasetOptions] = DatasetOptions
    default_k: tuple[int, ...] = DEFAULT_K
    headline: tuple[MetricKey, ...] = (MetricKey("evidence_hit", 10),)
    metrics: tuple[MetricInfo, ...] = ()
    rules_source: RulesSource | None = None
    deviations: tuple[str, ...] = ()
    prediction_formats: tuple[PredictionFormat, ...] = ()
    answering: Callable[[InstrumentOptions], AnswerInstrument] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def applied_rules(self) -> AppliedRules:
        """The rules a scoring of this benchmark applies, as runs and scores record them."""
        return AppliedRules(self.rules.name, self.rules_source, self.deviations)

    @property
    def accepted_formats(self) -> tuple[PredictionFormat, ...]:
        """The predictions-file shapes accepted for the benchmark: its own, then recallbench's
        (the order detection tries them in)."""
        own = tuple(f for f in self.prediction_formats if f.name != RECALLBENCH_FORMAT.name)
        return (*own, RECALLBENCH_FORMAT)
