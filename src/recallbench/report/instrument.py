"""What must be the same for a difference between two results to be the system's: the
instrument (dataset bytes, question set and options, k, chunking, mode, reader, judge, prompts,
scoring rules, subset), read from each side's ``run.json``; and the conditions that may differ
without changing it (recallbench version, machine, concurrency, seed, timeout, the system's own
configuration). ``compare`` and ``diff`` both lead with a loud note when the instrument
changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from recallbench.contracts import canonical_json
from recallbench.report.sides import Side
from recallbench.results.manifest import RunManifest

LOUD = "INSTRUMENT CHANGED"


@dataclass(frozen=True)
class Change:
    """One field that differs between the two sides: what, A's value, B's value (as text)."""

    field: str
    a: str
    b: str


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return canonical_json(value)


def _spec_fields(m: RunManifest, key: str) -> dict[str, Any]:
    spec = m.spec
    ans = spec.answering
    rec = m.dataset(key)
    info = dict((m.answering.get("datasets") or {}).get(key) or {})
    info.pop("judge_check", None)  # a measurement of the judge, not the instrument
    subset = getattr(spec, "subset", None)
    label = getattr(subset, "label", None) if subset is not None else "full"
    return {
        "dataset": None if rec is None else rec.key,
        "dataset version": None if rec is None else rec.version_label,
        "dataset sha256": None if rec is None else rec.checksum,
        "dataset options": dict(spec.dataset_options),
        "k": list(spec.k),
        "chunking": spec.chunking,
        "mode": spec.mode,
        "reader": None if ans is None or ans.reader is None else ans.reader.label,
        "judge": None if ans is None or ans.judge is None else ans.judge.label,
        "prompts": None if ans is None else ans.prompts,
        "reader preset": None if ans is None else ans.reader_preset,
        "judge variant": None if ans is None else ans.judge_variant,
        "conditions": None if ans is None else list(ans.conditions),
        "instrument (run.json answering)": info or None,
        "scoring rules": None if rec is None else rec.scoring,
        "rules source": None if rec is None else rec.rules_source,
        "rules deviations": None if rec is None else list(rec.deviations),
        "subset": label,
    }


def _condition_fields(m: RunManifest, system: str) -> dict[str, Any]:
    env = m.environment
    configs = dict(m.spec.system_configs)
    return {
        "recallbench version": env.get("recallbench_version"),
        "git commit": (env.get("git") or {}).get("commit"),
        "machine": env.get("machine"),
        "concurrency": m.concurrency,
        "group concurrency": m.group_concurrency,
        "seed": m.spec.seed,
        "timeout_s": m.spec.timeout_s,
        "system config": configs.get(system),
    }


def _changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    return [
        Change(name, _text(a.get(name)), _text(b.get(name)))
        for name in a
        if canonical_json(a.get(name)) != canonical_json(b.get(name))
    ]


def instrument_changes(a: Side, b: Side) -> list[Change]:
    """Every field of the instrument that differs between ``a`` and ``b`` (the dataset from
    the loaded data when a side has no ``run.json``)."""
    if a.manifest is not None and b.manifest is not None:
        return _changes(
            _spec_fields(a.manifest, a.dataset.key), _spec_fields(b.manifest, b.dataset.key)
        )
    ds_a, ds_b = a.dataset, b.dataset
    return _changes(
        {"dataset version": ds_a.version_label, "dataset sha256": ds_a.checksum},
        {"dataset version": ds_b.version_label, "dataset sha256": ds_b.checksum},
    )


def condition_changes(a: Side, b: Side) -> list[Change]:
    """The conditions that differ without changing the instrument (recallbench version,
    machine, concurrency, seed, timeout, the system's configuration)."""
    if a.manifest is None or b.manifest is None:
        return []
    return _changes(
        _condition_fields(a.manifest, a.system), _condition_fields(b.manifest, b.system)
    )


def unrecorded(a: Side, b: Side) -> list[str]:
    """Sides whose instrument cannot be checked (a predictions file records no run.json)."""
    return [s.name for s in (a, b) if s.manifest is None]
