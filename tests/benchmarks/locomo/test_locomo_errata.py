"""The locomo-audit errata overlay: pinned download (from a loopback server started here),
parsing and id mapping, the question-text check, and official and errata figures side by side.

The audit files are CC BY-NC: the tests read the shared copies (``<shared data>/locomo-audit/``)
through a local HTTP server and never keep them anywhere but a temporary folder.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallbench.benchmarks import get_benchmark, load_dataset, metric_catalogue
from recallbench.benchmarks.locomo import errata
from recallbench.benchmarks.locomo.errata import (
    ERRATA_KEY,
    AuditEntry,
    apply_errata,
    audit_files,
    parse_audit_file,
    parse_audit_id,
)
from recallbench.benchmarks.locomo.options import LocomoOptions
from recallbench.benchmarks.locomo.rules import (
    CEILING_ERRATA,
    EVIDENCE_RECALL,
    EVIDENCE_RECALL_ERRATA,
    F1,
    F1_ERRATA,
    LocomoRules,
)
from recallbench.cli import app
from recallbench.contracts import Memory, Observation, Question
from recallbench.datasets.dataset import HaystackGroup
from recallbench.errors import ChecksumMismatchError, DatasetFormatError, OptionError
from recallbench.score.metrics import MetricKey

AUDIT = "locomo-audit"


# ---------------------------------------------------------------- fixtures


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, threading.Thread]:
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(_QuietHandler, directory=str(root))
    )
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return httpd, thread


@pytest.fixture(scope="module")
def audit_copies(shared_data_module: Path) -> Path:
    """The shared data folder with the audit copies and LoCoMo, or a skip when absent."""
    shared = shared_data_module
    if not (shared / AUDIT / "errors_conv_0.json").is_file():
        pytest.skip("shared locomo-audit copies not available (set RECALLBENCH_DATA)")
    if not (shared / "locomo" / "locomo10.json").is_file():
        pytest.skip("locomo10.json not in the shared data")
    return shared


@pytest.fixture(scope="module")
def served(audit_copies: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A loopback HTTP server serving the shared audit copies; the download base URL points at
    it for the module. Yields the served folder (a temporary copy, so a test may tamper)."""
    root = tmp_path_factory.mktemp("served")
    for spec in audit_files():
        shutil.copyfile(audit_copies / AUDIT / spec.name, root / spec.name)
    httpd, thread = _serve(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(errata, "BASE_URL", f"http://127.0.0.1:{httpd.server_address[1]}")
        try:
            yield root
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=5)


def _data_dir(shared: Path, where: Path) -> Path:
    """A data folder holding the shared LoCoMo file and no audit file (so it is downloaded)."""
    data = where / "data"
    (data / "locomo").mkdir(parents=True)
    (data / "locomo" / "locomo10.json").symlink_to(shared / "locomo" / "locomo10.json")
    return data


@pytest.fixture
def data(audit_copies: Path, served: Path, tmp_path: Path) -> Path:
    return _data_dir(audit_copies, tmp_path)


# ---------------------------------------------------------------- pure parsing and mapping


def test_audit_ids_map_to_locomo_question_positions() -> None:
    assert parse_audit_id("locomo_0_qa1") == (0, 1)
    assert parse_audit_id("locomo_9_qa163") == (9, 163)
    for bad in ("locomo_0_1", "locomo_x_qa1", "conv-26:1", "locomo_01_qa1", "", None, 3):
        assert parse_audit_id(bad) is None, bad


def test_the_pins_are_the_source_notes_hashes_at_the_pinned_commit() -> None:
    files = audit_files()
    assert [f.name for f in files] == [f"errors_conv_{n}.json" for n in range(10)]
    assert files[0].sha256 == "63c778c8432b058d791417ec37bf8ac30b0bb83b1272afacb5a162b84fe5e3c4"
    assert files[9].sha256 == "2c2b8791d024e11ca6015a109f160b7177379b3b42ac8c9adb990546fc89c4ff"
    assert files[3].url == (
        "https://raw.githubusercontent.com/dial481/locomo-audit/"
        "ded8d0f08903d72b5a5eeda4fee5ced76126e7bc/audit/errors_conv_3.json"
    )


def _entry(**over: Any) -> dict[str, Any]:
    raw = {
        "question_id": "locomo_0_qa1",
        "question": "When did Ann run?",
        "golden_answer": "2022",
        "category": 2,
        "error_type": "WRONG_CITATION",
        "cited_evidence": ["D1:1"],
        "correct_evidence": ["D1:2"],
        "reasoning": "...",
        "correct_answer": "2022",
    }
    raw.update(over)
    return raw


def _mini() -> tuple[list[HaystackGroup], list[Question]]:
    questions = [
        Question(
            id=f"conv-x:{i}",
            dataset="locomo",
            group="conv-x",
            text=text,
            gold="g",
            evidence_turns=("D1:1",),
            axis="temporal",
            extra={"category": category},
        )
        for i, (text, category) in enumerate(
            [("Who?", 4), ("When did Ann run?", 2), ("Why?", 1), ("Where?", 5)]
        )
    ]
    from recallbench.contracts import Session, Turn

    turns = tuple(Turn(f"D1:{n}", "conv-x:session_1", "Ann", "t") for n in (1, 2, 3))
    groups = [
        HaystackGroup(
            "conv-x", (Session("conv-x:session_1", None, turns),), tuple(q.id for q in questions)
        )
    ]
    return groups, questions


def test_parse_refuses_malformed_entries_naming_them() -> None:
    (entry,) = parse_audit_file("errors_conv_0.json", [_entry()])
    assert isinstance(entry, AuditEntry) and entry.wrong_citation and not entry.answer_key_error
    assert (entry.conversation, entry.index) == (0, 1)
    cases = [
        ({"not": "a list"}, "expected a JSON list"),
        ([_entry(question_id="q1")], "entry 0 (q1): question_id is not locomo_<conversation>_qa"),
        ([_entry(error_type="TYPO")], "unknown error_type 'TYPO'"),
        ([{"question_id": "locomo_0_qa1"}], "missing field"),
        ([_entry(), _entry()], "locomo_0_qa1 is listed twice"),
    ]
    for raw, message in cases:
        with pytest.raises(DatasetFormatError, match=re.escape(message)):
            parse_audit_file("errors_conv_0.json", raw)


def test_apply_maps_entries_and_marks_every_question() -> None:
    groups, questions = _mini()
    entries = parse_audit_file(
        "errors_conv_0.json",
        [
            _entry(),
            _entry(
                question_id="locomo_0_qa2", question="Why?", category=1, error_type="HALLUCINATION"
            ),
        ],  # fmt: skip
    )
    marked, summary = apply_errata(groups, questions, entries)
    by_id = {q.id: q.extra[ERRATA_KEY] for q in marked}
    assert by_id["conv-x:0"].entry is None  # no entry: the overlay is on, nothing flagged
    assert by_id["conv-x:1"].wrong_citation and by_id["conv-x:1"].evidence == ("D1:2",)
    assert by_id["conv-x:2"].answer_key_error and by_id["conv-x:2"].evidence is None
    assert summary.in_scope == 3 and summary.wrong_citation == 1 and summary.answer_key_errors == 1
    assert summary.ceiling == pytest.approx(2 / 3)
    assert [q.text for q in marked] == [q.text for q in questions]  # nothing else changes


def test_an_entry_whose_question_text_differs_is_refused_naming_it() -> None:
    groups, questions = _mini()
    entries = parse_audit_file("errors_conv_0.json", [_entry(question="When did Bo run?")])
    with pytest.raises(DatasetFormatError) as info:
        apply_errata(groups, questions, entries)
    message = str(info.value)
    assert "locomo_0_qa1" in message and "conv-x:1" in message
    assert "'When did Bo run?'" in message and "'When did Ann run?'" in message


def test_entries_naming_no_question_or_another_category_are_refused() -> None:
    groups, questions = _mini()
    for raw, message in [
        (_entry(question_id="locomo_1_qa0"), "conversation 1 .* has 1"),
        (_entry(question_id="locomo_0_qa9"), "question 9 .* has 4"),
        (_entry(category=4), "category 4 .* category 2"),
    ]:
        with pytest.raises(DatasetFormatError, match=message):
            apply_errata(groups, questions, parse_audit_file("errors_conv_0.json", [raw]))


def test_cited_wrong_evidence_naming_no_turn_is_dropped_and_reported() -> None:
    groups, questions = _mini()
    entries = parse_audit_file("errors_conv_0.json", [_entry(correct_evidence=["D9:9"])])
    marked, summary = apply_errata(groups, questions, entries)
    erratum = marked[1].extra[ERRATA_KEY]
    assert erratum.evidence is None and "D9:9" in (erratum.evidence_unknown_reason or "")
    assert any("locomo_0_qa1" in line and "D9:9" in line for line in summary.report)


# ---------------------------------------------------------------- rules on observations


def _obs(turns: tuple[str, ...], answer: str | None = None) -> Observation:
    return Observation(
        run_id="r",
        dataset="locomo",
        dataset_version="v",
        group="conv-x",
        question_id="q",
        system="s",
        k=10,
        attempt=1,
        observed_at="",
        latency_ms=None,
        memories=(Memory(id="m", text="", source_turns=turns),),
        chars_returned=0,
        outcome="usable",
        answer=answer,
        answer_generated=answer is not None,
    )


def test_rules_score_errata_beside_the_official_metrics() -> None:
    groups, questions = _mini()
    entries = parse_audit_file(
        "errors_conv_0.json",
        [
            _entry(),
            _entry(
                question_id="locomo_0_qa2", question="Why?", category=1, error_type="TEMPORAL_ERROR"
            ),
        ],  # fmt: skip
    )
    marked, _ = apply_errata(groups, questions, entries)
    rules = LocomoRules()
    plain, cited, flagged, adversarial = marked
    m, r = rules.question_metrics(plain, _obs(("D1:1",), "g"), (1,))
    assert m[F1_ERRATA] == m[F1] == 1.0 and m[EVIDENCE_RECALL_ERRATA] == m[EVIDENCE_RECALL] == 1.0
    assert m[CEILING_ERRATA] == 1.0
    m, r = rules.question_metrics(cited, _obs(("D1:1",), "g"), (1,))
    assert m[EVIDENCE_RECALL] == 1.0 and m[EVIDENCE_RECALL_ERRATA] == 0.0  # audit says D1:2
    m, _ = rules.question_metrics(cited, _obs(("D1:2",), "g"), (1,))
    assert m[EVIDENCE_RECALL] == 0.0 and m[EVIDENCE_RECALL_ERRATA] == 1.0
    m, r = rules.question_metrics(flagged, _obs(("D1:1",), "g"), (1,))
    assert m[F1] == 1.0 and m[F1_ERRATA] is None and m[CEILING_ERRATA] == 0.0
    assert r[F1_ERRATA].startswith("answer_key_error: third-party errata (locomo-audit")
    assert "TEMPORAL_ERROR" in r[F1_ERRATA] and "locomo_0_qa2" in r[F1_ERRATA]
    assert m[EVIDENCE_RECALL_ERRATA] == m[EVIDENCE_RECALL] == 1.0  # its evidence stays official
    m, r = rules.question_metrics(adversarial, _obs(("D1:1",), "not mentioned"), (1,))
    for key in (F1_ERRATA, EVIDENCE_RECALL_ERRATA, CEILING_ERRATA):
        assert m[key] is None and r[key].startswith("adversarial:")
    # without the overlay there is no errata metric at all
    m, _ = rules.question_metrics(questions[1], _obs(("D1:1",), "g"), (1,))
    assert not any(key.endswith(":errata") for key in m)


def test_errata_metric_names_parse_and_are_catalogued() -> None:
    for name in (F1_ERRATA, EVIDENCE_RECALL_ERRATA, CEILING_ERRATA):
        key = MetricKey.parse(name)
        assert key.variant == "errata" and str(key) == name
    catalogue = metric_catalogue()
    assert catalogue.higher_is_better(F1_ERRATA) is True
    assert catalogue.higher_is_better(EVIDENCE_RECALL_ERRATA) is True
    info = catalogue.get(CEILING_ERRATA)
    assert info is not None and info.higher_is_better is None and "third-party" in info.description


def test_options_are_typed_and_an_unknown_overlay_is_refused(tmp_path: Path) -> None:
    assert get_benchmark("locomo").options is LocomoOptions
    assert LocomoOptions.from_mapping({"image_mode": "native"}).record() == {"image_mode": "native"}
    opts = LocomoOptions.from_mapping({"errata": AUDIT, "questions": "xling"})
    assert opts.record() == {"image_mode": "native", "errata": AUDIT}
    spec = get_benchmark("locomo").spec
    assert [f.name for f in spec.variant_files("")] == ["locomo10.json"]
    assert len(spec.variant_files("", opts)) == 11
    with pytest.raises(OptionError, match="unknown errata 'nope'; choose one of locomo-audit"):
        load_dataset("locomo", tmp_path, {"errata": "nope"})


# ---------------------------------------------------------------- the real files, downloaded


def test_download_is_pinned_and_the_counts_hold(data: Path) -> None:
    ds = load_dataset("locomo", data, {"errata": AUDIT})
    for spec in audit_files():
        assert (data / AUDIT / spec.name).is_file()  # <data dir>/locomo-audit/<file name>
    names = [f.name for f in ds.files]
    assert names == ["locomo10.json"] + [f"{AUDIT}/errors_conv_{n}.json" for n in range(10)]
    assert all(f.pinned for f in ds.files)
    marks = [q.extra[ERRATA_KEY] for q in ds.questions]
    in_scope = [q for q in ds.questions if q.extra["category"] != 5]
    assert len(in_scope) == 1540
    assert sum(m.wrong_citation for m in marks) == 57
    assert sum(m.answer_key_error for m in marks) == 99
    facts = ds.facts["errata_overlay"]
    assert facts["wrong_citation"] == 57 and facts["answer_key_errors"] == 99
    assert facts["questions_in_scope"] == 1540 and facts["ceiling"] == 0.935714
    assert facts["by_type"] == {
        "AMBIGUOUS": 13, "ATTRIBUTION_ERROR": 24, "HALLUCINATION": 33, "INCOMPLETE": 3,
        "TEMPORAL_ERROR": 26, "WRONG_CITATION": 57,
    }  # fmt: skip
    assert f"{1 - 99 / 1540:.2%}" == "93.57%"
    cited = next(q for q in ds.questions if q.id == "conv-26:1")  # locomo_0_qa1
    assert cited.extra[ERRATA_KEY].evidence == ("D1:14",) and cited.evidence_turns == ("D1:12",)
    notes = " ".join(ds.card_notes)
    assert "third-party errata" in notes and "93.57%" in notes and "never shipped" in notes
    plain = load_dataset("locomo", data)
    assert ERRATA_KEY not in plain.questions[0].extra and len(plain.files) == 1
    assert plain.checksum != ds.checksum  # the audit files are inputs of the run too


def test_a_tampered_audit_file_is_refused_with_both_hashes(
    audit_copies: Path, tmp_path: Path
) -> None:
    root = tmp_path / "tampered"
    root.mkdir()
    for spec in audit_files():
        shutil.copyfile(audit_copies / AUDIT / spec.name, root / spec.name)
    bad = root / "errors_conv_3.json"
    bad.write_bytes(bad.read_bytes().replace(b"WRONG_CITATION", b"HALLUCINATION", 1))
    actual = hashlib.sha256(bad.read_bytes()).hexdigest()
    pinned = audit_files()[3].sha256
    httpd, thread = _serve(root)
    data = _data_dir(audit_copies, tmp_path)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(errata, "BASE_URL", f"http://127.0.0.1:{httpd.server_address[1]}")
            with pytest.raises(ChecksumMismatchError) as info:
                load_dataset("locomo", data, {"errata": AUDIT})
            assert info.value.expected == pinned and info.value.actual == actual
            assert pinned in str(info.value) and actual in str(info.value)
            assert not (data / AUDIT / "errors_conv_3.json").exists()
            # a file tampered with on disk is refused too, through the command line (exit 2)
            shutil.copyfile(bad, data / AUDIT / "errors_conv_3.json")
            result = CliRunner().invoke(
                app,
                ["run", "-q", "--systems", "random", "--no-baselines", "--datasets", "locomo",
                 "--errata", AUDIT, "--data-dir", str(data), "--out", str(tmp_path / "out")],
            )  # fmt: skip
            assert result.exit_code == 2, result.output
            assert pinned in result.output and actual in result.output
            assert not (tmp_path / "out").exists()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_a_copy_whose_question_differs_is_refused_naming_the_entry(
    data: Path, tmp_path: Path
) -> None:
    raw = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    raw[0]["qa"][1]["question"] = "When did Melanie paint a sunset?"
    copy = tmp_path / "my_locomo.json"
    copy.write_text(json.dumps(raw), encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "random", "--no-baselines", "--datasets", f"locomo@{copy}",
         "--errata", AUDIT, "--data-dir", str(data), "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "locomo_0_qa1" in result.output and "conv-26:1" in result.output
    assert "When did Melanie paint a sunrise?" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_errata_without_a_locomo_dataset_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--datasets", "sample", "--errata", AUDIT, "--data-dir", str(tmp_path),
         "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--errata" in result.output and "locomo" in result.output


# ---------------------------------------------------------------- side by side


@pytest.fixture(scope="module")
def errata_run(
    audit_copies: Path, served: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """One bm25 run on the real LoCoMo file with the overlay: (run folder, console output)."""
    where = tmp_path_factory.mktemp("errata-run")
    data = _data_dir(audit_copies, where)
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "bm25", "--no-baselines", "--datasets", "locomo",
         "--errata", AUDIT, "--data-dir", str(data), "--out", str(where / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = (where / "out").iterdir()
    return run_dir, result.output


def _rows(run_dir: Path) -> dict[tuple[str, str, int | None], dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {(r["slice"], r["metric"], r["k"]): r for r in map(json.loads, lines)}


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_a_run_shows_official_and_errata_figures_side_by_side(
    errata_run: tuple[Path, str],
) -> None:
    run_dir, output = errata_run
    rows = _rows(run_dir)
    ceiling = rows[("all", CEILING_ERRATA, None)]
    assert ceiling["value"] == 0.935714 and ceiling["denominator"] == 1540
    assert ceiling["exclusion_rule"] == "adversarial (446)"
    f1 = rows[("all", F1_ERRATA, None)]
    assert f1["value"] is None  # no answer model yet: null with its reason, exclusion counted
    assert f1["exclusion_rule"] == "adversarial (446); answer_key_error (99); no_answer (1441)"
    official = rows[("all", "evidence_recall:excl_cat5", None)]
    fixed = rows[("all", EVIDENCE_RECALL_ERRATA, None)]
    assert official["denominator"] == fixed["denominator"] == 1536  # 4 with no usable evidence
    assert fixed["exclusion_rule"] == "adversarial (446); evidence_unknown (4)"
    assert official["value"] != fixed["value"]
    # per question: only the 57 cited-wrong questions change their retrieval figure
    verdicts = [json.loads(x) for x in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    changed = {
        v["question_id"]
        for v in verdicts
        if v["metrics"][EVIDENCE_RECALL_ERRATA] != v["metrics"]["evidence_recall:excl_cat5"]
    }
    assert changed and len(changed) <= 57
    # the headline stays official, the table says the errata are third-party
    summary = (run_dir / "summary.md").read_text()
    title = "### locomo: official figures beside third-party errata (locomo-audit), categories 1-4"
    assert title in summary
    table = summary.split(title, 1)[1].split("###", 1)[0]
    assert "| QA F1, official |" in table and "| evidence recall, official |" in table
    assert "99 answer-key errors left out" in table and "57 cited-wrong" in table
    assert "0.936 (n=1540) = 1 - 99/1,540 = 93.57%" in table
    assert "not part of LoCoMo" in table and "dial481/locomo-audit" in table
    assert "official figures beside third-party errata" in output and "93.57%" in output
    manifest = json.loads((run_dir / "run.json").read_text())
    (record,) = manifest["datasets"]
    assert record["options"]["errata"] == AUDIT
    assert record["options"]["errata_overlay"]["third_party"] is True
    assert record["options"]["errata_overlay"]["ceiling"] == 0.935714
    assert [f["name"] for f in record["files"]][1] == f"{AUDIT}/errors_conv_0.json"
    assert any("third-party errata" in note for note in record["card_notes"])
    assert manifest["spec"]["dataset_options"] == {"image_mode": "native", "errata": AUDIT}


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_rescoring_an_errata_run_is_byte_identical(
    errata_run: tuple[Path, str], tmp_path: Path, served: Path
) -> None:
    run_dir, _ = errata_run
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy)
    data_dir = run_dir.parents[1] / "data"  # the run's data folder, audit files downloaded
    result = CliRunner().invoke(app, ["score", str(copy), "-q", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    for name in ("verdicts.jsonl", "metrics.jsonl", "summary.md"):
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes(), name


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_a_run_without_the_overlay_has_no_errata_figure(audit_copies: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "-q", "--systems", "random", "--no-baselines", "--datasets", "locomo",
         "--data-dir", str(audit_copies), "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out").iterdir()
    assert ":errata" not in (run_dir / "metrics.jsonl").read_text()
    assert ":errata" not in (run_dir / "verdicts.jsonl").read_text()
    assert "errata" not in (run_dir / "summary.md").read_text().split("- systems:", 1)[1]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert "errata" not in json.dumps([manifest["spec"], manifest["datasets"]])
    assert manifest["datasets"][0]["options"] == {"image_mode": "native", "default_k": [1, 5, 10]}


# ---------------------------------------------------------------- predictions with answers


def _gold_answer(qa: dict[str, Any]) -> str:
    if qa["category"] == 5:
        return "Not mentioned in the conversation."
    if qa["category"] == 3:
        return str(qa["answer"]).split(";")[0]
    return str(qa["answer"])


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_scoring_predictions_leaves_the_answer_key_errors_out(data: Path, tmp_path: Path) -> None:
    raw = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    # an answerer right on every question except the 99 whose key the audit flags
    ds = load_dataset("locomo", data, {"errata": AUDIT})
    flagged = {q.id for q in ds.questions if q.extra[ERRATA_KEY].answer_key_error}
    assert len(flagged) == 99
    preds = tmp_path / "preds.jsonl"
    lines = []
    for sample in raw:
        for i, qa in enumerate(sample["qa"]):
            qid = f"{sample['sample_id']}:{i}"
            answer = "zzz qqq" if qid in flagged else _gold_answer(qa)
            lines.append(json.dumps({"id": qid, "answer": answer, "retrieved_turns": []}))
    preds.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "lines.jsonl"
    result = CliRunner().invoke(
        app,
        ["score", str(preds), "--dataset", "locomo", "--errata", AUDIT, "--data-dir", str(data),
         "--out", str(out), "--results-dir", str(tmp_path / "scored")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = _rows(tmp_path / "scored")
    official = rows[("all", "f1:excl_cat5", None)]
    fixed = rows[("all", F1_ERRATA, None)]
    assert official["denominator"] == 1540 and official["value"] == 0.935714  # the ceiling
    assert fixed["value"] == 1.0 and fixed["denominator"] == 1441
    assert fixed["exclusion_rule"] == "adversarial (446); answer_key_error (99)"
    by_id = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    some = sorted(flagged)[0]
    assert by_id[some][F1] == 0.0 and by_id[some][F1_ERRATA] is None
    assert by_id[some]["null_reasons"][F1_ERRATA].startswith("answer_key_error:")
    assert by_id["conv-26:0"][F1_ERRATA] == by_id["conv-26:0"][F1] == 1.0
    assert "f1:errata" in result.output
    # the same file without the overlay: no errata figure
    plain = tmp_path / "plain.jsonl"
    result = CliRunner().invoke(
        app,
        ["score", str(preds), "--dataset", "locomo", "--data-dir", str(data), "-q",
         "--out", str(plain), "--results-dir", str(tmp_path / "plain")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        F1_ERRATA not in plain.read_text()
        and ":errata" not in (tmp_path / "plain" / "metrics.jsonl").read_text()
    )
