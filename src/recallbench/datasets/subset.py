"""Part of a dataset (``run --limit N``, ``--groups ID,...``, ``--questions-from FILE``).

:func:`select` turns a loaded dataset into the part a :class:`~recallbench.spec.SubsetSpec`
names: its questions (in dataset order), the haystack groups that hold them (with only those
questions), and a card note saying which part was run. The files, and so the checksum, stay the
dataset's: a subset is a choice of questions, not other data.

- ``limit``: a seeded sample of N questions stratified by slice: each slice gets its share of
  N in proportion to its size (largest remainders first, ties in the slices' order), and its
  questions are drawn by a generator seeded with the run's seed, the dataset's key and the
  slice, so the same seed picks the same questions on every machine.
- ``groups``: every question of the haystack groups named (by group id).
- ``questions``: the ids read from a file (one a line; blank lines and ``#`` comments
  skipped), its SHA-256 recorded.

Unknown group or question ids are refused, naming them; a limit larger than the dataset is
refused with its size.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Sequence
from pathlib import Path

from recallbench.contracts import ALL, Question
from recallbench.datasets.dataset import HaystackGroup, LoadedDataset
from recallbench.errors import OptionError
from recallbench.spec import SubsetSpec

SHOWN = 5
"""Unknown ids named in an error message before ``and N more``."""


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def questions_subset(path: Path) -> SubsetSpec:
    """The subset of the question ids in ``path`` (one a line), with the file's SHA-256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OptionError(f"--questions-from {path}: cannot read it ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OptionError(f"--questions-from {path}: not UTF-8 text ({exc.reason})") from None
    ids = [line.strip() for line in text.splitlines()]
    ids = list(dict.fromkeys(i for i in ids if i and not i.startswith("#")))
    if not ids:
        raise OptionError(f"--questions-from {path}: no question id in it (one id a line)")
    return SubsetSpec(
        kind="questions",
        questions_file=path.name,
        questions_sha256=hashlib.sha256(data).hexdigest(),
        questions=tuple(ids),
    )


def stratified_sample(questions: Sequence[Question], n: int, seed: int, key: str) -> set[str]:
    """The ids of ``n`` questions drawn per slice in proportion to the slices' sizes."""
    by_slice: dict[str, list[Question]] = {}
    for q in questions:
        by_slice.setdefault(q.axis or ALL, []).append(q)
    total = len(questions)
    exact = {s: n * len(qs) / total for s, qs in by_slice.items()}
    quota = {s: int(x) for s, x in exact.items()}
    order = list(by_slice)
    left = n - sum(quota.values())
    for s in sorted(order, key=lambda s: (-(exact[s] - quota[s]), order.index(s)))[:left]:
        quota[s] += 1
    chosen: set[str] = set()
    for s, qs in by_slice.items():
        rng = random.Random(f"recallbench limit|{seed}|{key}|{s}")
        chosen.update(q.id for q in rng.sample(qs, quota[s]))
    return chosen


def _chosen(ds: LoadedDataset, subset: SubsetSpec) -> set[str]:
    if subset.kind == "limit":
        n = subset.limit or 0
        if n < 1:
            raise OptionError(f"--limit must be at least 1, got {n}")
        if n > len(ds.questions):
            raise OptionError(
                f"--limit {n}: {ds.key} has {len(ds.questions)} questions; give at most "
                f"{len(ds.questions)}, or leave --limit out for a full run"
            )
        return stratified_sample(ds.questions, n, subset.seed or 0, ds.key)
    if subset.kind == "groups":
        known = {g.group_id: g for g in ds.groups}
        unknown = [g for g in subset.groups if g not in known]
        if unknown:
            raise OptionError(
                f"--groups: {ds.key} has no haystack group {_named(unknown)} (its groups: "
                f"{_named([g.group_id for g in ds.groups])})"
            )
        return {qid for g in subset.groups for qid in known[g].question_ids}
    if subset.kind == "questions":
        known_ids = {q.id for q in ds.questions}
        unknown = [q for q in subset.questions if q not in known_ids]
        if unknown:
            raise OptionError(
                f"--questions-from {subset.questions_file}: {ds.key} has no question "
                f"{_named(unknown)}"
            )
        return set(subset.questions)
    raise OptionError(f"unknown subset kind {subset.kind!r} (limit, groups or questions)")


def select(ds: LoadedDataset, subset: SubsetSpec | None) -> LoadedDataset:
    """``ds`` cut to ``subset`` (``ds`` itself when None), with a card note naming the part."""
    if subset is None:
        return ds
    chosen = _chosen(ds, subset)
    questions = tuple(q for q in ds.questions if q.id in chosen)
    groups: list[HaystackGroup] = []
    for g in ds.groups:
        ids = tuple(i for i in g.question_ids if i in chosen)
        if ids:
            groups.append(dataclasses.replace(g, question_ids=ids))
    note = (
        f"{subset.label[0].upper()}{subset.label[1:]}: {len(questions)} of "
        f"{len(ds.questions)} questions, {len(groups)} of {len(ds.groups)} haystack group(s); "
        "not the benchmark's full score."
    )
    return dataclasses.replace(
        ds,
        questions=questions,
        groups=tuple(groups),
        card_notes=(*ds.card_notes, note),
    )
