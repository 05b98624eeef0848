"""Whole runs of the ``http`` system against the reference server on loopback."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from http_support import write_config
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.systems.http.reference import FailureSchedule, ReferenceServer

SRC = Path(__file__).resolve().parents[3] / "src"
VERDICT_FIELDS = (
    "metrics",
    "null_reasons",
    "outcome",
    "outcome_reason",
    "n_returned",
    "chars_returned",
)


def _run(config: Path, out: Path) -> Path:
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "bm25,http", "--no-baselines", "--config", str(config),
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return next(out.iterdir())


def _verdicts(run_dir: Path, system: str) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    return {
        v["question_id"]: {k: v.get(k) for k in VERDICT_FIELDS}
        for v in lines
        if v["system"] == system
    }


def _records(run_dir: Path, name: str, system: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
    return [r for r in lines if r.get("system") == system]


def test_the_sample_gives_the_in_process_bm25_verdicts(
    reference: ReferenceServer, tmp_path: Path
) -> None:
    run_dir = _run(write_config(reference, tmp_path), tmp_path / "out")
    bm25, http = _verdicts(run_dir, "bm25"), _verdicts(run_dir, "http")
    assert len(http) == 50 and http == bm25
    manifest = json.loads((run_dir / "run.json").read_text())
    http_record = next(s for s in manifest["systems"] if s["name"] == "http")
    assert http_record["capabilities"]["in_process"] is False
    assert http_record["settings"]["base_url"] == reference.base_url


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_a_seeded_failure_schedule_costs_no_answer(tmp_path: Path) -> None:
    schedule = FailureSchedule(rate=0.3, seed=0, max_in_row=2, retry_after_s=0.05)
    with ReferenceServer(failures=schedule) as server:
        run_dir = _run(write_config(server, tmp_path), tmp_path / "out")
    counters = server.counters
    assert counters["failed_429"] > 0 and counters["failed_503"] > 0
    assert _verdicts(run_dir, "http") == _verdicts(run_dir, "bm25")
    observations = _records(run_dir, "observations.jsonl", "http")
    assert observations and all(o["outcome"] == "usable" for o in observations)
    ingests = _records(run_dir, "ingest.jsonl", "http")
    assert ingests and all(r["outcome"] == "usable" for r in ingests)


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_retries_are_visible_per_record(tmp_path: Path) -> None:
    schedule = FailureSchedule(rate=0.3, seed=0, max_in_row=2, retry_after_s=0.05)
    with ReferenceServer(failures=schedule) as server:
        run_dir = _run(write_config(server, tmp_path), tmp_path / "out")
    observations = _records(run_dir, "observations.jsonl", "http")
    retried = [o for o in observations if o.get("retries")]
    assert retried, "a 30% failure schedule retries some searches"
    for o in retried:
        assert o["attempt"] == len(o["retries"]) > 1
        assert all(r["status"] in (429, 503) for r in o["retries"][:-1])
    assert all(o["attempt"] == 1 for o in observations if not o.get("retries"))


def test_a_secret_from_the_environment_is_written_nowhere(tmp_path: Path) -> None:
    secret = "sk-rbtest-" + secrets.token_hex(16)
    with ReferenceServer(record_header="Authorization") as server:
        text = server.config_text().replace(
            '# Authorization = "Bearer ${MEM_API_KEY}"', 'Authorization = "Bearer ${RB_SECRET}"'
        )
        config = tmp_path / "http.toml"
        config.write_text(text, encoding="utf-8")
        env = {**os.environ, "RB_SECRET": secret, "PYTHONPATH": str(SRC)}
        proc = subprocess.run(
            [sys.executable, "-m", "recallbench", "run", "--systems", "http", "--config",
             str(config), "--out", str(tmp_path / "out")],
            env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert server.header_values == {f"Bearer {secret}"}  # the key was sent
    assert secret not in proc.stdout + proc.stderr
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in written)
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    run_json = next(p for p in written if p.name == "run.json").read_text()
    assert "Bearer ${RB_SECRET}" in run_json


def test_a_literal_secret_in_the_config_is_refused_before_any_folder(tmp_path: Path) -> None:
    server = ReferenceServer(port=9)
    text = server.config_text().replace(
        '# Authorization = "Bearer ${MEM_API_KEY}"',
        'Authorization = "Bearer sk-live-abcdef0123456789"',
    )
    config = tmp_path / "http.toml"
    config.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        app, ["run", "--systems", "http", "--config", str(config), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert (
        "headers.Authorization: looks like an API key (sk-...) written literally" in result.output
    )
    assert "${ENV_VAR}" in result.output and "abcdef0123456789" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_server_that_keeps_failing_is_recorded_with_its_cause(tmp_path: Path) -> None:
    schedule = FailureSchedule(rate=1.0, seed=0, max_in_row=1000, kinds=("503",))
    with ReferenceServer(failures=schedule) as server:
        text = server.config_text(tries=2).replace("backoff_base_s = 0.05", "backoff_base_s = 0")
        config = tmp_path / "http.toml"
        config.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--out", str(tmp_path / "out")],
        )  # fmt: skip
    run_dir = next((tmp_path / "out").iterdir())
    ingests = _records(run_dir, "ingest.jsonl", "http")
    assert [r["outcome"] for r in ingests] in (["partial"], ["error"]), result.output
    assert "add POST /v1/memories: HTTP 503" in ingests[0]["outcome_reason"]
    assert "(after 2 tries)" in ingests[0]["outcome_reason"]
    observations = _records(run_dir, "observations.jsonl", "http")
    assert len(observations) == 50 and all(o["outcome"] == "error" for o in observations)
    assert all("HTTP 503" in o["outcome_reason"] for o in observations)
