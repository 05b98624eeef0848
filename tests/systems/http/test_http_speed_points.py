"""A run's speed rows and table: the ``http`` system against the reference server is measured;
the in-process ``bm25`` beside it is not (N7), shown in place of a number."""

from __future__ import annotations

import json
from pathlib import Path

from http_support import write_config
from typer.testing import CliRunner

from recallbench import testing
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


def test_a_parallel_run_scores_speed_on_its_sample(tmp_path: Path) -> None:
    """--group-concurrency and --concurrency with --speed-sample 5: the 5 sampled searches ran
    alone (no overlap flag) and are the speed row's denominator; the rest are left out as
    "not sampled"; accuracy is the in-process BM25's."""
    with ReferenceServer(delay_ms=2) as server:
        config = write_config(server, tmp_path)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "bm25,http", "--no-baselines", "--config", str(config),
             "--concurrency", "4", "--speed-sample", "5", "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    obs = [json.loads(x) for x in (run_dir / "observations.jsonl").read_text().splitlines()]
    http = [o for o in obs if o["system"] == "http"]
    sampled = [o for o in http if o.get("speed_sample")]
    assert len(sampled) == 5
    assert not any(f.startswith("queued: ") for o in sampled for f in o.get("flags", ()))
    assert any(f.startswith("queued: overlapped") for o in http for f in o.get("flags", ()))
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    speed = {r["system"]: r for r in rows if r["metric"] == "speed_points"}
    assert speed["http"]["denominator"] == 5 and speed["http"]["n_excluded"] == 45
    assert speed["http"]["exclusion_rule"] == "not sampled 45"
    assert speed["bm25"]["null_reason"].startswith("N7")  # a code fixed before measuring wins
    summary = (run_dir / "summary.md").read_text()
    assert "Speed sample: 5 seeded questions per dataset" in summary
    verdicts = [json.loads(x) for x in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    by = {s: {v["question_id"]: v["metrics"] for v in verdicts if v["system"] == s}
          for s in ("bm25", "http")}  # fmt: skip
    assert by["bm25"] == by["http"]


def test_a_speed_sample_below_one_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "-q", "--systems", "bm25", "--speed-sample", "0",
              "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code != 0 and "--speed-sample must be at least 1" in result.output


def test_sampled_searches_overlap_nothing_across_lanes(tmp_path: Path) -> None:
    """Lanes of --group-concurrency: no request of another lane (its adds, searches, warm-ups
    or the close of its instance, which sends a reset) overlaps a sampled search."""
    data = testing.longmemeval_shaped(tmp_path / "lme.json", haystacks=12)
    with ReferenceServer(delay_ms=3) as server:
        config = write_config(server, tmp_path)
        result = CliRunner().invoke(
            app,
            ["run", "-q", "--systems", "http", "--no-baselines", "--config", str(config),
             "--datasets", f"longmemeval@{data}", "--group-concurrency", "4",
             "--concurrency", "2", "--speed-sample", "6", "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "out").iterdir())
    obs = [json.loads(x) for x in (run_dir / "observations.jsonl").read_text().splitlines()]
    sampled = [o for o in obs if o.get("speed_sample")]
    assert len(sampled) == 6 and all(o["outcome"] == "usable" for o in sampled)
    assert not any(f.startswith("queued: ") for o in sampled for f in o.get("flags", ()))
