"""Do-nothing controls: what a system that says nothing scores on a dataset, by the benchmark's
own rules.

A control gives one fixed answer to every question, as an answer written by an answer model
(``answer_generated: true``) that retrieved nothing: each question becomes the predictions-file
line ``{"id": ..., "answer": ANSWER, "retrieved_turns": [], "answer_generated": true}``, turned
into an observation by :func:`recallbench.score.predictions.record_to_observation` and scored
like a predictions file (``ScoringContext(predictions=True)``) by the one scorer
(:func:`~recallbench.score.scorer.score_dataset`, then
:func:`~recallbench.score.aggregate.aggregate`). Nothing here grades an answer, and the figures
are exactly those ``recallbench score`` gives such a file. Scoring needs the questions only,
never a corpus: ``recallbench controls`` loads the dataset as for a predictions file
(``load_dataset(..., predictions=True)``).

A dataset whose rule set declares answer figures (:attr:`RuleSet.answer_figures`) gets one
control per answer of :data:`CONTROL_ANSWERS` (and any the user adds); a retrieval-only one (the
sample, the folder format) gets one control that returns nothing (no answer, ``retrieved_turns:
[]``), which scores 0 on every retrieval metric over the same denominator as a system. The
result is a :class:`~recallbench.results.scored.Floor`: computed from the questions alone,
deterministic (same questions, answers and depths give the same rows), and never written into
``verdicts.jsonl`` or ``metrics.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from recallbench.benchmarks import benchmark_of, load_dataset
from recallbench.contracts import Observation, sha256_text, to_json_dict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.results.scored import Control, Floor
from recallbench.score.predictions import (
    PREDICTIONS_SYSTEM,
    record_to_observation,
    score_observations,
)
from recallbench.score.rules import RuleSet

CONTROL_ANSWERS: tuple[str, ...] = (
    "",
    "I don't know.",
    "No information available.",
    "Not mentioned in the conversation.",
)
"""The fixed answers of every floor, in the order tables show them: the empty answer, then three
ways of saying "I don't know" that benchmarks' string rules treat differently. LoCoMo's
category 5 credits an answer whose lowercased text contains "no information available" or "not
mentioned", so "I don't know." scores none of its adversarial questions and the last two score
all of them; Glasshouse credits all three on its abstention axes. ``recallbench controls
--answer TEXT`` adds more."""

CONTROL_SYSTEM = PREDICTIONS_SYSTEM
"""The ``system`` of a control's observations and rows: that of a predictions file, so a
control's rows are byte for byte those of ``recallbench score`` on the same lines (confidence
intervals included: their bootstrap is seeded by dataset, system, slice and metric)."""
EMPTY_LABEL = "(empty answer)"
RETRIEVAL_LABEL = "floor (returns nothing)"


def control_label(answer: str | None) -> str:
    """How tables name a control: the answer itself, ``(empty answer)`` for one that is empty
    or blank, ``floor (returns nothing)`` for the retrieval control (``None``)."""
    if answer is None:
        return RETRIEVAL_LABEL
    return answer if answer.strip() else EMPTY_LABEL


def control_run_id(dataset: LoadedDataset, answer: str | None) -> str:
    """``control-`` and the first 12 hex digits of the SHA-256 of the dataset checksum and the
    answer: the same control on the same dataset files always has the same id."""
    return "control-" + sha256_text(json.dumps([dataset.checksum, answer]))[:12]


def control_answers(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """:data:`CONTROL_ANSWERS`, then each of ``extra`` not already there, in order."""
    return tuple(dict.fromkeys((*CONTROL_ANSWERS, *extra)))


def _record(question_id: str, answer: str | None) -> dict[str, Any]:
    if answer is None:  # a search that returned nothing, and no answer at all
        return {"id": question_id, "retrieved_turns": []}
    return {"id": question_id, "answer": answer, "retrieved_turns": [], "answer_generated": True}


def control_observations(
    dataset: LoadedDataset, answer: str | None, k: int, run_id: str
) -> list[Observation]:
    """One observation per question of ``dataset``, made by the predictions machinery from the
    control's line (so its ``system`` is :data:`CONTROL_SYSTEM`)."""
    return [
        record_to_observation(_record(q.id, answer), dataset, run_id, q.group, k)
        for q in dataset.questions
    ]


def score_control(
    dataset: LoadedDataset,
    rules: RuleSet,
    answer: str | None,
    ks: Sequence[int],
    intervals: bool = True,
) -> Control:
    """Score one control on ``dataset`` with ``rules`` at depths ``ks``: verdicts by the one
    scorer in a predictions-file context (the rule set's first answer mode, if it has any), then
    aggregate rows, as ``recallbench score`` does for a file."""
    run_id = control_run_id(dataset, answer)
    observations = control_observations(dataset, answer, max(ks), run_id)
    mode = rules.answer_modes[0] if rules.answer_modes else None
    _, rows = score_observations(
        dataset, observations, ks, rules, mode, CONTROL_SYSTEM, run_id, intervals
    )
    return Control(answer, control_label(answer), run_id, tuple(rows))


def floor_of(
    dataset: LoadedDataset,
    rules: RuleSet,
    ks: Sequence[int],
    answers: Sequence[str] = CONTROL_ANSWERS,
    intervals: bool = True,
) -> Floor:
    """The floor of one dataset: a control per answer when ``rules`` declares answer figures,
    else the one retrieval control (``answers`` are then not scored: nothing reads them).
    ``intervals=False`` skips the bootstrap intervals (a run's summary does not show them)."""
    chosen: Sequence[str | None] = tuple(answers) if rules.answer_figures else (None,)
    controls = tuple(score_control(dataset, rules, a, ks, intervals) for a in chosen)
    return Floor(dataset.key, rules.name, rules.answer_figures, controls)


def run_floors(datasets: Sequence[LoadedDataset], ks: Sequence[int]) -> dict[str, Floor]:
    """Each dataset's floor with :data:`CONTROL_ANSWERS`, by dataset key (a run's summary,
    which shows no interval: none is computed)."""
    return {
        ds.key: floor_of(ds, benchmark_of(ds).rules, ks, intervals=False) for ds in datasets
    }


def dataset_controls(
    ref: str,
    data_dir: Path,
    options: Mapping[str, Any] | None = None,
    extra_answers: Iterable[str] = (),
) -> tuple[LoadedDataset, Floor]:
    """Load ``ref`` as for scoring a predictions file (no corpus needed) and compute its floor
    at the dataset's own depths with :data:`CONTROL_ANSWERS` and ``extra_answers``."""
    ds = load_dataset(ref, data_dir, options, predictions=True)
    return ds, floor_of(ds, benchmark_of(ds).rules, ds.default_k, control_answers(extra_answers))


def floor_lines(floor: Floor) -> list[dict[str, Any]]:
    """The figures of a floor as JSON objects (``recallbench controls --out``), one per control
    and metric row, controls in order: ``control`` (the answer, null for the retrieval
    control), ``label``, then the row's fields except ``system``. An answer floor gives the rows
    of its answer figures (every slice); a retrieval floor every row."""
    wanted = {f.metric for f in floor.figures}
    out = []
    for control in floor.controls:
        for row in control.metrics:
            if wanted and row.metric not in wanted:
                continue
            fields = to_json_dict(row)
            fields.pop("system")
            out.append({"control": control.answer, "label": control.label, **fields})
    return out
