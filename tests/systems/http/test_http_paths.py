"""The response path syntax: steps, matches in order, and errors that say where."""

from __future__ import annotations

import pytest

from recallbench.systems.http.paths import PathLookupError, PathSyntaxError, parse_path

DOC = {
    "results": [
        {"id": "a", "memory": "one", "meta": {"turn ids": ["t1"]}},
        {"id": 7, "memory": "two", "meta": {"turn ids": []}},
    ],
    "count": 2,
}


def test_steps_find_values_in_document_order() -> None:
    assert parse_path("$").find(DOC) == [DOC]
    assert parse_path("$.count").one(DOC) == 2
    assert parse_path("$.results[*].memory").find(DOC) == ["one", "two"]
    assert parse_path("$.results[-1].id").one(DOC) == 7
    assert parse_path("$.results[0].meta['turn ids']").one(DOC) == ["t1"]
    assert parse_path('$.results[1]["memory"]').one(DOC) == "two"
    assert parse_path("$.results[*]").many and not parse_path("$.results").many


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("results", "must start with '$'"),
        ("$.", "expected a key name after '.' at position 2"),
        ("$.results[?(@.id)]", "cannot read '[?(@.id)]' at position 9"),
        ("$..id", "expected a key name"),
    ],
)
def test_syntax_errors_name_the_position(text: str, fragment: str) -> None:
    with pytest.raises(PathSyntaxError, match=None) as info:
        parse_path(text)
    assert fragment in str(info.value)


def test_lookup_errors_say_what_was_there() -> None:
    with pytest.raises(PathLookupError) as info:
        parse_path("$.hits[*]").find(DOC)
    assert (
        str(info.value) == "$.hits[*]: nothing at $.hits ($ is an object with keys: count, results)"
    )
    with pytest.raises(PathLookupError) as info:
        parse_path("$.results[5]").find(DOC)
    assert "($.results is a list of 2)" in str(info.value)
    with pytest.raises(PathLookupError) as info:
        parse_path("$.count[*]").find(DOC)
    assert "$.count[*] needs a list ($.count is int '2')" in str(info.value)
    with pytest.raises(PathLookupError, match="expected one value, found 2"):
        parse_path("$.results[*]").one(DOC)
