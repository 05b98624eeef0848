"""Ordinary faults are one-line errors naming the file, never tracebacks; an interrupted run
says how to resume it."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.datasets.sample import SAMPLE_DIR

SLOW_RUN = """
import sys
from recallbench import testing
testing.register()
testing.SlowBM25.delay_s = 0.3
from recallbench.cli import main
sys.argv = ["recallbench", "run", "-q", "--systems", "slow-bm25", "--no-baselines",
            "--out", {out!r}]
main()
"""


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_says_how_to_resume(tmp_path: Path, sig: int, code: int) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN.format(out=str(out))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until searches are being logged
        logs = list(out.glob("*/observations.jsonl"))
        if logs and logs[0].stat().st_size > 0:
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    [folder] = out.iterdir()
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr
    assert f"recallbench run --resume {folder}" in stderr
    assert "Traceback" not in stderr


def test_a_full_disk_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench.results import store

    real = store.AppendLog.append

    def full(self: store.AppendLog, record: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "observations.jsonl")

    monkeypatch.setattr(store.AppendLog, "append", full)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "-q", "--no-baselines", "--systems", "bm25",
                                      "--out", str(out)])  # fmt: skip
    monkeypatch.setattr(store.AppendLog, "append", real)
    assert result.exit_code == 2, result.output
    [folder] = out.iterdir()
    assert "disk is full" in result.output
    assert f"recallbench run --resume {folder}" in result.output


def test_a_text_missing_from_texts_jsonl_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "-q", "--no-baselines", "--systems", "bm25",
                                      "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    [folder] = out.iterdir()
    texts = folder / "texts.jsonl"
    texts.write_text("".join(texts.read_text().splitlines(keepends=True)[1:]))
    result = CliRunner().invoke(app, ["score", str(folder)])
    assert result.exit_code == 2, result.output
    assert "texts.jsonl" in result.output and "observation" in result.output


def _sample_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in ("turns.jsonl", "questions.jsonl"):
        (folder / name).write_bytes((SAMPLE_DIR / name).read_bytes())
    return folder


@pytest.mark.parametrize(
    ("encode", "words"),
    [
        (lambda text: text.encode("utf-16"), ["UTF-16", "UTF-8"]),
        (lambda text: b"\xef\xbb\xbf" + text.encode(), ["byte-order mark"]),
        (lambda text: text.encode().replace(b"Ana", b"An\xe9", 1) or b"", ["not UTF-8"]),
    ],
)
def test_encoding_problems_are_named(tmp_path: Path, encode: object, words: list[str]) -> None:
    folder = _sample_copy(tmp_path)
    path = folder / "turns.jsonl"
    text = path.read_text(encoding="utf-8")
    if "Ana" not in text:
        text = text.replace("a", "Ana", 1)
    path.write_bytes(encode(text))  # type: ignore[operator]
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", "-q", "--datasets", f"recallbench@{folder}", "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert str(path) in result.output
    for word in words:
        assert word in result.output
    assert "truncated" not in result.output
    assert not out.exists()


def test_deeply_nested_json_in_a_dataset_is_one_line(tmp_path: Path) -> None:
    folder = _sample_copy(tmp_path)
    path = folder / "questions.jsonl"
    path.write_text(path.read_text() + "[" * 100_000 + "\n")
    result = CliRunner().invoke(
        app, ["run", "-q", "--datasets", f"recallbench@{folder}", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.output and str(path) in result.output


def test_a_dataset_with_no_question_is_refused(tmp_path: Path) -> None:
    folder = _sample_copy(tmp_path)
    (folder / "questions.jsonl").write_text("")
    result = CliRunner().invoke(
        app, ["run", "-q", "--datasets", f"recallbench@{folder}", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert "0 questions" in result.output
    assert not (tmp_path / "o").exists()


def test_sample_at_path_is_a_local_copy_not_the_bundled_sample(tmp_path: Path) -> None:
    from recallbench.benchmarks import load_dataset

    ds = load_dataset(f"sample@{_sample_copy(tmp_path)}", tmp_path)
    assert ds.version == "local"
    assert not ds.pinned
    assert load_dataset("sample", tmp_path).version == "1.0"


def test_verify_an_unknown_system_is_one_line() -> None:
    result = CliRunner().invoke(app, ["verify", "--system", "nosuch"])
    assert result.exit_code == 2, result.output
    assert "unknown system 'nosuch'" in result.output


# ------------------------------------------------------------------ predictions files


def _predictions(tmp_path: Path, **fields: object) -> Path:
    questions = [
        json.loads(line) for line in (SAMPLE_DIR / "questions.jsonl").read_text().splitlines()
    ]
    path = tmp_path / "preds.jsonl"
    lines = [{"id": q["id"], "answer": "x", **fields} for q in questions]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"answer_generated": "false"}, ["answer_generated", "true or false"]),
        ({"latency_ms": float("nan")}, ["latency_ms", "finite"]),
        ({"latency_ms": -1}, ["latency_ms", "at least 0"]),
        ({"chars_returned": -3}, ["chars_returned", "at least 0"]),
    ],
)
def test_bad_values_in_a_predictions_file_name_file_and_line(
    tmp_path: Path, fields: dict[str, object], words: list[str]
) -> None:
    path = _predictions(tmp_path, **fields)
    result = CliRunner().invoke(app, ["score", str(path), "--dataset", "sample", "-q"])
    assert result.exit_code == 2, result.output
    assert f"{path}:1" in result.output
    for word in words:
        assert word in result.output


def test_score_out_refuses_to_overwrite_the_predictions_file(tmp_path: Path) -> None:
    path = _predictions(tmp_path)
    before = path.read_bytes()
    result = CliRunner().invoke(
        app, ["score", str(path), "--dataset", "sample", "--out", str(path), "-q"]
    )
    assert result.exit_code == 2, result.output
    assert "would be overwritten" in result.output
    assert path.read_bytes() == before
