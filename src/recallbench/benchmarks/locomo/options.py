"""The dataset options LoCoMo accepts, typed: image mode and the errata overlay."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.datasets.dataset import DatasetOptions


@dataclass(frozen=True, slots=True)
class LocomoOptions(DatasetOptions):
    """``errata``: a third-party errata overlay scored beside the official figures
    (``locomo-audit``, see :mod:`recallbench.benchmarks.locomo.errata`), or None for none. The
    loader refuses an unknown name; unset, it is left out of ``run.json`` and nothing changes."""

    errata: str | None = None
