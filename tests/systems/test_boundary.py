from __future__ import annotations

import numpy as np
import pytest

from recallbench.contracts import Memory
from recallbench.systems.boundary import (
    InvalidResultError,
    chars_returned,
    normalise_memories,
    source_text_flags,
)

TURNS = {"t1": "I adopted a dog", "t2": "her name is Pickle"}


def test_normalises_numpy_scores_and_lists_of_turns() -> None:
    raw = [Memory("m", "I adopted a dog", ["t1"], np.float32(0.5))]  # type: ignore[arg-type]
    (m,) = normalise_memories(raw, TURNS)
    assert m.source_turns == ("t1",) and type(m.score) is float and m.score == 0.5
    assert m is not raw[0]


@pytest.mark.parametrize(
    ("memory", "field"),
    [
        (Memory("m", None), "memories[0].text"),  # type: ignore[arg-type]
        (Memory("m", 3), "memories[0].text"),  # type: ignore[arg-type]
        (Memory("m", "bad \ud800"), "memories[0].text"),
        (Memory(7, "x"), "memories[0].id"),  # type: ignore[arg-type]
        (Memory("m", "x", "t1"), "memories[0].source_turns"),  # type: ignore[arg-type]
        (Memory("m", "x", ("t9",)), "memories[0].source_turns"),
        (Memory("m", "x", (1,)), "memories[0].source_turns[0]"),  # type: ignore[arg-type]
        (Memory("m", "x", None, float("nan")), "memories[0].score"),
        (Memory("m", "x", None, "high"), "memories[0].score"),  # type: ignore[arg-type]
    ],
)
def test_an_impossible_value_names_its_field(memory: Memory, field: str) -> None:
    with pytest.raises(InvalidResultError) as err:
        normalise_memories([memory], TURNS)
    assert err.value.field == field


def test_a_result_that_is_not_a_list_is_invalid() -> None:
    for bad in (None, "text", Memory("m", "x")):
        with pytest.raises(InvalidResultError, match="^result: "):
            normalise_memories(bad)
    with pytest.raises(InvalidResultError, match=r"^memories\[0\]: a dict"):
        normalise_memories([{"id": "m"}])


def test_claimed_turns_cost_their_length_and_raw_text_must_contain_one() -> None:
    short = Memory("m", "dog", ("t1", "t2", "t1"))
    assert chars_returned((short,), TURNS) == len(TURNS["t1"]) + len(TURNS["t2"])
    long = Memory("n", "user: I adopted a dog\nuser: her name is Pickle", ("t1", "t2"))
    assert chars_returned((long,), TURNS) == len(long.text)
    assert source_text_flags((long,), TURNS) == ()
    (flag,) = source_text_flags((short, long), TURNS)
    assert flag.startswith("source_text_absent: memory m contains none")
