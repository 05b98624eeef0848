"""``run.json``: the typed manifest of a run, written at start and completed at the end.

:class:`RunManifest` is read back with :meth:`RunManifest.from_dict`, which checks
``format_version``: an older version is upgraded in place by the functions in ``UPGRADES`` (one
per version bump), a newer one is refused with a message naming both versions. The JSON written
is the same, key for key, as the dict recallbench wrote before the type existed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recallbench.contracts import FORMAT_VERSION, AppliedRules
from recallbench.datasets.dataset import LoadedDataset
from recallbench.errors import ManifestVersionError, RunFolderError
from recallbench.results import store
from recallbench.results.environment import environment
from recallbench.results.failures import DEFAULT_MAX_FAILURE_RATE
from recallbench.spec import RunSpec, make_run_id


def _from_1(d: dict[str, Any]) -> dict[str, Any]:
    """Format 2 added ``IngestRecord.finish_ms`` and ``Capabilities.ignores_k`` (read as null and
    as the system's current declaration): a format-1 manifest needs no change."""
    return d


def _from_2(d: dict[str, Any]) -> dict[str, Any]:
    """Format 3 added the run's mode on every verdict and metric row (rows of format 2 read as
    ``retrieval``, which every run before it was), ``answers.jsonl`` and ``judgements.jsonl``,
    and ``RunSpec.answering`` (absent: a retrieval run): a format-2 manifest needs no change."""
    return d


def _from_3(d: dict[str, Any]) -> dict[str, Any]:
    """Format 4 added provenance: ``dataset_sha256`` and ``run_date`` on every verdict and
    ``run_date`` on every metric row (absent in format 3: unknown, never guessed), and in
    ``run.json`` the ``operator``, each dataset's ``scale`` and ``file_sha256``, and the
    SHA-256 of each log the run was scored from (``scored_from``), all absent when unknown;
    ``ci_unit``, ``ci_iterations`` and ``ci_seed`` on every metric row with an interval
    (which now resamples haystack groups when a dataset has at least 20, questions stratified
    by slice otherwise; rows of format 3 read them as null, and re-scoring writes them);
    ``repeat`` in the key of observations, ingest records, verdicts, answers, judgements and
    metric rows (absent: repeat 0, the only one a format-3 run has), ``RunSpec.repeats``
    (absent: 1) and ``RunSpec.subset`` (absent: a full run). It also stores each memory list
    once, in ``lists.jsonl``, and an observation names it by ``memories_sha256``
    (:class:`recallbench.results.store.ObservationLog`); the reader still takes lists inline.
    So a format-3 folder reads as it is: its manifest needs no change."""
    return d


UPGRADES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "1": _from_1,
    "2": _from_2,
    "3": _from_3,
}
"""``{version: function}``: turns a manifest of ``version`` into one of the next version."""


def now_rfc3339() -> str:
    """The local time now, RFC 3339 with its UTC offset, to the second."""
    return datetime.now(UTC).astimezone().isoformat(timespec="seconds")


@dataclass(slots=True)
class DatasetRecord:
    """What ``run.json`` says of one dataset of the run."""

    key: str
    name: str
    variant: str
    version: str
    version_label: str
    checksum: str
    pinned: bool
    files: list[dict[str, Any]]
    haystack: str
    groups: int
    questions: int
    scoring: str
    options: dict[str, Any]
    load_report: list[str]
    card_notes: list[str]
    rules_source: dict[str, Any] | None = None
    """The official scoring the rules follow (``repository``, ``commit``, ``files``, ``note``);
    None when no benchmark publishes one, and in a run made before recallbench recorded it."""
    deviations: list[str] = field(default_factory=list)
    """The known deviations from ``rules_source``, one sentence each."""
    file_sha256: dict[str, str] = field(default_factory=dict)
    """Each file read, by name, with the SHA-256 of its bytes: the hash a benchmark publishes
    and the docs pin (``checksum`` is not a file's hash: it is one SHA-256 over these, see
    :func:`~recallbench.datasets.dataset.files_checksum`). Empty in a run made before
    recallbench recorded it (``files`` holds the same hashes)."""
    scale: dict[str, Any] = field(default_factory=dict)
    """The data's size (:func:`dataset_scale`): questions, haystack groups, sessions, turns
    and mean turns per haystack. Empty in a run made before recallbench recorded it."""

    @classmethod
    def of(
        cls, ds: LoadedDataset, scoring: str, rules: AppliedRules | None = None
    ) -> DatasetRecord:
        source = rules.source if rules is not None else None
        return cls(
            key=ds.key,
            name=ds.name,
            variant=ds.variant,
            version=ds.version,
            version_label=ds.version_label,
            checksum=ds.checksum,
            pinned=ds.pinned,
            files=[dataclasses.asdict(f) for f in ds.files],
            haystack=ds.haystack,
            groups=len(ds.groups),
            questions=len(ds.questions),
            scoring=scoring,
            options=ds.options_record(),
            load_report=list(ds.load_report),
            card_notes=list(ds.card_notes),
            rules_source=None if source is None else dataclasses.asdict(source),
            deviations=[] if rules is None else list(rules.deviations),
            file_sha256={f.name: f.sha256 for f in ds.files},
            scale=dataset_scale(ds),
        )


def dataset_scale(ds: LoadedDataset) -> dict[str, Any]:
    """``questions``, ``haystack_groups``, ``sessions`` and ``turns`` of a loaded dataset, and
    ``mean_turns_per_haystack`` (turns over groups, to 0.1; None without a group). A session or
    turn shared by several groups counts once per group: what the systems ingest."""
    sessions = sum(len(g.sessions) for g in ds.groups)
    turns = sum(len(s.turns) for g in ds.groups for s in g.sessions)
    groups = len(ds.groups)
    return {
        "questions": len(ds.questions),
        "haystack_groups": groups,
        "sessions": sessions,
        "turns": turns,
        "mean_turns_per_haystack": round(turns / groups, 1) if groups else None,
    }


@dataclass(slots=True)
class SystemRecord:
    name: str
    source: str | None
    capabilities: dict[str, Any] | None
    """As declared for the run's config; completed from the built instance when only it says."""
    settings: dict[str, Any] | None = None
    """The options the built system reported running with (its ``settings``), if any."""


@dataclass(slots=True)
class RunManifest:
    run_id: str
    spec: RunSpec
    spec_hash: str
    concurrency: int
    datasets: list[DatasetRecord]
    systems: list[SystemRecord]
    started_at: str
    ended_at: str | None = None
    status: str = "running"
    resumed_at: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    """``recallbench_version``, ``packages``, ``git``, ``machine`` (written at the top level)."""
    answering: dict[str, Any] = field(default_factory=dict)
    """Memory and answer modes: the instrument per dataset (name, files read with their
    SHA-256, pins, deviations, non-standard labels), the judges whose judgements the folder
    holds and the one scored (``judge``); empty (and absent from ``run.json``) otherwise."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not model, kept as read so that nothing is lost on rewrite."""
    format_version: str = FORMAT_VERSION
    group_concurrency: int = 1
    """Haystack groups ingested and searched at once (``--group-concurrency``), each by its own
    instance: an execution setting, not part of the spec (results do not depend on it). Written
    under ``execution`` in ``run.json``; a run that predates it ran one group at a time."""
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE
    """``--max-failure-rate``: above this share of failed searches or ingests of a system on a
    dataset (or when all failed) the run ends ``failed`` (:mod:`recallbench.results.failures`).
    Written under ``execution``."""
    operator: str | None = None
    """Who ran it (``run --operator NAME``), as given; None (absent from ``run.json``) when not
    said. Not part of the spec: it does not change the results."""
    scored_from: dict[str, str] = field(default_factory=dict)
    """The SHA-256 of each log the derived files were last computed from, by file name
    (:func:`recallbench.results.store.log_hashes`); written at scoring, absent before."""

    @classmethod
    def new(
        cls,
        spec: RunSpec,
        datasets: Sequence[DatasetRecord],
        systems: Sequence[SystemRecord],
    ) -> RunManifest:
        started = datetime.now(UTC)
        return cls(
            run_id=make_run_id(spec, started),
            spec=spec,
            spec_hash=spec.spec_hash,
            concurrency=spec.concurrency,
            datasets=list(datasets),
            systems=list(systems),
            started_at=started.astimezone().isoformat(timespec="seconds"),
            environment=environment(),
        )

    def dataset(self, key: str) -> DatasetRecord | None:
        return next((d for d in self.datasets if d.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "run_id": self.run_id,
            "spec": self.spec.to_dict(),
            "spec_hash": self.spec_hash,
            "concurrency": self.concurrency,
            "datasets": [dataclasses.asdict(d) for d in self.datasets],
            "systems": [dataclasses.asdict(s) for s in self.systems],
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "status": self.status,
            "resumed_at": list(self.resumed_at),
            "execution": {
                "group_concurrency": self.group_concurrency,
                "max_failure_rate": self.max_failure_rate,
            },
            **({"answering": self.answering} if self.answering else {}),
            **({"operator": self.operator} if self.operator is not None else {}),
            **({"scored_from": dict(self.scored_from)} if self.scored_from else {}),
            **self.environment,
            **self.extra,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: Path | str = "run.json") -> RunManifest:
        d = upgrade(dict(raw), where)
        known = {f.name for f in dataclasses.fields(cls)} - {"environment", "extra"}
        known.add("execution")
        execution = d.get("execution") or {}
        env_keys = ("recallbench_version", "packages", "git", "machine")
        try:
            manifest = cls(
                run_id=str(d["run_id"]),
                spec=RunSpec.from_dict(d["spec"]),
                spec_hash=str(d["spec_hash"]),
                concurrency=int(d["concurrency"]),
                datasets=[DatasetRecord(**x) for x in d["datasets"]],
                systems=[SystemRecord(**x) for x in d["systems"]],
                started_at=str(d["started_at"]),
                ended_at=d.get("ended_at"),
                status=str(d.get("status", "running")),
                resumed_at=list(d.get("resumed_at") or []),
                answering=dict(d.get("answering") or {}),
                environment={k: d[k] for k in env_keys if k in d},
                extra={k: v for k, v in d.items() if k not in known and k not in env_keys},
                format_version=str(d["format_version"]),
                group_concurrency=int(execution.get("group_concurrency", 1)),
                max_failure_rate=float(
                    execution.get("max_failure_rate", DEFAULT_MAX_FAILURE_RATE)
                ),
                operator=None if d.get("operator") is None else str(d["operator"]),
                scored_from={str(k): str(v) for k, v in (d.get("scored_from") or {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunFolderError(f"{where}: not a recallbench run manifest ({exc!r})") from None
        if manifest.spec.spec_hash != manifest.spec_hash:
            raise RunFolderError(
                f"{where}: the spec was edited after the run started (spec_hash "
                f"{manifest.spec_hash} in run.json, {manifest.spec.spec_hash} for the spec it "
                "holds now); restore the original spec, or start a new run"
            )
        return manifest


def _version_number(value: Any, where: Path | str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ManifestVersionError(
            f"{where}: format_version {value!r} is not a version this recallbench knows "
            f"(it reads {FORMAT_VERSION} and older)"
        ) from None


def upgrade(d: dict[str, Any], where: Path | str = "run.json") -> dict[str, Any]:
    """A manifest dict brought to ``FORMAT_VERSION``; refuses one written by a newer format."""
    if "format_version" not in d:
        raise RunFolderError(f"{where}: no format_version: not a recallbench run manifest")
    current = _version_number(FORMAT_VERSION, where)
    version = _version_number(d["format_version"], where)
    if version > current:
        raise ManifestVersionError(
            f"{where}: results format_version {d['format_version']} is newer than this "
            f"recallbench reads (format_version {FORMAT_VERSION}); upgrade recallbench to read it"
        )
    while version < current:
        step = UPGRADES.get(str(version))
        if step is None:
            raise ManifestVersionError(
                f"{where}: no upgrade from format_version {version} to {FORMAT_VERSION}"
            )
        d = step(d)
        version += 1
        d["format_version"] = str(version)
    return d


def read_manifest(run_dir: Path) -> RunManifest:
    path = run_dir / store.RUN_JSON
    if not run_dir.is_dir():
        what = "is not a folder" if run_dir.exists() else "does not exist"
        raise RunFolderError(f"{run_dir} {what}: give the results folder of a run")
    if not path.exists():
        raise RunFolderError(f"{run_dir} is not a recallbench results folder (no run.json)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunFolderError(f"{path}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise RunFolderError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise RunFolderError(f"{path}: JSON nested too deeply to read") from None
    if not isinstance(raw, dict):
        raise RunFolderError(f"{path}: expected a JSON object")
    return RunManifest.from_dict(raw, path)


def write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    store.write_json(run_dir / store.RUN_JSON, manifest.to_dict())
