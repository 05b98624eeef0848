"""Glasshouse's own submission manifest (``submission.json``), written for each system of a
Glasshouse run in memory or answer mode.

The manifest's shape is Glasshouse's ``schema/submission.schema.json`` (:data:`SCHEMA_FILE`,
pinned by commit; recallbench reads it only to check, in a test, never to write). It is written
to ``<run dir>/submissions/glasshouse/<system>/<tier>-<question set>/submission.json``, rewritten
on every scoring from the run's records alone, so it is a derived file (no wall-clock time;
``recallbench validate`` re-derives it byte for byte).

Every required field is filled from what the run recorded; what the run cannot know is left out
where the schema allows it (``submitter``, ``system.hosted``, ``corpus.items_stored`` and
``truncated``, ``headline.stdev`` of a single run), never guessed. Two required fields have no
natural value in one mode and say so in words: the ``reader`` of a memory-mode run (there is
none: the judge reads the returned memories) and ``prompts.reader`` with it. A system whose
headline is null (nothing scored) gets no manifest, since the schema's ``runs[].score`` must be
a number and recallbench never writes 0 for unmeasured.

``records`` is ``verdicts.jsonl`` of the results folder (the bundle); ``records_filter`` says
which of its lines (dataset and system) the manifest is about. Everything recallbench adds
beyond the schema's fields sits under ``recallbench`` (the schema allows extra properties).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recallbench.benchmarks.glasshouse.answering import ANSWER, JUDGE_FILE, MEMORY
from recallbench.benchmarks.glasshouse.files import COMMIT
from recallbench.contracts import FORMAT_VERSION, MetricRow, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.instruments.pins import InstrumentFile
from recallbench.results import store
from recallbench.results.manifest import RunManifest

SCHEMA_COMMIT = "646f82a"
SCHEMA_FILE = InstrumentFile(
    name="glasshouse",
    repo="wontopos/glasshouse",
    commit=SCHEMA_COMMIT,
    path="schema/submission.schema.json",
    sha256=None,
)
"""Glasshouse's submission schema, pinned by commit (its hash recorded on first use)."""
SOURCE = "https://github.com/wontopos/glasshouse"
SUBMISSION_DIR = ("submissions", "glasshouse")
FILE_NAME = "submission.json"
MODES = ("memory", "answer")
JUDGE_PROMPTS = {MEMORY: "JUDGE_PROMPT", ANSWER: "ANSWER_JUDGE_PROMPT"}
JUDGE_FUNCTIONS = {MEMORY: "judge_memory", ANSWER: "judge_answer"}


def submission_path(run_dir: Path, system: str, ds: LoadedDataset, question_set: str) -> Path:
    return run_dir.joinpath(*SUBMISSION_DIR, system, f"{ds.variant}-{question_set}", FILE_NAME)


def _in_judge_py(name: str) -> str:
    return f"{JUDGE_FILE.path} {name} at {JUDGE_FILE.repo}@{JUDGE_FILE.commit}"


def _temperature(pin: Mapping[str, Any] | None) -> float | None:
    value = ((pin or {}).get("settings") or {}).get("temperature")
    return float(value) if isinstance(value, int | float) else None


def _role(used: Mapping[str, Any] | None, pin: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"model": str((used or {}).get("model"))}
    temperature = _temperature(pin)  # judge.py's _call puts it in every body, whatever model
    if temperature is not None:
        out["temperature"] = temperature
    url = (used or {}).get("base_url")
    if url:
        out["via"] = f"OpenAI-compatible chat API at {url}, through recallbench's client"
    return out


def _errors(verdicts: Sequence[Verdict]) -> int:
    """Questions that did not complete: a failed search, reader or judge call."""
    n = 0
    for v in verdicts:
        judged = (v.answering.get("judgements") or {}).values()
        if (
            v.outcome != "usable"
            or v.answering.get("answer_outcome") == "reader_error"
            or any(j.get("outcome") == "judge_error" for j in judged if isinstance(j, Mapping))
        ):
            n += 1
    return n


def _ingest_failures(run_dir: Path, ds: LoadedDataset, system: str) -> int:
    rows = store.read_jsonl_tolerant(run_dir / store.INGEST)
    return sum(
        1
        for r in rows
        if r.get("dataset") == ds.key and r.get("system") == system and r.get("outcome") != "usable"
    )


def submission_manifest(
    run_dir: Path,
    manifest: RunManifest,
    ds: LoadedDataset,
    question_set: str,
    system: str,
    verdicts: Sequence[Verdict],
    rows: Sequence[MetricRow],
) -> dict[str, Any] | None:
    """The manifest of one system on one tier, or None when the run has no judged headline for
    it (retrieval or dry mode, or a null headline)."""
    info = (manifest.answering.get("datasets") or {}).get(ds.key)
    mode = manifest.spec.mode
    if not info or mode not in MODES:
        return None
    metric = MEMORY if mode == "memory" else ANSWER
    head = next(
        (
            r
            for r in rows
            if r.system == system and r.metric == metric and r.slice == "all" and r.k is None
        ),
        None,
    )
    if head is None or head.value is None:
        return None
    weighted = next(
        (r for r in rows if r.system == system and r.metric == f"{metric}:weighted"
         and r.slice == "all"),
        None,
    )  # fmt: skip
    mine = [v for v in verdicts if v.system == system]
    spec = manifest.spec
    record = next((s for s in manifest.systems if s.name == system), None)
    env = manifest.environment
    git = env.get("git") or {}
    version = env.get("recallbench_version")
    builtin = record is not None and record.source == "builtin"
    system_block: dict[str, Any] = {
        "name": system,
        "version": f"recallbench {version} built-in system"
        if builtin
        else f"not recorded (source: {record.source if record else 'unknown'})",
    }
    if builtin and git.get("commit"):
        system_block["build"] = str(git["commit"]) + (" (dirty)" if git.get("dirty") else "")
    sessions = [s for g in ds.groups for s in g.sessions]
    judge_pin = info.get("judge_pin")
    judge = _role(info.get("judge"), judge_pin)
    judge["prompt"] = _in_judge_py(JUDGE_PROMPTS[metric])
    if info.get("non_standard"):
        judge["note"] = "; ".join(info["non_standard"])
    if mode == "answer":
        reader = _role(info.get("reader"), info.get("reader_pin"))
        reader_prompt = _in_judge_py("ANSWER_PROMPT") + " (through generate_answer)"
    else:
        reader = {"model": "none: memory mode, the judge reads the returned memories"}
        reader_prompt = "none: memory mode has no reader"
    config = {
        "mode": mode,
        "k": list(spec.k),
        "chunking": spec.chunking,
        "concurrency": spec.concurrency,
        "seed": spec.seed,
        "timeout_s": spec.timeout_s,
        "dataset_options": dict(spec.dataset_options),
        "system_config": dict(spec.system_configs.get(system, {})),
        "system_settings": None if record is None else record.settings,
    }
    subset = getattr(spec, "subset", None)
    config["subset"] = "full" if subset is None else str(subset.label)
    out: dict[str, Any] = {
        "benchmark": {
            "name": f"Glasshouse v0.1 ({ds.variant} tier, {question_set} questions)",
            "source": SOURCE,
            "revision": COMMIT,
        },
        "system": system_block,
        "corpus": {
            "conversations": len(sessions),
            "turns": sum(len(s.turns) for s in sessions),
            "ingest_failures": _ingest_failures(run_dir, ds, system),
        },
        "reader": reader,
        "judge": judge,
        "prompts": {
            "reader": reader_prompt,
            "query_transform": "none: the question is sent to the memory system as asked",
        },
        "scoring": {
            "rubric": _in_judge_py(f"{JUDGE_FUNCTIONS[metric]} with rule_for(axis)")
            + "; FULL 1, PARTIAL 0.5, WRONG 0 (SCORE, _verdict, _vote)",
            "aggregation": f"mean of the per-question {metric} values over the "
            f"{head.denominator} questions scored ({head.denominator_name}); "
            f"{head.exclusion_rule or 'none excluded'}",
            "not_implemented": "; ".join(
                [
                    *info.get("deviations", []),
                    *(ds_dev for ds_dev in _dataset_deviations(manifest, ds)),
                ]
            ),
        },
        "runs": [
            {
                "id": manifest.run_id,
                "n": len(mine),
                "errors": _errors(mine),
                "score": head.value,
                "config": config,
            }
        ],
        "headline": {
            "score": head.value,
            "from": f"run {manifest.run_id} ({metric}, slice all, one run)",
        },
        "records": store.VERDICTS,
        "records_filter": {"dataset": ds.key, "system": system},
        "recallbench": {
            "format_version": FORMAT_VERSION,
            "run_id": manifest.run_id,
            "run_date": manifest.started_at[:10],
            "dataset_version": head.dataset_version,
            "dataset_sha256": head.dataset_sha256,
            "metric": metric,
            "denominator": head.denominator,
            "weighted_score": None if weighted is None else weighted.value,
            "instrument_files": info.get("files", []),
        },
    }
    return out


def _dataset_deviations(manifest: RunManifest, ds: LoadedDataset) -> list[str]:
    rec = next((d for d in manifest.datasets if d.key == ds.key), None)
    return list(getattr(rec, "deviations", ()) or ())


def write_submissions(
    run_dir: Path,
    manifest: RunManifest,
    ds: LoadedDataset,
    question_set: str,
    verdicts: Sequence[Verdict],
    rows: Sequence[MetricRow],
) -> list[Path]:
    """Write the manifest of every system of the run that has one; returns the paths."""
    written = []
    for s in manifest.systems:
        doc = submission_manifest(run_dir, manifest, ds, question_set, s.name, verdicts, rows)
        if doc is None:
            continue
        path = submission_path(run_dir, s.name, ds, question_set)
        path.parent.mkdir(parents=True, exist_ok=True)
        store.write_text(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written
