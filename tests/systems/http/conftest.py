"""Fixtures for the ``http`` system tests: a reference memory server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recallbench.systems.http.reference import ReferenceServer


@pytest.fixture
def reference() -> Iterator[ReferenceServer]:
    """A reference server on 127.0.0.1 with a free port, stopped after the test."""
    with ReferenceServer() as server:
        yield server
