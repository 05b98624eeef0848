"""``recallbench compare`` and ``recallbench diff`` as a user runs them: on scored predictions
files of a hand-made 600-question dataset (the acceptance gaps of 3 and 150 in 600) and on two
runs of the bundled sample that differ only in k."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

N = 600


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 questions in two categories, one evidence turn each (one global haystack)."""
    root = tmp_path_factory.mktemp("six_hundred")
    data = root / "data"
    data.mkdir()
    _write(data / "turns.jsonl", [
        {"turn_id": f"t{i}", "session_id": f"s{i // 20}", "speaker": "user",
         "text": f"fact number {i}", "date": f"2024-01-{1 + i // 20:02d}"}
        for i in range(N)
    ])  # fmt: skip
    _write(data / "questions.jsonl", [
        {"id": f"q{i:03d}", "question": f"what is fact {i}?", "answer": str(i),
         "category": "odd" if i % 2 else "even", "evidence_turns": [f"t{i}"]}
        for i in range(N)
    ])  # fmt: skip
    return data


def _predictions(root: Path, name: str, wrong: int, data: Path) -> Path:
    """A file right on every question but the first ``wrong`` (which retrieve another turn),
    scored with ``recallbench score``."""
    rows = [
        {"id": f"q{i:03d}", "retrieved_turns": [f"t{(i + 1) % N}" if i < wrong else f"t{i}"]}
        for i in range(N)
    ]
    path = _write(root / f"{name}.jsonl", rows)
    result = CliRunner().invoke(app, [
        "score", str(path), "--dataset", f"recallbench@{data}", "--name", name, "--k", "1",
        "--data-dir", str(root), "-q",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return path


def _compare(*args: str) -> Any:
    result = CliRunner().invoke(app, ["compare", *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize(("wrong", "significant"), [(3, False), (150, True)])
def test_a_gap_of_3_in_600_is_not_significant_and_150_is(
    folder: Path, tmp_path: Path, wrong: int, significant: bool
) -> None:
    a = _predictions(tmp_path, "alpha", 0, folder)
    b = _predictions(tmp_path, "beta", wrong, folder)
    ref = f"recallbench@{folder}"
    out = _compare(str(a), str(b), "--dataset", ref, "--metric", "evidence_hit@1",
                   "--data-dir", str(tmp_path), "--format", "json")  # fmt: skip
    [c] = json.loads(out.stdout)
    assert [s["system"] for s in c["sides"]] == ["alpha", "beta"]
    assert c["correction"] == "Holm" and c["resampling_unit"] == "questions by slice"
    whole = c["slices"][0]
    assert whole["slice"] == "all"
    assert whole["figures"]["A"]["value"] == 1.0 and whole["figures"]["B"]["n"] == N
    [gap] = whole["gaps"]
    assert gap["discordant"] == [wrong, 0] and gap["test"] == "exact McNemar"
    assert gap["difference"] == round(-wrong / N, 6)
    assert gap["significant"] is significant
    assert [s["slice"] for s in c["slices"]] == ["all", "even", "odd"]
    # the table marks the same gap, and names the sides and the correction
    table = _compare(str(a), str(b), "--dataset", ref, "--metric", "evidence_hit@1",
                     "--data-dir", str(tmp_path)).stdout  # fmt: skip
    first = next(line for line in table.splitlines() if "│ all" in line)
    assert ("n.s." in first) is not significant
    assert "A = alpha" in table and "Holm" in table
    md = _compare(str(a), str(b), "--dataset", ref, "--metric", "evidence_hit@1",
                  "--data-dir", str(tmp_path), "--format", "markdown").stdout  # fmt: skip
    assert "| slice | A | B | B-A | p (Holm) |" in md


def test_compare_output_is_the_same_bytes_twice(folder: Path, tmp_path: Path) -> None:
    a = _predictions(tmp_path, "alpha", 0, folder)
    b = _predictions(tmp_path, "beta", 40, folder)
    args = (str(a), str(b), "--dataset", f"recallbench@{folder}", "--data-dir", str(tmp_path),
            "--format", "json")  # fmt: skip
    assert _compare(*args).stdout == _compare(*args).stdout


def test_compare_refusals_are_one_line(folder: Path, tmp_path: Path) -> None:
    a = _predictions(tmp_path, "alpha", 0, folder)
    runner = CliRunner()
    alone = runner.invoke(app, ["compare", str(a), "--dataset", f"recallbench@{folder}",
                                "--data-dir", str(tmp_path)])  # fmt: skip
    assert alone.exit_code == 2 and "nothing to compare" in alone.output
    raw = _write(tmp_path / "raw.jsonl", [{"id": "q000"}])
    unscored = runner.invoke(app, ["compare", str(raw), str(a), "--data-dir", str(tmp_path)])
    assert unscored.exit_code == 2 and "score it first" in unscored.output
    bad = runner.invoke(app, ["compare", str(a), str(a), "--format", "html"])
    assert bad.exit_code == 2 and "--format must be one of" in bad.output
    bad = runner.invoke(app, ["diff", str(a), str(a), "--alpha", "5"])
    assert bad.exit_code == 2 and "--alpha must be between 0 and 1" in bad.output


@pytest.fixture(scope="module")
def k_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """bm25 on the sample twice, at k = 1,3 and at k = 1,10: nothing else differs."""
    root = tmp_path_factory.mktemp("k_runs")
    out = []
    for ks in ("1,3", "1,10"):
        result = CliRunner().invoke(app, [
            "run", "--datasets", "sample", "--systems", "bm25", "--no-baselines", "--k", ks,
            "--out", str(root / ks), "--data-dir", str(root), "--cache-dir", str(root / "c"),
            "-q",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        [run_dir] = list((root / ks).iterdir())
        out.append(run_dir)
    return out[0], out[1]


def test_diff_of_runs_differing_only_in_k_flags_it_and_lists_the_questions(
    k_runs: tuple[Path, Path],
) -> None:
    a, b = k_runs
    result = CliRunner().invoke(app, ["diff", str(a), str(b), "--format", "json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["instrument_changed"] is True
    assert [c["field"] for c in d["instrument_changes"]] == ["k"]
    assert "INSTRUMENT CHANGED" in result.stderr
    changed = d["questions"]
    assert changed, "a deeper k finds evidence at some question"
    for q in changed:
        assert any(c["metric"] == "evidence_hit@3|@10" or c["metric"].endswith("|@10")
                   for c in q["changed"]), q  # fmt: skip
        assert len(q["a"]["memories"]) == 3 and len(q["b"]["memories"]) == 10
    hit = next(x for x in d["deltas"] if x["metric_a"] == "evidence_hit@3")
    assert hit["metric_b"] == "evidence_hit@10" and hit["difference"] > 0
    same = next(x for x in d["deltas"] if x["metric_a"] == "evidence_hit@1")
    assert same["difference"] == 0 and same["significant"] is False
    table = CliRunner().invoke(app, ["diff", str(a), str(b)]).stdout
    assert table.startswith("INSTRUMENT CHANGED (k)")
    assert "questions whose verdict changed" in table and changed[0]["question_id"] in table


def test_diff_of_a_run_with_itself_changes_nothing(k_runs: tuple[Path, Path]) -> None:
    a, _ = k_runs
    result = CliRunner().invoke(app, ["diff", str(a), str(a), "--format", "json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["instrument_changed"] is False and d["questions"] == []
    assert all(x["difference"] == 0 for x in d["deltas"])
    table = CliRunner().invoke(app, ["diff", str(a), str(a)]).stdout
    assert table.startswith("instrument: the same")


def test_diff_of_two_predictions_files_says_what_it_could_not_check(
    folder: Path, tmp_path: Path
) -> None:
    a = _predictions(tmp_path, "alpha", 0, folder)
    b = _predictions(tmp_path, "beta", 4, folder)
    args = ["diff", str(a), str(b), "--system", "alpha,beta", "--dataset",
            f"recallbench@{folder}", "--data-dir", str(tmp_path)]  # fmt: skip
    d = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).stdout)
    assert d["instrument_changed"] is False
    assert len(d["instrument_unrecorded"]) == 2
    assert [q["question_id"] for q in d["questions"]] == ["q000", "q001", "q002", "q003"]
    assert {"metric": "evidence_hit@1", "a": 1.0, "b": 0.0} in d["questions"][0]["changed"]
    assert d["questions"][0]["a"]["memories"] is None  # a predictions folder keeps none
    table = CliRunner().invoke(app, args).stdout
    assert table.startswith("instrument not fully checked")
    assert "4 of 600 questions changed" in table
