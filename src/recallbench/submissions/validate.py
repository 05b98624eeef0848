"""``recallbench validate BUNDLE``: check a results folder or archive sent by someone else.

The bundle is opened by :func:`recallbench.submissions.bundle.opened_bundle` (refused before
anything unsafe is written) into a temporary copy, and then:

* **run.json**: it reads as a recallbench manifest of a format this version knows.
* **dataset hashes**: each dataset, loaded from the local data folder, has the checksum
  ``run.json`` records (its pinned files are checked by the loader on the way).
* **log hashes**: where ``run.json`` records the SHA-256 of the logs it was scored from, each log
  in the bundle has it, and no log is left unrecorded (an older run records none: skipped).
* **reader and judge pins**: in memory and answer mode, the reader and judge models called are
  the ones the benchmark version pins, the pins ``run.json`` states are the ones this
  recallbench reads from the benchmark's pinned source, and the instrument files read have the
  recorded SHA-256; a run with non-standard labels fails (retrieval and dry mode: skipped).
* **verdicts recomputed**, **aggregates recomputed**: the copy is re-scored by the pipeline's
  own :func:`recallbench.pipeline.score_run` (the one scorer, from the per-question logs and the
  gold labels) and ``verdicts.jsonl`` and ``metrics.jsonl`` must equal the claimed ones byte for
  byte; the first differing rows are named.
* **no unmeasured cell filled**: no claimed metric row or per-question metric holds a value
  where the re-scored records give null, and no claimed row is one the records do not produce.
* **derived files recomputed**: ``summary.md``, ``card.md`` and every file under ``exports/``
  and ``submissions/`` that re-scoring writes again equal the claimed bytes.

A check is passed, failed, or skipped (nothing to check, with the reason). The bundle is valid
when no check failed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench import answers
from recallbench.contracts import to_json_dict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import UserError
from recallbench.instruments.protocol import AnswerInstrument
from recallbench.pipeline import load_run_datasets, score_run
from recallbench.report.card import read_card
from recallbench.results import store
from recallbench.results.manifest import RunManifest, read_manifest
from recallbench.score.aggregate import NOT_ASKED
from recallbench.submissions.bundle import Limits, opened_bundle

PASS, FAIL, SKIP = "pass", "fail", "skip"
LOGS = store.LOGS
"""The per-question logs a run is scored from (everything else in a folder is derived)."""
CARD = "card.md"
DERIVED_DIRS = ("exports", "submissions")
LOG_HASH_KEYS = ("scored_from",)
"""Where ``run.json`` holds the SHA-256 of each log it was scored from."""
VALUE_FIELDS = frozenset({"value", "ci_low", "ci_high", "null_reason"})
SHOWN = 3
"""Differences named per check."""


@dataclass(frozen=True, slots=True)
class Check:
    """One named check and its outcome (``pass``, ``fail`` or ``skip``)."""

    name: str
    status: str
    detail: str


@dataclass(slots=True)
class Validation:
    """What ``validate`` found; ``manifest`` and ``card`` are those of the bundle, when read."""

    bundle: Path
    checks: list[Check] = field(default_factory=list)
    manifest: RunManifest | None = None
    card: dict[str, Any] | None = None
    metrics: list[dict[str, Any]] = field(default_factory=list)
    """The claimed metric rows (equal to the recomputed ones when the bundle is valid)."""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and not any(c.status == FAIL for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]

    def add(self, name: str, status: str, detail: str) -> None:
        self.checks.append(Check(name, status, detail))


def _what(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_card(path: Path) -> dict[str, Any] | None:
    return dict(read_card(path))


# ----------------------------------------------------------------------------- hashes


def recorded_log_hashes(raw: Mapping[str, Any]) -> dict[str, str] | None:
    """``{log name: sha256}`` as ``run.json`` records them, or None when it records none.

    Accepted shapes under one of :data:`LOG_HASH_KEYS`: ``{name: sha256}``,
    ``{name: {"sha256": ...}}`` or ``[{"name" | "path": ..., "sha256": ...}]``."""
    for key in LOG_HASH_KEYS:
        value = raw.get(key)
        if value is None:
            continue
        out: dict[str, str] = {}
        items: Iterator[tuple[Any, Any]]
        if isinstance(value, Mapping):
            items = iter(value.items())
        elif isinstance(value, list):
            items = iter(
                (d.get("name") or d.get("path"), d) for d in value if isinstance(d, Mapping)
            )
        else:
            raise UserError(f"run.json: {key} is neither an object nor a list")
        for name, v in items:
            sha = v.get("sha256") if isinstance(v, Mapping) else v
            if not isinstance(name, str) or not isinstance(sha, str):
                raise UserError(f"run.json: {key} holds an entry without a name and a sha256")
            out[name] = sha
        return out
    return None


def _check_logs(run_dir: Path, raw: Mapping[str, Any], v: Validation) -> None:
    name = "log hashes"
    try:
        recorded = recorded_log_hashes(raw)
    except UserError as exc:
        v.add(name, FAIL, str(exc))
        return
    if recorded is None:
        v.add(name, SKIP, "run.json records no log SHA-256 (written by an older recallbench)")
        return
    bad: list[str] = []
    for log, sha in sorted(recorded.items()):
        path = run_dir / log
        if not path.is_file():
            bad.append(f"{log}: recorded, not in the bundle")
        elif (actual := sha256_bytes(path.read_bytes())) != sha:
            bad.append(f"{log}: sha256 {actual[:12]}..., run.json says {sha[:12]}...")
    bad += [
        f"{log}: in the bundle, not recorded in run.json"
        for log in LOGS
        if (run_dir / log).is_file() and log not in recorded
    ]
    if bad:
        v.add(name, FAIL, "; ".join(bad))
    else:
        v.add(name, PASS, f"{len(recorded)} log(s) match run.json")


def _check_datasets(manifest: RunManifest, data_dir: Path, v: Validation) -> list[LoadedDataset]:
    name = "dataset hashes"
    try:
        loaded = load_run_datasets(manifest, data_dir)
    except UserError as exc:
        v.add(name, FAIL, f"{exc} (the data must be available locally to check a bundle)")
        return []
    except Exception as exc:
        v.add(name, FAIL, f"run.json's datasets cannot be reloaded ({_what(exc)})")
        return []
    v.add(
        name,
        PASS,
        "; ".join(f"{ds.key} sha256 {ds.checksum[:12]}... as recorded" for ds in loaded),
    )
    return loaded


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _check_pins(
    manifest: RunManifest, loaded: Sequence[LoadedDataset], cache_dir: Path, v: Validation
) -> None:
    name = "reader and judge pins"
    spec = manifest.spec
    a = spec.answering
    if a is None or a.mode not in answers.LLM_MODES:
        v.add(name, SKIP, f"{spec.mode} mode: no reader or judge")
        return
    if not loaded:
        v.add(name, FAIL, "the datasets could not be loaded, so their instruments cannot be read")
        return
    recorded_all = manifest.answering.get("datasets") or {}
    bad: list[str] = []
    pinned = False
    for ds in loaded:
        rec = recorded_all.get(ds.key)
        if not isinstance(rec, Mapping):
            bad.append(f"{ds.key}: run.json records no instrument")
            continue
        try:
            inst = answers.instrument_for(ds, a, cache_dir, spec.seed)
        except UserError as exc:
            bad.append(f"{ds.key}: its instrument cannot be read ({exc})")
            continue
        pinned = pinned or inst.reader is not None or inst.judge_pin is not None
        try:
            bad += _pin_problems(ds.key, rec, inst)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            bad.append(f"{ds.key}: run.json's answering record is malformed ({_what(exc)})")
    if bad:
        v.add(name, FAIL, "; ".join(dict.fromkeys(bad)))
    elif not pinned:
        v.add(name, PASS, f"{a.mode} mode: the benchmark pins no reader or judge (none to match)")
    else:
        v.add(name, PASS, f"{a.mode} mode: reader and judge as the benchmark pins them")


def _pin_problems(key: str, rec: Mapping[str, Any], inst: AnswerInstrument) -> list[str]:
    """What differs between a dataset's recorded answering and its instrument's pins."""
    bad: list[str] = []
    pins = {
        "reader": None if inst.reader is None else to_json_dict(inst.reader),
        "judge": None if inst.judge_pin is None else to_json_dict(inst.judge_pin),
    }
    for role, pin in pins.items():
        if not _same(rec.get(f"{role}_pin"), pin):
            bad.append(f"{key}: the {role} pin in run.json is not the benchmark's")
        used = rec.get(role)
        if pin is None or used is None:
            continue
        model = used.get("model") if isinstance(used, Mapping) else None
        if model != pin["model"]:
            bad.append(f"{key}: {role} {model}, the benchmark pins {pin['model']}")
    files = {f["path"]: f.get("sha256") for f in rec.get("files", []) if isinstance(f, dict)}
    for f in inst.files():
        if files.get(f.path) != f.sha256:
            bad.append(
                f"{key}: instrument file {f.path} sha256 {str(files.get(f.path))[:12]} "
                f"in run.json, {f.sha256[:12]} from the pinned source"
            )
    bad += [f"{key}: {label}" for label in rec.get("non_standard", [])]
    return bad


# ----------------------------------------------------------------------------- re-scoring


def _lines(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = {"_unreadable": line[:80]}
        out.append(row if isinstance(row, dict) else {"_unreadable": line[:80]})
    return out


def _row_key(row: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in VALUE_FIELDS}, sort_keys=True)


def _short_key(row: Mapping[str, Any], fields: Sequence[str]) -> str:
    return " ".join(f"{f}={row[f]}" for f in fields if row.get(f) is not None)


METRIC_KEY = ("dataset", "system", "metric", "k", "slice", "repeat")
VERDICT_KEY = ("dataset", "system", "question_id", "repeat")


def _compare_bytes(
    name: str, claimed: bytes | None, actual: bytes, key: Sequence[str], v: Validation
) -> None:
    if claimed is None:
        v.add(name, FAIL, "not in the bundle")
        return
    if claimed == actual:
        v.add(name, PASS, f"{len(_lines(actual))} rows equal the re-scored ones byte for byte")
        return
    mine = {_row_key(r): r for r in _lines(actual)}
    theirs = _lines(claimed)
    diffs = []
    for row in theirs:
        other = mine.get(_row_key(row))
        if other is None:
            diffs.append(f"{_short_key(row, key)}: no such row when re-scored")
        elif not _same(row, other):
            changed = [f for f in sorted(VALUE_FIELDS) if row.get(f) != other.get(f)]
            if not changed:
                changed = ["order or formatting"]
            diffs.append(
                f"{_short_key(row, key)}: "
                + ", ".join(
                    f"{f} {row.get(f)!r} claimed, {other.get(f)!r} re-scored"
                    for f in changed
                    if f in row or f in other
                )
            )
    if len(theirs) != len(mine):
        diffs.append(f"{len(theirs)} rows claimed, {len(mine)} re-scored")
    if not diffs:
        diffs.append("same rows, different bytes (order or formatting)")
    more = f" (and {len(diffs) - SHOWN} more)" if len(diffs) > SHOWN else ""
    v.add(name, FAIL, "; ".join(diffs[:SHOWN]) + more)


def _filled(
    claimed_metrics: bytes | None,
    actual_metrics: bytes,
    claimed_verdicts: bytes | None,
    actual_verdicts: bytes,
    v: Validation,
) -> None:
    name = "no unmeasured cell filled"
    found: list[str] = []
    mine = {_row_key(r): r for r in _lines(actual_metrics)}
    for row in _lines(claimed_metrics or b""):
        other = mine.get(_row_key(row))
        if row.get("value") is None:
            continue
        if other is None:
            found.append(
                f"{_short_key(row, METRIC_KEY)}: a value for a row the records do not produce"
            )
        elif other.get("value") is None:
            found.append(
                f"{_short_key(row, METRIC_KEY)}: {row['value']!r} claimed, null "
                f"re-scored ({other.get('null_reason')})"
            )
    by_q = {json.dumps([r.get(f) for f in VERDICT_KEY]): r for r in _lines(actual_verdicts)}
    for row in _lines(claimed_verdicts or b""):
        other = by_q.get(json.dumps([row.get(f) for f in VERDICT_KEY]))
        if other is None:
            continue  # named by "verdicts recomputed"
        theirs, ours = row.get("metrics") or {}, other.get("metrics") or {}
        if not isinstance(theirs, dict):
            continue
        for metric, value in sorted(theirs.items()):
            if value is not None and ours.get(metric) is None:
                reason = (other.get("null_reasons") or {}).get(metric, "not produced")
                found.append(
                    f"{_short_key(row, VERDICT_KEY)} {metric}: {value!r} claimed, "
                    f"null re-scored ({reason})"
                )
    if found:
        more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        v.add(name, FAIL, "; ".join(found[:SHOWN]) + more)
    else:
        v.add(name, PASS, "every claimed value is one the records measure")


def _derived_files(run_dir: Path) -> dict[str, bytes]:
    """Every derived file beyond verdicts and metrics, by path relative to the folder."""
    out: dict[str, bytes] = {}
    for rel in (store.SUMMARY, CARD):
        if (run_dir / rel).is_file():
            out[rel] = (run_dir / rel).read_bytes()
    for d in DERIVED_DIRS:
        for p in sorted((run_dir / d).rglob("*")) if (run_dir / d).is_dir() else ():
            if p.is_file():
                out[p.relative_to(run_dir).as_posix()] = p.read_bytes()
    return out


def _remove_derived(run_dir: Path) -> None:
    for rel in (store.VERDICTS, store.METRICS, store.SUMMARY, CARD):
        (run_dir / rel).unlink(missing_ok=True)
    for d in DERIVED_DIRS:
        shutil.rmtree(run_dir / d, ignore_errors=True)


def _rescore(
    run_dir: Path,
    manifest: RunManifest,
    loaded: Sequence[LoadedDataset],
    data_dir: Path,
    v: Validation,
) -> None:
    claimed_v = _read(run_dir / store.VERDICTS)
    claimed_m = _read(run_dir / store.METRICS)
    claimed = _derived_files(run_dir)
    if claimed_m is not None:
        v.metrics = _lines(claimed_m)
    incomplete = any(NOT_ASKED in str(r.get("exclusion_rule") or "") for r in v.metrics)
    _remove_derived(run_dir)
    names = (
        "verdicts recomputed",
        "aggregates recomputed",
        "no unmeasured cell filled",
        "derived files recomputed",
    )
    if not loaded:
        for n in names:
            v.add(n, FAIL, "not re-scored: the datasets could not be loaded")
        return
    try:
        score_run(run_dir, data_dir, loaded, incomplete=incomplete)
    except UserError as exc:
        for n in names:
            v.add(n, FAIL, f"re-scoring the logs failed: {exc}")
        return
    except Exception as exc:  # malformed records are the bundle's fault, not a bug
        for n in names:
            v.add(n, FAIL, f"re-scoring the logs failed on a malformed record ({_what(exc)})")
        return
    actual_v = (run_dir / store.VERDICTS).read_bytes()
    actual_m = (run_dir / store.METRICS).read_bytes()
    _compare_bytes(names[0], claimed_v, actual_v, VERDICT_KEY, v)
    _compare_bytes(names[1], claimed_m, actual_m, METRIC_KEY, v)
    _filled(claimed_m, actual_m, claimed_v, actual_v, v)
    rederived = _derived_files(run_dir)
    differ = [rel for rel, data in claimed.items() if rel in rederived and rederived[rel] != data]
    unchecked = [rel for rel in claimed if rel not in rederived]
    note = (
        f"; not re-derived by this recallbench, unchecked: {', '.join(unchecked)}"
        if unchecked
        else ""
    )
    if differ:
        v.add(names[3], FAIL, f"differ from the re-derived bytes: {', '.join(differ)}{note}")
    else:
        checked = len(claimed) - len(unchecked)
        v.add(names[3], PASS, f"{checked} file(s) equal the re-derived bytes{note}")


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


# ----------------------------------------------------------------------------- entry point


def validate_folder(run_dir: Path, data_dir: Path, cache_dir: Path, v: Validation) -> None:
    """Run every check on an opened bundle (a private copy: re-scoring writes into it)."""
    raw: Mapping[str, Any] = {}
    try:
        manifest = read_manifest(run_dir)
        raw = json.loads((run_dir / store.RUN_JSON).read_text(encoding="utf-8"))
    except UserError as exc:
        v.add("run.json", FAIL, str(exc))
        return
    except Exception as exc:  # a malformed manifest is the bundle's fault, not a bug
        v.add("run.json", FAIL, f"not a readable manifest ({_what(exc)})")
        return
    v.manifest = manifest
    v.add(
        "run.json",
        PASS,
        f"run {manifest.run_id}, format {manifest.format_version}, status {manifest.status}",
    )
    if (run_dir / CARD).is_file():
        with contextlib.suppress(UserError, ValueError, OSError):
            v.card = _read_card(run_dir / CARD)
    _check_logs(run_dir, raw, v)
    loaded = _check_datasets(manifest, data_dir, v)
    _check_pins(manifest, loaded, cache_dir, v)
    _rescore(run_dir, manifest, loaded, data_dir, v)


def validate(
    bundle: Path,
    data_dir: Path,
    cache_dir: Path,
    limits: Limits | None = None,
    *,
    inspect: Callable[[Path, Validation], None] | None = None,
) -> Validation:
    """Validate one bundle; never raises for anything the bundle holds (a refused bundle is a
    failed ``bundle`` check). ``inspect`` is called on the opened folder after the checks,
    before the temporary copy is removed."""
    from recallbench.submissions.bundle import BundleError

    v = Validation(bundle)
    try:
        with opened_bundle(bundle, limits) as run_dir:
            v.add("bundle", PASS, "opened safely (no traversal, link, special file or bomb)")
            validate_folder(run_dir, data_dir, cache_dir, v)
            if inspect is not None:
                inspect(run_dir, v)
    except BundleError as exc:
        v.add("bundle", FAIL, f"refused: {exc}")
    return v
