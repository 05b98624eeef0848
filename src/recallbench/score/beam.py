"""The BEAM rule set: rubric and event-ordering scores, null with a reason until a judge exists.

Per question (stable names):

* ``rubric``: the mean of the LLM judge's 0 / 0.5 / 1 grades over the question's rubric items
  (:func:`recallbench.score.beam_rules.grade_rubric`);
* ``event_ordering`` (event-ordering questions only): Kendall tau-b between the answer's event
  order and the gold order, normalised to (tau + 1) / 2
  (:func:`recallbench.score.beam_rules.event_ordering_score`); mapping answer events onto gold
  events is an LLM call too.

Both need an LLM judge, which recallbench does not have yet: they are null with the reason
(``no_answer`` when no answer was generated, else ``no_judge``). BEAM publishes no retrieval
metric; the generic retrieval metrics over ``source_chat_ids`` are reported beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recallbench.contracts import Observation, Question, Verdict
from recallbench.report.aggregate import ALL
from recallbench.report.summary import Table, fmt
from recallbench.score.beam_rules import ABILITIES, EVENT_ORDERING

if TYPE_CHECKING:
    from recallbench.contracts import MetricRow
    from recallbench.datasets.spec import LoadedDataset
    from recallbench.score.score_run import ScoredRun

RUBRIC = "rubric"
EVENT_ORDER = "event_ordering"
RULE_NO_ANSWER = "no_answer"
RULE_NO_JUDGE = "no_judge"
NO_ANSWER_REASON = f"{RULE_NO_ANSWER}: no answer generated; BEAM grades answers, not memories"
NO_JUDGE_REASON = (
    f"{RULE_NO_JUDGE}: BEAM's rubric and event-ordering scores need an LLM judge, and none is "
    "configured yet"
)


class BeamRules:
    name = "beam"
    weighted_metrics: tuple[str, ...] = ()

    def question_metrics(
        self,
        question: Question,
        observation: Observation,
        ks: Sequence[int],
        options: Mapping[str, object],
    ) -> tuple[dict[str, float | None], dict[str, str]]:
        reason = NO_JUDGE_REASON if observation.answer_generated else NO_ANSWER_REASON
        metrics: dict[str, float | None] = {RUBRIC: None}
        reasons = {RUBRIC: reason}
        if question.axis == EVENT_ORDERING:
            metrics[EVENT_ORDER] = None
            reasons[EVENT_ORDER] = reason
        return metrics, reasons

    # -- optional hooks ---------------------------------------------------------------------
    def external_line(self, question: Question, verdict: Verdict) -> dict[str, Any]:
        keys = list(verdict.metrics)
        return {
            "id": verdict.question_id,
            "slice": verdict.slice,
            **{k: verdict.metrics[k] for k in keys},
            "null_reasons": {
                k: verdict.null_reasons.get(k, "") for k in keys if verdict.metrics[k] is None
            },
        }

    def summary_notes(self, dataset: LoadedDataset) -> list[str]:
        return [
            "rubric (0/0.5/1 per item, averaged) and event_ordering ((tau_b + 1) / 2) need an LLM "
            "judge: null until one is configured. Retrieval figures use source_chat_ids."
        ]

    def summary_tables(self, scored: ScoredRun, dataset: LoadedDataset) -> list[Table]:
        systems = list(scored.manifest["spec"]["systems"])
        kmax = max(int(k) for k in scored.manifest["spec"]["k"])
        idx = {
            (r.system, r.slice, r.metric, r.k): r
            for r in scored.metrics
            if r.dataset == dataset.key
        }
        present = {q.axis for q in dataset.questions}
        slices = [a for a in ABILITIES if a in present] + sorted(present - set(ABILITIES))
        rows: list[tuple[str, ...]] = []
        for a in [*slices, ALL]:
            cells = [a]
            for s in systems:
                recall = idx.get((s, a, "evidence_recall", kmax))
                rubric = idx.get((s, a, RUBRIC, None))
                cells.append(f"{_cell(recall)} | rubric {_cell(rubric)}")
            rows.append(tuple(cells))
        return [
            Table(
                f"{dataset.key}: evidence_recall@{kmax} | rubric, by ability",
                ("ability", *systems),
                tuple(rows),
                "n = questions scored; 'excl.' = questions excluded with a reason (abstention "
                "questions have no evidence by design; rubric needs an LLM judge).",
            )
        ]


def _cell(row: MetricRow | None) -> str:
    if row is None:
        return "-"
    text = f"{fmt(row.value)} (n={row.denominator})"
    if row.n_excluded:
        text += f" +{row.n_excluded} excl."
    return text
