"""Every flag and option is checked before any folder exists; --resume and score DIR refuse a
flag that conflicts with the stored spec; an edited spec is refused by its hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

BASE = ["run", "-q", "--no-baselines", "--systems", "bm25"]


def _run(tmp_path: Path, *args: str) -> tuple[int, str]:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [*BASE, "--out", str(out), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "-inf"])
def test_a_bad_timeout_is_refused_before_any_folder(tmp_path: Path, value: str) -> None:
    code, output = _run(tmp_path, f"--timeout={value}")
    assert code == 2, output
    assert "--timeout" in output and "above 0" in output
    assert not (tmp_path / "out").exists()


def _config(tmp_path: Path, text: str, suffix: str = ".toml") -> Path:
    path = tmp_path / f"config{suffix}"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[naive]\nchar_budgett = 10\n", ["[naive]", "char_budgett", "char_budget"]),
        ("[naive]\nchar_budget = 'big'\n", ["[naive] char_budget", "an integer", "'big'"]),
        ("[naive]\nchar_budget = 0\n", ["[naive] char_budget", "at least 1"]),
        ("[naive]\nchar_budget = true\n", ["[naive] char_budget", "an integer"]),
        ("[bm25]\nstopwords = 'nosuch'\n", ["[bm25] stopwords", "function"]),
        ("[bm25]\nstopwords = [1, 2]\n", ["[bm25] stopwords", "a string"]),
        ("[bm25]\nstemmer = 'klingon'\n", ["[bm25] stemmer", "english"]),
        ("[random]\nseed = 3\n", ["[random]", "unknown option 'seed'"]),
        ("[dense]\nmodel = 'x'\n", ["section [dense] names no system of the run"]),
    ],
)
def test_bad_system_options_name_file_section_and_key(
    tmp_path: Path, text: str, words: list[str]
) -> None:
    config = _config(tmp_path, text)
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "random,bm25,naive", "--no-baselines",
         "--out", str(tmp_path / "out"), "--config", str(config)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert str(config) in result.output
    for word in words:
        assert word in result.output
    assert not (tmp_path / "out").exists()


def test_good_system_options_run(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "[naive]\nchar_budget = 5000\n[bm25]\nstopwords = ['the', 'a']\nstemmer = 'english'\n",
    )
    result = CliRunner().invoke(
        app, ["run", "-q", "--out", str(tmp_path / "out"), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    [folder] = (tmp_path / "out").iterdir()
    spec = json.loads((folder / "run.json").read_text())["spec"]
    assert spec["system_configs"]["naive"] == {"char_budget": 5000}


def test_a_plugin_without_declared_options_passes_them_with_a_note(tmp_path: Path) -> None:
    from recallbench import testing
    from recallbench.pipeline import check_systems

    testing.register()
    notes = check_systems(["noop"], {"noop": {"anything": 1}}, "config file c.toml")
    assert notes and "declares no options" in notes[0] and "[noop]" in notes[0]


def test_systems_lists_declared_options() -> None:
    result = CliRunner().invoke(app, ["systems"])
    assert result.exit_code == 0, result.output
    assert "char_budget=120000" in result.output
    assert "stopwords=" in result.output


@pytest.mark.parametrize(
    ("text", "suffix", "words"),
    [
        ("[" * 100_000, ".json", ["nested too deeply"]),
        ("[naive]\n", ".toml", []),
    ],
)
def test_config_file_faults_are_one_line(
    tmp_path: Path, text: str, suffix: str, words: list[str]
) -> None:
    config = _config(tmp_path, text, suffix)
    result = CliRunner().invoke(
        app, ["run", "-q", "--out", str(tmp_path / "out"), "--config", str(config)]
    )
    if not words:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert str(config) in result.output
    for word in words:
        assert word in result.output


def test_config_naming_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "-q", "--out", str(tmp_path / "out"), "--config", str(tmp_path)]
    )
    assert result.exit_code == 2, result.output
    assert "is not a file" in result.output


def test_config_in_utf16_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[naive]\nchar_budget = 10\n", encoding="utf-16")
    result = CliRunner().invoke(
        app, ["run", "-q", "--out", str(tmp_path / "out"), "--config", str(config)]
    )
    assert result.exit_code == 2, result.output
    assert "not UTF-8" in result.output and str(config) in result.output


def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("x")
    result = CliRunner().invoke(app, [*BASE, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "is a file" in result.output
    result = CliRunner().invoke(app, [*BASE, "--out", str(out / "below")])
    assert result.exit_code == 2, result.output
    assert "is a file" in result.output


def test_empty_datasets_flag_is_refused(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--datasets", ",")
    assert code == 2, output
    assert "names no dataset" in output
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- resume


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    code, output = _run(tmp_path, "--k", "1,5")
    assert code == 0, output
    [folder] = (tmp_path / "out").iterdir()
    return folder


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--k", "3"], "--k 3"),
        (["--systems", "random"], "--systems"),
        (["--datasets", "locomo"], "--datasets locomo"),
        (["--chunking", "turn"], "--chunking turn"),
        (["--concurrency", "4"], "--concurrency 4"),
        (["--timeout", "5"], "--timeout 5"),
        (["--seed", "7"], "--seed 7"),
    ],
)
def test_resume_refuses_a_flag_that_conflicts_with_the_spec(
    finished: Path, flags: list[str], named: str
) -> None:
    before = (finished / "run.json").read_bytes()
    result = CliRunner().invoke(app, ["run", "-q", "--resume", str(finished), *flags])
    assert result.exit_code == 2, result.output
    assert named in result.output and "conflicts" in result.output
    assert (finished / "run.json").read_bytes() == before


def test_resume_accepts_flags_with_the_stored_values(finished: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--resume", str(finished), "--k", "5,1", "--systems", "bm25",
         "--no-baselines", "--chunking", "pair"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_score_dir_refuses_a_different_k(finished: Path) -> None:
    result = CliRunner().invoke(app, ["score", str(finished), "--k", "3"])
    assert result.exit_code == 2, result.output
    assert "--k 3" in result.output and "conflicts" in result.output
    result = CliRunner().invoke(app, ["score", str(finished), "-q", "--k", "1,5"])
    assert result.exit_code == 0, result.output


def test_a_hand_edited_spec_is_refused_naming_both_hashes(finished: Path) -> None:
    path = finished / "run.json"
    manifest = json.loads(path.read_text())
    manifest["spec"]["k"] = [50]
    path.write_text(json.dumps(manifest))
    from recallbench.spec import RunSpec

    edited = RunSpec.from_dict(manifest["spec"]).spec_hash
    for args in (["run", "-q", "--resume", str(finished)], ["score", str(finished)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert manifest["spec_hash"] in result.output and edited in result.output


@pytest.mark.parametrize("what", ["missing", "no-run-json", "a-file"])
def test_resume_on_something_that_is_not_a_run_folder(tmp_path: Path, what: str) -> None:
    target = tmp_path / what
    if what == "no-run-json":
        target.mkdir()
    elif what == "a-file":
        target.write_text("x")
    result = CliRunner().invoke(app, ["run", "-q", "--resume", str(target)])
    assert result.exit_code == 2, result.output
    assert str(target) in result.output


def test_resume_after_the_dataset_changed_is_one_line(tmp_path: Path) -> None:
    from recallbench.datasets import sample

    folder = tmp_path / "mydata"
    folder.mkdir()
    for name in ("turns.jsonl", "questions.jsonl"):
        (folder / name).write_bytes((sample.SAMPLE_DIR / name).read_bytes())
    code, output = _run(tmp_path, "--datasets", f"recallbench@{folder}")
    assert code == 0, output
    (run_dir,) = (tmp_path / "out").iterdir()
    turns = folder / "turns.jsonl"
    turns.write_text(turns.read_text().replace("Lisbon", "Porto").replace("a", "e", 1))
    for args in (["run", "-q", "--resume", str(run_dir)], ["score", str(run_dir)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "files changed since the run" in result.output
        assert "Traceback" not in result.output
