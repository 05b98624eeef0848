"""The frozen RunSpec: everything that decides a run's results, hashed into the run id."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recallbench.contracts import OMIT_EMPTY, canonical_json, sha256_text, to_json_dict

DEFAULT_K: tuple[int, ...] = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A reader or judge as the operator chose it: the model name sent, the endpoint's base URL
    (None: the benchmark's own endpoint for a pinned model, or the in-process mock for the mock
    models) and the name of the environment variable holding its key (never the key)."""

    model: str
    base_url: str | None = None
    api_key_env: str | None = None

    @property
    def label(self) -> str:
        return self.model if not self.base_url else f"{self.model}@{self.base_url}"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> ModelChoice | None:
        if d is None:
            return None
        return cls(str(d["model"]), d.get("base_url"), d.get("api_key_env"))


@dataclass(frozen=True, slots=True)
class AnsweringSpec:
    """How answers are written and judged (memory and answer modes; absent in retrieval mode).

    ``condition``: ``system`` (the reader reads what each system returned), ``no-memory`` or
    ``oracle`` (also run a floor and a ceiling row: nothing, or the gold evidence turns);
    ``prompts``: ``official`` or ``recallbench-v1``; ``same_model``: the operator allowed the
    reader to be the judge where the benchmark's protocol does not; ``llm_concurrency``: calls in
    flight per endpoint; ``cache``: whether the response cache is used.
    """

    mode: str
    reader: ModelChoice | None = None
    judge: ModelChoice | None = None
    conditions: tuple[str, ...] = ()
    prompts: str = "official"
    reader_preset: str | None = None
    judge_variant: str | None = None
    same_model: bool = False
    llm_concurrency: int = 8

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AnsweringSpec:
        return cls(
            mode=str(d["mode"]),
            reader=ModelChoice.from_dict(d.get("reader")),
            judge=ModelChoice.from_dict(d.get("judge")),
            conditions=tuple(d.get("conditions", ())),
            prompts=str(d.get("prompts", "official")),
            reader_preset=d.get("reader_preset"),
            judge_variant=d.get("judge_variant"),
            same_model=bool(d.get("same_model", False)),
            llm_concurrency=int(d.get("llm_concurrency", 8)),
        )


@dataclass(frozen=True, slots=True)
class SpeedSpec:
    """How a run's speed is scored (``run --llm-ttft/--speed-weight/--network/--cdn-ranges``):
    the target's parts, the combined figure's weight (None: no combined figure) and the codes
    decided before measuring from the network and CDN ranges files (N1, N2), fixed when the run
    starts. Per-system codes (N4-N7) come from the systems' capabilities at scoring time."""

    llm_ttft_ms: float = 500.0
    flow_limit_ms: float = 1000.0
    weight: float | None = None
    before: tuple[str, ...] = ()
    sample: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    """``run --speed-sample N``: N questions per dataset searched alone and timed for speed
    (None: every search is scored; absent from the dict, so older specs hash as before)."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SpeedSpec:
        weight = d.get("weight")
        sample = d.get("sample")
        return cls(
            llm_ttft_ms=float(d.get("llm_ttft_ms", 500.0)),
            flow_limit_ms=float(d.get("flow_limit_ms", 1000.0)),
            weight=None if weight is None else float(weight),
            before=tuple(str(c) for c in d.get("before", ())),
            sample=None if sample is None else int(sample),
        )


SUBSET_KINDS: tuple[str, ...] = ("limit", "groups", "questions")


@dataclass(frozen=True, slots=True)
class SubsetSpec:
    """The part of each dataset a run asks (``run --limit/--groups/--questions-from``).

    ``limit``: a seeded sample of ``limit`` questions per dataset, stratified by slice
    (``seed``); ``groups``: the questions of the haystack groups named in ``groups``;
    ``questions``: the question ids listed in the file ``questions_file``, whose SHA-256 is
    ``questions_sha256`` (the ids themselves are in ``questions``, so a resume or re-score
    does not need the file). Fields a kind does not use are None or empty, and left out of
    the dict.
    """

    kind: str
    limit: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    seed: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    groups: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    questions_file: str | None = field(default=None, metadata={OMIT_EMPTY: True})
    questions_sha256: str | None = field(default=None, metadata={OMIT_EMPTY: True})
    questions: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})

    @property
    def label(self) -> str:
        """``subset: limit 50 (seed 0)``, ``subset: groups conv-26, conv-30`` or
        ``subset: questions from ids.txt (sha256 1a2b3c4d5e6f)``, as rows and titles say it."""
        if self.kind == "limit":
            return f"subset: limit {self.limit} (seed {self.seed})"
        if self.kind == "groups":
            return f"subset: groups {', '.join(self.groups)}"
        name = self.questions_file or "a file"
        return f"subset: questions from {name} (sha256 {(self.questions_sha256 or '')[:12]})"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SubsetSpec:
        limit, seed = d.get("limit"), d.get("seed")
        return cls(
            kind=str(d["kind"]),
            limit=None if limit is None else int(limit),
            seed=None if seed is None else int(seed),
            groups=tuple(str(g) for g in d.get("groups", ())),
            questions_file=d.get("questions_file"),
            questions_sha256=d.get("questions_sha256"),
            questions=tuple(str(q) for q in d.get("questions", ())),
        )


def subset_label(spec: RunSpec) -> str:
    """``full`` for a run of every question, else the subset's label."""
    subset = getattr(spec, "subset", None)
    return "full" if subset is None else subset.label


@dataclass(frozen=True, slots=True)
class RunSpec:
    systems: tuple[str, ...]
    datasets: tuple[str, ...]
    k: tuple[int, ...] = DEFAULT_K
    chunking: str = "pair"
    seed: int = 0
    timeout_s: float = 60.0
    concurrency: int = 1
    system_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    dataset_options: Mapping[str, Any] = field(default_factory=dict)
    answering: AnsweringSpec | None = None
    """Memory and answer modes only; None (and absent from the dict, so the spec hash of a
    retrieval run is what it always was) in retrieval and dry modes."""
    speed: SpeedSpec | None = None
    """Speed options other than the defaults; None (absent from the dict, so the spec hash is
    what it always was) when every speed option is left at its default."""
    subset: SubsetSpec | None = None
    """The part of each dataset asked (``run --limit/--groups/--questions-from``); None (and
    absent from the dict, so the spec hash is what it always was) for a full run."""
    repeats: int = 1
    """How many times each system runs (``run --repeats N``); absent from the dict when 1."""

    @property
    def mode(self) -> str:
        return self.answering.mode if self.answering else "retrieval"

    @property
    def k_max(self) -> int:
        return max(self.k)

    def to_dict(self) -> dict[str, Any]:
        d = to_json_dict(self)
        if self.answering is None:
            del d["answering"]
        if self.speed is None:
            del d["speed"]
        if self.subset is None:
            del d["subset"]
        if self.repeats == 1:
            del d["repeats"]
        return d

    @property
    def spec_hash(self) -> str:
        return sha256_text(canonical_json(self.to_dict()))[:8]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        return cls(
            systems=tuple(d["systems"]),
            datasets=tuple(d["datasets"]),
            k=tuple(int(x) for x in d["k"]),
            chunking=str(d["chunking"]),
            seed=int(d["seed"]),
            timeout_s=float(d["timeout_s"]),
            concurrency=int(d["concurrency"]),
            system_configs=dict(d.get("system_configs", {})),
            dataset_options=dict(d.get("dataset_options", {})),
            answering=AnsweringSpec.from_dict(d["answering"]) if d.get("answering") else None,
            speed=SpeedSpec.from_dict(d["speed"]) if d.get("speed") else None,
            subset=SubsetSpec.from_dict(d["subset"]) if d.get("subset") else None,
            repeats=int(d.get("repeats", 1)),
        )


def make_run_id(spec: RunSpec, started: datetime) -> str:
    """``<UTC start time>-<spec hash>``, e.g. ``20261130T001216Z-3fa2b1c9``."""
    return f"{started.strftime('%Y%m%dT%H%M%SZ')}-{spec.spec_hash}"
