"""The run folder cannot be corrupted: one writer at a time, no duplicate keys, honest status."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recallbench import pipeline, testing
from recallbench.errors import DuplicateObservationError, UserError
from recallbench.pipeline import (
    IncompleteRunError,
    RunLockedError,
    lock_run_folder,
    repair_run,
    resume_run,
    score_run,
    start_run,
)
from recallbench.results import manifest as manifest_mod
from recallbench.results import store
from recallbench.spec import RunSpec


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench.systems import registry

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x]


def _cut_run(run_dir: Path, keep: int) -> None:
    """Make a finished folder look killed after ``keep`` observations."""
    obs = (run_dir / store.OBSERVATIONS).read_text(encoding="utf-8").split("\n")
    (run_dir / store.OBSERVATIONS).write_text("\n".join(obs[:keep]) + "\n", encoding="utf-8")
    for name in (store.VERDICTS, store.METRICS, store.SUMMARY):
        (run_dir / name).unlink()
    m = json.loads((run_dir / "run.json").read_text())
    m["status"], m["ended_at"] = "running", None
    (run_dir / "run.json").write_text(json.dumps(m), encoding="utf-8")


def _done_run(tmp_path: Path, systems: tuple[str, ...] = ("bm25",)) -> Path:
    spec = RunSpec(systems=systems, datasets=("sample",), k=(1, 5))
    return start_run(spec, tmp_path / "d", tmp_path / "out").run_dir


# ------------------------------------------------------------------------- item 3: the lock


def test_duplicate_dataset_references_are_refused_before_any_folder(tmp_path: Path) -> None:
    spec = RunSpec(systems=("bm25",), datasets=("sample", "sample"), k=(1,))
    with pytest.raises(UserError, match="sample.*more than once"):
        start_run(spec, tmp_path / "d", tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_second_writer_is_refused_and_run_json_is_untouched(tmp_path: Path) -> None:
    run_dir = _done_run(tmp_path)
    _cut_run(run_dir, 10)
    before = (run_dir / "run.json").read_bytes()
    with lock_run_folder(run_dir):
        with pytest.raises(RunLockedError, match="another recallbench process"):
            resume_run(run_dir, tmp_path / "d")
        assert isinstance(RunLockedError("x"), UserError)
    assert (run_dir / "run.json").read_bytes() == before  # a refused resume changes nothing
    resume_run(run_dir, tmp_path / "d")  # released on exit: the folder resumes
    assert len(_lines(run_dir / store.OBSERVATIONS)) == 50


RESUME_SCRIPT = """
import sys
from pathlib import Path
from recallbench import testing
testing.register()
testing.SlowBM25.delay_s = 0.15
from recallbench.errors import UserError
from recallbench.pipeline import resume_run
try:
    resume_run(Path({run!r}), Path({data!r}))
except UserError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_two_concurrent_resumes_one_is_refused_and_the_folder_scores(tmp_path: Path) -> None:
    run_dir = _done_run(tmp_path, ("slow-bm25",))
    _cut_run(run_dir, 5)
    script = RESUME_SCRIPT.format(run=str(run_dir), data=str(tmp_path / "d"))
    cmd = [sys.executable, "-c", script]
    first = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_lines(run_dir / store.OBSERVATIONS)) < 7:
        time.sleep(0.02)  # the first one holds the lock and is writing
    second = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, timeout=120)
    _, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err
    assert second.returncode == 2, second.stderr
    assert "another recallbench process" in second.stderr
    obs = _lines(run_dir / store.OBSERVATIONS)
    keys = [(o["system"], o["question_id"]) for o in obs]
    assert len(keys) == len(set(keys)) == 50
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    scored = score_run(run_dir, tmp_path / "d")
    assert scored.missing == {}


def test_repair_keeps_the_first_observation_of_each_key(tmp_path: Path) -> None:
    run_dir = _done_run(tmp_path)
    path = run_dir / store.OBSERVATIONS
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    dup = json.loads(lines[3])
    dup["observed_at"] = "later"
    path.write_text("\n".join([*lines, json.dumps(dup), lines[7]]) + "\n", encoding="utf-8")
    with pytest.raises(DuplicateObservationError, match="recallbench repair"):
        score_run(run_dir, tmp_path / "d")
    assert repair_run(run_dir) == 2
    kept = _lines(path)
    assert len(kept) == 50
    assert all(o["observed_at"] != "later" for o in kept)
    assert path.read_text(encoding="utf-8").split("\n")[:-1] == lines  # first kept, in order
    assert repair_run(run_dir) == 0
    score_run(run_dir, tmp_path / "d")


# ------------------------------------------------------------------- item 7: incomplete runs


def test_scoring_an_incomplete_run_needs_the_flag(tmp_path: Path) -> None:
    run_dir = _done_run(tmp_path)
    _cut_run(run_dir, 25)
    with pytest.raises(IncompleteRunError) as err:
        score_run(run_dir, tmp_path / "d")
    message = str(err.value)
    assert "25 question(s)" in message and "--resume" in message and "--incomplete" in message
    assert not (run_dir / store.METRICS).exists()
    scored = score_run(run_dir, tmp_path / "d", incomplete=True)
    asked = {o["question_id"] for o in _lines(run_dir / store.OBSERVATIONS)}
    unasked = {q.axis or "all" for q in scored.datasets[0].questions if q.id not in asked}
    for row in scored.metrics:
        assert "incomplete" in row.denominator_name, row
        if row.slice == "all" or row.slice in unasked:
            assert row.exclusion_rule is not None and "not_asked (" in row.exclusion_rule, row
        assert row.value is not None or row.null_reason, row
    hit = next(
        m for m in scored.metrics if m.metric == "evidence_hit" and m.k == 5 and m.slice == "all"
    )
    assert "not_asked (25)" in (hit.exclusion_rule or "")
    with_evidence = [v for v in scored.verdicts if v.metrics["evidence_hit@5"] is not None]
    assert hit.denominator == len(with_evidence)
    assert hit.n_excluded == 25 + sum(
        1 for v in scored.verdicts if v.metrics["evidence_hit@5"] is None
    )
    assert {v.question_id for v in scored.verdicts} == asked
    resume_run(run_dir, tmp_path / "d")  # resume still finishes it
    rescored = score_run(run_dir, tmp_path / "d")
    assert all("incomplete" not in m.denominator_name for m in rescored.metrics)


# ------------------------------------------------------------------------ item 12, item 10


def test_runs_started_in_the_same_second_get_distinct_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
            return fixed

    monkeypatch.setattr(manifest_mod, "datetime", Frozen)
    spec = RunSpec(systems=("noop",), datasets=("sample",), k=(1,))
    a = start_run(spec, tmp_path / "d", tmp_path / "out").run_dir.name
    b = start_run(spec, tmp_path / "d", tmp_path / "out").run_dir.name
    prefix = f"20260102T030405Z-{spec.spec_hash}"
    assert a == prefix and b.startswith(prefix + "-") and a != b
    assert json.loads((tmp_path / "out" / b / "run.json").read_text())["run_id"] == b
    assert {o["run_id"] for o in _lines(tmp_path / "out" / b / store.OBSERVATIONS)} == {b}


def test_status_is_scoring_until_the_derived_files_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = store.write_text

    def spy(path: Path, text: str) -> None:
        if path.name == store.SUMMARY:
            seen.append(json.loads((path.parent / "run.json").read_text())["status"])
        real(path, text)

    monkeypatch.setattr(store, "write_text", spy)
    run_dir = _done_run(tmp_path)
    assert seen == ["scoring"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_ctrl_c_marks_the_run_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def advance(n: int) -> None:
        calls["n"] += 1
        if calls["n"] == 10:
            raise KeyboardInterrupt

    spec = RunSpec(systems=("bm25",), datasets=("sample",), k=(1, 5))
    with pytest.raises(KeyboardInterrupt):
        start_run(spec, tmp_path / "d", tmp_path / "out", pipeline.Progress(advance=advance))
    (run_dir,) = (tmp_path / "out").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    resume_run(run_dir, tmp_path / "d")  # the lock was released
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


SIGTERM_SCRIPT = """
from pathlib import Path
from recallbench import testing
testing.register()
testing.SlowBM25.delay_s = 0.1
from recallbench.pipeline import start_run, sigterm_as_exit
from recallbench.spec import RunSpec
with sigterm_as_exit():
    start_run(RunSpec(systems=("slow-bm25",), datasets=("sample",), k=(1,)),
              Path({data!r}), Path({out!r}))
"""


def test_sigterm_marks_the_run_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = SIGTERM_SCRIPT.format(data=str(tmp_path / "d"), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = list(out.glob("*/observations.jsonl")) if out.exists() else []
        if runs and len(_lines(runs[0])) >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    (run_dir,) = out.iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert not any(p.name.endswith(".tmp") for p in run_dir.iterdir())


def test_local_dataset_rows_carry_no_absolute_path(tmp_path: Path) -> None:
    from recallbench.datasets.sample import SAMPLE_DIR

    local = tmp_path / "home" / "someone" / "mydata"
    local.mkdir(parents=True)
    for name in ("turns.jsonl", "questions.jsonl"):
        (local / name).write_bytes((SAMPLE_DIR / name).read_bytes())
    spec = RunSpec(systems=("bm25",), datasets=(f"recallbench@{local}",), k=(1,))
    scored = start_run(spec, tmp_path / "d", tmp_path / "out")
    key = scored.datasets[0].key
    assert str(tmp_path) not in key and key.startswith("recallbench@mydata-")
    for name in (store.OBSERVATIONS, store.VERDICTS, store.METRICS):
        assert str(tmp_path) not in (scored.run_dir / name).read_text(encoding="utf-8")
    again = start_run(spec, tmp_path / "d", tmp_path / "out2")
    assert again.datasets[0].key == key  # deterministic


def test_an_old_folder_keyed_by_absolute_path_still_scores(tmp_path: Path) -> None:
    from recallbench.datasets.sample import SAMPLE_DIR

    local = tmp_path / "mydata"
    local.mkdir()
    for name in ("turns.jsonl", "questions.jsonl"):
        (local / name).write_bytes((SAMPLE_DIR / name).read_bytes())
    spec = RunSpec(systems=("bm25",), datasets=(f"recallbench@{local}",), k=(1,))
    run_dir = start_run(spec, tmp_path / "d", tmp_path / "out").run_dir
    new_key = json.loads((run_dir / "run.json").read_text())["datasets"][0]["key"]
    old_key = f"recallbench@{local}"
    for name in (store.OBSERVATIONS, "run.json"):
        p = run_dir / name
        p.write_text(p.read_text(encoding="utf-8").replace(new_key, old_key), encoding="utf-8")
    scored = score_run(run_dir, tmp_path / "d")
    assert scored.datasets[0].key == old_key and scored.missing == {}
    assert {v.dataset for v in scored.verdicts} == {old_key}


def test_no_tmp_files_left_and_the_lock_is_free_after_a_run(tmp_path: Path) -> None:
    run_dir = _done_run(tmp_path)
    assert not any(p.name.endswith(".tmp") for p in run_dir.iterdir())
    with lock_run_folder(run_dir):  # released: a later writer gets it at once
        assert (run_dir / pipeline.LOCK_FILE).exists()


def test_cli_score_incomplete_and_repair(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from recallbench.cli import app

    run_dir = _done_run(tmp_path)
    _cut_run(run_dir, 25)
    cli = CliRunner()
    refused = cli.invoke(app, ["score", str(run_dir), "--data-dir", str(tmp_path / "d")])
    assert refused.exit_code == 2
    assert "25 question(s)" in refused.output and "--incomplete" in refused.output
    ok = cli.invoke(
        app, ["score", str(run_dir), "--data-dir", str(tmp_path / "d"), "--incomplete", "-q"]
    )
    assert ok.exit_code == 0, ok.output
    assert "INCOMPLETE: bm25 on sample: 25 question(s)" in ok.output
    path = run_dir / store.OBSERVATIONS
    first = path.read_text(encoding="utf-8").split("\n")[0]
    path.write_text(path.read_text(encoding="utf-8") + first + "\n", encoding="utf-8")
    repaired = cli.invoke(app, ["repair", str(run_dir)])
    assert repaired.exit_code == 0, repaired.output
    assert "dropped 1 duplicate record(s)" in repaired.output
