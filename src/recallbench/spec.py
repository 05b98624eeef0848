"""The frozen RunSpec: everything that decides a run's results, hashed into the run id."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recallbench.contracts import canonical_json, sha256_text, to_json_dict

DEFAULT_K: tuple[int, ...] = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class RunSpec:
    systems: tuple[str, ...]
    datasets: tuple[str, ...]
    k: tuple[int, ...] = DEFAULT_K
    chunking: str = "pair"
    seed: int = 0
    timeout_s: float = 60.0
    concurrency: int = 1
    system_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    dataset_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def k_max(self) -> int:
        return max(self.k)

    def to_dict(self) -> dict[str, Any]:
        return to_json_dict(self)

    @property
    def spec_hash(self) -> str:
        return sha256_text(canonical_json(self.to_dict()))[:8]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        return cls(
            systems=tuple(d["systems"]),
            datasets=tuple(d["datasets"]),
            k=tuple(int(x) for x in d["k"]),
            chunking=str(d["chunking"]),
            seed=int(d["seed"]),
            timeout_s=float(d["timeout_s"]),
            concurrency=int(d["concurrency"]),
            system_configs=dict(d.get("system_configs", {})),
            dataset_options=dict(d.get("dataset_options", {})),
        )


def make_run_id(spec: RunSpec, started: datetime) -> str:
    """``<UTC start time>-<spec hash>``, e.g. ``20261130T001216Z-3fa2b1c9``."""
    return f"{started.strftime('%Y%m%dT%H%M%SZ')}-{spec.spec_hash}"
