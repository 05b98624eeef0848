"""The price table: TOML or JSON, USD per million tokens, unknown is None (never 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallbench.errors import UserError
from recallbench.llm.prices import PriceTable, PriceTableError

TOML = """
["openai/gpt-4o-mini"]
prompt_per_1m = 0.15
completion_per_1m = 0.60

["free-local"]
prompt_per_1m = 0
completion_per_1m = 0
"""


def test_toml_and_json_give_the_same_table(tmp_path: Path):
    (tmp_path / "p.toml").write_text(TOML)
    table = PriceTable.load(tmp_path / "p.toml")
    (tmp_path / "p.json").write_text(
        json.dumps(
            {
                m: {"prompt_per_1m": p.prompt_per_1m, "completion_per_1m": p.completion_per_1m}
                for m, p in table.prices.items()
            }
        )
    )
    assert PriceTable.load(tmp_path / "p.json").prices == table.prices
    assert table.source == str(tmp_path / "p.toml")


def test_billed_usd_per_call(tmp_path: Path):
    (tmp_path / "p.toml").write_text(TOML)
    table = PriceTable.load(tmp_path / "p.toml")
    assert table.billed_usd("openai/gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)
    assert table.billed_usd("openai/gpt-4o-mini", 2000, 100) == pytest.approx(
        (2000 * 0.15 + 100 * 0.60) / 1e6
    )
    assert table.billed_usd("free-local", 500, 50) == 0.0  # a real price of zero


def test_unknown_model_or_missing_tokens_cost_none():
    table = PriceTable.from_mapping({"m": {"prompt_per_1m": 1, "completion_per_1m": 2}})
    assert table.billed_usd("other", 10, 10) is None
    assert table.billed_usd("m", None, 10) is None
    assert table.billed_usd("m", 10, None) is None


@pytest.mark.parametrize(
    "data",
    [
        {"m": {"prompt_per_1m": 1}},
        {"m": {"prompt_per_1m": 1, "completion_per_1m": 2, "currency": "EUR"}},
        {"m": {"prompt_per_1m": -1, "completion_per_1m": 2}},
        {"m": {"prompt_per_1m": "cheap", "completion_per_1m": 2}},
        {"m": 3},
    ],
)
def test_bad_entries_are_user_errors_naming_the_model(data: dict):
    with pytest.raises(PriceTableError, match="'m'") as info:
        PriceTable.from_mapping(data, "prices.toml")
    assert isinstance(info.value, UserError) and "prices.toml" in str(info.value)


def test_unreadable_file_is_a_user_error(tmp_path: Path):
    (tmp_path / "bad.toml").write_text("[unclosed")
    with pytest.raises(PriceTableError, match="bad.toml"):
        PriceTable.load(tmp_path / "bad.toml")
    with pytest.raises(PriceTableError, match="missing.json"):
        PriceTable.load(tmp_path / "missing.json")
