"""Memory and answer modes end to end, offline: the shipped mock provider served on loopback
drives the whole pipeline (reader, judge, records, scoring, labels, faults, resume)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallbench.cli import app
from recallbench.testing import compare_runs
from recallbench.testing.mock_llm import Fault, MockLLMServer

runner = CliRunner()


@pytest.fixture(autouse=True)
def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench import testing
    from recallbench.systems import registry

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _folder(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_answer_mode_on_the_sample_completes_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cache of its own: replies cached by an earlier test of the session cost nothing (0.0)
    monkeypatch.setenv("RECALLBENCH_CACHE", str(tmp_path.with_name(tmp_path.name + "-cache")))
    code, out = _run(
        ["run", "--systems", "bm25", "--datasets", "sample", "--mode", "answer",
         "--reader", "mock", "--judge", "mock-judge", "--out", str(tmp_path), "-q"]
    )
    assert code == 0, out
    run_dir = _folder(tmp_path)
    verdicts = _lines(run_dir / "verdicts.jsonl")
    assert verdicts and all(v["mode"] == "answer" for v in verdicts)
    for v in verdicts:
        a = v["answering"]
        assert a["reader"] == "mock"
        assert a["judge"] == "mock-judge"
        assert len(a["reader_prompt_sha256"]) == 64
        assert a["reader_prompt_tokens"] > 0 and a["reader_completion_tokens"] > 0
        judged = a["judgements"]["answer_correct"]
        assert len(judged["prompt_sha256"]) == 64 and judged["prompt_tokens"] > 0
        assert v["metrics"]["answer_correct"] in (0.0, 1.0)
    rows = _lines(run_dir / "metrics.jsonl")
    assert all(r["mode"] == "answer" for r in rows)
    bm25 = {r["metric"]: r for r in rows if r["system"] == "bm25" and r["slice"] == "all"}
    assert bm25["answer_correct"]["value"] is not None
    assert bm25["answer_correct"]["denominator"] == 50
    assert bm25["memory_tokens_mean"]["value"] > 0
    assert bm25["cost_per_usable_answer_usd"]["value"] is None  # no price table: not 0
    assert "no_price" in bm25["cost_per_usable_answer_usd"]["null_reason"]
    answers = _lines(run_dir / "answers.jsonl")
    assert len(answers) == 150 and all(a["outcome"] == "answered" for a in answers)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["spec"]["answering"]["mode"] == "answer"
    assert manifest["answering"]["datasets"]["sample"]["instrument"] == "recallbench prompts v1"
    summary = (run_dir / "summary.md").read_text()
    assert "judged (answer mode)" in summary and "reader chosen by the operator" in summary


def test_memory_mode_scores_a_system_that_returns_no_source_turns(tmp_path: Path) -> None:
    code, out = _run(
        ["run", "--systems", "no-source", "--no-baselines", "--datasets", "sample",
         "--mode", "memory", "--judge", "mock-judge", "--out", str(tmp_path), "-q"]
    )
    assert code == 0, out
    rows = _lines(_folder(tmp_path) / "metrics.jsonl")
    mine = {r["metric"]: r for r in rows if r["system"] == "no-source" and r["slice"] == "all"}
    assert mine["evidence_hit"]["value"] is None  # retrieval cannot be checked
    assert mine["memory_correct"]["value"] is not None and mine["memory_correct"]["value"] > 0


def test_a_reader_equal_to_the_judge_is_refused_without_the_flag(tmp_path: Path) -> None:
    args = ["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
            "--mode", "answer", "--reader", "mock-judge", "--judge", "mock-judge",
            "--out", str(tmp_path), "-q"]
    code, out = _run(args)
    assert code == 2 and "same model" in out and "--same-model" in out
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before any folder
    code, out = _run([*args, "--same-model"])
    assert code == 0, out
    run_dir = _folder(tmp_path)
    label = "reader and judge are the same model (mock-judge)"
    assert all(label in r["non_standard"] for r in _lines(run_dir / "metrics.jsonl"))
    assert all(label in v["answering"]["non_standard"]
               for v in _lines(run_dir / "verdicts.jsonl"))
    assert f"NON-STANDARD: {label}" in (run_dir / "summary.md").read_text()


@pytest.mark.slow  # over 5 s on 2 cores: the full suite runs it
def test_recallbench_prompts_are_labelled_where_a_benchmark_has_its_own(
    tmp_path: Path, shared_data: Path
) -> None:
    code, out = _run(
        ["run", "--systems", "bm25", "--no-baselines", "--datasets", "locomo",
         "--data-dir", str(shared_data), "--mode", "answer", "--prompts", "recallbench-v1",
         "--reader", "mock", "--judge", "mock-judge", "--out", str(tmp_path), "-q",
         "--llm-concurrency", "16"]
    )
    assert code == 0, out
    run_dir = _folder(tmp_path)
    rows = _lines(run_dir / "metrics.jsonl")
    assert rows and all(
        any("recallbench prompts v1, not its official prompts" in label
            for label in r["non_standard"]) for r in rows
    )


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_faulty_endpoint_replies_are_counted_and_shown(tmp_path: Path) -> None:
    faults = [
        Fault("malformed", every=7, models=("mock-judge",)),
        Fault("empty", every=11, models=("mock-judge",)),
        Fault("rate_limit", every=5, retry_after_s=0.01),
    ]
    with MockLLMServer(faults=faults) as server:
        code, out = _run(
            ["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
             "--mode", "answer", "--reader", "mock", "--reader-url", server.base_url,
             "--judge", "mock-judge", "--judge-url", server.base_url, "--no-cache",
             "--out", str(tmp_path), "-q"]
        )
    assert code == 0, out
    run_dir = _folder(tmp_path)
    judgements = _lines(run_dir / "judgements.jsonl")
    answers = _lines(run_dir / "answers.jsonl")
    retried = [r for r in answers + judgements if r["attempts"] > 1]
    assert retried  # 429s were retried, and every try is recorded
    assert any(t["status"] == 429 and t["wait_s"] > 0 for r in retried for t in r["retries"])
    assert all(j["outcome"] in ("judged", "judge_error") for j in judgements)
    rows = {r["metric"]: r for r in _lines(run_dir / "metrics.jsonl")
            if r["system"] == "bm25" and r["slice"] == "all"}
    errors = sum(j["outcome"] == "judge_error" for j in judgements)
    assert rows["judge_error_count"]["value"] == errors
    assert rows["llm_retry_count"]["value"] > 0
    judged = rows["answer_correct"]
    assert judged["denominator"] + judged["n_excluded"] == 50
    if errors:
        assert judged["n_excluded"] >= errors and "judge_error" in judged["exclusion_rule"]
    assert "judge errors" in (run_dir / "summary.md").read_text()


def test_an_unparsed_judge_reply_is_scored_by_the_official_default_and_counted(
    tmp_path: Path,
) -> None:
    # the mock *reader* as judge: its replies carry no verdict word at all
    with MockLLMServer() as server:
        code, out = _run(
            ["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
             "--mode", "answer", "--reader", "mock-judge", "--reader-url", server.base_url,
             "--judge", "mock", "--judge-url", server.base_url,
             "--out", str(tmp_path), "-q"]
        )
    assert code == 0, out
    rows = {r["metric"]: r for r in _lines(_folder(tmp_path) / "metrics.jsonl")
            if r["system"] == "bm25" and r["slice"] == "all"}
    assert rows["judge_unparsed_rate"]["value"] == 1.0  # every reply lacked a verdict word
    assert rows["answer_correct"]["value"] == 0.0 and rows["answer_correct"]["denominator"] == 50


def test_judge_check_separates_a_strict_judge_from_a_lenient_one(tmp_path: Path) -> None:
    results = {}
    for judge in ("mock-judge", "mock-judge-lenient"):
        out = tmp_path / f"{judge}.json"
        code, text = _run(["judge-check", "--judge", judge, "--dataset", "sample",
                           "--out", str(out)])
        assert code == 0, text
        results[judge] = json.loads(out.read_text())["by_type"]
    strict, lenient = results["mock-judge"], results["mock-judge-lenient"]
    wrong_s = strict["plausible_wrong"]
    wrong_l = lenient["plausible_wrong"]
    assert wrong_s["correct"] / wrong_s["judged"] > 0.9
    assert wrong_l["correct"] / wrong_l["judged"] < 0.1
    assert strict["gold_verbatim"]["correct"] == strict["gold_verbatim"]["judged"]


def test_judge_check_result_is_shown_on_the_run_that_uses_the_judge(tmp_path: Path) -> None:
    with MockLLMServer() as server:
        common = ["--judge", "mock-judge", "--judge-url", server.base_url]
        code, text = _run(["judge-check", "--dataset", "sample", "--mode", "memory", *common])
        assert code == 0, text
        code, text = _run(["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
                           "--mode", "memory", *common, "--out", str(tmp_path / "r"), "-q"])
        assert code == 0, text
    summary = (_folder(tmp_path / "r") / "summary.md").read_text()
    assert "judge check: mock-judge@" in summary and "accuracy" in summary


def test_a_finished_run_is_re_judged_without_calling_the_reader(tmp_path: Path) -> None:
    with MockLLMServer() as server:
        code, text = _run(["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
                           "--mode", "answer", "--reader", "mock", "--reader-url",
                           server.base_url, "--judge", "mock-judge", "--judge-url",
                           server.base_url, "--out", str(tmp_path), "-q"])
        assert code == 0, text
        run_dir = _folder(tmp_path)
        server.reset_counters()
        code, text = _run(["score", str(run_dir), "--judge", "mock-judge-lenient",
                           "--judge-url", server.base_url, "-q"])
        assert code == 0, text
        assert set(server.calls_by_model) == {"mock-judge-lenient"}
    rows = {r["metric"]: r for r in _lines(run_dir / "metrics.jsonl")
            if r["system"] == "bm25" and r["slice"] == "all"}
    assert rows["answer_correct"]["value"] == 1.0  # the lenient judge passes everything
    judges = {j["judge"].split("@")[0] for j in _lines(run_dir / "judgements.jsonl")}
    assert judges == {"mock-judge", "mock-judge-lenient"}  # both judges' records kept
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["answering"]["datasets"]["sample"]["judge"]["model"] == "mock-judge-lenient"


def test_conditions_add_a_floor_and_a_ceiling_row(tmp_path: Path) -> None:
    code, text = _run(["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
                       "--mode", "answer", "--reader", "mock", "--judge", "mock-judge",
                       "--condition", "no-memory,oracle", "--out", str(tmp_path), "-q"])
    assert code == 0, text
    rows = {(r["system"], r["metric"]): r for r in _lines(_folder(tmp_path) / "metrics.jsonl")
            if r["slice"] == "all"}
    floor = rows[("condition:no-memory", "answer_correct")]["value"]
    ceiling = rows[("condition:oracle", "answer_correct")]["value"]
    system = rows[("bm25", "answer_correct")]["value"]
    assert floor is not None and ceiling is not None
    assert floor <= system <= ceiling and floor < ceiling


def _kill_when(path: Path, proc: subprocess.Popen, lines: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= lines:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return
        if proc.poll() is not None:
            raise AssertionError("the run ended before it could be killed")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("judging never reached the kill point")


def test_sigkill_during_judging_then_resume_repeats_at_most_the_calls_in_flight(
    tmp_path: Path,
) -> None:
    concurrency = 4
    with MockLLMServer(delay_s=0.02) as server:
        args = ["run", "--systems", "bm25", "--no-baselines", "--datasets", "sample",
                "--mode", "memory", "--judge", "mock-judge", "--judge-url", server.base_url,
                "--llm-concurrency", str(concurrency), "--no-cache", "-q"]
        env = {**os.environ}
        proc = subprocess.Popen(
            [sys.executable, "-m", "recallbench", *args, "--out", str(tmp_path / "killed")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        killed = tmp_path / "killed"
        while not killed.exists() or not any(killed.iterdir()):
            time.sleep(0.01)
        run_dir = _folder(killed)
        _kill_when(run_dir / "judgements.jsonl", proc, 20)
        before = _lines(run_dir / "judgements.jsonl")
        recorded = {j["prompt_sha256"] for j in before}
        calls_before = server.stats()["calls_by_prompt"]
        server.reset_counters()
        code, text = _run(["run", "--resume", str(run_dir), "--no-cache", "-q"])
        assert code == 0, text
        again = server.stats()["calls_by_prompt"]
        assert not recorded & set(again), "a judgement recorded before the kill was redone"
        repeated = set(calls_before) & set(again)
        assert len(repeated) <= concurrency
        server.reset_counters()
        code, text = _run([*args, "--out", str(tmp_path / "whole")])
        assert code == 0, text
    compare_runs(run_dir, _folder(tmp_path / "whole"))


@pytest.mark.parametrize("bad", [["--judge", "mock-judge"], ["--condition", "oracle"]])
def test_llm_options_need_an_llm_mode(tmp_path: Path, bad: list[str]) -> None:
    code, out = _run(["run", "--systems", "bm25", "--no-baselines", "--out", str(tmp_path),
                      "--mode", "dry", *bad])
    assert code == 2 and "--mode memory or answer" in out


def test_a_predictions_file_s_answers_are_judged(tmp_path: Path, shared_data: Path) -> None:
    from recallbench.benchmarks import load_dataset

    ds = load_dataset("sample", shared_data)
    answerable = [q for q in ds.questions if q.gold and q.expect == "answer"]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(
        json.dumps({"id": q.id, "answer": q.gold if i % 2 == 0 else "a plausible mistake"}) + "\n"
        for i, q in enumerate(answerable)
    ))
    code, out = _run(["score", str(path), "--dataset", "sample", "--judge", "mock-judge", "-q"])
    assert code == 0, out
    folder = tmp_path / "preds.scored"
    rows = {r["metric"]: r for r in _lines(folder / "metrics.jsonl") if r["slice"] == "all"}
    right = (len(answerable) + 1) // 2
    missing = len(ds.questions) - len(answerable)  # no line: the empty answer, a miss
    assert rows["answer_correct"]["denominator"] == len(answerable) + missing
    # the strict mock judge passes exactly the gold answers; the empty answers of the
    # questions without a line (abstentions) do not say "I don't know", so they are wrong
    assert rows["answer_correct"]["value"] == pytest.approx(
        right / (len(answerable) + missing), abs=1e-6
    )
    assert all(r["mode"] == "answer" for r in rows.values())
    assert len(_lines(folder / "judgements.jsonl")) == len(ds.questions)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dataset", "mode", "filled"),
    [
        ("glasshouse-v0.1:core", "memory", ("gh_memory", "gh_memory:weighted")),
        ("glasshouse-v0.1:core", "answer", ("gh_answer", "gh_answer:weighted", "gh_dry")),
        ("locomo", "answer", ("f1", "f1:excl_cat5")),
        ("beam@{data}/beam/chats/100K/1", "answer", ("rubric", "event_ordering")),
    ],
)
def test_each_benchmark_s_headline_accuracy_is_filled_in_a_mock_run(
    tmp_path: Path, shared_data: Path, dataset: str, mode: str, filled: tuple[str, ...]
) -> None:
    args = ["run", "--systems", "bm25", "--no-baselines", "--data-dir", str(shared_data),
            "--datasets", dataset.format(data=shared_data), "--mode", mode,
            "--judge", "mock-judge", "--out", str(tmp_path), "-q", "--llm-concurrency", "16"]
    if mode == "answer":
        args += ["--reader", "mock"]
    code, out = _run(args)
    assert code == 0, out
    rows = {r["metric"]: r for r in _lines(_folder(tmp_path) / "metrics.jsonl")
            if r["system"] == "bm25" and r["slice"] == "all" and r["k"] is None}
    for metric in filled:
        assert rows[metric]["value"] is not None, (metric, rows[metric])
        assert rows[metric]["mode"] == mode


def test_a_missing_api_key_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RB_TEST_KEY", raising=False)
    code, out = _run(["run", "--systems", "bm25", "--no-baselines", "--mode", "memory",
                      "--judge", "some-model", "--judge-url", "http://127.0.0.1:9/v1",
                      "--judge-key-env", "RB_TEST_KEY", "--out", str(tmp_path / "r")])
    assert code == 2 and "$RB_TEST_KEY, which is not set" in out
    assert not (tmp_path / "r").exists()


def test_the_api_key_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdef-never-write-me"
    monkeypatch.setenv("RB_TEST_KEY", secret)
    with MockLLMServer(api_key=secret) as server:
        code, out = _run(["run", "--systems", "bm25", "--no-baselines", "--mode", "answer",
                          "--reader", "mock", "--reader-url", server.base_url,
                          "--reader-key-env", "RB_TEST_KEY", "--judge", "mock-judge",
                          "--judge-url", server.base_url, "--judge-key-env", "RB_TEST_KEY",
                          "--out", str(tmp_path / "r")])
        assert code == 0, out
        assert server.calls > 0
    assert secret not in out
    for path in (tmp_path / "r").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
