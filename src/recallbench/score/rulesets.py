"""Per-benchmark scoring rules, selected by the dataset (``LoadedDataset.scoring``).

Every dataset gets the generic retrieval metrics; a rule set adds the benchmark's own
per-question metrics. A rule set never sees which system produced an observation.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Protocol

from recallbench.contracts import Observation, Question


class RuleSet(Protocol):
    name: str
    weighted_metrics: tuple[str, ...]
    """Metrics also reported weighted by ``Question.weight`` (``<metric>:weighted``)."""

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        options: Mapping[str, object],
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        """Extra metrics for one question, and a reason for each null."""


# Optional hooks a rule set may define (looked up with getattr, so none is required):
#   summary_tables(scored: ScoredRun, dataset: LoadedDataset) -> list[Table]
#       extra tables for the console and summary.md (per-axis, per-category, ...);
#   cross_dataset_tables(scored: ScoredRun) -> list[Table]
#       called once per rule set for tables spanning datasets (e.g. a tier view);
#   write_exports(run_dir: Path, dataset: LoadedDataset, observations, verdicts) -> None
#       interop files written after scoring (e.g. a benchmark's own run-record format);
#   external_line(question: Question, verdict: Verdict) -> dict
#       the shape of one ``recallbench score FILE --out`` line;
#   summary_notes(dataset: LoadedDataset) -> list[str]
#       lines for the summary header (card notes specific to the rules).


class RetrievalOnly:
    name = "retrieval"
    weighted_metrics: tuple[str, ...] = ()

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        options: Mapping[str, object],
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        return {}, {}


RULESETS: dict[str, str] = {
    "retrieval": "recallbench.score.rulesets:RetrievalOnly",
    "glasshouse": "recallbench.score.glasshouse:GlasshouseRules",
    "locomo": "recallbench.score.locomo:LocomoRules",
    "longmemeval": "recallbench.score.longmemeval:LongMemEvalRules",
    "beam": "recallbench.score.beam:BeamRules",
}


def get_ruleset(name: str) -> RuleSet:
    target = RULESETS.get(name)
    if target is None:
        raise KeyError(f"unknown scoring rule set {name!r}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)()
