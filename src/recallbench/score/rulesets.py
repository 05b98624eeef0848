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
