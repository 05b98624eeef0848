"""docs/submissions.md: its offline example runs as written and does what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "submissions.md"


@pytest.mark.slow
def test_the_try_it_example_accepts_the_honest_bundle_and_excludes_the_edited_one(
    tmp_path: Path,
) -> None:
    block = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)[0]
    script = block.replace("/tmp/subs", str(tmp_path / "subs")).replace(
        "/tmp/board", str(tmp_path / "board")
    )
    prelude = f'recallbench() {{ "{sys.executable}" -m recallbench "$@"; }}\n'
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    done = subprocess.run(
        ["bash", "-c", prelude + script], capture_output=True, text=True, env=env, timeout=600
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out  # the last command, the leaderboard, succeeds
    assert out.count("valid: ") >= 3 and "NOT valid" in out
    assert "FAIL aggregates recomputed" in out
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    assert re.search(r"^\| 1 \| bm25 \|.*\| honest\.tar\.gz \|$", md, re.MULTILINE)
    assert "- `edited`: aggregates recomputed" in md
