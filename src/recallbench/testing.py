"""Test doubles shipped with recallbench, for its own tests, its timing scripts and plugin authors.

Systems: :class:`NoopSystem` (does nothing: harness overhead), :class:`SlowBM25` (BM25, slow
enough to kill a run part-way), :class:`SlowFinishBM25` (a slow ``finish_ingest`` hook),
:class:`FlakySystem` (raises on some questions, hangs on others), :class:`NoSourceSystem`
(memories without source turns). :func:`register` adds them to
this process's system registry under those names.

:class:`FakeEncoderModel` is a bag-of-words hashing "sentence model" (no torch) to register with
``recallbench.systems.embeddings.register_model``.

:func:`compare_runs` is the one notion of "two runs of the same spec agree": equal verdicts and
metric rows, ignoring the run id and the rows derived from wall-clock time, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from recallbench.contracts import Memory, Session
from recallbench.results import store
from recallbench.score.metrics import TIMING
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.bm25 import BM25System


class SlowBM25(BM25System):
    """BM25 that takes a while per search, so a run can be killed part-way."""

    name = "slow-bm25"
    delay_s = 0.02

    def search(self, query: str, k: int) -> list[Memory]:
        time.sleep(self.delay_s)
        return super().search(query, k)


class SlowFinishBM25(BM25System):
    """BM25 whose declared ``finish_ingest`` hook also sleeps: its time must land in ingest."""

    name = "slow-finish"
    finish_delay_s = 0.3

    def finish_ingest(self) -> None:
        time.sleep(self.finish_delay_s)
        super().finish_ingest()


class FlakySystem(BM25System):
    """Raises on every question whose text contains 'when', hangs on 'Which', else BM25."""

    name = "flaky"

    def search(self, query: str, k: int) -> list[Memory]:
        if "when" in query.lower().split():
            raise RuntimeError("backend exploded")
        if query.startswith("Which"):
            time.sleep(2.0)
        return super().search(query, k)


class NoSourceSystem(BM25System):
    """Returns memories but cannot say which turns they came from."""

    name = "no-source"
    capabilities = Capabilities(returns_source_turns=False)

    def search(self, query: str, k: int) -> list[Memory]:
        return [Memory(id=m.id, text=m.text, source_turns=None) for m in super().search(query, k)]


class NoopSystem:
    """Does nothing: measures harness overhead."""

    name = "noop"
    capabilities = Capabilities()
    _memory = (Memory(id="m", text="x", source_turns=("t",)),)

    def __init__(self, context: SystemContext | None = None) -> None:
        pass

    def add(self, session: Session) -> None:
        pass

    def search(self, query: str, k: int) -> list[Memory]:
        return list(self._memory)

    def reset(self) -> None:
        pass


TEST_SYSTEMS = {
    "slow-bm25": "recallbench.testing:SlowBM25",
    "flaky": "recallbench.testing:FlakySystem",
    "no-source": "recallbench.testing:NoSourceSystem",
    "noop": "recallbench.testing:NoopSystem",
    "slow-finish": "recallbench.testing:SlowFinishBM25",
}


def register() -> None:
    """Add the test systems to the built-in system registry of this process."""
    for name, target in TEST_SYSTEMS.items():
        registry.BUILTINS[name] = registry.SystemEntry(name, target, "test")


class FakeEncoderModel:
    """Bag-of-words hashing vectors of ``dim`` dimensions; records every ``encode`` call."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, hashlib.sha256(word.encode()).digest()[0] % self.dim] += 1.0
        return out


# ------------------------------------------------------------------------ comparing runs


def _rows(path: Path, drop_timing: bool) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        record: dict[str, Any] = json.loads(line)
        if drop_timing and record.get("metric") in TIMING:
            continue
        record.pop("run_id", None)
        out.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    return out


def run_differences(a: Path, b: Path, files: Iterable[str] | None = None) -> list[str]:
    """How two results folders differ in their verdicts and metric rows, ignoring the run id
    and the timing-derived rows (``latency_ms_*``, ``ingest_ms_total``,
    ``ingest_turns_per_s``) and nothing else; ``[]`` when they agree."""
    problems = []
    for name in files or (store.VERDICTS, store.METRICS):
        pa, pb = a / name, b / name
        if not pa.exists() or not pb.exists():
            problems.append(f"{name}: missing in {a if not pa.exists() else b}")
            continue
        ra, rb = _rows(pa, name == store.METRICS), _rows(pb, name == store.METRICS)
        if ra == rb:
            continue
        if len(ra) != len(rb):
            problems.append(f"{name}: {len(ra)} rows in {a}, {len(rb)} in {b}")
        first = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), None)
        if first is not None:
            problems.append(f"{name}: row {first + 1} differs:\n  {ra[first]}\n  {rb[first]}")
    return problems


def compare_runs(a: Path, b: Path) -> None:
    """Raise AssertionError naming the first difference unless the two runs agree."""
    problems = run_differences(a, b)
    if problems:
        raise AssertionError("runs differ: " + "\n".join(problems))


def manifest_for(
    systems: Iterable[str], k: Iterable[int], chunking: str = "pair", run_id: str = "r"
) -> Any:
    """A minimal :class:`~recallbench.results.manifest.RunManifest` for report tests."""
    from recallbench.results.manifest import RunManifest
    from recallbench.spec import RunSpec

    spec = RunSpec(systems=tuple(systems), datasets=(), k=tuple(k), chunking=chunking)
    return RunManifest(run_id, spec, spec.spec_hash, 1, [], [], started_at="")
