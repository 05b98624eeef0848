"""Speed records of the ``http`` system: the delay-proxy rig, network files, warm-up, reply
sizes and the ``queued`` flag (no timing is asserted beyond what a sleep guarantees)."""

from __future__ import annotations

import json
import statistics
import threading
from pathlib import Path
from typing import Any

import pytest
from http_support import http_section
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.systems.base import SystemContext
from recallbench.systems.http.network import (
    NetworkError,
    endpoint_matches,
    measure,
    parse_host,
    read_network,
    write_network,
)
from recallbench.systems.http.reference import FailureSchedule, ReferenceServer
from recallbench.systems.http.system import HttpSystem
from recallbench.testing.delay_proxy import DelayProxy

DELAY_MS = 15.0
PROCESSING_MS = 5.0


def _port(server: ReferenceServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _config(server: ReferenceServer, folder: Path, base_url: str, **more: Any) -> Path:
    path = folder / "http.json"
    path.write_text(json.dumps({"http": http_section(server, base_url=base_url, **more)}))
    return path


def _observations(run_dir: Path, system: str) -> list[dict[str, Any]]:
    lines = (run_dir / "observations.jsonl").read_text().splitlines()
    return [o for o in map(json.loads, lines) if o["system"] == system]


def test_parse_host() -> None:
    assert parse_host("example.org") == ("example.org", 80)
    assert parse_host("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_host("http://127.0.0.1:8765/v1") == ("127.0.0.1", 8765)
    assert parse_host("[::1]:9000") == ("::1", 9000)
    with pytest.raises(NetworkError, match="bad port"):
        parse_host("host:http")


def test_the_proxy_adds_two_delays_to_a_round_trip() -> None:
    with ReferenceServer() as server, DelayProxy(("127.0.0.1", _port(server)), DELAY_MS) as p:
        record = measure(p.address, samples=3, warmup=1)
        assert record["method"] == "http" and record["n"] == 3 and record["warmup"] == 1
        assert record["min_ms"] >= 2 * DELAY_MS  # a sleep never returns early
        assert p.connections == 1  # every sample on one kept-alive connection
        assert record["median_ms"] == statistics.median(record["samples_ms"])


def test_network_file_round_trip_and_refusals(tmp_path: Path) -> None:
    with ReferenceServer() as server:
        record = measure(f"127.0.0.1:{_port(server)}", location="lab", samples=2)
        connect = measure(f"127.0.0.1:{_port(server)}", method="connect", samples=2)
    assert connect["path"] is None and connect["warmup"] == 0
    path = tmp_path / "network.json"
    write_network(record, path)
    assert read_network(path) == record
    assert record["location"] == "lab" and record["ip"] == "127.0.0.1"
    assert endpoint_matches(record, ("127.0.0.1", record["port"]))
    assert not endpoint_matches(record, ("127.0.0.1", record["port"] + 1))
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(NetworkError, match="not a network file"):
        read_network(tmp_path / "bad.json")
    with pytest.raises(NetworkError, match="no such file"):
        read_network(tmp_path / "missing.json")


def test_network_command_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "n.json"
    with ReferenceServer() as server:
        result = CliRunner().invoke(
            app,
            ["network", f"127.0.0.1:{_port(server)}", "--samples", "3", "--location", "here",
             "--out", str(out)],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = read_network(out)
    assert record["n"] == 3 and record["location"] == "here" and "median" in result.output
    bad = CliRunner().invoke(app, ["network", "127.0.0.1:1", "--samples", "1", "--out", str(out)])
    assert bad.exit_code == 2 and "127.0.0.1:1" in bad.output


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_a_run_through_the_rig_records_the_subtraction(tmp_path: Path) -> None:
    """The sample through a delay proxy: each timed search records the network file's median
    as network_ms and latency_ms - network_ms as the remainder, its reply size, its
    characters; the warm-up searches (neutral text) are sent but never recorded."""
    with (
        ReferenceServer(delay_ms=PROCESSING_MS) as server,
        DelayProxy(("127.0.0.1", _port(server)), DELAY_MS) as proxy,
    ):
        network = tmp_path / "network.json"
        write_network(measure(proxy.address, samples=5), network)
        config = _config(server, tmp_path, f"http://{proxy.address}")
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--network", str(network), "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        searches = len(server.processing_ms)
    run_dir = next((tmp_path / "out").iterdir())
    median = read_network(network)["median_ms"]
    obs = _observations(run_dir, "http")
    assert len(obs) == 50 and searches == 50 + 3  # one worker, warmed with 3 searches
    for o in obs:
        assert o["network_ms"] == median
        assert o["latency_minus_rtt_ms"] == round(o["latency_ms"] - median, 4)
        assert o["response_bytes"] > 0
        assert o["chars_returned"] > 0
        assert not any(f.startswith("queued: ") for f in o.get("flags", ()))
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["network"][0]["median_ms"] == median


def test_without_a_network_file_nothing_is_subtracted(tmp_path: Path) -> None:
    with ReferenceServer() as server:
        config = _config(server, tmp_path, server.base_url)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--concurrency", "4", "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    obs = _observations(next((tmp_path / "out").iterdir()), "http")
    assert all(o["network_ms"] is None and "latency_minus_rtt_ms" not in o for o in obs)
    assert all(o["response_bytes"] > 0 for o in obs)


def test_overlapping_calls_and_429_are_marked_queued() -> None:
    with ReferenceServer(delay_ms=30) as server:
        a = HttpSystem(SystemContext(config=http_section(server)))
        b = HttpSystem(SystemContext(config=http_section(server)))
        t = threading.Thread(target=lambda: b.search("anything", 3))
        t.start()
        a.search("anything", 3)
        t.join()
        assert any(
            q.startswith("queued: overlapped another call to 127.0.0.1:")
            for q in a.last_call_info()["queued"]
        )
        a.search("alone", 3)
        assert a.last_call_info()["queued"] == ()
        assert a.last_call_info()["response_bytes"] > 0
        a.close()
        b.close()


def test_a_429_marks_the_call_queued() -> None:
    schedule = FailureSchedule(rate=1.0, seed=0, max_in_row=1, kinds=("429",))
    with ReferenceServer(failures=schedule) as server:
        system = HttpSystem(
            SystemContext(config=http_section(server, retry={"tries": 3, "backoff_base_s": 0}))
        )
        system.search("anything", 3)
        assert "queued: saw HTTP 429" in system.last_call_info()["queued"]
        system.close()


def test_warm_up_runs_once_per_thread_and_keeps_nothing() -> None:
    with ReferenceServer() as server:
        system = HttpSystem(SystemContext(config=http_section(server, warmup_searches=2)))
        system.warm_up()
        system.warm_up()
        assert len(server.processing_ms) == 2
        assert system.last_attempts() == () and system.last_call_info()["response_bytes"] is None
        system.close()


def test_one_connection_per_worker_thread() -> None:
    with ReferenceServer() as server, DelayProxy(("127.0.0.1", _port(server)), 0) as proxy:
        system = HttpSystem(
            SystemContext(config=http_section(server, base_url=f"http://{proxy.address}"))
        )
        for _ in range(5):
            system.search("anything", 3)
        assert proxy.connections == 1
        system.close()


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_timing_rows_with_a_network_file(tmp_path: Path) -> None:
    """p50/p90/p95/p99/max of the latency and of the remainder, per system and per slice,
    with the timed attempts as the named denominator; ingest time per session."""
    with ReferenceServer() as server:
        network = tmp_path / "network.json"
        write_network(measure(f"127.0.0.1:{_port(server)}", samples=3), network)
        config = _config(server, tmp_path, server.base_url)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--network", str(network), "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    rows = {(r["slice"], r["metric"]): r for r in _metrics(run_dir) if r["system"] == "http"}
    for figure in ("latency_ms", "latency_minus_rtt_ms"):
        for point in ("p50", "p90", "p95", "p99", "max"):
            row = rows[("all", f"{figure}_{point}")]
            assert row["denominator"] == 50 and row["value"] is not None
    assert rows[("all", "latency_minus_rtt_ms_p50")]["denominator_name"].startswith(
        "timed_attempts"
    )
    assert rows[("all", "network_ms_p50")]["value"] == read_network(network)["median_ms"]
    slices = {s for s, m in rows if m == "latency_ms_p99" and s != "all"}
    assert slices
    per_slice = sum(rows[(s, "latency_ms_p99")]["denominator"] for s in slices)
    assert per_slice == 50
    session = rows[("all", "ingest_ms_per_session")]
    assert session["value"] > 0 and session["denominator_name"] == "sessions_ingested"


def test_without_a_network_file_there_are_no_remainder_rows(tmp_path: Path) -> None:
    with ReferenceServer() as server:
        config = _config(server, tmp_path, server.base_url)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    metrics = {r["metric"] for r in _metrics(next((tmp_path / "out").iterdir()))}
    assert "latency_ms_max" in metrics and "ingest_ms_per_session" in metrics
    assert not any(m.startswith(("latency_minus_rtt_ms", "network_ms")) for m in metrics)


def test_a_large_median_reply_warns(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from recallbench.run.runner import LARGE_REPLY_BYTES, Runner
    from recallbench.spec import RunSpec

    runner = Runner(RunSpec(systems=("http",), datasets=("sample",)), [], tmp_path, "r")
    ds = SimpleNamespace(key="sample")
    runner.response_bytes[("sample", "http")] = [LARGE_REPLY_BYTES + 1] * 3
    with pytest.warns(RuntimeWarning, match="median search reply is .* extra round trip"):
        runner._warn_large_replies(ds, "http")  # type: ignore[arg-type]
    runner.response_bytes[("sample", "http")] = [100, LARGE_REPLY_BYTES + 1, 200]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner._warn_large_replies(ds, "http")  # type: ignore[arg-type]


def test_queued_flags_stay_off_the_verdicts(tmp_path: Path) -> None:
    """Searches in parallel overlap: the observations say so, the verdicts (which must be the
    same bytes on every run of the spec) do not."""
    with ReferenceServer(delay_ms=5) as server:
        config = _config(server, tmp_path, server.base_url)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--concurrency", "4", "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    obs = _observations(run_dir, "http")
    assert any(f.startswith("queued: overlapped") for o in obs for f in o.get("flags", ()))
    verdicts = [json.loads(x) for x in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert not any(f.startswith("queued: ") for v in verdicts for f in v.get("flags", ()))
