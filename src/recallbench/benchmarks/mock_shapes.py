"""The prompt shapes the mock provider recognises, built at run time from the benchmarks' own
pinned files (never copied into recallbench): each template is read from its file with
:mod:`recallbench.instruments.extract` and turned into a pattern whose fields say where the
gold answer, the judged response or the memories are. A file that cannot be had (offline, no
local copy) leaves its shapes out: the mock then replies ``UNRECOGNISED PROMPT`` to them.

What stays here is the mock's own reading of each benchmark's fields and its verdict tokens
(FULL / PARTIAL / WRONG, yes / no, a JSON label), the words the official parsers look for.
"""

from __future__ import annotations

import ast
import json
import re
import string
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from recallbench.datasets.fetch import default_cache_dir
from recallbench.errors import DataFileError
from recallbench.instruments import extract
from recallbench.instruments.generic import PROMPTS_FILE
from recallbench.instruments.pins import InstrumentFile, fetch_instrument
from recallbench.llm.mock import JudgeView, Shape, says_dont_know, template_pattern

Parts = list[tuple[str, str | None]]

ABSTAIN_AXES = frozenset({"ABSTAIN", "FALSE_MEMORY"})
DONT_KNOW_PARTIAL_AXES = frozenset({"UPDATE", "STALE", "CONTRADICT"})


def format_parts(template: str) -> Parts:
    """A ``str.format`` template as (literal, field) pairs; ``{}`` fields are numbered."""
    parts: Parts = []
    auto = 0
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        if field == "":
            field = f"f{auto}"
            auto += 1
        parts.append((literal, field if field is None else f"_{field}"))
    return parts


def replace_parts(template: str, names: Sequence[str]) -> Parts:
    """A template filled by replacing ``<name>`` markers (BEAM's) as (literal, field) pairs."""
    pieces = re.split("<(" + "|".join(map(re.escape, names)) + ")>", template)
    parts: Parts = [(pieces[i], f"_{pieces[i + 1]}") for i in range(0, len(pieces) - 1, 2)]
    return [*parts, (pieces[-1], None)]


def fstring_parts(node: ast.JoinedStr) -> Parts:
    """An f-string of the file as (literal, field) pairs, each field named by its expression."""
    parts: Parts = []
    literal = ""
    for value in node.values:
        if isinstance(value, ast.Constant):
            literal += str(value.value)
        elif isinstance(value, ast.FormattedValue):
            parts.append((literal, f"_{ast.unparse(value.value)}"))
            literal = ""
    return [*parts, (literal, None)]


def _field(groups: dict[str, str], name: str) -> str:
    return groups.get(f"_{name}", "")


def _none(text: str) -> bool:
    t = text.strip()
    return not t or (t.startswith("(") and t.endswith(")"))


def _dashes(block: str) -> list[str]:
    return [ln[2:].strip() for ln in block.splitlines() if ln.startswith("- ")]


def _loaded(f: InstrumentFile, cache_dir: Path) -> ast.Module | None:
    try:
        return extract.parse(fetch_instrument(f, cache_dir).text, f.path)
    except DataFileError:
        return None


def glasshouse(cache_dir: Path) -> Iterator[Shape]:
    from recallbench.benchmarks.glasshouse.answering import JUDGE_FILE

    module = _loaded(JUDGE_FILE, cache_dir)
    if module is None:
        return
    where = JUDGE_FILE.path

    def graded(kind: str, response: str) -> Callable[[dict[str, str]], JudgeView]:
        def read(g: dict[str, str]) -> JudgeView:
            axis = _field(g, "axis").strip()
            gold = _field(g, "gold")
            golds = [x for x in (gold, *_dashes(_field(g, "alts"))) if not _none(x)]
            return JudgeView(
                f"glasshouse-{kind}", tuple(golds), _field(g, response), "FULL", "WRONG",
                abstention=axis in ABSTAIN_AXES,
                partial="PARTIAL" if axis in DONT_KNOW_PARTIAL_AXES else None,
            )  # fmt: skip

        return read

    def abstain(g: dict[str, str]) -> JudgeView:
        mems = _field(g, "mems")
        response = "I don't know." if _none(mems) else mems
        return JudgeView("glasshouse-abstain", (), response, "CORRECT", "WRONG", abstention=True)

    for name, kind, response in (
        ("JUDGE_PROMPT", "memory", "mems"),
        ("ANSWER_JUDGE_PROMPT", "answer", "ans"),
    ):
        pattern = template_pattern(format_parts(extract.literal(module, name, where)))
        yield Shape(f"glasshouse-{kind}", "judge", pattern, read=graded(kind, response))
    pattern = template_pattern(format_parts(extract.literal(module, "ABSTAIN_PROMPT", where)))
    yield Shape("glasshouse-abstain", "judge", pattern, read=abstain)
    pattern = template_pattern(format_parts(extract.literal(module, "ANSWER_PROMPT", where)))
    yield Shape("glasshouse-reader", "reader", pattern, response="_mems")


def longmemeval(cache_dir: Path) -> Iterator[Shape]:
    from recallbench.benchmarks.longmemeval.answering import EVALUATE_QA

    module = _loaded(EVALUATE_QA, cache_dir)
    if module is None:
        return
    fn = extract.function(module, "get_anscheck_prompt", EVALUATE_QA.path)
    templates = [
        n.value for n in extract.walk(fn)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "{}" in n.value
    ]  # fmt: skip
    for i, template in enumerate(templates):
        abstention = i == len(templates) - 1  # the else branch: get_anscheck_prompt's last

        def read(g: dict[str, str], abstention: bool = abstention) -> JudgeView:
            gold = _field(g, "f1")
            return JudgeView("longmemeval", (gold,), _field(g, "f2"), "yes", "no", abstention)

        yield Shape(f"longmemeval-{i}", "judge", template_pattern(format_parts(template)),
                    read=read)


def mem0(cache_dir: Path) -> Iterator[Shape]:
    from recallbench.benchmarks.locomo.answering import MEM0_LLM_JUDGE

    module = _loaded(MEM0_LLM_JUDGE, cache_dir)
    if module is None:
        return
    prompt = extract.literal(module, "ACCURACY_PROMPT", MEM0_LLM_JUDGE.path)

    def read(g: dict[str, str]) -> JudgeView:
        return JudgeView(
            "mem0", (_field(g, "gold_answer"),), _field(g, "generated_answer"),
            json.dumps({"label": "CORRECT"}), json.dumps({"label": "WRONG"}),
        )  # fmt: skip

    yield Shape("mem0", "judge", template_pattern(format_parts(prompt)), read=read)


def beam(cache_dir: Path) -> Iterator[Shape]:
    from recallbench.benchmarks.beam.answering import COMPUTE_METRICS, PROMPTS

    prompts = _loaded(PROMPTS, cache_dir)
    if prompts is not None:
        judge = extract.literal(prompts, "unified_llm_judge_base_prompt", PROMPTS.path)
        reason = "mock judge: rubric text {} in the response"

        def rubric(g: dict[str, str]) -> JudgeView:
            item = _field(g, "rubric_item")
            gold = item.split(": ", 1)[1] if ": " in item else item
            return JudgeView(
                "beam-rubric", (gold,), _field(g, "llm_response"),
                json.dumps({"score": 1.0, "reason": reason.format("found")}),
                json.dumps({"score": 0.0, "reason": reason.format("not found")}),
                abstention=says_dont_know(item),
            )  # fmt: skip

        names = ("question", "rubric_item", "llm_response")
        yield Shape("beam-rubric", "judge", template_pattern(replace_parts(judge, names)),
                    read=rubric)
        reader = extract.literal(prompts, "answer_generation_for_rag", PROMPTS.path)
        pattern = template_pattern(replace_parts(reader, ("context", "question")))
        yield Shape("beam-reader", "reader", pattern, response="_context")
    metrics = _loaded(COMPUTE_METRICS, cache_dir)
    if metrics is not None:
        fn = extract.function(metrics, "llm_equivalence", COMPUTE_METRICS.path)
        (user,) = [n for n in extract.walk(fn) if isinstance(n, ast.JoinedStr)][:1]

        def equivalent(g: dict[str, str]) -> JudgeView:
            first = _field(g, "first_paragraph").strip()
            second = _field(g, "second_paragraph").strip()
            shorter = len(extract_words(first)) <= len(extract_words(second))
            gold, response = (first, second) if shorter else (second, first)
            return JudgeView("beam-equivalence", (gold,), response, "YES", "NO")

        yield Shape("beam-equivalence", "judge", template_pattern(fstring_parts(user)),
                    read=equivalent)


def extract_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def recallbench_v1() -> Iterator[Shape]:
    """recallbench prompts v1 (recallbench's own text, read from its prompts file)."""
    p = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))
    also = template_pattern(format_parts(p["alternates"]))

    def read(g: dict[str, str]) -> JudgeView:
        gold = _field(g, "gold")
        m = also.fullmatch(_field(g, "alternates"))
        alternates = [a.strip() for a in m.group("_alternates").split(";")] if m else []
        return JudgeView("recallbench-v1", (gold, *alternates), _field(g, "response"),
                         "CORRECT", "WRONG", abstention=gold == p["abstain_gold"])

    yield Shape("recallbench-v1", "judge", template_pattern(format_parts(p["judge"])),
                read=read)
    yield Shape("recallbench-v1-reader", "reader",
                template_pattern(format_parts(p["reader"])), response="_memories")


def all_shapes(cache_dir: Path | None = None) -> list[Shape]:
    """Every shape whose source file can be had (the cache, ``$RECALLBENCH_INSTRUMENTS``, the
    pinned URL), in the order the mock tries them."""
    cache = cache_dir or default_cache_dir()
    out: list[Shape] = []
    for build in (glasshouse, longmemeval, mem0, beam):
        out.extend(build(cache))
    out.extend(recallbench_v1())
    return out
