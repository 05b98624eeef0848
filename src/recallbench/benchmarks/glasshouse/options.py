"""The dataset options Glasshouse accepts, typed: tier, question set, image mode, captions."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.datasets.dataset import DatasetOptions


@dataclass(frozen=True, slots=True)
class GlasshouseOptions(DatasetOptions):
    """As given: ``questions`` is ``tier`` (or the tier's name), ``xling`` or ``probes``; after
    loading it is the question set's label (the tier's name, ``xling`` or ``probes``), ``tier``
    the tier, and ``caption_model`` is kept only in caption mode."""

    questions: str | None = None
    caption_model: str | None = None
    tier: str | None = None
