"""docs/report.md: its first example runs as written (in a temporary folder) and writes both
files where it says."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from recallbench.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "report.md"


def test_the_example_runs(tmp_path: Path) -> None:
    block = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)[0]
    for line in block.splitlines():
        command = line.split("#", 1)[0].replace("/tmp/", f"{tmp_path}/").strip()
        args: list[str] = []
        for word in shlex.split(command)[1:]:
            args += sorted(glob.glob(word)) if "*" in word else [word]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, (line, result.output)
    (run,) = (tmp_path / "rb-report").iterdir()
    for folder in (run, tmp_path / "rb-report-view"):
        assert (folder / "report.md").is_file() and (folder / "report.html").is_file()
