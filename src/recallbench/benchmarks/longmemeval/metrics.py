"""Per-question metrics of the LongMemEval benchmark, reimplemented as pure functions.

LongMemEval (Wu et al., ICLR 2025) reports two things per question:

* retrieval quality, at turn and at session granularity: ``recall_any@k`` (some gold item is in
  the top k), ``recall_all@k`` (every gold item is) and ``ndcg_any@k`` (binary-relevance NDCG);
* answer correctness, decided by an LLM judge with a prompt chosen by question type; labels are
  then averaged per type, across types, overall, and over the abstention questions alone.

A memory system does not return turns but memories, each of which may come from several turns,
so the ranking to score is given as ``ranked: list[list[str]]`` (one list of turn ids per memory,
best memory first) and flattened by :func:`flatten_ranking`.

The values are those of LongMemEval's ``evaluate_retrieval`` (turns) and
``evaluate_retrieval_turn2session`` (sessions) in ``src/retrieval/eval_utils.py``, called as its
``run_retrieval.py`` calls them, with the system's flattened ranking as ``rankings`` and the
haystack's user turns as the corpus; ``tests/benchmarks/longmemeval/test_longmemeval_official.py``
runs the official functions on random rankings and compares every value. The official code ranks
the whole corpus, a system returns at most k memories: see :class:`SessionCutoff` for when a
session value depends on that difference.

Judge prompts are our own wording, stored in ``recallbench/prompts/longmemeval_judge_v1.json``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "ABSTENTION_KEY",
    "DEFAULT_KS",
    "JUDGE_PROMPTS_FILE",
    "QUESTION_TYPES",
    "SessionCutoff",
    "build_judge_prompt",
    "dcg",
    "flatten_ranking",
    "is_abstention",
    "judge_prompts",
    "ndcg_at_k",
    "parse_judge_label",
    "pseudo_session_id",
    "qa_summary",
    "session_evaluation",
    "session_labels",
    "session_metrics",
    "session_ranking",
    "strip_turn_suffix",
    "turn_metrics",
]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
"""The cut-offs LongMemEval reports."""

QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
"""The six question types; abstention questions belong to one of them too (ids end in ``_abs``)."""

ABSTENTION_KEY = "abstention"
"""Key of the abstention template in the judge prompt file and of its row in :func:`qa_summary`."""

JUDGE_PROMPTS_FILE: Path = (
    Path(__file__).resolve().parent / "prompts" / ("longmemeval_judge_v1.json")
)

NOANS_PREFIX = "noans_"


# ---------------------------------------------------------------- small helpers


def is_abstention(question_id: str) -> bool:
    """True for abstention questions, whose ids end in ``_abs``."""
    return question_id.endswith("_abs")


def strip_turn_suffix(turn_id: str) -> str:
    """Session id of a ``<session_id>_<n>`` turn id (everything before the last ``_``)."""
    session_id, sep, _ = turn_id.rpartition("_")
    if not sep:
        raise ValueError(f"turn id without a '_<n>' suffix: {turn_id!r}")
    return session_id


def pseudo_session_id(session_id: str) -> str:
    """Pseudo-session of the user turns of an answer session that carry no ``has_answer`` mark."""
    return NOANS_PREFIX + session_id


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    out = tuple(ks)
    if not out or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in out):
        raise ValueError(f"cut-offs must be positive integers, got {out!r}")
    return out


def dcg(relevances: Sequence[float]) -> float:
    """Discounted cumulative gain: rank 1 counts in full, rank i >= 2 is divided by log2(i)."""
    return sum(rel if i == 1 else rel / math.log2(i) for i, rel in enumerate(relevances, start=1))


def ndcg_at_k(relevances: Sequence[int], n_relevant: int, k: int) -> float:
    """NDCG@k of a binary relevance list, against the ideal list of ``n_relevant`` hits first.

    Returns 0.0 when nothing is relevant (the ideal DCG is 0).
    """
    ideal = dcg([1] * min(n_relevant, k))
    if ideal == 0:
        return 0.0
    return dcg(relevances[:k]) / ideal


def _metrics(
    prefix: str, ranking: Sequence[str], gold: Collection[str], k: int
) -> dict[str, float]:
    top = ranking[:k]
    seen = set(top)
    return {
        f"{prefix}:recall_any@{k}": float(any(g in seen for g in gold)),
        f"{prefix}:recall_all@{k}": float(all(g in seen for g in gold)),
        f"{prefix}:ndcg_any@{k}": ndcg_at_k([int(item in gold) for item in top], len(gold), k),
    }


# ---------------------------------------------------------------- retrieval


def flatten_ranking(ranked: Sequence[Sequence[str]], user_turn_ids: Collection[str]) -> list[str]:
    """Turn a ranked list of memories into a ranked list of distinct user turns.

    Memories are read best first and each memory's turn ids in the order given; a turn id is
    kept at its first appearance only, and ids that are not user turns are dropped (LongMemEval
    ranks user turns only). A memory covering two user turns therefore places both, one after the
    other, at the next two ranks: the earlier-listed turn gets the better rank. Memories whose
    turns are all dropped take no rank.
    """
    seen: set[str] = set()
    flat: list[str] = []
    for memory in ranked:
        for turn_id in memory:
            if turn_id in seen or turn_id not in user_turn_ids:
                continue
            seen.add(turn_id)
            flat.append(turn_id)
    return flat


def turn_metrics(
    ranked: Sequence[Sequence[str]],
    gold_turns: Collection[str],
    user_turn_ids: Collection[str],
    ks: Iterable[int] = DEFAULT_KS,
) -> dict[str, float]:
    """Turn-granularity ``recall_any``, ``recall_all`` and ``ndcg_any`` at every cut-off.

    Args:
        ranked: one list of turn ids per returned memory, best memory first.
        gold_turns: user turns marked ``has_answer`` in the answer sessions; ids that are not
            user turns are ignored, as the official corpus holds user turns only.
        user_turn_ids: every user turn of the haystack.
        ks: cut-offs.

    Returns keys ``turn:recall_any@K``, ``turn:recall_all@K`` and ``turn:ndcg_any@K``.

    With no gold turn the values follow the official arithmetic: recall_any 0, recall_all 1
    (vacuously true), ndcg 0. LongMemEval leaves abstention questions out of retrieval averages;
    that filtering is the caller's job.
    """
    cutoffs = _check_ks(ks)
    gold = {t for t in gold_turns if t in user_turn_ids}
    ranking = flatten_ranking(ranked, user_turn_ids)
    out: dict[str, float] = {}
    for k in cutoffs:
        out.update(_metrics("turn", ranking, gold, k))
    return out


def _lookup(session_of: Callable[[str], str] | Mapping[str, str]) -> Callable[[str], str]:
    return session_of.__getitem__ if isinstance(session_of, Mapping) else session_of


def session_labels(
    ranked: Sequence[Sequence[str]],
    session_of: Callable[[str], str] | Mapping[str, str],
    answer_session_ids: Collection[str],
    has_answer_turns: Collection[str],
    user_turn_ids: Collection[str],
) -> list[str]:
    """The (pseudo-)session of every turn of the flattened user-turn ranking, in rank order.

    Each turn maps to its session, except a user turn of an answer session that is not marked
    ``has_answer``: it maps to :func:`pseudo_session_id` of that session, which is never gold (the
    official code renames such a turn ``noans``). So hitting an answer session through an
    irrelevant turn earns nothing. One label per ranked turn: a session ranked through two
    turns appears twice.
    """
    lookup = _lookup(session_of)
    answer_sessions = set(answer_session_ids)
    marked = set(has_answer_turns)
    out: list[str] = []
    for turn_id in flatten_ranking(ranked, user_turn_ids):
        session_id = lookup(turn_id)
        if session_id in answer_sessions and turn_id not in marked:
            session_id = pseudo_session_id(session_id)
        out.append(session_id)
    return out


def session_ranking(
    ranked: Sequence[Sequence[str]],
    session_of: Callable[[str], str] | Mapping[str, str],
    answer_session_ids: Collection[str],
    has_answer_turns: Collection[str],
    user_turn_ids: Collection[str],
) -> list[str]:
    """Ranked distinct (pseudo-)sessions: :func:`session_labels`, each kept at its first
    appearance."""
    labels = session_labels(ranked, session_of, answer_session_ids, has_answer_turns, user_turn_ids)
    return list(dict.fromkeys(labels))


@dataclass(frozen=True, slots=True)
class SessionCutoff:
    """Where LongMemEval's turn-to-session evaluation cuts one ranking at one k.

    ``effective_k`` is the official grown cut-off, counted in ranked turns: it starts at k and
    grows by one while it is at most ``corpus_turns`` and the first ``effective_k`` turns cover
    fewer than k distinct (pseudo-)sessions. So it is the rank of the turn that brings the k-th
    distinct session when the ranking has one, and otherwise ``max(k, corpus_turns + 1)``.
    ``ranked_turns`` and ``ranked_sessions`` count the ranking's user turns and its distinct
    (pseudo-)sessions; ``corpus_turns`` the haystack's user turns (the official corpus).
    """

    k: int
    effective_k: int
    ranked_turns: int
    ranked_sessions: int
    corpus_turns: int

    @property
    def exhausted(self) -> bool:
        """True when ``effective_k`` ran past the end of the ranking while corpus turns were left
        unranked (the ranking covers fewer than k (pseudo-)sessions and is not the whole corpus).

        The session values at k are then the official function's on the ranking given. The
        official evaluation ranks the whole corpus, so its cut would have read further turns,
        which could have been relevant. A ranking of the whole corpus is never exhausted, and
        an empty ranking of a non-empty corpus always is.
        """
        return self.ranked_turns < min(self.effective_k, self.corpus_turns)


def session_evaluation(
    ranked: Sequence[Sequence[str]],
    session_of: Callable[[str], str] | Mapping[str, str],
    answer_session_ids: Collection[str],
    has_answer_turns: Collection[str],
    user_turn_ids: Collection[str],
    ks: Iterable[int] = DEFAULT_KS,
) -> tuple[dict[str, float], dict[int, SessionCutoff]]:
    """Session-granularity metrics as LongMemEval's ``evaluate_retrieval_turn2session`` computes
    them on this ranking, and where it cut the ranking at each k.

    Args:
        ranked: one list of turn ids per returned memory, best memory first; flattened by
            :func:`flatten_ranking` and labelled by :func:`session_labels`.
        session_of: a turn id's session id: a mapping or a function, for instance
            :func:`strip_turn_suffix`.
        answer_session_ids: the answer sessions. Their user turns marked ``has_answer`` are the
            gold turns; their other user turns map to pseudo-sessions.
        has_answer_turns: turns marked ``has_answer`` (marks outside answer sessions, and on
            turns that are not user turns, are ignored).
        user_turn_ids: every user turn of the haystack (distinct ids): the official corpus.
        ks: cut-offs.

    At each k, with ``effective_k`` as :class:`SessionCutoff` defines it, over the first
    ``effective_k`` ranked turns (all of them when the ranking is shorter):

    * gold sessions are the sessions of the gold turns (an answer session with no marked user
      turn is not gold);
    * ``session:recall_any@K`` / ``session:recall_all@K``: 1.0 if some / every gold session is
      among those turns' sessions (with no gold turn: 0.0 / 1.0, the official arithmetic);
    * ``session:ndcg_any@K``: the turns are scored one by one, not de-duplicated: a turn is
      relevant when its (pseudo-)session is gold, that is, when it is a gold turn, so a gold
      session ranked through two gold turns gains twice. DCG as :func:`dcg`, over the ideal DCG
      of every gold turn of the corpus ranked first, cut at ``effective_k``: the turn nDCG at
      ``effective_k`` (0.0 when there is no gold turn).
    """
    cutoffs = _check_ks(ks)
    lookup = _lookup(session_of)
    users = user_turn_ids if isinstance(user_turn_ids, set | frozenset) else set(user_turn_ids)
    answer_sessions = set(answer_session_ids)
    gold_turns = {t for t in has_answer_turns if t in users and lookup(t) in answer_sessions}
    gold = {lookup(t) for t in gold_turns}
    labels = session_labels(ranked, lookup, answer_sessions, gold_turns, users)
    firsts: list[int] = []  # 1-based rank at which each distinct (pseudo-)session first shows
    seen: set[str] = set()
    for rank, label in enumerate(labels, start=1):
        if label not in seen:
            seen.add(label)
            firsts.append(rank)
    metrics: dict[str, float] = {}
    cuts: dict[int, SessionCutoff] = {}
    for k in cutoffs:
        effective_k = firsts[k - 1] if k <= len(firsts) else max(k, len(users) + 1)
        top = labels[:effective_k]
        covered = set(top)
        metrics[f"session:recall_any@{k}"] = float(any(g in covered for g in gold))
        metrics[f"session:recall_all@{k}"] = float(all(g in covered for g in gold))
        metrics[f"session:ndcg_any@{k}"] = ndcg_at_k(
            [int(label in gold) for label in top], len(gold_turns), effective_k
        )
        cuts[k] = SessionCutoff(k, effective_k, len(labels), len(firsts), len(users))
    return metrics, cuts


def session_metrics(
    ranked: Sequence[Sequence[str]],
    session_of: Callable[[str], str] | Mapping[str, str],
    answer_session_ids: Collection[str],
    has_answer_turns: Collection[str],
    user_turn_ids: Collection[str],
    ks: Iterable[int] = DEFAULT_KS,
) -> dict[str, float]:
    """The metrics of :func:`session_evaluation`: ``session:recall_any@K``,
    ``session:recall_all@K`` and ``session:ndcg_any@K`` at every cut-off."""
    metrics, _ = session_evaluation(
        ranked, session_of, answer_session_ids, has_answer_turns, user_turn_ids, ks
    )
    return metrics


# ---------------------------------------------------------------- answer judging


@lru_cache(maxsize=4)
def _load_prompts(path: str) -> tuple[str, dict[str, str]]:
    with open(path, encoding="utf-8") as fh:
        raw: Any = json.load(fh)
    prompts = raw["prompts"]
    return str(raw["version"]), {str(k): str(v) for k, v in prompts.items()}


def judge_prompts() -> tuple[str, dict[str, str]]:
    """The judge prompt file's version and a copy of its templates, keyed by type."""
    version, prompts = _load_prompts(str(JUDGE_PROMPTS_FILE))
    return version, dict(prompts)


def build_judge_prompt(
    question_type: str, question: str, answer: str, response: str, is_abstention: bool
) -> str:
    """Fill the judge template for a question.

    Abstention questions use the ``abstention`` template whatever their type; their ``answer``
    is the dataset's explanation of why the question cannot be answered. Values are inserted
    verbatim (braces inside them are safe).

    Raises:
        ValueError: for an unknown question type.
    """
    if question_type not in QUESTION_TYPES:
        raise ValueError(f"unknown LongMemEval question type: {question_type!r}")
    _, prompts = _load_prompts(str(JUDGE_PROMPTS_FILE))
    template = prompts[ABSTENTION_KEY if is_abstention else question_type]
    return template.format(question=question, answer=str(answer), response=response)


_LABEL_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_judge_label(text: str | None) -> bool | None:
    """Read a yes/no verdict: the first standalone ``yes`` or ``no`` word decides.

    Case and surrounding punctuation or markup are ignored (``"**Yes.**"`` is yes). Returns None
    when neither word occurs. (The official script tests whether ``"yes"`` occurs anywhere in the
    lowercased reply, which also fires on words such as "yesterday"; the two agree on the short
    replies the prompts ask for.)
    """
    if not text:
        return None
    match = _LABEL_WORD.search(text)
    if match is None:
        return None
    return match.group(1).lower() == "yes"


def _cell(values: Sequence[bool]) -> dict[str, Any]:
    return {
        "accuracy": (sum(values) / len(values)) if values else None,
        "count": len(values),
    }


def qa_summary(labels: Iterable[tuple[str, bool, bool]]) -> dict[str, Any]:
    """Aggregate judge labels as LongMemEval reports them.

    Args:
        labels: ``(question_type, is_abstention, correct)`` per question.

    Returns a dict with

    * ``per_type``: ``{type: {"accuracy", "count"}}`` for the six types (abstention questions
      count inside their own type, as in the official script); accuracy is None when empty;
    * ``task_averaged``: mean of the per-type accuracies over the types that have questions,
      with ``count`` (questions) and ``types`` (types averaged);
    * ``overall``: accuracy over every question;
    * ``abstention``: accuracy over abstention questions only.

    Raises:
        ValueError: for an unknown question type.
    """
    by_type: dict[str, list[bool]] = {t: [] for t in QUESTION_TYPES}
    every: list[bool] = []
    abstentions: list[bool] = []
    for question_type, abstention, correct in labels:
        if question_type not in by_type:
            raise ValueError(f"unknown LongMemEval question type: {question_type!r}")
        by_type[question_type].append(bool(correct))
        every.append(bool(correct))
        if abstention:
            abstentions.append(bool(correct))
    per_type = {t: _cell(v) for t, v in by_type.items()}
    type_means = [cell["accuracy"] for cell in per_type.values() if cell["count"]]
    return {
        "per_type": per_type,
        "task_averaged": {
            "accuracy": (sum(type_means) / len(type_means)) if type_means else None,
            "count": len(every),
            "types": len(type_means),
        },
        "overall": _cell(every),
        ABSTENTION_KEY: _cell(abstentions),
    }
