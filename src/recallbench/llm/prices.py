"""The price table: what the operator pays per token, for ``billed_usd`` on every call.

recallbench ships no prices (they change, and differ by provider and contract); the operator
supplies a TOML or JSON file mapping a model name, exactly as the endpoint is asked for it, to
USD per million prompt tokens and per million completion tokens::

    # prices.toml
    ["openai/gpt-4o-mini"]
    prompt_per_1m = 0.15
    completion_per_1m = 0.60

    ["google/gemini-3.7-flash"]
    prompt_per_1m = 0.30
    completion_per_1m = 2.50

(JSON: ``{"openai/gpt-4o-mini": {"prompt_per_1m": 0.15, "completion_per_1m": 0.6}}``.)

A model missing from the table, or a call whose API reported no token counts, costs
``None`` (not measured), never 0.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.errors import UserError

FIELDS = ("prompt_per_1m", "completion_per_1m")


class PriceTableError(UserError, ValueError):
    """A price table that cannot be read: the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million prompt tokens and per million completion tokens of one model."""

    prompt_per_1m: float
    completion_per_1m: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.prompt_per_1m + completion_tokens * self.completion_per_1m
        ) / 1_000_000


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model name; ``source`` is the file they were read from (for records)."""

    prices: Mapping[str, Price]
    source: str = ""

    def price(self, model: str) -> Price | None:
        return self.prices.get(model)

    def billed_usd(
        self, model: str, prompt_tokens: int | None, completion_tokens: int | None
    ) -> float | None:
        """The cost of one call, or None when the model has no price or a token count is
        missing (never estimated, never 0 for unknown)."""
        price = self.prices.get(model)
        if price is None or prompt_tokens is None or completion_tokens is None:
            return None
        return price.cost(prompt_tokens, completion_tokens)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "") -> PriceTable:
        """Build from ``{model: {"prompt_per_1m": x, "completion_per_1m": y}}``; each value a
        finite number of at least 0. Raises :class:`PriceTableError` naming the bad entry."""
        where = source or "price table"
        if not isinstance(data, Mapping):
            raise PriceTableError(f"{where}: expected a table of models, got {type(data).__name__}")
        prices: dict[str, Price] = {}
        for model, entry in data.items():
            if not isinstance(entry, Mapping):
                raise PriceTableError(f"{where}: {model!r}: expected a table with {FIELDS}")
            unknown = sorted(set(entry) - set(FIELDS))
            missing = [f for f in FIELDS if f not in entry]
            if unknown or missing:
                raise PriceTableError(
                    f"{where}: {model!r}: needs exactly {', '.join(FIELDS)}"
                    + (f"; unknown {', '.join(unknown)}" if unknown else "")
                    + (f"; missing {', '.join(missing)}" if missing else "")
                )
            values = []
            for f in FIELDS:
                v = entry[f]
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise PriceTableError(f"{where}: {model!r}.{f}: not a number: {v!r}")
                if v < 0:
                    raise PriceTableError(f"{where}: {model!r}.{f}: negative price {v!r}")
                values.append(float(v))
            prices[str(model)] = Price(*values)
        return cls(prices, source)

    @classmethod
    def load(cls, path: Path) -> PriceTable:
        """Read a ``.toml`` or ``.json`` file (by its suffix; anything else is tried as TOML)."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise PriceTableError(f"{path}: cannot read the price table: {exc.strerror}") from exc
        try:
            if path.suffix.lower() == ".json":
                data = json.loads(raw.decode("utf-8"))
            else:
                data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PriceTableError(f"{path}: not a valid price table: {exc}") from exc
        return cls.from_mapping(data, str(path))
