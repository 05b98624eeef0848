"""Frozen record types shared by every layer of recallbench.

Dataset loaders produce :class:`Turn`, :class:`Session` and :class:`Question`; the runner hands
systems :class:`Session` objects made of harness-chosen :class:`Chunk` ingest units and receives
:class:`Memory` lists; it writes :class:`Observation` records. The scorer turns observations into
:class:`Verdict` records, and aggregation turns verdicts into :class:`MetricRow` records. A rule
set names its answer figures with :class:`AnswerFigure` (what the do-nothing controls report).

Every record serialises to plain JSON with :func:`to_json_dict` and back with the module-level
``*_from_dict`` function named after it.
``FORMAT_VERSION`` is bumped whenever a field changes meaning; readers accept older versions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

FORMAT_VERSION = "4"
"""Version of the results folder format; ``run.json`` records it and readers check it."""

ALL = "all"
"""The slice label of a figure over every question (and the group id of a single haystack)."""

Outcome = Literal["usable", "unusable", "error"]
"""usable: memories came back; unusable: the search returned nothing; error: exception/timeout."""

IngestOutcome = Literal["usable", "partial", "error"]
"""usable: every call of the group's ingest returned; partial: some ``add`` (or ``finish_ingest``)
raised, the rest went in and the group's searches still ran; error: nothing usable went in
(``reset`` raised, the system could not be built, or a call timed out and the instance was
quarantined). ``partial`` was added within format "2": readers only compare the value."""

OMIT_EMPTY = "omit_empty"
"""Field metadata key: :func:`to_json_dict` leaves the field out while its value is empty, so a
field added for rare cases (``flags``) does not change the bytes of records without it."""

OMIT_DEFAULT = "omit_default"
"""Field metadata key: :func:`to_json_dict` leaves the field out while it holds its default
(``repeat`` 0), so a field added for repeated runs does not change the bytes of a single run."""

HaystackKind = Literal["global", "conversation", "question"]



@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, with neutral fields only.

    Nothing here tells story from filler or marks evidence: loaders drop every such field.
    """

    turn_id: str
    session_id: str
    speaker: str
    text: str
    date: str | None = None
    image: str | None = None


@dataclass(frozen=True, slots=True)
class Chunk:
    """An ingest unit chosen by the harness (a turn, a user/assistant pair, or a session)."""

    chunk_id: str
    session_id: str
    date: str | None
    turns: tuple[Turn, ...]

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(t.turn_id for t in self.turns)

    @property
    def text(self) -> str:
        """The chunk as plain text: one ``speaker: text`` line per turn."""
        return "\n".join(f"{t.speaker}: {t.text}" for t in self.turns)

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(t.image for t in self.turns if t.image)


@dataclass(frozen=True, slots=True)
class Session:
    """A dated conversation session as handed to ``System.add``.

    ``turns`` are the raw messages; ``chunks`` the harness's ingest units over them. A system may
    store either, but retrieval is scored through the turn ids a memory says it came from.
    """

    session_id: str
    date: str | None
    turns: tuple[Turn, ...]
    chunks: tuple[Chunk, ...] = ()


@dataclass(frozen=True, slots=True)
class Question:
    """One benchmark question with its gold labels. Never handed to a system: only ``text`` is.

    ``evidence_turns`` is ``None`` when the evidence is unknown (retrieval then scores null with
    ``evidence_unknown_reason``) and ``()`` when the question has no evidence by design
    (abstention kinds).
    """

    id: str
    dataset: str
    group: str
    text: str
    gold: str | None
    alternates: tuple[str, ...] = ()
    expect: str = "answer"
    evidence_turns: tuple[str, ...] | None = ()
    evidence_sessions: tuple[str, ...] = ()
    axis: str = ""
    weight: float = 1.0
    lang: str = "en"
    evidence_unknown_reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """SHA-256 of the question's canonical JSON (lm-evaluation-harness style sample hash)."""
        return sha256_text(canonical_json(to_json_dict(self)))[:16]


@dataclass(frozen=True, slots=True)
class Memory:
    """What ``System.search`` returns. ``source_turns`` is ``None`` when the system cannot say
    which dataset turns a memory came from; retrieval metrics are then null, never 0.
    ``score`` is the system's own relevance score: recorded, never used for scoring."""

    id: str
    text: str
    source_turns: tuple[str, ...] | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What came back from one search, how long it took and how big it was. No scores."""

    run_id: str
    dataset: str
    dataset_version: str
    group: str
    question_id: str
    system: str
    k: int
    attempt: int
    observed_at: str
    latency_ms: float | None
    memories: tuple[Memory, ...]
    chars_returned: int
    outcome: Outcome
    outcome_reason: str | None = None
    network_ms: float | None = None
    query_sha256: str = ""
    answer: str | None = None
    answer_generated: bool = False
    retrieval_reported: bool = True
    """False when a prediction file gave no retrieved ids: retrieval is then null, not 0."""
    flags: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """What the harness noticed about a usable result, each ``rule: explanation`` (rule
    ``source_text_absent``: a raw-text system's memory contains none of its claimed turns;
    rule ``queued``: the clock of this call includes queueing, ``queued: saw HTTP 429``,
    ``queued: saw Retry-After`` or ``queued: overlapped another call to HOST:PORT``, Glasshouse's
    N8); copied to the verdict, except the ``queued`` ones (timing facts, which differ between
two runs of the same spec). Left out of the JSON when empty."""
    retries: tuple[Mapping[str, Any], ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """Every try of a search that took more than one (``attempt``, ``status``, ``error``,
    ``wait_s``, ``latency_ms``), as the system reported them (``last_attempts()``, e.g. the
    ``http`` system); ``attempt`` is then the number of tries. Left out of the JSON when empty."""
    latency_minus_rtt_ms: float | None = field(default=None, metadata={OMIT_EMPTY: True})
    """Latency with one round trip removed: ``latency_ms - network_ms``, when the run was given
    a network file for the host this system calls (``run --network``); may be below zero (a
    round trip measured longer than this call). Not compute time: it still holds the server's
    HTTP stack, serialisation and anything else on the path. Left out of the JSON when None."""
    response_bytes: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    """Bytes of the reply body the system read for this search (``last_call_info()``, e.g.
    the ``http`` system); left out of the JSON when the system does not say."""
    speed_sample: bool | None = field(default=None, metadata={OMIT_EMPTY: True})
    """True when the question is in the run's speed sample (``run --speed-sample N``): its
    search ran alone, with no other call of the system running, after the rest of its group's
    searches; with a sample, only these are scored for speed. None otherwise, and then left
    out of the JSON."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """Which run of the system this is (``run --repeats N``: 0 to N-1); part of the key of
    an observation with ``dataset``, ``system`` and ``question_id``. Left out of the JSON when
    0, so a single run's bytes are as before (records of format 3 read as repeat 0)."""


@dataclass(frozen=True, slots=True)
class IngestRecord:
    """Timing of one haystack group's ingest for one system."""

    run_id: str
    dataset: str
    group: str
    system: str
    sessions: int
    chunks: int
    turns: int
    ingest_ms: float | None
    outcome: IngestOutcome
    outcome_reason: str | None = None
    finish_ms: float | None = None
    """Time of the system's ``finish_ingest`` hook (counted inside ``ingest_ms``); None when the
    system declares no such hook (and in results of format 1, which predate it)."""
    retries: tuple[Mapping[str, Any], ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """Every try of the group's calls that took more than one, each with ``call`` (``reset``,
    ``add of session <id>``, ``finish_ingest``) beside the fields of
    :attr:`Observation.retries`. Left out of the JSON when empty."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """As :attr:`Observation.repeat`: each repeat ingests the group again."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The scorer's per-question result. Holds no wall-clock time of its own."""

    run_id: str
    dataset: str
    dataset_version: str
    system: str
    question_id: str
    slice: str
    outcome: Outcome
    outcome_reason: str | None
    n_returned: int
    chars_returned: int
    metrics: Mapping[str, float | None]
    null_reasons: Mapping[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """The observation's flags (``rule: explanation``), unchanged; left out of the JSON when
    empty."""
    mode: str = "retrieval"
    """The run's mode (``retrieval``, ``dry``, ``memory``, ``answer``)."""
    answering: Mapping[str, Any] = field(default_factory=dict, metadata={OMIT_EMPTY: True})
    """In memory and answer modes: mode, condition, instrument, reader, judge, prompt hashes,
    token counts, cost, cache hits and the non-standard labels of this question's answer and
    judgements; left out of the JSON in retrieval mode."""
    dataset_sha256: str = field(default="", metadata={OMIT_EMPTY: True})
    """The dataset checksum (:attr:`MetricRow.dataset_sha256`), stamped when the run is
    scored (format 4); left out of the JSON when unknown (verdicts of format 3 and older)."""
    run_date: str = field(default="", metadata={OMIT_EMPTY: True})
    """When the run started (``run.json``'s ``started_at``, RFC 3339 with offset): the run's
    date, the same on every re-scoring, never the time of scoring. Left out when unknown (a
    predictions file, verdicts of format 3 and older)."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """The observation's repeat (left out of the JSON when 0)."""


AnswerOutcome = Literal["answered", "reader_error", "miss"]
JudgementOutcome = Literal["judged", "judge_error", "not_judged", "miss"]


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """What the reader wrote for one question of one system (``answers.jsonl``).

    ``outcome``: ``answered``; ``reader_error`` (a reader call failed after its retries:
    ``error`` says why; the question's answer figures are null, out of the denominator);
    ``miss`` (the search failed, so no reader ran: the answer figures are 0). Token counts are
    the API's own ``usage`` fields summed over the calls (None when any call gave none);
    ``memory_tokens`` is ``prompt_tokens`` minus the empty-prompt baseline (None when not
    measured); ``memory_chars`` the characters of the memories the reader was given.
    """

    run_id: str
    dataset: str
    system: str
    question_id: str
    mode: str
    condition: str
    instrument: str
    reader: str
    reader_preset: str | None
    sample: int
    outcome: AnswerOutcome
    answer: str | None
    reply: str | None
    error: str | None
    prompt_sha256: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    memory_tokens: int | None
    memory_chars: int
    calls: int
    cached_calls: int
    attempts: int
    billed_usd: float | None
    latency_ms: float | None
    notes: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    retries: tuple[Mapping[str, Any], ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """Every try of the calls that needed more than one (call purpose, attempt, HTTP status,
    error, wait before the next try); left out when every call succeeded at once."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """The observation's repeat (left out of the JSON when 0); ``sample``, the response
    cache's sample index, equals it, so each repeat gets its own samples."""


@dataclass(frozen=True, slots=True)
class JudgementRecord:
    """One judged figure of one question (``judgements.jsonl``), keyed by judge and metric, so
    one run can hold the judgements of several judges.

    ``outcome``: ``judged`` (``value`` parsed the official way; ``unparsed`` when the official
    parser found no verdict and applied its default); ``judge_error`` (transport failure or
    empty body after the official retries: ``value`` None, out of the denominator);
    ``not_judged`` (the protocol does not judge this question: ``error`` holds the rule);
    ``miss`` (the search or the answer failed as a miss: ``value`` 0, no judge call).
    """

    run_id: str
    dataset: str
    system: str
    question_id: str
    mode: str
    condition: str
    instrument: str
    judge: str
    reader: str | None
    metric: str
    sample: int
    outcome: JudgementOutcome
    value: float | None
    unparsed: bool
    reply: str | None
    error: str | None
    prompt_sha256: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    calls: int
    cached_calls: int
    attempts: int
    billed_usd: float | None
    latency_ms: float | None
    retries: tuple[Mapping[str, Any], ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """As :attr:`AnswerRecord.retries`."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """As :attr:`AnswerRecord.repeat`."""


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One aggregate figure in long format; it always carries its denominator."""

    run_id: str
    dataset: str
    dataset_version: str
    dataset_sha256: str
    """The dataset checksum: one SHA-256 over the ``name sha256`` lines of every file read
    (:func:`recallbench.datasets.dataset.files_checksum`), not the SHA-256 of any one file;
    each file's own SHA-256 is in ``run.json`` (``datasets[].files``) and the card."""
    system: str
    slice: str
    metric: str
    k: int | None
    value: float | None
    denominator_name: str
    denominator: int
    n_excluded: int
    exclusion_rule: str | None = None
    null_reason: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    mode: str = "retrieval"
    """The run's mode: ``retrieval``, ``dry``, ``memory`` or ``answer`` (rows of results
    written before format 3 read as ``retrieval``)."""
    non_standard: tuple[str, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    """Why the row is not the benchmark's standard score (``not a Glasshouse v0.1 score:
    reader X``); left out when it is."""
    ci_unit: str | None = field(default=None, metadata={OMIT_EMPTY: True})
    """What the bootstrap behind ``ci_low``/``ci_high`` resampled: ``groups`` (haystack groups,
    a dataset of at least 20) or ``questions by slice`` (questions, stratified by slice);
    left out of the JSON when the row has no interval (:mod:`recallbench.score.stats`)."""
    ci_iterations: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    """Bootstrap draws of the interval; left out when there is none."""
    ci_seed: int | None = field(default=None, metadata={OMIT_EMPTY: True})
    """Seed of the interval's draws; left out when there is none."""
    run_date: str = field(default="", metadata={OMIT_EMPTY: True})
    """As :attr:`Verdict.run_date`: the run's start (RFC 3339), stamped when the run is scored
    (format 4); left out when unknown (a predictions file, rows of format 3 and older)."""
    repeat: int = field(default=0, metadata={OMIT_DEFAULT: True})
    """The repeat whose verdicts the row aggregates (``run --repeats N``); left out of the
    JSON when 0. Rows over every repeat (``:repeat_mean`` ...) hold 0 too: their metric name
    says they are."""


@dataclass(frozen=True, slots=True)
class AnswerFigure:
    """A figure that scores an answer, as the do-nothing controls report it.

    ``metric`` is a metric key as written in ``metrics.jsonl`` rows (``name`` or
    ``name:variant``, e.g. ``gh_dry:weighted``), ``label`` how tables name it; with
    ``per_slice`` false the figure is shown over all questions only (LoCoMo's 1-4 figure, whose
    per-category values repeat ``f1``).
    """

    metric: str
    label: str
    per_slice: bool = True


@dataclass(frozen=True, slots=True)
class RulesSource:
    """Where a benchmark publishes the scoring its rule set follows: a repository (``owner/name``
    on GitHub), the commit read, and the files that define the scoring there. ``note`` says
    anything else needed to find them (a branch other than the default, say)."""

    repository: str
    commit: str
    files: tuple[str, ...]
    note: str = ""

    def describe(self) -> str:
        """``owner/name file, file at commit C`` (and the note), as reports print it."""
        where = f"{self.repository} {', '.join(self.files)} at commit {self.commit}"
        return f"{where}, {self.note}" if self.note else where


@dataclass(frozen=True, slots=True)
class AppliedRules:
    """The rules a scoring applied to one dataset: the rule set's name, the official source it
    follows (None when no benchmark publishes a scorer for the dataset) and the known
    deviations from that source, each one sentence."""

    scoring: str
    source: RulesSource | None
    deviations: tuple[str, ...] = ()

    def lines(self, dataset_key: str) -> list[str]:
        """Plain-text lines naming the rules: the source, then one line per deviation."""
        if self.source is None:
            head = (
                f"rules for {dataset_key}: {self.scoring} (recallbench's own metrics; no "
                "benchmark scorer is published for this dataset)"
            )
        else:
            head = (
                f"rules for {dataset_key}: {self.scoring}, following {self.source.describe()} "
                "(reimplemented, no code copied)"
            )
        if self.source is not None and not self.deviations:
            return [head, "  deviations: none known"]
        return [head, *(f"  deviation: {d}" for d in self.deviations)]


def _is_empty(value: Any) -> bool:
    """None, or an empty string, tuple, list or mapping (0 and False are values, not empty)."""
    if value is None:
        return True
    return isinstance(value, str | tuple | list | Mapping) and len(value) == 0


def to_json_dict(record: Any) -> Any:
    """Plain JSON-able structure for a record (dataclasses, tuples, mappings, scalars)."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {
            f.name: to_json_dict(getattr(record, f.name))
            for f in dataclasses.fields(record)
            if not (f.metadata.get(OMIT_EMPTY) and _is_empty(getattr(record, f.name)))
            and not (f.metadata.get(OMIT_DEFAULT) and getattr(record, f.name) == f.default)
        }
    if isinstance(record, Mapping):
        return {str(k): to_json_dict(v) for k, v in record.items()}
    if isinstance(record, list | tuple):
        return [to_json_dict(v) for v in record]
    return record


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def memory_from_dict(d: Mapping[str, Any]) -> Memory:
    st = d.get("source_turns")
    return Memory(
        id=str(d["id"]),
        text=str(d.get("text", "")),
        source_turns=None if st is None else tuple(str(x) for x in st),
        score=d.get("score"),
    )


def observation_from_dict(d: Mapping[str, Any]) -> Observation:
    fields = {f.name for f in dataclasses.fields(Observation)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["memories"] = tuple(memory_from_dict(m) for m in d.get("memories", ()))
    kw["flags"] = tuple(d.get("flags", ()))
    kw["retries"] = tuple(d.get("retries", ()))
    return Observation(**kw)


def ingest_from_dict(d: Mapping[str, Any]) -> IngestRecord:
    fields = {f.name for f in dataclasses.fields(IngestRecord)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["retries"] = tuple(d.get("retries", ()))
    return IngestRecord(**kw)


def verdict_from_dict(d: Mapping[str, Any]) -> Verdict:
    fields = {f.name for f in dataclasses.fields(Verdict)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["flags"] = tuple(d.get("flags", ()))
    return Verdict(**kw)


def metric_row_from_dict(d: Mapping[str, Any]) -> MetricRow:
    fields = {f.name for f in dataclasses.fields(MetricRow)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["non_standard"] = tuple(d.get("non_standard", ()))
    return MetricRow(**kw)


def answer_from_dict(d: Mapping[str, Any]) -> AnswerRecord:
    fields = {f.name for f in dataclasses.fields(AnswerRecord)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["notes"] = tuple(d.get("notes", ()))
    kw["retries"] = tuple(d.get("retries", ()))
    return AnswerRecord(**kw)


def judgement_from_dict(d: Mapping[str, Any]) -> JudgementRecord:
    fields = {f.name for f in dataclasses.fields(JudgementRecord)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["retries"] = tuple(d.get("retries", ()))
    return JudgementRecord(**kw)
