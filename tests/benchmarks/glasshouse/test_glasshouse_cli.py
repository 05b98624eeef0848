"""``recallbench`` on Glasshouse v0.1 end to end (skipped when the shared folder is absent).

A run on the core tier prints the per-axis tables and writes the Glasshouse run-record exports;
re-scoring an export with ``recallbench score FILE`` gives the run's own values; the "says
nothing" control earns no free ride; refusals reach the user as clear errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.benchmarks import load_dataset
from recallbench.benchmarks.glasshouse.export import write_exports
from recallbench.benchmarks.glasshouse.report import question_set_of
from recallbench.cli import app
from recallbench.contracts import verdict_from_dict
from recallbench.results import store

NAME = "glasshouse-v0.1"
FILES = {
    "core": "questions_core.jsonl",
    "small": "questions_small.jsonl",
    "medium": "questions_medium.jsonl",
    "full": "questions_full.jsonl",
    "xling": "questions_xling.jsonl",
    "probes": "glasshouse_v0.1_probes.jsonl",
}
EXPORT_FIELDS = [
    "id", "answer", "answer_generated", "retrieved_turns", "memories_returned",
    "chars_returned", "latency_ms", "network_ms",
]  # fmt: skip


@pytest.fixture
def data(shared_data: Path) -> Path:
    if not (shared_data / NAME / "glasshouse_v0.1_core.jsonl").exists():
        pytest.skip("Glasshouse v0.1 files not in the shared data folder")
    return shared_data


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _run_core(data: Path, out: Path) -> tuple[Path, str]:
    result = _invoke(
        "run", "-q", "--systems", "bm25,random", "--no-baselines",
        "--datasets", "glasshouse-v0.1:core", "--k", "1,10",
        "--data-dir", str(data), "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return next(out.iterdir()), result.output


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_core_run_tables_exports_and_round_trip(data: Path, tmp_path: Path) -> None:
    run_dir, output = _run_core(data, tmp_path / "results")
    # per-axis tables with weighted and plain figures, evidence and characters per question
    for text in ("Glasshouse dry score by axis", "dry plain", "dry weighted", "chars/q",
                 "evidence came back", "development ruler", "STALE traps"):  # fmt: skip
        assert text in output
    summary = (run_dir / store.SUMMARY).read_text()
    assert "image mode native" in summary and "Glasshouse dry score by axis" in summary
    # the floor beside the systems, labelled a control, computed from the questions
    assert "### glasshouse-v0.1:core: floor (says nothing)" in summary
    assert "| all | dry plain | 0.000 (0.0%, n=633) | 0.092 (9.2%, n=633) |" in summary
    assert "| all | dry weighted | 0.000 (0.0%, n=633) | 0.145 (14.5%, n=633) |" in summary
    assert "A control, not a system" in summary and "floor (says nothing)" in output
    verdicts = _lines(run_dir / store.VERDICTS)
    # exports are written on request only, the same bytes scoring used to write
    assert not (run_dir / "exports").exists()
    result = _invoke("export", str(run_dir), "--format", "glasshouse", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert "exports (glasshouse): 2 file(s)" in result.output
    reference = tmp_path / "reference"
    ds = load_dataset("glasshouse-v0.1:core", data)
    write_exports(
        reference, ds, store.read_observations(run_dir),
        [verdict_from_dict(v) for v in verdicts], question_set_of(ds),
    )  # fmt: skip
    written = sorted(p.relative_to(run_dir) for p in (run_dir / "exports").rglob("*.jsonl"))
    assert written == sorted(p.relative_to(reference) for p in reference.rglob("*.jsonl"))
    assert all((run_dir / p).read_bytes() == (reference / p).read_bytes() for p in written)
    for system in ("bm25", "random"):
        export = run_dir / "exports" / "glasshouse" / system / "core-core.jsonl"
        records = _lines(export)
        assert len(records) == 633
        assert all(list(r) == EXPORT_FIELDS for r in records)
        assert all(r["answer_generated"] is False for r in records)
        assert all(isinstance(t, int) for r in records for t in r["retrieved_turns"])
        # the export re-scored by `recallbench score FILE` gives the run's values
        out = tmp_path / f"{system}.scores.jsonl"
        result = _invoke(
            "score", str(export), "--dataset", NAME, "--tier", "core", "--questions", "core",
            "--mode", "dry", "--out", str(out), "--data-dir", str(data), "-q",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        mine = {v["question_id"]: v["metrics"] for v in verdicts if v["system"] == system}
        lines = _lines(out)
        assert len(lines) == 633
        for line in lines:
            # the export carries latency_ms, so each line also carries its speed points
            assert set(line) == {"id", "axis", "weight", "value", "evidence_returned", "speed"}
            assert -1.0 <= line["speed"] <= 1.0
            m = mine[line["id"]]
            assert line["value"] == m["gh_dry"]
            ev = m["gh_evidence"]
            assert line["evidence_returned"] == (None if ev is None else bool(ev))
    # re-scoring the run folder is byte-identical and leaves the exports as they are;
    # exporting again writes the same bytes
    before = {p: p.read_bytes() for p in (run_dir / "exports").rglob("*.jsonl")}
    before[run_dir / store.METRICS] = (run_dir / store.METRICS).read_bytes()
    before[run_dir / store.VERDICTS] = (run_dir / store.VERDICTS).read_bytes()
    result = _invoke("score", str(run_dir), "-q", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    result = _invoke("export", str(run_dir), "--format", "glasshouse", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert all(p.read_bytes() == b for p, b in before.items())


@pytest.mark.parametrize(
    ("tier", "questions"),
    [("core", "core"), ("small", "small"), ("medium", "medium"), ("full", "full"),
     ("small", "xling"), ("small", "probes")],
)  # fmt: skip
def test_says_nothing_control(data: Path, tmp_path: Path, tier: str, questions: str) -> None:
    """Answering "I don't know" to everything: no free ride (Glasshouse: above 20% is broken)."""
    ids = [r["id"] for r in _lines(data / NAME / FILES[questions])]
    run = tmp_path / "idk.jsonl"
    run.write_text("".join(json.dumps({"id": i, "answer": "I don't know."}) + "\n" for i in ids))
    out = tmp_path / "scores.jsonl"
    result = _invoke(
        "score", str(run), "--dataset", NAME, "--tier", tier, "--questions", questions,
        "--mode", "dry", "--out", str(out), "--data-dir", str(data), "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = _lines(out)
    assert len(lines) == len(ids)
    graded = [x for x in lines if x["value"] is not None]
    assert len(graded) == len(ids)  # answered by a reader: every question graded
    plain = sum(x["value"] for x in graded) / len(graded)
    weighted = sum(x["weight"] * x["value"] for x in graded) / sum(x["weight"] for x in graded)
    assert all(x["evidence_returned"] is None for x in lines)  # nothing reported
    if questions == "probes":
        # every probe is a false memory whose right answer is "that was never said"
        assert plain == weighted == 1.0
    else:
        assert plain < 0.20 and weighted < 0.20, (plain, weighted)


@pytest.mark.parametrize(
    ("tier", "questions", "plain", "weighted"),
    [("core", "core", 0.092, 0.145), ("small", "small", 0.095, 0.165),
     ("medium", "medium", 0.091, 0.160), ("full", "full", 0.067, 0.121),
     ("small", "xling", 0.013, 0.013), ("small", "probes", 1.0, 1.0)],
)  # fmt: skip
def test_controls_give_the_documented_floor(
    data: Path, tmp_path: Path, tier: str, questions: str, plain: float, weighted: float
) -> None:
    """docs/glasshouse.md's "says nothing" table is what `recallbench controls` prints."""
    out = tmp_path / "floor.jsonl"
    result = _invoke(
        "controls", "--dataset", NAME, "--tier", tier, "--questions", questions,
        "--data-dir", str(data), "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    n = len(_lines(data / NAME / FILES[questions]))
    overall = {
        (x["control"], x["metric"]): (round(x["value"], 3), x["denominator"])
        for x in _lines(out)
        if x["slice"] == "all"
    }
    assert overall[("I don't know.", "gh_dry")] == (plain, n)
    assert overall[("I don't know.", "gh_dry:weighted")] == (weighted, n)
    assert overall[("", "gh_dry")] == (0.0, n)


def test_refusals_are_clear_errors(data: Path, tmp_path: Path) -> None:
    base = ["run", "-q", "--systems", "bm25", "--no-baselines", "--data-dir", str(data),
            "--out", str(tmp_path)]  # fmt: skip
    result = _invoke(*base, "--datasets", "glasshouse-v0.1:core", "--questions", "xling")
    assert result.exit_code == 2 and "foreign-language sessions" in result.output
    result = _invoke(*base, "--datasets", "glasshouse-v0.1:small", "--questions", "medium")
    assert result.exit_code == 2 and "turn_id restarts in every tier" in result.output
    result = _invoke(*base, "--datasets", "glasshouse-v0.1:small", "--image-mode", "caption")
    assert result.exit_code == 2 and "caption model" in result.output
    assert not any(tmp_path.iterdir())  # refused before any results folder


@pytest.mark.slow
def test_tier_view_over_core_and_small(data: Path, tmp_path: Path) -> None:
    result = _invoke(
        "run", "-q", "--systems", "bm25", "--no-baselines", "--k", "10",
        "--datasets", "glasshouse-v0.1:core,glasshouse-v0.1:small", "--export", "glasshouse",
        "--data-dir", str(data), "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "tier view: the 633 questions common to core, small" in result.output
    run_dir = next(tmp_path.iterdir())
    assert (run_dir / "exports" / "glasshouse" / "bm25" / "small-small.jsonl").exists()


def test_score_file_with_latency_carries_speed(data: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "Q001", "answer": "a quarter acre", "latency_ms": 320.0, "network_ms": 100.0},
        {"id": "Q002", "answer": "25 minutes", "latency_ms": 100.0, "network_ms": 95.0},
        {"id": "Q003", "answer": "x", "latency_ms": 90.0, "network_ms": 100.0},
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    result = _invoke(
        "score", str(path), "--dataset", NAME, "--tier", "core", "--questions", "core",
        "--mode", "dry", "--out", str(out), "--data-dir", str(data), "-q",
        "--speed-weight", "5",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = {x["id"]: x for x in _lines(out)}
    assert lines["Q001"]["speed"] == 1.0 and lines["Q001"]["value"] == 1.0
    assert lines["Q002"]["speed"] is None
    assert lines["Q002"]["speed_null_reason"].startswith("N3: ")
    assert lines["Q003"]["speed"] is None
    assert lines["Q003"]["speed_null_reason"].startswith("not on the list: remainder below zero")
    # a question without a line is a failed search: no speed, counted apart
    assert lines["Q004"]["speed"] is None
    assert lines["Q004"]["speed_null_reason"].startswith("failed: ")
    assert "speed (Glasshouse speed points" in result.output
    assert "+1.00 (n=1)" in result.output and "combined (--speed-weight 5)" in result.output


def test_score_file_speed_not_measurable_n1(data: Path, tmp_path: Path) -> None:
    rows = [{"id": "Q001", "answer": "a quarter acre", "latency_ms": 320.0, "network_ms": 10.0}]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    net = tmp_path / "network.json"
    net.write_text(json.dumps({"host": "api.x", "ip": "104.18.0.9", "location": "seoul",
                               "median_ms": 10.0}), encoding="utf-8")  # fmt: skip
    cdn = tmp_path / "cdn.txt"
    cdn.write_text("104.16.0.0/13\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    result = _invoke(
        "score", str(path), "--dataset", NAME, "--tier", "core", "--questions", "core",
        "--out", str(out), "--data-dir", str(data), "-q",
        "--network", str(net), "--cdn-ranges", str(cdn),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "speed not measurable, N1" in result.output
    assert _lines(out)[0]["speed_null_reason"].startswith("N1: ")
    bad = _invoke(
        "score", str(path), "--dataset", NAME, "--tier", "core", "--questions", "core",
        "--data-dir", str(data), "-q", "--cdn-ranges", str(cdn),
    )  # fmt: skip
    assert bad.exit_code == 2 and "--cdn-ranges needs a network file" in bad.output
