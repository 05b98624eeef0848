"""recallbench's LongMemEval retrieval values against LongMemEval's own evaluation functions.

The official functions (``src/retrieval/eval_utils.py`` of xiaowu0162/LongMemEval at 9e0b455)
are imported at test time from the shared copy of the benchmarks' instruments
(``$RECALLBENCH_INSTRUMENTS``, else ``../shared/instruments`` beside the checkout); the tests skip
when the copy is absent. The copy calls ``np.asfarray``, which NumPy 2 removed, so the tests put
it back for the duration of each test.

The official code is called as LongMemEval's ``src/retrieval/run_retrieval.py`` calls it at turn
granularity: the corpus is every user turn of the haystack, in haystack order, with id
``<session_id>_<n>`` (``n`` counting every turn of the session from 1); in a session whose id
contains ``answer``, a user turn not marked ``has_answer`` has ``answer`` replaced by ``noans``
in its id; the correct documents are the corpus ids that contain ``answer``; ``rankings`` are
corpus positions, best first; ``evaluate_retrieval`` gives the turn values and
``evaluate_retrieval_turn2session`` the session values at each k. recallbench is run through its
loader (``parse_longmemeval``) and rule set on the same instance, and its ranking is the one a
system's memories give; the official functions receive that ranking, which is shorter than the
full-corpus ranking LongMemEval's retrievers produce.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import string
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from recallbench.benchmarks.longmemeval.load import parse_longmemeval
from recallbench.benchmarks.longmemeval.metrics import QUESTION_TYPES
from recallbench.benchmarks.longmemeval.rules import RANKING_EXHAUSTED, LongMemEvalRules
from recallbench.contracts import Memory, Observation, Question

REPO = Path(__file__).resolve().parents[3]
EVAL_UTILS = Path("longmemeval") / "src" / "retrieval" / "eval_utils.py"
EVAL_UTILS_SHA256 = "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349"
RULES = LongMemEvalRules()
KS = (1, 2, 3, 5, 7, 10, 30, 50)
CASES = 200
SEED = 20250109
TOLERANCE = 1e-12
"""nDCG: recallbench sums in Python, the official code with NumPy; they may differ in the last
bits of a double, never more (metric rows are rounded to 6 decimals)."""


def _instruments_dir() -> Path | None:
    env = os.environ.get("RECALLBENCH_INSTRUMENTS")
    path = Path(env) if env else REPO.parent / "shared" / "instruments"
    return path if path.is_dir() else None


@pytest.fixture
def official(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """LongMemEval's ``eval_utils`` module, loaded from the shared copy (skip when absent)."""
    root = _instruments_dir()
    path = None if root is None else root / EVAL_UTILS
    if path is None or not path.is_file():
        pytest.skip("LongMemEval's eval_utils.py is not in the shared instruments copy")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == EVAL_UTILS_SHA256, (
        f"{path} is not the copy pinned here (LongMemEval 9e0b455)"
    )
    if not hasattr(np, "asfarray"):
        monkeypatch.setattr(
            np, "asfarray", lambda a, dtype=float: np.asarray(a, dtype=dtype), raising=False
        )
    spec = importlib.util.spec_from_file_location("longmemeval_official_eval_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- calling the official code


def official_corpus(instance: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The official corpus ids of an instance's user turns and recallbench's turn ids, aligned."""
    corpus_ids: list[str] = []
    turn_ids: list[str] = []
    for sid, session in zip(
        instance["haystack_session_ids"], instance["haystack_sessions"], strict=True
    ):
        for n, turn in enumerate(session, start=1):
            if turn["role"] != "user":
                continue
            turn_id = f"{sid}_{n}"
            renamed = "answer" in sid and not turn["has_answer"]
            corpus_ids.append(turn_id.replace("answer", "noans") if renamed else turn_id)
            turn_ids.append(turn_id)
    return corpus_ids, turn_ids


def first_user_turns(memories: Sequence[Sequence[str]], user_turns: set[str]) -> list[str]:
    """The ranking a list of memories gives: user turns at their first appearance, in order."""
    out: list[str] = []
    for memory in memories:
        for turn_id in memory:
            if turn_id in user_turns and turn_id not in out:
                out.append(turn_id)
    return out


class OfficialRun:
    """The official functions on one instance; rankings are corpus positions, best first."""

    def __init__(
        self, module: ModuleType, instance: dict[str, Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.module = module
        self.monkeypatch = monkeypatch
        self.corpus_ids, self.turn_ids = official_corpus(instance)
        self.position = {t: i for i, t in enumerate(self.turn_ids)}
        self.correct_docs = sorted({c for c in self.corpus_ids if "answer" in c})

    def rankings(self, turn_ids: Sequence[str]) -> list[int]:
        return [self.position[t] for t in turn_ids]

    def turn(self, rankings: list[int], k: int) -> tuple[float, ...]:
        values = self.module.evaluate_retrieval(rankings, self.correct_docs, self.corpus_ids, k=k)
        return tuple(float(x) for x in values)

    def session(self, rankings: list[int], k: int) -> tuple[tuple[float, ...], int]:
        """The session values, and the effective_k the official function grew k to."""
        original = self.module.evaluate_retrieval
        cuts: list[int] = []

        def recording(rankings: Any, correct_docs: Any, corpus_ids: Any, k: int = 10) -> Any:
            cuts.append(k)
            return original(rankings, correct_docs, corpus_ids, k=k)

        # evaluate_retrieval_turn2session calls the module's evaluate_retrieval with its grown
        # effective_k: record it, so the test can say where the official cut fell
        with self.monkeypatch.context() as patch:
            patch.setattr(self.module, "evaluate_retrieval", recording)
            values = self.module.evaluate_retrieval_turn2session(
                rankings, self.correct_docs, self.corpus_ids, k=k
            )
        assert len(cuts) == 1
        return tuple(float(x) for x in values), cuts[0]


# ---------------------------------------------------------------- random instances


def _sessions(instance: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    return zip(instance["haystack_session_ids"], instance["haystack_sessions"], strict=True)


def _token(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.hexdigits[:16]) for _ in range(n))


def _session_id(rng: random.Random, answer: bool, taken: set[str]) -> str:
    while True:
        if answer:
            sid = f"answer_{_token(rng)}_{rng.randint(1, 4)}"
        else:
            sid = rng.choice(
                [
                    lambda: f"sharegpt_{_token(rng, 7)}_{rng.randint(0, 9)}",
                    lambda: f"ultrachat_{rng.randint(1, 999999)}",
                    lambda: f"{_token(rng)}_{rng.randint(1, 3)}",
                ]
            )()
        if sid not in taken:
            taken.add(sid)
            return sid


def _turns(rng: random.Random, n: int, start_user: bool) -> list[dict[str, Any]]:
    roles = ["user", "assistant"] if start_user else ["assistant", "user"]
    return [{"role": roles[i % 2], "content": f"turn {i}"} for i in range(n)]


def random_instance(rng: random.Random, case: int) -> dict[str, Any]:
    """A LongMemEval-format instance: several user/assistant turns per session, one to three
    answer sessions holding zero, one or several gold user turns (at least one in all)."""
    size = rng.random()
    n_sessions = (
        rng.randint(1, 8)
        if size < 0.6
        else rng.randint(9, 20)
        if size < 0.9
        else rng.randint(45, 60)
    )
    n_answer = min(n_sessions, rng.randint(1, 3))
    answer_at = set(rng.sample(range(n_sessions), n_answer))
    taken: set[str] = set()
    ids: list[str] = []
    sessions: list[list[dict[str, Any]]] = []
    for i in range(n_sessions):
        answer = i in answer_at
        ids.append(_session_id(rng, answer, taken))
        start_user = rng.random() < 0.85
        n_turns = rng.randint(2 if answer or not start_user else 1, 4 if n_sessions > 40 else 12)
        turns = _turns(rng, n_turns, start_user)
        if answer:
            mode = rng.choice(["several", "several", "one", "none"])
            users = [t for t in turns if t["role"] == "user"]
            marked = {
                "several": rng.sample(users, min(len(users), rng.randint(2, 4))),
                "one": rng.sample(users, 1),
                "none": [],
            }[mode]
            for t in turns:
                t["has_answer"] = any(t is m for m in marked) or (
                    t["role"] == "assistant" and rng.random() < 0.2
                )
        elif rng.random() < 0.1:
            rng.choice(turns)["has_answer"] = True  # ignored: not an answer session
        sessions.append(turns)
    gold = [
        t
        for sid, s in zip(ids, sessions, strict=True)
        if "answer" in sid
        for t in s
        if t["role"] == "user" and t["has_answer"]
    ]
    if not gold:
        first = next(s for sid, s in zip(ids, sessions, strict=True) if "answer" in sid)
        next(t for t in first if t["role"] == "user")["has_answer"] = True
    return {
        "question_id": f"rand_{case}",
        "question_type": rng.choice(QUESTION_TYPES),
        "question": "q",
        "answer": "a",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ids,
        "haystack_dates": [
            f"2023/05/{1 + i // 3:02d} (Mon) {10 + i % 3}:00" for i in range(n_sessions)
        ],
        "haystack_sessions": sessions,
        "answer_session_ids": [ids[i] for i in sorted(answer_at)],
    }


def random_memories(rng: random.Random, instance: dict[str, Any]) -> list[tuple[str, ...]]:
    """What a system might return: memories of one to three turns, user or assistant, with
    repeats; sometimes every user turn of the corpus, sometimes a prefix of it, sometimes few."""
    every = [f"{sid}_{n}" for sid, s in _sessions(instance) for n in range(1, len(s) + 1)]
    user = official_corpus(instance)[1]
    mode = rng.choice(["full", "prefix", "few", "few"])
    if mode == "few":
        return [
            tuple(rng.choice(every) for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(0, 15))
        ]
    order = rng.sample(user, len(user))
    if mode == "prefix":
        order = order[: rng.randint(0, len(order))]
    memories: list[tuple[str, ...]] = []
    i = 0
    while i < len(order):
        width = rng.randint(1, 3)
        chunk = list(order[i : i + width])
        if rng.random() < 0.3:
            chunk.insert(rng.randint(0, len(chunk)), rng.choice(every))  # an assistant turn, or
        memories.append(tuple(chunk))  # a repeat
        i += width
    return memories


def observation(qid: str, memories: list[tuple[str, ...]]) -> Observation:
    return Observation(
        run_id="r",
        dataset="longmemeval",
        dataset_version="v",
        group=qid,
        question_id=qid,
        system="s",
        k=len(memories),
        attempt=1,
        observed_at="",
        latency_ms=None,
        memories=tuple(Memory(id=f"m{i}", text="", source_turns=t) for i, t in enumerate(memories)),
        chars_returned=0,
        outcome="usable" if memories else "unusable",
    )


def recallbench_question(instance: dict[str, Any]) -> Question:
    _, questions, _ = parse_longmemeval([instance])
    return questions[0]


def cases() -> Iterator[tuple[int, dict[str, Any], list[tuple[str, ...]]]]:
    rng = random.Random(SEED)
    for case in range(CASES):
        instance = random_instance(rng, case)
        yield case, instance, random_memories(rng, instance)


# ---------------------------------------------------------------- the comparisons


def _check(
    got: dict[str, float | None], prefix: str, k: int, want: tuple[float, float, float], where: str
) -> None:
    recall_any, recall_all, ndcg = want
    assert got[f"{prefix}:recall_any@{k}"] == recall_any, where
    assert got[f"{prefix}:recall_all@{k}"] == recall_all, where
    assert got[f"{prefix}:ndcg_any@{k}"] == pytest.approx(ndcg, rel=TOLERANCE, abs=TOLERANCE), where


def test_200_random_rankings_match_the_official_functions(
    official: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = {
        "exhausted": 0,
        "not_exhausted": 0,
        "grown_k": 0,
        "two_gold_turns_of_one_session_in_the_cut": 0,
        "answer_session_without_gold_turn": 0,
        "ndcg_between_0_and_1": 0,
    }
    completions = random.Random(SEED + 1)
    for case, instance, memories in cases():
        question = recallbench_question(instance)
        got, reasons = RULES.question_metrics(question, observation(question.id, memories), KS)
        run = OfficialRun(official, instance, monkeypatch)
        user = set(run.turn_ids)
        ranking = first_user_turns(memories, user)
        rankings = run.rankings(ranking)
        gold_turns = {t for t, c in zip(run.turn_ids, run.corpus_ids, strict=True) if "answer" in c}
        if any(
            not any(t["role"] == "user" and t["has_answer"] for t in s)
            for sid, s in _sessions(instance)
            if "answer" in sid
        ):
            seen["answer_session_without_gold_turn"] += 1
        for k in KS:
            where = f"case {case}, k={k}"
            _check(got, "turn", k, run.turn(rankings, k), where)
            values, effective_k = run.session(rankings, k)
            _check(got, "session", k, values, where)
            exhausted = len(rankings) < min(effective_k, len(run.corpus_ids))
            flag = f"{RANKING_EXHAUSTED}@{k}"
            assert got[flag] == float(exhausted), where
            if exhausted:
                seen["exhausted"] += 1
                assert reasons[flag].startswith("ranking_exhausted: "), where
                assert f"effective_k {effective_k}" in reasons[flag], where
            else:
                seen["not_exhausted"] += 1
                assert flag not in reasons, where
                # not exhausted: the official values cannot depend on the turns left unranked
                rest = [i for i in range(len(run.corpus_ids)) if i not in set(rankings)]
                completed = rankings + completions.sample(rest, len(rest))
                assert run.session(completed, k) == (values, effective_k), where
            if effective_k > k:
                seen["grown_k"] += 1
            cut = ranking[:effective_k]
            by_session: dict[str, int] = {}
            for t in cut:
                if t in gold_turns:
                    by_session[t.rpartition("_")[0]] = by_session.get(t.rpartition("_")[0], 0) + 1
            if any(n >= 2 for n in by_session.values()):
                seen["two_gold_turns_of_one_session_in_the_cut"] += 1
            if 0.0 < values[2] < 1.0:
                seen["ndcg_between_0_and_1"] += 1
    # the random cases cover what the comparison is about (counts of (case, k) pairs, of cases
    # for answer_session_without_gold_turn; with this seed 666 exhausted, 934 not, 212 with
    # two gold turns of one session inside the official cut)
    assert all(n >= 50 for n in seen.values()), seen


def test_worked_case_two_gold_turns_in_one_session(
    official: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-computed case of test_longmemeval_metrics, in LongMemEval's own format."""
    instance = {
        "question_id": "worked_1",
        "question_type": "multi-session",
        "question": "q",
        "answer": "a",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["answer_s1", "s2", "s3"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 3,
        "haystack_sessions": [
            # answer_s1_1 and answer_s1_5 are gold; answer_s1_3 is renamed noans_s1_3
            _marked(
                ["user", True],
                ["assistant", False],
                ["user", False],
                ["assistant", False],
                ["user", True],
            ),
            _marked(["user", False], ["assistant", False]),
            _marked(["user", False], ["assistant", False]),
        ],
        "answer_session_ids": ["answer_s1"],
    }
    # ranked user turns: answer_s1_1, s2_1, answer_s1_5, s3_1 -> sessions answer_s1, s2,
    # answer_s1, s3. k=3: effective_k = 4 (the third session comes at the fourth turn).
    # Relevances [1, 0, 1, 0]: DCG = 1 + 1/log2(3); ideal (two gold turns) 1 + 1 = 2.
    memories = [("answer_s1_1",), ("s2_1",), ("answer_s1_5",), ("s3_1",)]
    run = OfficialRun(official, instance, monkeypatch)
    rankings = run.rankings(first_user_turns(memories, set(run.turn_ids)))
    values, effective_k = run.session(rankings, 3)
    hand = (1 + 1 / np.log2(3)) / 2
    assert effective_k == 4
    assert values == (1.0, 1.0, pytest.approx(hand, rel=TOLERANCE))
    question = recallbench_question(instance)
    got, reasons = RULES.question_metrics(question, observation(question.id, memories), (3,))
    assert got["session:ndcg_any@3"] == pytest.approx(values[2], rel=TOLERANCE)
    assert got["session:ndcg_any@3"] == pytest.approx(0.8154648767857288)
    # four ranked turns of five: the ranking covers k=3 sessions, nothing was assumed
    assert got[f"{RANKING_EXHAUSTED}@3"] == 0.0 and f"{RANKING_EXHAUSTED}@3" not in reasons


def test_exhausted_ranking_official_value_assumes_the_full_corpus(
    official: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranking with fewer than k sessions: recallbench gives the official value on it and
    flags it, because the official value on a full-corpus ranking would read further turns."""
    instance = {
        "question_id": "worked_2",
        "question_type": "multi-session",
        "question": "q",
        "answer": "a",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s2", "answer_s1", "s3"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 3,
        "haystack_sessions": [
            _marked(["user", False], ["assistant", False]),
            _marked(["user", True], ["assistant", False], ["user", True]),
            _marked(["user", False], ["assistant", False]),
        ],
        "answer_session_ids": ["answer_s1"],
    }
    run = OfficialRun(official, instance, monkeypatch)
    memories = [("s2_1",), ("answer_s1_1",)]
    rankings = run.rankings(first_user_turns(memories, set(run.turn_ids)))
    # the ranking covers two sessions; k=3 grows past it to one past the corpus (4 user turns)
    values, effective_k = run.session(rankings, 3)
    assert effective_k == 5
    # relevances [0, 1]: DCG 1; ideal: both gold turns (answer_s1_1, answer_s1_3) -> 2
    assert values == (1.0, 1.0, pytest.approx(0.5, rel=TOLERANCE))
    question = recallbench_question(instance)
    got, reasons = RULES.question_metrics(question, observation(question.id, memories), (3,))
    assert got["session:ndcg_any@3"] == pytest.approx(0.5, rel=TOLERANCE)
    assert got[f"{RANKING_EXHAUSTED}@3"] == 1.0
    assert reasons[f"{RANKING_EXHAUSTED}@3"].startswith("ranking_exhausted: ")
    # the same two turns at the top of a full-corpus ranking, the other gold turn third:
    full = rankings + run.rankings(["answer_s1_3", "s3_1"])
    values, _ = run.session(full, 3)
    # relevances [0, 1, 1, 0]: DCG 1 + 1/log2(3) over the ideal 2
    assert values[2] == pytest.approx((1 + 1 / np.log2(3)) / 2, rel=TOLERANCE)


def _marked(*turns: list[Any]) -> list[dict[str, Any]]:
    return [{"role": r, "content": "x", "has_answer": h} for r, h in turns]
