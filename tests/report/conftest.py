"""Run folders the report tests read: the bundled sample run with the baselines, and a run
over a copy of the sample whose memories, answers and slice names carry HTML and script (a
memory is untrusted input, and the report must show it as text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.datasets.folder_format import QUESTIONS_FILE, TURNS_FILE
from recallbench.datasets.sample import SAMPLE_DIR

HOSTILE = (
    '</script><script>window.__pwned = 1</script><img src="x.png" onerror="window.__pwned=1">'
    "<b>bold?</b> &amp; "
)
"""Put in front of the text of the sample's turn ``s02-t01`` (the evidence of ``q01``)."""
HOSTILE_SLICE = 'fact<svg onload="window.__pwned=1">'
"""The category (slice) of ``q01`` in the hostile copy."""


def make_run(out: Path, *args: str) -> Path:
    """Run recallbench with ``args`` into ``out`` and return the one run folder made."""
    result = CliRunner().invoke(app, ["run", "-q", "--out", str(out), "--k", "1,3,10", *args])
    assert result.exit_code == 0, result.output
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def hostile_dataset(folder: Path) -> Path:
    """A copy of the sample with :data:`HOSTILE` in a memory text and a hostile slice name."""
    folder.mkdir(parents=True)
    turns = []
    for line in (SAMPLE_DIR / TURNS_FILE).read_text(encoding="utf-8").splitlines():
        turn = json.loads(line)
        if turn["turn_id"] == "s02-t01":
            turn["text"] = HOSTILE + turn["text"]
        turns.append(json.dumps(turn))
    (folder / TURNS_FILE).write_text("\n".join(turns) + "\n", encoding="utf-8")
    questions = []
    for line in (SAMPLE_DIR / QUESTIONS_FILE).read_text(encoding="utf-8").splitlines():
        question = json.loads(line)
        if question["id"] == "q01":
            question["category"] = HOSTILE_SLICE
        questions.append(json.dumps(question))
    (folder / QUESTIONS_FILE).write_text("\n".join(questions) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with the baselines (random, bm25, naive), k = 1, 3, 10."""
    return make_run(tmp_path_factory.mktemp("sample-run"))


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bm25 alone over the hostile copy of the sample."""
    data = hostile_dataset(tmp_path_factory.mktemp("hostile-data") / "hostile")
    return make_run(tmp_path_factory.mktemp("hostile-run"), "--systems", "bm25",
                    "--no-baselines", "--datasets", f"recallbench@{data}")


@pytest.fixture(scope="session")
def hostile_texts() -> tuple[str, str]:
    """(:data:`HOSTILE`, :data:`HOSTILE_SLICE`): what the hostile run's records carry."""
    return HOSTILE, HOSTILE_SLICE
