"""``recallbench verify``: a self-check that names every failure.

- every registered system passes the conformance kit (protocol, forgets after reset, ...);
- the scorer is deterministic: scoring the same observations twice gives identical bytes;
- every dataset manifest is well formed, and every local file matches its SHA-256.

A system whose extra is not installed, or a pinned file not downloaded, is skipped, not failed.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.benchmarks import dataset_specs
from recallbench.datasets.fetch import sha256_file
from recallbench.systems.conformance import DEFAULT_CALL_TIMEOUT_S, Status, check_system
from recallbench.systems.registry import available_systems

_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class Check:
    """One line of ``recallbench verify``: a conformance result (area ``system``), or a check
    of the scorer or of a dataset."""

    area: str
    subject: str
    check: str
    status: Status
    detail: str = ""


def check_systems(
    only: str | None = None,
    config: Mapping[str, Any] | None = None,
    timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
) -> list[Check]:
    """The conformance kit on ``only`` (or every registered system), ``config`` its options.

    Each call to a system may take ``timeout_s`` seconds before its check fails as a timeout.
    """
    names = [only] if only else list(available_systems())
    out = []
    for name in names:
        for r in check_system(name, config, timeout_s=timeout_s):
            out.append(Check("system", r.system, r.check, r.status, r.detail))
    return out


def check_scorer_determinism() -> list[Check]:
    """Run the baselines on the bundled sample, then score it again: every derived file
    (verdicts, metrics, summary, card) must keep its bytes."""
    from recallbench.pipeline import score_run, start_run
    from recallbench.results.store import DERIVED
    from recallbench.spec import RunSpec

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        spec = RunSpec(systems=("random", "bm25"), datasets=("sample",), k=(1, 5))
        scored = start_run(spec, out / "data", out / "results", cache_dir=out / "cache")
        first = {n: (scored.run_dir / n).read_bytes() for n in DERIVED}
        score_run(scored.run_dir, out / "data")
        checks = []
        for name, data in first.items():
            same = (scored.run_dir / name).read_bytes() == data
            checks.append(
                Check(
                    "scorer",
                    "scorer",
                    f"deterministic:{name}",
                    "pass" if same else "fail",
                    "" if same else f"re-scoring changed {name}",
                )
            )
        return checks


def check_datasets(data_dir: Path) -> list[Check]:
    out: list[Check] = []
    for name, spec in dataset_specs().items():
        problems = []
        if not spec.version:
            problems.append("no version")
        if not spec.license:
            problems.append("no licence")
        variants = spec.variants or ("",)
        if spec.variants and spec.default_variant not in spec.variants:
            problems.append(f"default variant {spec.default_variant!r} is not a variant")
        out.append(
            Check("dataset", name, "manifest", "fail" if problems else "pass", "; ".join(problems))
        )
        seen: set[str] = set()
        absent: list[str] = []
        for variant in variants:
            for f in spec.variant_files(variant):
                if f.name in seen:
                    continue
                seen.add(f.name)
                subject = f"{name}/{f.name}"
                if f.sha256 is not None and not _SHA.match(f.sha256):
                    out.append(
                        Check(
                            "dataset", subject, "sha256", "fail", f"malformed SHA-256 {f.sha256!r}"
                        )
                    )
                    continue
                path = data_dir / name / f.name
                if name == "sample":
                    from recallbench.datasets.sample import SAMPLE_DIR

                    path = SAMPLE_DIR / f.name
                if not path.exists():
                    absent.append(f.name)
                    continue
                if f.sha256 is None:
                    out.append(
                        Check(
                            "dataset",
                            subject,
                            "sha256",
                            "skip",
                            "no published hash (pinned on first use)",
                        )
                    )
                    continue
                actual = sha256_file(path)
                ok = actual == f.sha256
                out.append(
                    Check(
                        "dataset",
                        subject,
                        "sha256",
                        "pass" if ok else "fail",
                        "" if ok else f"{path}: expected {f.sha256}, got {actual}",
                    )
                )
        if absent:  # one line per dataset, not one per file
            out.append(
                Check(
                    "dataset",
                    name,
                    "sha256",
                    "skip",
                    f"{len(absent)} of {len(seen)} files not downloaded (e.g. {absent[0]})",
                )
            )
    return out
