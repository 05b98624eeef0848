"""Statistics of a loaded dataset, as checked in under
``benchmarks/<name>/stats/`` for each dataset/split.

A statistics file records how a dataset looked when it was loaded: sessions, turns, questions
per type or category, mean turns per haystack, evidence coverage and every load-report defect.
A test recomputes each checked-in file from the data when the data is present, so a changed
loader or a changed file shows up as a diff.

Regenerate one with ``python -m recallbench.benchmarks.stats REF [--data-dir DIR]`` (``REF`` as on
the command line: ``locomo``, ``beam:100k``, ``beam@{data}/beam/chats/100K/1``; ``{data}`` stands
for the data directory, so the file stays free of local paths).
"""

from __future__ import annotations

import json
from typing import Any

from recallbench.datasets.dataset import LoadedDataset

DATA_PLACEHOLDER = "{data}"


def compute_stats(ds: LoadedDataset) -> dict[str, Any]:
    """Deterministic statistics of ``ds`` (plain JSON types, sorted where order is free)."""
    groups = len(ds.groups)
    sessions = sum(len(g.sessions) for g in ds.groups)
    turns = sum(len(s.turns) for g in ds.groups for s in g.sessions)
    distinct_sessions = len({s.session_id for g in ds.groups for s in g.sessions})
    speakers: dict[str, int] = {}
    for g in ds.groups:
        for s in g.sessions:
            for t in s.turns:
                speakers[t.speaker] = speakers.get(t.speaker, 0) + 1
    by_slice: dict[str, int] = {}
    for q in ds.questions:
        key = q.axis or "all"
        by_slice[key] = by_slice.get(key, 0) + 1
    evidence = {
        "with_evidence": sum(bool(q.evidence_turns) for q in ds.questions),
        "no_evidence_by_design": sum(q.evidence_turns == () for q in ds.questions),
        "evidence_unknown": sum(q.evidence_turns is None for q in ds.questions),
        "evidence_turns_total": sum(len(q.evidence_turns or ()) for q in ds.questions),
    }
    evidence_defects = [line for line in ds.load_report if "evidence" in line]
    return {
        "dataset": ds.key,
        "version": ds.version,
        "checksum": ds.checksum,
        "files": {f.name: f.sha256 for f in sorted(ds.files, key=lambda f: f.name)},
        "haystack": ds.haystack,
        "haystack_groups": groups,
        "sessions": sessions,
        "distinct_sessions": distinct_sessions,
        "turns": turns,
        "turns_by_speaker": dict(sorted(speakers.items())) if len(speakers) <= 20 else None,
        "questions": len(ds.questions),
        "questions_by_slice": dict(sorted(by_slice.items())),
        "mean_sessions_per_haystack": round(sessions / groups, 3) if groups else None,
        "mean_turns_per_haystack": round(turns / groups, 3) if groups else None,
        "evidence": evidence,
        "evidence_defects": len(evidence_defects),
        "load_report": list(ds.load_report),
    }


def render(stats: dict[str, Any], ref: str) -> str:
    return json.dumps({"ref": ref, **stats}, indent=1, ensure_ascii=False) + "\n"
