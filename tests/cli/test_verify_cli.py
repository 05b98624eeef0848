"""``recallbench verify --check-timeout``: a hanging system fails naming the call, never hangs."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from recallbench.cli import app, verify
from recallbench.contracts import Memory, Session
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.conformance import DEFAULT_CALL_TIMEOUT_S
from recallbench.systems.registry import SystemEntry

HANG = threading.Event()


class HangingSearch:
    name = "hanging"
    capabilities = Capabilities(returns_source_turns=False)

    def __init__(self, context: SystemContext | None = None) -> None:
        self.sessions: list[Session] = []

    def add(self, session: Session) -> None:
        self.sessions.append(session)

    def search(self, query: str, k: int) -> list[Memory]:
        HANG.wait()
        return []

    def reset(self) -> None:
        self.sessions = []


@pytest.fixture
def hanging(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    entry = SystemEntry("hanging", f"{__name__}:HangingSearch", "builtin", None)
    monkeypatch.setitem(registry.BUILTINS, "hanging", entry)
    HANG.clear()
    yield "hanging"
    HANG.set()  # let the abandoned worker thread finish


def test_verify_reports_a_hanging_system_as_a_timeout(hanging: str) -> None:
    result = CliRunner().invoke(app, ["verify", "--system", hanging, "--check-timeout", "0.2"])
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())  # the console wraps long lines
    assert "FAIL system hanging: forgets_after_reset" in output
    assert "did not return within 0.2 s (timeout)" in output
    assert "1 passed, 1 failed, 7 skipped" in output  # protocol passed, the rest skipped


def test_check_timeout_must_be_positive(hanging: str) -> None:
    result = CliRunner().invoke(app, ["verify", "--system", hanging, "--check-timeout", "0"])
    assert result.exit_code == 2


def test_check_timeout_default_is_the_kits() -> None:
    default = inspect.signature(verify).parameters["check_timeout"].default
    assert default == DEFAULT_CALL_TIMEOUT_S
