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
    info = (m.answering.get("datasets") or {}).get(key) or {}
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
        **_answering_fields(info),
        "scoring rules": None if rec is None else rec.scoring,
        "rules source": None if rec is None else rec.rules_source,
        "rules deviations": None if rec is None else list(rec.deviations),
        "subset": label,
    }


def _answering_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    """The instrument of a memory- or answer-mode dataset as ``run.json`` records it: its name,
    the prompt files read (path and SHA-256), the pins, the judged metrics, the deviations and
    non-standard labels. The endpoints' URLs are left out (the in-process mock listens on a new
    port every run): the reader and judge are compared by label, which names a URL the
    operator gave."""
    if not info:
        return {}
    files = [[f.get("path"), f.get("sha256")] for f in info.get("files") or ()]
    return {
        "instrument": info.get("instrument"),
        "reader as run": (info.get("reader") or {}).get("label"),
        "judge as run": info.get("judge_label"),
        "prompt files": files,
        "official instrument": info.get("official"),
        "reader pin": info.get("reader_pin"),
        "judge pin": info.get("judge_pin"),
        "judged metrics": info.get("metrics"),
        "instrument deviations": info.get("deviations"),
        "non-standard labels": info.get("non_standard"),
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
    """The fields (of either side) whose values differ, A's fields first."""
    names = list(dict.fromkeys([*a, *b]))
    return [
        Change(name, _text(_none(a.get(name))), _text(_none(b.get(name))))
        for name in names
        if canonical_json(_none(a.get(name))) != canonical_json(_none(b.get(name)))
    ]


def _none(value: Any) -> Any:
    """An empty list, mapping or string reads as absent (a retrieval run has no conditions;
    an answer run's empty list of them is the same thing)."""
    return None if isinstance(value, list | tuple | dict | str) and not value else value


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
