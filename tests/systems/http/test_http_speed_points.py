"""A run's speed rows and table: the ``http`` system against the reference server is measured;
the in-process ``bm25`` beside it is not (N7), shown in place of a number."""

from __future__ import annotations

import json
from pathlib import Path

from http_support import write_config
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.systems.http.reference import ReferenceServer


def test_speed_rows_and_table(reference: ReferenceServer, tmp_path: Path) -> None:
    config = write_config(reference, tmp_path)
    result = CliRunner().invoke(
        app,
        ["run", "--systems", "bm25,http", "--no-baselines", "--config", str(config),
         "--out", str(tmp_path / "out"), "--llm-ttft", "800", "--speed-weight", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    speed = {r["system"]: r for r in rows if r["metric"] == "speed_points"}
    assert speed["bm25"]["value"] is None
    assert speed["bm25"]["null_reason"].startswith("N7: nothing crosses a network")
    assert speed["bm25"]["denominator"] == 0 and speed["bm25"]["n_excluded"] == 50
    http = speed["http"]
    assert http["denominator_name"] == "searches scored for speed"
    assert http["denominator"] + http["n_excluded"] == 50
    assert http["value"] is None or -1.0 <= http["value"] <= 1.0  # no timing asserted
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["spec"]["speed"] == {
        "llm_ttft_ms": 800.0, "flow_limit_ms": 1000.0, "weight": 5.0, "before": [],
    }  # fmt: skip
    summary = (run_dir / "summary.md").read_text()
    assert "### sample: speed" in summary
    assert "| bm25 | speed not measurable, N7 | 0/50 | N7 50 |" in summary
    assert "target of 200 ms" in summary
    assert "sample: speed" in result.output


def test_default_speed_options_leave_the_spec_as_it_was(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "bm25", "--no-baselines", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    assert "speed" not in json.loads((run_dir / "run.json").read_text())["spec"]
    # an in-process run only: no speed table (every row is N7)
    assert "### sample: speed" not in (run_dir / "summary.md").read_text()


def test_declared_capabilities_give_n4_n5_n6(tmp_path: Path) -> None:
    from recallbench.pipeline import speed_of
    from recallbench.results.manifest import RunManifest

    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "bm25", "--no-baselines", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    data = json.loads((run_dir / "run.json").read_text())
    caps = data["systems"][0]["capabilities"]
    assert caps["retrieval_alone"] is True and caps["batch_only"] is False
    caps.update(in_process=False, retrieval_alone=False, per_call_timing=False, batch_only=True)
    assert speed_of(RunManifest.from_dict(data))["bm25"].before == ("N4", "N5", "N6")


def test_run_fixes_n2_from_network_files_of_two_locations(tmp_path: Path) -> None:
    """Two network files from different locations whose round trips barely differ (here the
    same loopback host) decide N2 when the run starts: every speed figure is null with it."""
    runner = CliRunner()
    with ReferenceServer() as server:
        host = server.base_url.removeprefix("http://")
        files = []
        for location in ("seoul", "virginia"):
            out = tmp_path / f"{location}.json"
            done = runner.invoke(app, ["network", host, "--location", location,
                                       "--out", str(out)])
            assert done.exit_code == 0, done.output
            files += ["--network", str(out)]
        config = tmp_path / "http.toml"
        config.write_text(server.config_text(), encoding="utf-8")
        done = runner.invoke(app, ["run", "--systems", "http", "--no-baselines", "--config",
                                   str(config), *files, "--out", str(tmp_path / "r"), "-q"])
        assert done.exit_code == 0, done.output
    (run_dir,) = list((tmp_path / "r").iterdir())
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["spec"]["speed"]["before"] == ["N2"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    (speed,) = [r for r in rows if r["metric"] == "speed_points" and r["slice"] == "all"]
    assert speed["value"] is None and speed["null_reason"].startswith("N2")
