"""``recallbench serve-memory``: serves the reference server and writes its config."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from recallbench.cli import app

SRC = Path(__file__).resolve().parents[3] / "src"


def test_serve_memory_serves_and_writes_the_matching_config(tmp_path: Path) -> None:
    config = tmp_path / "http.toml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "recallbench", "serve-memory", "--port", "0", "--delay-ms", "1",
         "--write-config", str(config)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == f"wrote {config}"
        line = proc.stderr.readline().strip()
        assert line.startswith("reference memory server on http://127.0.0.1:"), line
        base_url = line.split()[4]
        section = tomllib.loads(config.read_text())["http"]
        assert section["base_url"] == base_url
        request = urllib.request.Request(
            base_url + "/v1/search",
            data=json.dumps({"namespace": "x", "query": "cat", "k": 3}).encode(),
            method="POST",
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as reply:
            assert json.loads(reply.read()) == {"results": []}
            assert float(reply.headers["X-Processing-Ms"]) >= 1.0
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    assert proc.returncode == 0
    assert proc.stderr.read().strip() == "stopped"


def test_serve_memory_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "recallbench", "serve-memory", "--port", "0"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("reference memory server on http://127.0.0.1:")
    proc.terminate()
    proc.wait(timeout=10)
    assert proc.returncode == 0 and proc.stderr.read().strip() == "stopped"


def test_serve_memory_refuses_a_port_in_use(tmp_path: Path) -> None:
    from recallbench.systems.http.reference import ReferenceServer

    with ReferenceServer() as busy:
        result = CliRunner().invoke(app, ["serve-memory", "--port", str(busy.port)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{busy.port}" in result.output
