"""A real local model end to end: llama-cpp-python's OpenAI-compatible server with Gemma 3 270M
(see ``conftest.py``). The model is a smoke test of the path (HTTP, usage fields, records), not
an instrument: nothing here checks what it answers, only that it answered."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.datasets.folder_format import QUESTIONS_FILE, TURNS_FILE
from recallbench.datasets.sample import SAMPLE_DIR

pytestmark = pytest.mark.slow


def post_json(url: str, body: dict[str, Any], timeout: float = 300.0) -> Any:
    """POST ``body`` as JSON to ``url`` and decode the JSON reply."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def test_chat_completion_is_openai_shaped(llama_server: str, llama_model: str) -> None:
    reply = post_json(
        f"{llama_server}/chat/completions",
        {
            "model": llama_model,
            "messages": [{"role": "user", "content": "Name one colour. Answer in one word."}],
            "temperature": 0,
            "max_tokens": 16,
        },
    )
    content = reply["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    assert reply["choices"][0]["message"]["role"] == "assistant"
    usage = reply["usage"]
    assert isinstance(usage["prompt_tokens"], int) and usage["prompt_tokens"] > 0
    assert isinstance(usage["completion_tokens"], int)
    assert 0 < usage["completion_tokens"] <= 16


def _answer_records(run_dir: Path, system: str) -> list[dict[str, Any]]:
    """The lines of ``answers.jsonl`` for ``system``."""
    lines = (run_dir / "answers.jsonl").read_text().splitlines()
    return [r for r in (json.loads(line) for line in lines if line.strip())
            if r["system"] == system]


def _few_sample_questions(folder: Path, n: int = 4) -> Path:
    """The sample's corpus with its first ``n`` questions, in recallbench's folder format: a
    270M model on two CPU cores takes seconds per answer, and the path is what is tested."""
    folder.mkdir()
    shutil.copyfile(SAMPLE_DIR / TURNS_FILE, folder / TURNS_FILE)
    lines = (SAMPLE_DIR / QUESTIONS_FILE).read_text().splitlines()
    (folder / QUESTIONS_FILE).write_text("\n".join(lines[:n]) + "\n")
    return folder


def test_answer_mode_end_to_end_through_llama_cpp(
    llama_server: str, llama_model: str, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    few = _few_sample_questions(tmp_path / "few")
    result = CliRunner().invoke(
        app,
        [
            "run", "-q",
            "--systems", "bm25", "--no-baselines",
            "--datasets", f"recallbench@{few}",
            "--mode", "answer",
            "--reader", llama_model,
            "--reader-url", llama_server,
            "--judge", "mock-judge",
            "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    records = _answer_records(run_dir, "bm25")
    lines = (few / QUESTIONS_FILE).read_text().splitlines()
    questions = sorted(json.loads(line)["id"] for line in lines if line.strip())
    assert sorted(r["question_id"] for r in records) == questions
    for record in records:
        assert record["outcome"] == "answered" and record["error"] is None, record
        assert record["mode"] == "answer" and record["condition"] == "system", record
        assert record["reader"].startswith(llama_model), record
        assert isinstance(record["answer"], str), record
        assert record["calls"] >= 1 and record["memory_chars"] > 0, record
        # Token counts are the server's own usage fields; the memories' share is the prompt's
        # tokens minus the empty reader prompt's, measured on the same server.
        assert isinstance(record["prompt_tokens"], int) and record["prompt_tokens"] > 0, record
        assert isinstance(record["completion_tokens"], int), record
        assert record["completion_tokens"] > 0, record
        assert isinstance(record["memory_tokens"], int), record
        assert 0 < record["memory_tokens"] < record["prompt_tokens"], record
