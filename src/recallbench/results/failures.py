"""Failed calls of a run, by system and cause: what the console and ``summary.md`` say, and whether
the run ``failed``.

A search failed when its observation's outcome is ``error`` (an exception, a timeout, an invalid
result, a quarantined instance, a failed ingest or a system that could not be built; an empty
result is ``unusable``, a measured miss, not a failure). Ingest is counted in calls: ``reset`` and
one ``add`` per session of each haystack group. A ``partial`` ingest record names each failed call
in its reason; an ``error`` record (``reset`` failed, a call timed out, the system could not be
built: nothing went in) counts every call of its group as failed, under its one cause. Identical
causes are counted together: an observation's ``outcome_reason``; an ingest call's cause with the
session id left out (``add: URLError: ...``).

A (dataset, system) pair *fails the run* when every one of its searches (or of its ingests)
failed, or when the share that failed is above ``max_failure_rate`` (default
:data:`DEFAULT_MAX_FAILURE_RATE`). Pure functions of the records: re-scoring says the same.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from recallbench.contracts import IngestRecord, Observation

DEFAULT_MAX_FAILURE_RATE = 0.5
"""Above this share of failed searches (or ingests) a system's figures measure its failures more
than its memory: the run ends ``failed`` (exit 3) while its tables still print (the misses are
real). Half leaves room for a flaky service's occasional errors and catches an outage, a wrong
URL or key, or a server that fell over part-way."""

NO_REASON = "(no reason recorded)"

_CALL = re.compile(r"(?:^|; )(add of session \S+|reset|finish_ingest): ")


@dataclass(frozen=True, slots=True)
class Failures:
    """The failed calls of one kind (``searches``, ``ingest calls``) of one system on a dataset:
    ``failed`` of ``total``, and ``causes`` as ``(cause, count)``, most frequent first."""

    dataset: str
    system: str
    kind: str
    failed: int
    total: int
    causes: tuple[tuple[str, int], ...]
    fails_run: bool

    def line(self) -> str:
        """``mymem on sample: 50 of 50 searches failed: URLError: ... (50)``."""
        causes = "; ".join(f"{cause} ({n})" for cause, n in self.causes)
        return (
            f"{self.system} on {self.dataset}: {self.failed} of {self.total} {self.kind} "
            f"failed: {causes}"
        )


def _fails(failed: int, total: int, max_failure_rate: float) -> bool:
    return total > 0 and (failed == total or failed / total > max_failure_rate)


def ingest_calls(record: IngestRecord) -> int:
    """The calls a group's ingest is made of: ``reset`` and one ``add`` per session (a
    ``finish_ingest`` hook is not counted: the record does not say whether one was declared)."""
    return record.sessions + 1


def ingest_causes(reason: str | None) -> list[str]:
    """The causes in an ingest record's reason, one per failed call, each ``<call>: <cause>``
    with ``add of session <id>`` shortened to ``add`` (so identical causes count together)."""
    if not reason:
        return [NO_REASON]
    marks = list(_CALL.finditer(reason))
    if not marks:
        return [reason]
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(reason)
        call = "add" if m.group(1).startswith("add of session") else m.group(1)
        out.append(f"{call}: {reason[m.end() : end]}")
    return out


def failures(
    observations: Sequence[Observation],
    ingests: Sequence[IngestRecord],
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE,
) -> tuple[Failures, ...]:
    """Every (dataset, system, kind) with at least one failed call, in the order the records
    first name them (searches before ingests)."""
    out: list[Failures] = []
    order: dict[tuple[str, str], None] = {}
    for o in observations:
        order.setdefault((o.dataset, o.system), None)
    for r in ingests:
        order.setdefault((r.dataset, r.system), None)
    for dataset, system in order:
        obs = [o for o in observations if o.dataset == dataset and o.system == system]
        bad = Counter(o.outcome_reason or NO_REASON for o in obs if o.outcome == "error")
        if bad:
            n = sum(bad.values())
            fails = _fails(n, len(obs), max_failure_rate)
            out.append(Failures(dataset, system, "searches", n, len(obs), _ranked(bad), fails))
        ing = [r for r in ingests if r.dataset == dataset and r.system == system]
        calls = sum(ingest_calls(r) for r in ing)
        causes: Counter[str] = Counter()
        for r in ing:
            if r.outcome == "partial":
                causes.update(ingest_causes(r.outcome_reason))
            elif r.outcome == "error":  # nothing went in: every call of the group counts
                causes[ingest_causes(r.outcome_reason)[0]] += ingest_calls(r)
        if causes:
            n = sum(causes.values())
            fails = _fails(n, calls, max_failure_rate)
            out.append(
                Failures(dataset, system, "ingest calls", n, calls, _ranked(causes), fails)
            )
    return tuple(out)


def _ranked(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def failed_run(found: Sequence[Failures]) -> bool:
    """True when some system failed every call of a kind, or more than the threshold."""
    return any(f.fails_run for f in found)
