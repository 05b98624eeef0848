"""recallbench prompts v1: recallbench's own reader and judge, in its own words.

The instrument of datasets whose benchmark publishes none (the sample, recallbench's folder
format), and a labelled alternative (``--prompts recallbench-v1``) everywhere else, never the
default where a benchmark publishes its own. The text lives in ``prompts/recallbench_v1.json``;
its SHA-256 is recorded with every run that uses it. The judge answers CORRECT or WRONG; the
verdict is the last of the two words in the reply, WRONG (and counted as unparsed) when neither
appears. Metric: ``answer_correct`` (answer mode) or ``memory_correct`` (memory mode), 1 or 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from recallbench.contracts import Question, sha256_text
from recallbench.instruments.protocol import (
    AnswerContext,
    AnswerInstrument,
    InstrumentFileRecord,
    JudgeCase,
    JudgeResult,
    ReaderResult,
    Retrieved,
)
from recallbench.llm.types import CallLLM, ChatRequest

PROMPTS_FILE = Path(__file__).resolve().parent / "prompts" / "recallbench_v1.json"
ANSWER_METRIC = "answer_correct"
MEMORY_METRIC = "memory_correct"
DONT_KNOW = "I don't know."


@cache
def prompts() -> dict[str, Any]:
    return dict(json.loads(PROMPTS_FILE.read_text(encoding="utf-8")))


def is_abstention(q: Question) -> bool:
    return q.expect != "answer" or q.gold is None


def render_memories(memories: Sequence[Retrieved]) -> str:
    p = prompts()
    if not memories:
        return str(p["memory_none"])
    lines = []
    for m in memories:
        date = next((t.date for t in m.turns if t.date), None)
        lines.append(p["memory_line"].format(date=f"[{date}] " if date else "", text=m.text))
    return "\n".join(lines)


def parse_verdict(reply: str | None) -> tuple[float, bool]:
    """(value, unparsed): the last of CORRECT / WRONG in the reply; WRONG when neither."""
    p = prompts()
    up = (reply or "").upper()
    best, pos = str(p["default_verdict"]), -1
    for word in p["verdicts"]:
        i = up.rfind(word)
        if i > pos:
            best, pos = word, i
    return float(p["verdicts"][best]), pos < 0


class RecallbenchV1(AnswerInstrument):
    """recallbench's own reader and judge (``recallbench prompts v1``)."""

    name = "recallbench prompts v1"
    official = False
    modes = ("memory", "answer")
    judge_metrics = {"memory": (MEMORY_METRIC,), "answer": (ANSWER_METRIC,)}

    def files(self) -> tuple[InstrumentFileRecord, ...]:
        digest = sha256_text(PROMPTS_FILE.read_text(encoding="utf-8"))
        return (
            InstrumentFileRecord(
                "recallbench", "(this package)", "recallbench/instruments/prompts/"
                "recallbench_v1.json", digest, pinned=True, note="recallbench's own wording"
            ),
        )

    def reader_request(self, ctx: AnswerContext) -> ChatRequest:
        p = prompts()
        prompt = p["reader"].format(
            memories=render_memories(ctx.memories), question=ctx.question.text
        )
        return ChatRequest.user(prompt, "reader", **p["settings"])

    def empty_reader_request(self) -> ChatRequest | None:
        p = prompts()
        prompt = p["reader"].format(memories=p["memory_none"], question="x")
        return ChatRequest.user(prompt, "reader:empty", **{**p["settings"], "max_tokens": 1})

    def answer(self, ctx: AnswerContext, call: CallLLM) -> ReaderResult:
        request = self.reader_request(ctx)
        done = call(request)
        return ReaderResult(
            answer=done.text.strip() if done.ok and done.text else None,
            reply=done.text,
            prompt_sha256=request.prompt_sha256,
            calls=(done,),
            error=done.error,
        )

    def judge_request(self, q: Question, mode: str, response: str) -> ChatRequest:
        p = prompts()
        abstain = is_abstention(q)
        alternates = (
            p["alternates"].format(alternates="; ".join(q.alternates)) if q.alternates else ""
        )
        prompt = p["judge"].format(
            what=p["judge_what"][mode],
            question=q.text,
            gold=p["abstain_gold"] if abstain else q.gold,
            alternates=alternates,
            response=response,
            rule=p["judge_rule"]["abstain" if abstain else "answer"],
        )
        return ChatRequest.user(prompt, f"judge:{mode}", **p["judge_settings"])

    def judge(
        self, ctx: AnswerContext, mode: str, answer: str | None, call: CallLLM
    ) -> tuple[JudgeResult, ...]:
        response = render_memories(ctx.memories) if mode == "memory" else (answer or "")
        request = self.judge_request(ctx.question, mode, response)
        done = call(request)
        metric = MEMORY_METRIC if mode == "memory" else ANSWER_METRIC
        if not done.ok:
            return (
                JudgeResult(metric, None, False, done.text, request.prompt_sha256, (done,),
                            error=done.error),
            )
        value, unparsed = parse_verdict(done.text)
        return (JudgeResult(metric, value, unparsed, done.text, request.prompt_sha256, (done,)),)

    def judge_cases(self, questions: Sequence[Question], mode: str) -> list[JudgeCase]:
        metric = MEMORY_METRIC if mode == "memory" else ANSWER_METRIC
        answerable = [q for q in questions if not is_abstention(q) and q.gold]
        cases: list[JudgeCase] = []
        for i, q in enumerate(answerable):
            assert q.gold is not None
            cases.append(JudgeCase("gold_verbatim", q, q.gold, 1.0, metric))
            if q.alternates:
                cases.append(JudgeCase("accepted_alternative", q, q.alternates[0], 1.0, metric))
            other = next(
                (o for o in answerable[i + 1 :] + answerable[:i] if o.gold != q.gold), None
            )
            if other is not None and other.gold:
                cases.append(JudgeCase("plausible_wrong", q, other.gold, 0.0, metric))
            cases.append(JudgeCase("dont_know", q, DONT_KNOW, 0.0, metric))
        for q in questions:
            if is_abstention(q):
                cases.append(JudgeCase("dont_know", q, DONT_KNOW, 1.0, metric))
                invented = next((o.gold for o in answerable if o.gold), "42")
                cases.append(JudgeCase("invented_abstain", q, invented, 0.0, metric))
        return cases
