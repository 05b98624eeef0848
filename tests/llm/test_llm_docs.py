"""docs/answers.md: its runnable example prints what its comments say, its price tables load."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tomllib
from pathlib import Path

from recallbench.llm.prices import PriceTable

DOC = Path(__file__).resolve().parents[2] / "docs" / "answers.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_mock_provider_example_prints_its_comments():
    (example,) = [b for b in blocks("python") if "MockLLMServer(" in b]
    expected = [line.split("# ", 1)[1].strip() for line in example.splitlines() if "print(" in line]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, str(DOC), "exec"), {})
    assert out.getvalue().splitlines() == expected


def test_the_price_table_examples_load():
    (toml,) = blocks("toml")
    (js,) = [b for b in blocks("json") if "prompt_per_1m" in b]
    from_toml = PriceTable.from_mapping(tomllib.loads(toml))
    from_json = PriceTable.from_mapping(json.loads(js))
    assert from_json.prices["openai/gpt-4o-mini"] == from_toml.prices["openai/gpt-4o-mini"]
