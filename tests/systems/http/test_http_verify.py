"""``recallbench verify --system http --config FILE`` passes against the reference server."""

from __future__ import annotations

from pathlib import Path

from http_support import http_section, write_config
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.systems.base import SystemContext
from recallbench.systems.conformance import CHECKS, run_checks
from recallbench.systems.http.reference import ReferenceServer
from recallbench.systems.http.system import HttpSystem


def test_verify_passes_against_the_reference_server(
    reference: ReferenceServer, tmp_path: Path
) -> None:
    config = write_config(reference, tmp_path)
    result = CliRunner().invoke(app, ["verify", "--system", "http", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert f"{len(CHECKS)} passed, 0 failed, 0 skipped" in result.output


class _NewIdsEachCall(HttpSystem):
    """Ids that differ on every search (a server that re-issues them): not deterministic."""

    server_issued_ids = False


def test_determinism_compares_texts_only_for_declared_server_ids(
    reference: ReferenceServer,
) -> None:
    config = http_section(reference)
    declared = run_checks("http", HttpSystem(SystemContext(config=config)))
    assert {r.check: r.status for r in declared}["deterministic"] == "pass"
    undeclared = run_checks("http", _NewIdsEachCall(SystemContext(config=config)))
    result = next(r for r in undeclared if r.check == "deterministic")
    assert result.status == "fail"
    assert "after reset and the same sessions" in result.detail and "gave ids" in result.detail


def test_without_a_config_the_kit_skips_http_instead_of_failing() -> None:
    from recallbench.systems.conformance import CREATE_CHECK, check_system

    [result] = check_system("http")
    assert (result.check, result.status) == (CREATE_CHECK, "skip")
    assert "needs options (recallbench verify --system http --config FILE)" in result.detail
    [bad] = check_system("http", {"base_url": "nope"})
    assert (bad.check, bad.status) == (CREATE_CHECK, "fail")
    assert "http config base_url: required" in bad.detail
