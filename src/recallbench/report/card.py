"""The results card (``card.md``): the conditions under which a run's numbers hold.

A score is a claim with conditions. The card states them once per run, as Markdown a reader
reads and a YAML header (between ``---`` lines) a program reads back with :func:`read_card`:
who ran it and when (beside the numbers), full run or subset, the judge and reader, any LLM
inside each system, data scale, concurrency, chunking, k, image mode, characters returned per
question, hardware and runtime, the do-nothing floor, the reproduction tolerance of repeats,
the SHA-256 of every data file and log, and a limitations section listing what was not
measured. ``docs/card.md`` describes every field.

The card is a derived file: the pipeline writes it whenever it scores, from the scored run,
and it holds no time but the run's own (``run.json``'s ``started_at`` and ``ended_at``), so
re-scoring writes the same bytes. A figure that could not be measured reads ``unmeasured``
with its reason, never 0; a figure copied from another run (a row whose ``run_id`` is not the
run's) is listed with that run's id under ``carried_cells``; recallbench fills none itself.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from recallbench.contracts import (
    ALL,
    MetricRow,
    Verdict,
    ingest_from_dict,
    metric_row_from_dict,
    verdict_from_dict,
)
from recallbench.errors import RunFolderError
from recallbench.report.answering import ACCOUNTING
from recallbench.report.tables import fmt
from recallbench.results import store
from recallbench.results.failures import failed_run, failures
from recallbench.results.manifest import DatasetRecord, dataset_scale, read_manifest
from recallbench.results.scored import Floor, ScoredRun
from recallbench.score.metrics import TIMING

CARD_VERSION = 1
"""Version of the card's header layout (bumped when a key changes meaning)."""

UNMEASURED = "unmeasured"
"""How a figure that has no value reads on the card (never 0)."""

MIN_REPEATS = 3
"""Repeats needed before the card states a reproduction tolerance."""

DESCRIPTIVE: frozenset[str] = frozenset(
    (*TIMING, *(name for name, _ in ACCOUNTING), "chars_returned_mean",
     "memories_returned_mean", "error_rate", "unusable_rate")
)  # fmt: skip
"""Rows that describe the searches (size, failures, time, cost) rather than score them: a slice
whose every other row is null was skipped, whatever these say."""

SCALE_KEYS = ("questions", "haystack_groups", "sessions", "turns", "mean_turns_per_haystack")

DIGITS = {"chars_returned_mean": 0, "latency_ms_p50": 2}
"""Decimals shown in the Markdown table where three would mislead (the header keeps all)."""

CHECKSUM_IS = (
    "one SHA-256 over the sorted '<file name> <file SHA-256>' lines of the files read: the "
    "dataset checksum metric rows carry, not the SHA-256 of any file (each file's is under files)"
)


class CardError(RunFolderError):
    """A ``card.md`` that has no YAML header, or one that is not a mapping."""


def _label(metric: str, k: int | None) -> str:
    return metric if k is None else f"{metric}@{k}"


def _value(row: MetricRow | None) -> Any:
    return UNMEASURED if row is None or row.value is None else row.value


def _subset(scored: ScoredRun) -> str:
    subset = getattr(scored.spec, "subset", None)  # RunSpec.subset arrives with --limit
    return "full" if subset is None else str(subset.label)


def _repeats(scored: ScoredRun) -> int:
    return int(getattr(scored.spec, "repeats", 1) or 1)


def _headline(scored: ScoredRun, d: DatasetRecord) -> list[tuple[str, int | None]]:
    """The figures shown per system: retrieval at the deepest k, the answer figures (the
    floor's, or those ``run.json`` names), characters returned, latency and speed."""
    kmax = scored.spec.k_max
    keys: list[tuple[str, int | None]] = [
        ("evidence_hit", kmax), ("evidence_recall", kmax), ("mrr", kmax),
    ]  # fmt: skip
    floor = scored.floors.get(d.key)
    if floor is not None:
        keys += [(f.metric, None) for f in floor.figures]
    info = (scored.manifest.answering.get("datasets") or {}).get(d.key) or {}
    weighted = [f"{m}:weighted" for m in info.get("weighted_metrics", ())]
    for name in (*info.get("metrics", ()), *weighted, *info.get("rule_metrics", ())):
        keys.append((str(name), None))
    keys += [("chars_returned_mean", None), ("latency_ms_p50", None), ("speed_points", None)]
    present = {(r.metric, r.k) for r in scored.metrics if r.dataset == d.key}
    return [key for key in dict.fromkeys(keys) if key in present]


def _result(row: MetricRow, run_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "system": row.system,
        "metric": _label(row.metric, row.k),
        "value": _value(row),
        "denominator": row.denominator,
        "denominator_name": row.denominator_name,
        "n_excluded": row.n_excluded,
        "ci_95": None if row.ci_low is None else [row.ci_low, row.ci_high],
        "run_id": row.run_id,
        "run_date": row.run_date or "not recorded (a row of format 3 or older)",
    }
    if row.value is None:
        out["why_unmeasured"] = row.null_reason or "no reason recorded"
    if row.run_id != run_id:
        out["carried_from"] = row.run_id
    return out


def _results(scored: ScoredRun, d: DatasetRecord) -> list[dict[str, Any]]:
    idx = {
        (r.system, r.metric, r.k): r
        for r in scored.metrics
        if r.dataset == d.key and r.slice == ALL
    }
    out = []
    for system in scored.systems:
        for metric, k in _headline(scored, d):
            row = idx.get((system, metric, k))
            if row is not None:
                out.append(_result(row, scored.manifest.run_id))
    return out


def _instrument(info: Mapping[str, Any]) -> dict[str, Any] | None:
    if not info:
        return None
    files = [
        {"file": f"{f.get('repo')}@{f.get('commit')}:{f.get('path')}", "sha256": f.get("sha256"),
         "pinned": bool(f.get("pinned"))}
        for f in info.get("files", ())
    ]  # fmt: skip
    return {"name": info.get("instrument"), "official": bool(info.get("official")),
            "prompt_files": files}  # fmt: skip


def _judge(scored: ScoredRun, d: DatasetRecord, info: Mapping[str, Any]) -> dict[str, Any]:
    """How the answers (if any) were graded: an LLM judge, string rules, or nothing."""
    judge = info.get("judge") or {}
    if judge:
        return {"type": "llm", "model": judge.get("model"), "label": info.get("judge_label"),
                "metrics": list(info.get("metrics", ())),
                "prompt_files": (_instrument(info) or {}).get("prompt_files", [])}  # fmt: skip
    floor = scored.floors.get(d.key)
    figures = [f.metric for f in floor.figures] if floor is not None else []
    if info.get("rule_metrics") or scored.spec.mode == "dry":
        return {"type": "string rules", "rules": d.scoring,
                "metrics": list(info.get("rule_metrics", ())) or figures}  # fmt: skip
    if figures:
        return {
            "type": "string rules",
            "rules": d.scoring,
            "metrics": figures,
            "note": "no reader: the rules read the returned memories joined (a development "
            "ruler, not a reported score); retrieval is scored from gold evidence ids",
        }
    return {"type": "none", "rules": d.scoring,
            "note": "retrieval only: scored from gold evidence ids, no answer is graded"}


def _reader(info: Mapping[str, Any]) -> Any:
    reader = info.get("reader") or {}
    if not reader:
        return "none"
    return {"model": reader.get("model"), "label": reader.get("label"),
            "prompt_files": (_instrument(info) or {}).get("prompt_files", [])}  # fmt: skip


def _floor(floor: Floor | None, kmax: int) -> Any:
    if floor is None:
        return "not computed (the card was written without the dataset: `recallbench score RUN`)"
    out = []
    for c in floor.controls:
        rows = {(r.metric, r.k): r for r in c.metrics if r.slice == ALL}
        keys = (
            [(f.metric, None) for f in floor.figures]
            if floor.scores_answers
            else [("evidence_hit", kmax), ("evidence_recall", kmax)]
        )
        out.append({
            "control": c.label,
            "run_id": c.run_id,
            "figures": {_label(m, k): _value(rows.get((m, k))) for m, k in keys},
        })  # fmt: skip
    return out


def _chars(scored: ScoredRun, d: DatasetRecord) -> dict[str, Any]:
    rows = {
        r.system: r
        for r in scored.metrics
        if r.dataset == d.key and r.slice == ALL and r.metric == "chars_returned_mean"
    }
    return {s: _value(rows.get(s)) for s in scored.systems}


def _tolerance(scored: ScoredRun, d: DatasetRecord, info: Mapping[str, Any]) -> Any:
    """Two standard deviations across repeats of each system's per-slice mean, for retrieval
    recall at the deepest k and each judged or rule figure; "not measured" below 3 repeats."""
    n = _repeats(scored)
    if n < MIN_REPEATS:
        return f"not measured ({n} repeat(s); a tolerance needs {MIN_REPEATS} or more)"
    keys = [f"evidence_recall@{scored.spec.k_max}", *info.get("metrics", ()),
            *info.get("rule_metrics", ())]  # fmt: skip
    sums: dict[tuple[str, str, str, int], list[float]] = {}
    for v in scored.verdicts:
        if v.dataset != d.key:
            continue
        for key in keys:
            value = v.metrics.get(key)
            if value is None:
                continue
            for slice_ in dict.fromkeys((ALL, v.slice)):
                sums.setdefault((v.system, key, slice_, getattr(v, "repeat", 0)), []).append(
                    float(value)
                )
    by_cell: dict[tuple[str, str, str], list[float]] = {}
    for (system, key, slice_, _), values in sorted(sums.items()):
        by_cell.setdefault((system, key, slice_), []).append(statistics.fmean(values))
    out: dict[str, Any] = {}
    for (system, key, slice_), means in by_cell.items():
        tol = round(2 * statistics.stdev(means), 6) if len(means) >= MIN_REPEATS else UNMEASURED
        out.setdefault(system, {}).setdefault(key, {})[slice_] = tol
    return out or UNMEASURED


def _systems(scored: ScoredRun) -> list[dict[str, Any]]:
    out = []
    for s in scored.manifest.systems:
        caps = s.capabilities
        settings = dict(s.settings or {})
        models = {k: v for k, v in settings.items() if "llm" in k.lower() or "model" in k.lower()}
        if caps is None:
            llm: Any = "not recorded (the system declared no capabilities)"
        else:
            llm = caps.get("llm_inside") or "none declared"
        out.append({
            "name": s.name,
            "source": s.source,
            "llm_inside": llm,
            "summarizes": None if caps is None else bool(caps.get("summarizes")),
            "models_in_settings": models,
            "settings": settings,
        })  # fmt: skip
    return out


def _limitations(scored: ScoredRun) -> list[str]:
    """What was not measured: unmeasured figures and their reasons, questions left out, speed
    codes, skipped slices, unasked questions, failed calls and the repeats tolerance."""
    out: list[str] = []
    nulls: dict[tuple[str, str, str], list[str]] = {}
    excluded: dict[tuple[str, str], list[str]] = {}
    per_slice: dict[tuple[str, str, str], list[MetricRow]] = {}
    for r in scored.metrics:
        if r.slice != ALL:
            if r.metric not in DESCRIPTIVE:
                per_slice.setdefault((r.dataset, r.slice, r.system), []).append(r)
            continue
        if r.value is None:
            reason = r.null_reason or "no reason recorded"
            nulls.setdefault((r.dataset, r.system, reason), []).append(_label(r.metric, r.k))
        elif r.exclusion_rule:
            excluded.setdefault((r.dataset, r.exclusion_rule), []).append(r.system)
    same: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for (dataset, system, reason), labels in nulls.items():
        same.setdefault((dataset, reason, tuple(labels)), []).append(system)
    for (dataset, reason, labels), systems in same.items():
        out.append(f"{dataset}, {', '.join(systems)}: {UNMEASURED}: {', '.join(labels)} "
                   f"({reason})")  # fmt: skip
    for (dataset, rule), systems in excluded.items():
        who = ", ".join(dict.fromkeys(systems))
        out.append(f"{dataset}: questions left out of some figures of {who}: {rule}")
    skipped: dict[tuple[str, str], dict[str, list[str]]] = {}
    for (dataset, slice_, system), rows in per_slice.items():
        if rows and all(r.value is None for r in rows):
            reasons = skipped.setdefault((dataset, slice_), {})
            for r in rows:
                reasons.setdefault(r.null_reason or "no reason recorded", []).append(system)
    for (dataset, slice_), reasons in skipped.items():
        for reason, systems in reasons.items():
            who = ", ".join(dict.fromkeys(systems))
            out.append(f"{dataset}: slice {slice_} skipped (no figure measured) for {who}: "
                       f"{reason}")  # fmt: skip
    for key, miss in scored.missing.items():
        for system, n in miss.items():
            out.append(f"{key}, {system}: {n} question(s) never asked (an unfinished run)")
    out += [f.line() for f in scored.failures]
    if _repeats(scored) < MIN_REPEATS:
        out.append(
            f"reproduction tolerance: not measured ({_repeats(scored)} repeat(s); "
            f"`--repeats {MIN_REPEATS}` or more measures it)"
        )
    for d in scored.manifest.datasets:
        floor = scored.floors.get(d.key)
        if floor is None:
            out.append(f"{d.key}: floor not computed (card written without the dataset)")
        elif floor.scores_answers and not floor.measured:
            out.append(f"{d.key}: floor unmeasured: its answer figures need an LLM judge")
    return list(dict.fromkeys(out))


def _outcome(scored: ScoredRun) -> str:
    if scored.missing:
        return "incomplete"
    return "failed" if failed_run(scored.failures) else "complete"


def _scale(scored: ScoredRun, d: DatasetRecord) -> dict[str, Any]:
    if d.scale:
        return dict(d.scale)
    loaded = next((ds for ds in scored.datasets if ds.key == d.key), None)
    return dataset_scale(loaded) if loaded is not None else {"questions": d.questions,
                                                            "haystack_groups": d.groups}


def _dataset(scored: ScoredRun, d: DatasetRecord) -> dict[str, Any]:
    info = (scored.manifest.answering.get("datasets") or {}).get(d.key) or {}
    sha = d.file_sha256 or {f["name"]: f["sha256"] for f in d.files}
    pinned = {f["name"]: bool(f.get("pinned")) for f in d.files}
    rules = scored.rules.get(d.key)
    source = d.rules_source
    return {
        "key": d.key,
        "version": d.version,
        "version_label": d.version_label,
        "pinned_release": d.pinned,
        "files": [{"name": n, "file_sha256": h, "pinned": pinned.get(n, False)}
                  for n, h in sha.items()],  # fmt: skip
        "dataset_checksum": d.checksum,
        "dataset_checksum_is": CHECKSUM_IS,
        "scope": _subset(scored),
        "scale": _scale(scored, d),
        "haystack": d.haystack,
        "image_mode": d.options.get("image_mode", "native"),
        "rules": {
            "name": d.scoring,
            "source": None if source is None else (
                f"{source.get('repository')} {', '.join(source.get('files', ()))} at commit "
                f"{source.get('commit')}"
            ),
            "deviations": list(rules.deviations) if rules is not None else list(d.deviations),
        },
        "judge": _judge(scored, d, info),
        "reader": _reader(info),
        "instrument": _instrument(info) or "none",
        "non_standard": list(info.get("non_standard", ())),
        "floor": _floor(scored.floors.get(d.key), scored.spec.k_max),
        "chars_returned_per_question": _chars(scored, d),
        "repeats_tolerance": _tolerance(scored, d, info),
        "results": _results(scored, d),
    }


def card_data(scored: ScoredRun) -> dict[str, Any]:
    """The card's YAML header as data (what :func:`read_card` gives back)."""
    m = scored.manifest
    env = m.environment
    git = env.get("git") or {}
    machine = dict(env.get("machine") or {})
    datasets = [_dataset(scored, d) for d in m.datasets]
    carried = [
        {"dataset": d["key"], "system": r["system"], "metric": r["metric"],
         "from_run": r["carried_from"]}
        for d in datasets for r in d["results"] if "carried_from" in r
    ]  # fmt: skip
    return {
        "card": "recallbench results card",
        "card_version": CARD_VERSION,
        "run_id": m.run_id,
        "run_date": m.started_at or UNMEASURED,
        "ended_at": m.ended_at or "not finished",
        "resumed_at": list(m.resumed_at),
        "operator": m.operator or "not recorded",
        "outcome": _outcome(scored),
        "mode": scored.spec.mode,
        "scope": _subset(scored),
        "conditions": {
            "k": list(scored.spec.k),
            "chunking": scored.spec.chunking,
            "concurrency": scored.spec.concurrency,
            "group_concurrency": m.group_concurrency,
            "seed": scored.spec.seed,
            "timeout_s": scored.spec.timeout_s,
            "repeats": _repeats(scored),
            "image_mode": {d["key"]: d["image_mode"] for d in datasets},
        },
        "systems": _systems(scored),
        "datasets": datasets,
        "carried_cells": carried or "none: every cell was measured in this run",
        "hardware": {k: machine.get(k) for k in ("cpu", "cpu_count", "os") if k in machine},
        "runtime": {
            "python": machine.get("python"),
            "implementation": machine.get("implementation"),
            "recallbench": env.get("recallbench_version"),
            "format_version": m.format_version,
            "git_commit": git.get("commit"),
            "git_dirty": git.get("dirty"),
            "packages": {k: v for k, v in (env.get("packages") or {}).items() if v},
        },
        "logs_sha256": dict(m.scored_from) or UNMEASURED,
        "limitations": _limitations(scored),
    }


def _cell(value: Any, digits: int = 3) -> str:
    if value == UNMEASURED or value is None:
        return UNMEASURED
    return fmt(float(value), digits) if isinstance(value, int | float) else str(value)


def _markdown(data: Mapping[str, Any]) -> list[str]:
    when = f"run {data['run_id']}, started {data['run_date']}"
    lines = [
        f"# Results card: run {data['run_id']}",
        "",
        f"- operator: {data['operator']}",
        f"- run date: {data['run_date']} (ended {data['ended_at']})",
        f"- scope: {data['scope']}; mode: {data['mode']}; outcome: {data['outcome']}",
        "",
        "## Results",
        "",
    ]
    for d in data["datasets"]:
        lines += [
            f"### {d['version_label']} ({d['scope']}; {when})",
            "",
            "| system | figure | value | 95% CI | n | run | run date |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in d["results"]:
            ci = "-" if r["ci_95"] is None else f"{fmt(r['ci_95'][0])} to {fmt(r['ci_95'][1])}"
            value = _cell(r["value"], DIGITS.get(r["metric"], 3))
            if "why_unmeasured" in r:  # the rule; the whole reason is under Limitations
                value += f" ({r['why_unmeasured'].split(':', 1)[0]})"
            run = f"carried from {r['carried_from']}" if "carried_from" in r else "this run"
            lines.append(f"| {r['system']} | {r['metric']} | {value} | {ci} | {r['denominator']} "
                         f"| {run} | {r['run_date']} |")  # fmt: skip
        judge = d["judge"]
        reader = d["reader"]
        scale = d["scale"]
        lines += [
            "",
            f"- judge: {judge['type']}"
            + (f", model {judge['model']}" if judge.get("model") else "")
            + (f", rules {judge['rules']}" if judge.get("rules") else "")
            + (f" ({judge['note']})" if judge.get("note") else ""),
            "- reader: "
            + (reader if isinstance(reader, str) else f"{reader['model']} ({reader['label']})"),
        ]
        inst = d["instrument"]
        if isinstance(inst, Mapping):
            kind = "the benchmark's official one" if inst["official"] else "not the official one"
            lines.append(f"- instrument (reader and judge prompts): {inst['name']} ({kind})")
            lines += [f"  - prompt file {f['file']} sha256 {f['sha256']}"
                      for f in inst["prompt_files"]]  # fmt: skip
        lines += [f"- NON-STANDARD: {label}" for label in d["non_standard"]]
        lines += [
            "- data scale: " + ", ".join(
                f"{k.replace('_', ' ')} {scale[k]}" for k in SCALE_KEYS if k in scale
            ),
            f"- haystack: {d['haystack']}; image mode: {d['image_mode']}",
            "- characters returned per question: " + ", ".join(
                f"{s} {_cell(v, 0)}" for s, v in d["chars_returned_per_question"].items()
            ),
        ]  # fmt: skip
        floor = d["floor"]
        if isinstance(floor, str):
            lines.append(f"- floor: {floor}")
        else:
            for c in floor:
                figures = ", ".join(f"{k} {_cell(v)}" for k, v in c["figures"].items())
                lines.append(f"- floor (a control, not a system): {c['control']}: {figures}")
        tol = d["repeats_tolerance"]
        lines.append(f"- reproduction tolerance: {tol if isinstance(tol, str) else 'see header'}")
        lines += [
            f"- rules: {d['rules']['name']}"
            + (f", following {d['rules']['source']}" if d["rules"]["source"] else ""),
            *(f"  - deviation: {x}" for x in d["rules"]["deviations"]),
            f"- dataset checksum {d['dataset_checksum']} ({CHECKSUM_IS})",
            *(f"  - file {f['name']}: file SHA-256 {f['file_sha256']}"
              f" ({'pinned' if f['pinned'] else 'NOT pinned'})" for f in d["files"]),
            "",
        ]  # fmt: skip
    c = data["conditions"]
    lines += [
        "## Conditions",
        "",
        f"- k: {', '.join(str(k) for k in c['k'])}; chunking: {c['chunking']}; concurrency: "
        f"{c['concurrency']} (groups at once: {c['group_concurrency']}); seed: {c['seed']}; "
        f"timeout: {c['timeout_s']:g} s; repeats: {c['repeats']}",
    ]
    for s in data["systems"]:
        lines.append(f"- system {s['name']} ({s['source']}): LLM inside: {s['llm_inside']}")
    hw, rt = data["hardware"], data["runtime"]
    lines += [
        f"- hardware: {hw.get('cpu')}, {hw.get('cpu_count')} CPU(s), {hw.get('os')}",
        f"- runtime: {rt['implementation']} {rt['python']}, recallbench {rt['recallbench']} "
        f"(format {rt['format_version']}, git {(rt['git_commit'] or 'unknown')[:12]}"
        f"{', dirty' if rt['git_dirty'] else ''})",
        "",
        "## Provenance",
        "",
    ]
    logs = data["logs_sha256"]
    if isinstance(logs, Mapping):
        lines += [f"- scored from {name}: sha256 {h}" for name, h in logs.items()]
    else:
        lines.append(f"- logs scored from: {logs}")
    carried = data["carried_cells"]
    lines += [
        f"- carried cells: {carried}" if isinstance(carried, str) else "- carried cells:",
        *([] if isinstance(carried, str) else
          [f"  - {x['dataset']} {x['system']} {x['metric']}: from run {x['from_run']}"
           for x in carried]),
        "",
        "## Limitations",
        "",
        *(f"- {x}" for x in data["limitations"]),
        "",
        f"Every figure above is a row of metrics.jsonl of run {data['run_id']} (or the run a "
        "carried cell names); an unmeasured figure is null there with its reason, never 0.",
    ]  # fmt: skip
    return lines


class _Dumper(yaml.SafeDumper):
    """Safe YAML that writes a repeated value out again instead of as an alias (``&id001``),
    so every key of the header reads on its own."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_card(scored: ScoredRun) -> str:
    """``card.md``'s text: the YAML header between ``---`` lines, then the Markdown."""
    data = card_data(scored)
    header = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return "---\n" + header + "---\n\n" + "\n".join(_markdown(data)) + "\n"


def _from_disk(run_dir: Path) -> ScoredRun:
    """The scored view of a folder without its datasets (no floor, no unasked count)."""
    manifest = read_manifest(run_dir)
    verdicts: list[Verdict] = [
        verdict_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.VERDICTS)
    ]
    metrics = [metric_row_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.METRICS)]
    ingests = [ingest_from_dict(d) for d in store.read_jsonl_tolerant(run_dir / store.INGEST)]
    found = failures(store.read_observations(run_dir), ingests, manifest.max_failure_rate)
    return ScoredRun(run_dir, manifest, (), tuple(verdicts), tuple(metrics), {},
                     failures=tuple(found))  # fmt: skip


def write_card(run_dir: Path, scored: ScoredRun | None = None) -> Path:
    """Write ``card.md`` into ``run_dir`` and return its path. The pipeline hands the scored
    run (``scored``) whenever it scores; without it the card is rendered from the folder's
    files alone, and the floor, which needs the dataset, reads "not computed"."""
    text = render_card(scored if scored is not None else _from_disk(run_dir))
    path = run_dir / store.CARD
    store.write_text(path, text)
    return path


def read_card(path: Path) -> dict[str, Any]:
    """The YAML header of a ``card.md`` as a dict; :class:`CardError` names what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CardError(f"{path}: cannot read the card ({exc})") from None
    if not text.startswith("---\n"):
        raise CardError(f"{path}: no YAML header (a card starts with a '---' line)")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise CardError(f"{path}: the YAML header is not closed by a '---' line")
    try:
        data = yaml.safe_load(text[4 : end + 1])
    except yaml.YAMLError as exc:
        raise CardError(f"{path}: the YAML header does not parse ({exc})") from None
    if not isinstance(data, dict):
        raise CardError(f"{path}: the YAML header is not a mapping")
    return data
