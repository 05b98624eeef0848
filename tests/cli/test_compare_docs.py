"""docs/compare.md: its runnable example runs as written and prints what the page says."""

from __future__ import annotations

import glob
import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "compare.md"


def _commands() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "docs/compare.md has no bash example"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_the_example_runs_and_says_what_the_page_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RECALLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RECALLBENCH_DATA", str(tmp_path / "data"))
    outputs = []
    for line in _commands():
        words = shlex.split(line)
        assert words[0] == "recallbench"
        args = [a for w in words[1:] for a in (sorted(glob.glob(w)) if "*" in w else [w])]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, (line, result.output)
        outputs.append(result.stdout)
    compare, diff = outputs[1], outputs[3]
    page = DOC.read_text(encoding="utf-8")
    for row in ("all           | 0.093 [0.023, 0.186] n=43", "0.078 n.s."):
        assert row in page
    flat = re.sub(r"[│┃]", "|", compare)
    assert "0.093 [0.023, 0.186] n=43 | 0.581 [0.442, 0.698] n=43" in flat
    assert "0.078 n.s." in flat
    assert diff.startswith("INSTRUMENT CHANGED (k)") and "k: A [1,5,10] | B [1,3]" in diff
    assert "evidence_hit@10|@3" in diff and "8 of 50 questions changed" in diff
    assert os.listdir(tmp_path / "results")
