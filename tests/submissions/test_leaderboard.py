"""``recallbench leaderboard``: only validated bundles are ranked, invalid ones are listed with
why, every row carries its run date and conditions, and the files are self-contained and the
same bytes when built again."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.results import store
from recallbench.results.manifest import read_manifest
from recallbench.submissions.leaderboard import (
    Entry,
    Leaderboard,
    conditions,
    parse_metric,
    render_html,
    render_markdown,
)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory, honest_run: Path) -> Path:
    """A folder with an honest run (as a folder and again as a .tar.gz) and an edited copy."""
    run_dir = honest_run
    folder = tmp_path_factory.mktemp("board")
    shutil.copytree(run_dir, folder / "a-honest")
    with tarfile.open(folder / "b-again.tar.gz", "w:gz") as tf:
        tf.add(run_dir, arcname=run_dir.name)
    shutil.copytree(run_dir, folder / "c-edited")
    rows = (folder / "c-edited" / store.METRICS).read_text().splitlines()
    rows = [r.replace('"value":0.', '"value":0.9', 1) if i == 0 else r for i, r in enumerate(rows)]
    (folder / "c-edited" / store.METRICS).write_text("\n".join(rows) + "\n")
    (folder / "notes.txt").write_text("not a bundle")
    return folder


def test_leaderboard_ranks_valid_bundles_and_lists_the_excluded(
    board: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["leaderboard", str(board), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "leaderboard.md").read_text()
    page = (tmp_path / "leaderboard.html").read_text()
    manifest = read_manifest(board / "a-honest")
    row = next(line for line in md.splitlines() if line.startswith("| 1 | bm25 |"))
    assert manifest.run_id in row and manifest.started_at[:10] in row
    assert "mode retrieval" in row and "chunking pair" in row and "subset full" in row
    assert "| a-honest |" in row
    assert "evidence_recall@10" in md and "sha256" in md
    excluded = md.split("## Excluded", 1)[1]
    assert "`c-edited`: aggregates recomputed" in excluded
    assert "`b-again.tar.gz`: the same run" in excluded
    assert "notes.txt" not in md
    # the HTML holds the same rows, needs nothing from outside and runs nothing
    assert "c-edited" in page and manifest.run_id in page
    assert not re.search(r"<script|<link|src=|href=|url\(|@import", page)
    # built again: the same bytes (no wall-clock time)
    again = tmp_path / "again"
    assert CliRunner().invoke(app, ["leaderboard", str(board), "--out", str(again)]).exit_code == 0
    assert (again / "leaderboard.md").read_text() == md
    assert (again / "leaderboard.html").read_text() == page


def test_leaderboard_metric_option(board: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["leaderboard", str(board), "--out", str(tmp_path), "--metric", "mrr@5"]
    )
    assert result.exit_code == 0, result.output
    assert "mrr@5, slice all" in (tmp_path / "leaderboard.md").read_text()
    bad = CliRunner().invoke(app, ["leaderboard", str(board), "--metric", "mrr@x"])
    assert bad.exit_code == 2 and "name@k" in bad.output
    missing = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a folder" in missing.output


def _entry(system: str, value: float | None, **kw: object) -> Entry:
    base = dict(
        bundle=f"{system}.zip", dataset="sample", dataset_version="sample@1.0",
        dataset_sha256="ab" * 32, system=system, metric="evidence_recall@10", value=value,
        ci_low=None if value is None else value - 0.1, ci_high=None if value is None else value,
        null_reason=None if value is not None else "ignores_k", denominator=43, n_excluded=7,
        run_id=f"run-{system}", run_date="2026-12-01", conditions=(("mode", "retrieval"),),
    )  # fmt: skip
    base.update(kw)
    return Entry(**base)  # type: ignore[arg-type]


def test_ranking_ties_unmeasured_last_and_versions_never_mixed() -> None:
    lb = Leaderboard(
        entries=[
            _entry("naive", None),
            _entry("b", 0.5),
            _entry("a", 0.5),
            _entry("c", 0.7),
            _entry("other", 0.9, dataset_version="sample@2.0"),
        ]
    )
    md = render_markdown(lb)
    lines = [line for line in md.splitlines() if line.startswith("| ") and "rank" not in line]
    assert [line.split(" | ")[0:2] for line in lines[:4]] == [
        ["| 1", "c"], ["| 2", "a"], ["| 2", "b"], ["| -", "naive"],
    ]  # fmt: skip
    assert "unmeasured (ignores_k)" in md and "not computed" in md
    assert md.count("## sample@") == 2  # one table per dataset version
    assert "<td>naive</td>" in render_html(lb)


def test_conditions_come_from_run_json_and_the_card_header(board: Path) -> None:
    manifest = read_manifest(board / "a-honest")
    plain = dict(conditions(manifest, "sample", None))
    assert plain == {
        "mode": "retrieval", "k": "1,5,10", "chunking": "pair", "concurrency": "1",
        "subset": "full",
    }  # fmt: skip
    card = {  # the shape of recallbench.report.card's header
        "operator": "ACME lab",
        "scope": "subset: limit 10 (seed 0)",
        "conditions": {"k": [1, 5], "chunking": "turn", "image_mode": {"sample": "native"}},
        "hardware": {"cpu": "x86_64", "cpu_count": 2},
        "nested": {"x": 1},
    }
    carded = dict(conditions(manifest, "sample", card))
    assert carded["operator"] == "ACME lab" and carded["subset"] == "subset: limit 10 (seed 0)"
    assert carded["k"] == "1,5" and carded["chunking"] == "turn"
    assert carded["hardware"] == "x86_64"
    assert "nested" not in carded and "image_mode" not in carded


def test_parse_metric() -> None:
    assert parse_metric("gh_answer") == ("gh_answer", None)
    assert parse_metric("evidence_hit@5") == ("evidence_hit", 5)
    with pytest.raises(ValueError):
        parse_metric("x@y")
    assert json.dumps(parse_metric("a@1"))
