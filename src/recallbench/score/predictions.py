"""Score predictions made by anyone: a JSONL file with one object per question, read strictly.

**Shapes.** A file is in one declared :class:`PredictionFormat`: recallbench's own
(:data:`RECALLBENCH_FORMAT`: ``id``, ``answer``, ``retrieved_turns``, ``memories_returned``,
``answer_generated``, ``chars_returned``, ``latency_ms``, ``network_ms``) or one a benchmark
registers as its own submission shape (``Benchmark.prediction_formats``: LongMemEval's
``question_id`` / ``hypothesis`` lines, Glasshouse's run records). The format is the one named
(``format_name``), else the first of the accepted formats whose fields cover every field of the
file. A field outside the chosen format is refused, naming the line, the field and the accepted
names; nothing is silently ignored.

**Absent fields.** A field is absent from a line when its key is missing or null. When some
line of the file carries an answer, a line without one is scored as the empty answer (a miss,
0, in the denominator) and says so (``absent_field: ...``); only when no line carries an answer
are the answer metrics null ("no answer generated"). ``retrieved_turns`` follows the same rule:
a line without it is "nothing retrieved" (a miss) when another line has it, and retrieval is null
("reports no retrieved turn ids") only when no line has it; ``[]`` is always a miss.

**Missing questions.** A question of the dataset with no line is a miss for every field the file
carries (the empty answer, nothing retrieved, no memories) and null for the fields it never
carries; it stays in the denominator and is marked in ``--out`` (``"missing": true``). A line
whose id is not a question of the dataset, or a duplicate id, is an error.

**Turn ids.** Every retrieved turn id must name a turn of its question's haystack. Integers and
strings are the same id (Glasshouse writes ``12``, recallbench reads ``"12"``). An id naming no
turn is refused with its line, unless ``unknown_turns="warn"``: it is then scored like any other
id that is not evidence, and counted and reported. When the dataset was loaded without its
turns (Glasshouse without its corpus) the ids cannot be checked, and the notes say so.

A predictions file records no timing recallbench measured: its metric rows have no latency or
ingest rows (``latency_ms`` and ``network_ms`` are accepted, as Glasshouse's records carry them,
and kept on the observations only).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.contracts import Memory, MetricRow, Observation, Verdict
from recallbench.datasets.dataset import LoadedDataset
from recallbench.datasets.jsonl import read_jsonl
from recallbench.errors import DatasetFormatError, OptionError
from recallbench.score.aggregate import aggregate, answering_rows
from recallbench.score.rules import RuleSet, ScoringContext
from recallbench.score.scorer import Answering, score_dataset
from recallbench.score.speed import QuestionSpeed, SpeedSettings, SpeedSummary, question_speed
from recallbench.score.speed import combined as combined_speed
from recallbench.score.speed import summarise as summarise_speed

JudgeFile = Callable[[Sequence[Observation]], Answering]
"""Judges a predictions file's answers (the pipeline's, for ``score FILE --judge``)."""

PREDICTIONS_SYSTEM = "external"
"""The default system name of a predictions file's verdicts (``recallbench score --name``)."""

ANSWER = "answer"
RETRIEVED = "retrieved_turns"
MEMORIES = "memories_returned"
GENERATED = "answer_generated"
CHARS = "chars_returned"
LATENCY = "latency_ms"
NETWORK = "network_ms"
MEANINGS: tuple[str, ...] = (ANSWER, RETRIEVED, MEMORIES, GENERATED, CHARS, LATENCY, NETWORK)
"""What a field of a predictions file can mean: recallbench's own field names."""
NOT_SCORED = "not_scored"
"""The meaning of a field a benchmark's shape declares but recallbench does not score
(Glasshouse's ``prompt_tokens``): accepted, read, and left out of every figure."""

UNKNOWN_TURNS: tuple[str, ...] = ("refuse", "warn")
"""``refuse``: a retrieved turn id naming no turn is an error; ``warn``: counted and reported."""

RULE_MISSING_LINE = "missing_line"
RULE_ABSENT_FIELD = "absent_field"


@dataclass(frozen=True)
class PredictionFormat:
    """One accepted shape of a predictions line, as data.

    ``id_field`` holds the question id; ``fields`` maps every other accepted field to its
    meaning (one of :data:`MEANINGS`, each at most once, or :data:`NOT_SCORED`).
    """

    name: str
    id_field: str
    fields: Mapping[str, str]
    description: str = ""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for name, meaning in self.fields.items():
            if meaning != NOT_SCORED and meaning not in MEANINGS:
                raise ValueError(
                    f"format {self.name}: field {name!r} has no known meaning {meaning!r} "
                    f"(one of {', '.join(MEANINGS)}, or {NOT_SCORED})"
                )
            if meaning in seen and meaning != NOT_SCORED:
                raise ValueError(f"format {self.name}: two fields mean {meaning!r} (twice)")
            seen.add(meaning)
        if self.id_field in self.fields:
            raise ValueError(f"format {self.name}: {self.id_field!r} is the id field")
        object.__setattr__(self, "fields", dict(self.fields))

    def __hash__(self) -> int:
        return hash((self.name, self.id_field, tuple(self.fields.items()), self.description))

    @property
    def accepted(self) -> tuple[str, ...]:
        """Every field name a line may hold, the id field first."""
        return (self.id_field, *self.fields)

    def field_for(self, meaning: str) -> str:
        """The name this format gives the field of ``meaning`` (its own name if none does)."""
        return next((f for f, m in self.fields.items() if m == meaning), meaning)

    def canonical(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The line in recallbench's own names: ``id`` and each scored field that is not null."""
        out: dict[str, Any] = {"id": record[self.id_field]}
        for name, meaning in self.fields.items():
            if meaning != NOT_SCORED and record.get(name) is not None:
                out[meaning] = record[name]
        return out


RECALLBENCH_FORMAT = PredictionFormat(
    name="recallbench",
    id_field="id",
    fields={m: m for m in MEANINGS},
    description="recallbench's own predictions lines, docs/benchmarks.md",
)
"""The generic shape, accepted for every dataset."""


@dataclass(frozen=True)
class UnknownTurn:
    """A retrieved turn id that names no turn of its question's haystack."""

    line: int
    question_id: str
    turn_id: str


@dataclass(frozen=True)
class PredictionsScore:
    """Verdicts and metric rows of one predictions file, and what reading it found.

    ``scored_as_miss`` maps a question id to ``{field: reason}`` for every field filled in as a
    miss (absent from a line while other lines carry it); ``missing_reasons`` says why each
    question without a line was scored as it was; ``turns_checked`` is False when the dataset's
    turns were not read, so retrieved turn ids could not be checked.
    """

    run_id: str
    verdicts: tuple[Verdict, ...]
    metrics: tuple[MetricRow, ...]
    missing_ids: tuple[str, ...]
    format: PredictionFormat = RECALLBENCH_FORMAT
    system: str = PREDICTIONS_SYSTEM
    path: Path = Path()
    scored_as_miss: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    missing_reasons: Mapping[str, str] = field(default_factory=dict)
    unknown_turns: tuple[UnknownTurn, ...] = ()
    turns_checked: bool = True
    carried: tuple[str, ...] = ()
    """The fields (recallbench's names) that at least one line carries."""
    dataset_key: str = ""
    sha256: str = ""
    """The SHA-256 of the file's bytes."""
    fields_seen: tuple[str, ...] = ()
    """The fields found in the file (the format's names, in its declared order)."""
    answers_generated: int = 0
    """Observations counted as answered by an answer model (``answer_generated``)."""
    speed: Mapping[str, QuestionSpeed] = field(default_factory=dict)
    """Each question's Glasshouse speed (:mod:`recallbench.score.speed`), by question id, when
    a line of the file carries ``latency_ms``; empty otherwise."""
    speed_summary: SpeedSummary | None = None
    """The file's speed: the mean of the scored questions; None when no line carries
    ``latency_ms``."""
    speed_total: tuple[float, float, float] | None = None
    """With a speed weight (``--speed-weight``) and a measured speed: (accuracy in points of
    100, weight, accuracy + weight x speed), Glasshouse's total; the accuracy is the rule set's
    first answer figure, plain, over all questions. Shown beside the figures, never instead."""

    def notes(self) -> list[str]:
        """One line per thing a reader of the figures must know about how the file was read."""
        out: list[str] = []
        name = self.path.name or "the file"
        if self.speed_summary is not None:
            s = self.speed_summary
            out.append(
                f"speed (Glasshouse speed points, latency with one round trip removed, target "
                f"{s.target_ms:g} ms): {s.label} of {s.questions} question(s), "
                f"{s.failed} failed; not measurable: "
                + (", ".join(f"{k} {v}" for k, v in s.not_measurable.items()) or "none")
            )
        if self.speed_total is not None:
            acc, weight, total = self.speed_total
            out.append(
                f"combined (--speed-weight {weight:g}): accuracy {acc:.1f} "
                f"{total - acc:+.1f} (speed) = {total:.1f}; speed moves it by at most "
                f"{weight:g} points"
            )
        if self.missing_ids:
            out.append(
                f"{len(self.missing_ids)} question(s) of {self.dataset_key} have no line in "
                f"{name}: scored as misses"
            )
        for meaning, what in ((ANSWER, "the empty answer"), (RETRIEVED, "nothing retrieved")):
            n = sum(1 for fields in self.scored_as_miss.values() if meaning in fields)
            if n:
                out.append(
                    f"{n} line(s) have no {self.format.field_for(meaning)!r} while other lines "
                    f"do: scored as misses ({what})"
                )
        if self.unknown_turns:
            lines = len({u.line for u in self.unknown_turns})
            first = self.unknown_turns[0]
            out.append(
                f"{len(self.unknown_turns)} retrieved turn id(s) on {lines} line(s) name no turn "
                f"of {self.dataset_key} (--unknown-turns warn): scored as ids that are not "
                f"evidence; first: line {first.line}, {first.turn_id!r}"
            )
        if not self.turns_checked and RETRIEVED in self.carried:
            out.append(
                f"retrieved turn ids not checked: {self.dataset_key} was loaded without its "
                "corpus (its turns were not read), so an id naming no turn cannot be told"
            )
        return out


# ----------------------------------------------------------------------------- reading


def choose_format(
    records: Sequence[tuple[int, Mapping[str, Any]]],
    formats: Sequence[PredictionFormat],
    format_name: str | None = None,
) -> PredictionFormat:
    """The format named, else the first of ``formats`` whose fields cover every field of the
    file, else (to name what is wrong) the one that covers most of them."""
    if format_name is not None:
        for f in formats:
            if f.name == format_name:
                return f
        raise OptionError(
            f"--format {format_name!r} is not a predictions format of this dataset; choose one "
            f"of {', '.join(f.name for f in formats)}"
        )
    keys = list(dict.fromkeys(k for _, rec in records for k in rec))
    for f in formats:
        if all(k in f.accepted for k in keys):
            return f
    return max(formats, key=lambda f: sum(k in f.accepted for k in keys))


def _refuse_outside(path: Path, line: int, rec: Mapping[str, Any], fmt: PredictionFormat) -> None:
    for key in rec:
        if key not in fmt.accepted:
            raise DatasetFormatError(
                path,
                line,
                f"field {key!r} is not a field of the {fmt.name} predictions format "
                f"({fmt.description or 'declared shape'}); accepted fields: "
                f"{', '.join(fmt.accepted)} (choose another shape with --format)",
            )


def _is_number(value: Any) -> bool:
    """A finite number of at least 0 (not a boolean, not NaN or Infinity)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _check_types(path: Path, line: int, canon: Mapping[str, Any], fmt: PredictionFormat) -> None:
    def name(meaning: str) -> str:
        return fmt.field_for(meaning)

    for meaning in (RETRIEVED, MEMORIES):
        if meaning in canon and not isinstance(canon[meaning], list):
            raise DatasetFormatError(
                path, line, f"{name(meaning)} must be a list, got {type(canon[meaning]).__name__}"
            )
    for t in canon.get(RETRIEVED, ()):
        if not isinstance(t, str | int) or isinstance(t, bool):
            raise DatasetFormatError(
                path,
                line,
                f"{name(RETRIEVED)} holds {t!r}: turn ids are strings or integers",
            )
    if GENERATED in canon and not isinstance(canon[GENERATED], bool):
        raise DatasetFormatError(
            path, line, f"{name(GENERATED)} must be true or false, got {canon[GENERATED]!r}"
        )
    chars = canon.get(CHARS, 0)
    if not isinstance(chars, int) or isinstance(chars, bool) or chars < 0:
        raise DatasetFormatError(
            path, line, f"{name(CHARS)} must be an integer of at least 0, got {chars!r}"
        )
    for meaning in (LATENCY, NETWORK):
        if meaning in canon and not _is_number(canon[meaning]):
            raise DatasetFormatError(
                path,
                line,
                f"{name(meaning)} must be a number (finite, at least 0), got {canon[meaning]!r}",
            )


def _turns_by_group(dataset: LoadedDataset) -> dict[str, tuple[str, ...]]:
    return {
        g.group_id: tuple(t.turn_id for s in g.sessions for t in s.turns) for g in dataset.groups
    }


def record_to_observation(
    rec: Mapping[str, Any],
    dataset: LoadedDataset,
    run_id: str,
    group: str,
    k: int,
    system: str = PREDICTIONS_SYSTEM,
    outcome_reason: str | None = None,
) -> Observation:
    """One line in recallbench's own field names as an observation of ``system``."""
    retrieved = rec.get(RETRIEVED)
    texts = rec.get(MEMORIES)
    memories: list[Memory] = []
    if retrieved is not None:
        memories = [Memory(id=str(t), text="", source_turns=(str(t),)) for t in retrieved]
    if texts is not None:
        texts = [str(t) for t in texts]
        if retrieved is None:
            memories = [Memory(id=f"m{i}", text=t, source_turns=None) for i, t in enumerate(texts)]
        elif len(texts) == len(memories):  # one text per retrieved turn: keep the texts too
            memories = [
                Memory(id=m.id, text=t, source_turns=m.source_turns)
                for m, t in zip(memories, texts, strict=True)
            ]
    answer = rec.get(ANSWER)
    answer = None if answer is None else str(answer)
    chars = rec.get(CHARS)
    if chars is None:
        chars = sum(len(t) for t in texts) if texts else sum(len(m.text) for m in memories)
    returned_something = bool(memories) or bool(texts)
    latency = rec.get(LATENCY)
    return Observation(
        run_id=run_id,
        dataset=dataset.key,
        dataset_version=dataset.version_label,
        group=group,
        question_id=str(rec["id"]),
        system=system,
        k=k,
        attempt=1,
        observed_at="",
        latency_ms=None if latency is None else float(latency),
        memories=tuple(memories),
        chars_returned=int(chars),
        outcome="usable" if returned_something or (answer or "").strip() else "unusable",
        outcome_reason=outcome_reason,
        network_ms=rec.get(NETWORK),
        answer=answer,
        answer_generated=bool(rec.get(GENERATED, answer is not None)),
        retrieval_reported=retrieved is not None or texts is not None,
    )


def _check_unknown_turns(
    path: Path,
    dataset: LoadedDataset,
    parsed: Sequence[tuple[int, dict[str, Any]]],
    groups: Mapping[str, str],
    fmt: PredictionFormat,
    unknown_turns: str,
) -> tuple[tuple[UnknownTurn, ...], bool]:
    """Refuse (or collect) retrieved turn ids naming no turn; False when none can be checked."""
    turns = _turns_by_group(dataset)
    if not any(turns.values()):
        return (), False
    known = {g: frozenset(ids) for g, ids in turns.items()}
    found: list[UnknownTurn] = []
    for line, canon in parsed:
        qid = str(canon["id"])
        group = groups[qid]
        for t in canon.get(RETRIEVED, ()):
            if str(t) in known.get(group, frozenset()):
                continue
            if unknown_turns == "warn":
                found.append(UnknownTurn(line, qid, str(t)))
                continue
            where = dataset.key if len(turns) == 1 else f"{dataset.key} haystack {group!r}"
            example = next(iter(turns.get(group) or ()), None)
            looks = f"; its turn ids look like {example!r}" if example is not None else ""
            raise DatasetFormatError(
                path,
                line,
                f"{fmt.field_for(RETRIEVED)}: turn id {str(t)!r} (question {qid!r}) names no "
                f"turn of {where}{looks}; pass --unknown-turns warn to score it as an id that "
                "is not evidence",
            )
    return tuple(found), True


def score_observations(
    dataset: LoadedDataset,
    observations: Sequence[Observation],
    ks: Sequence[int],
    rules: RuleSet,
    mode: str | None,
    system: str,
    run_id: str,
    intervals: bool = True,
    judged: JudgeFile | None = None,
) -> tuple[list[Verdict], list[MetricRow]]:
    """Verdicts and metric rows of observations made from predictions lines (no timing rows:
    a predictions file records no timing recallbench measured). Also the path of the controls.

    ``judged`` (``score FILE --judge``): called with the observations, it judges their answers
    and returns what the scorer needs (:class:`~recallbench.score.scorer.Answering`); the judge
    figures and accounting rows then join the verdicts and rows, which state mode ``answer``."""
    context = ScoringContext(predictions=True, mode=mode, turn_chars=dataset.turn_chars)
    systems = (system,)
    answering = judged(observations) if judged is not None else None
    verdicts, _ = score_dataset(
        dataset, observations, ks, systems, rules, context, answering=answering
    )
    metrics = aggregate(
        dataset,
        verdicts,
        observations,
        [],
        systems,
        run_id,
        rules.weighted_metrics,
        timing=False,
        intervals=intervals,
    )
    if answering is not None:
        metrics.extend(answering_rows(dataset, verdicts, systems, run_id))
        metrics = [
            dataclasses.replace(r, mode=answering.mode, non_standard=answering.non_standard)
            for r in metrics
        ]
    return verdicts, metrics


def score_predictions(
    path: Path,
    dataset: LoadedDataset,
    ks: Sequence[int],
    rules: RuleSet,
    mode: str | None = None,
    *,
    formats: Sequence[PredictionFormat] = (RECALLBENCH_FORMAT,),
    format_name: str | None = None,
    system: str = PREDICTIONS_SYSTEM,
    unknown_turns: str = "refuse",
    judged: JudgeFile | None = None,
    speed: SpeedSettings | None = None,
) -> PredictionsScore:
    """Verdicts and metric rows for a predictions file, scored by the dataset's ``rules``.

    When any line carries ``latency_ms``, every question also gets its Glasshouse speed under
    ``speed`` (default :class:`SpeedSettings`: target 500 ms, no code decided before
    measuring): a question without a line counts as a failed search, a line without
    ``latency_ms`` is N5, and ``network_ms`` is the round trip subtracted.

    ``formats`` are the shapes accepted for the dataset (its benchmark's own, then recallbench's),
    ``format_name`` picks one (else it is detected from the fields); ``system`` names the system
    in the verdicts and metric rows; ``unknown_turns`` is ``refuse`` or ``warn``. Raises a
    :class:`DatasetFormatError` naming the line for any line it cannot score as written.
    """
    if unknown_turns not in UNKNOWN_TURNS:
        raise OptionError(
            f"--unknown-turns must be one of {', '.join(UNKNOWN_TURNS)}, got {unknown_turns!r}"
        )
    if not system.strip():
        raise OptionError("--name must name the system (got an empty name)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    run_id = f"external-{digest[:12]}"
    groups = {q.id: q.group for q in dataset.questions}
    records = list(read_jsonl(path))
    fmt = choose_format(records, formats, format_name)
    parsed: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    for line, rec in records:
        _refuse_outside(path, line, rec, fmt)
        if rec.get(fmt.id_field) is None:
            raise DatasetFormatError(path, line, f"missing field {fmt.id_field!r}")
        canon = fmt.canonical(rec)
        qid = str(canon["id"])
        if qid not in groups:
            raise DatasetFormatError(path, line, f"id {qid!r} is not a question of {dataset.key}")
        if qid in seen:
            raise DatasetFormatError(path, line, f"duplicate id {qid!r}")
        _check_types(path, line, canon, fmt)
        seen.add(qid)
        parsed.append((line, canon))
    unknown, checked = _check_unknown_turns(path, dataset, parsed, groups, fmt, unknown_turns)
    carried = tuple(m for m in MEANINGS if any(m in canon for _, canon in parsed))
    counts = {m: sum(1 for _, canon in parsed if m in canon) for m in (ANSWER, RETRIEVED)}
    fills = {ANSWER: "the empty answer", RETRIEVED: "nothing retrieved"}
    k = max(ks)
    observations: list[Observation] = []
    as_miss: dict[str, dict[str, str]] = {}
    for line, canon in parsed:
        qid = str(canon["id"])
        for meaning, what in fills.items():
            if meaning in carried and meaning not in canon:
                canon[meaning] = "" if meaning == ANSWER else []
                as_miss.setdefault(qid, {})[meaning] = (
                    f"{RULE_ABSENT_FIELD}: line {line} has no {fmt.field_for(meaning)!r} while "
                    f"{counts[meaning]} line(s) of the file do: scored as a miss ({what})"
                )
        reason = "; ".join(as_miss[qid].values()) if qid in as_miss else None
        observations.append(
            record_to_observation(canon, dataset, run_id, groups[qid], k, system, reason)
        )
    missing = tuple(q.id for q in dataset.questions if q.id not in seen)
    filled = [what for m, what in fills.items() if m in carried]
    if MEMORIES in carried:
        filled.append("no memories")
    missing_reason = f"{RULE_MISSING_LINE}: {path.name} has no line for this question: " + (
        f"scored as a miss ({', '.join(filled)})"
        if filled
        else "nothing to score (no line of the file carries an answer or retrieved turns)"
    )
    for qid in missing:  # an unanswered question is a miss, never dropped
        rec: dict[str, Any] = {"id": qid}
        if ANSWER in carried:
            rec[ANSWER] = ""
        if RETRIEVED in carried:
            rec[RETRIEVED] = []
        if MEMORIES in carried:
            rec[MEMORIES] = []
        observations.append(
            record_to_observation(rec, dataset, run_id, groups[qid], k, system, missing_reason)
        )
    verdicts, metrics = score_observations(
        dataset, observations, ks, rules, mode, system, run_id, judged=judged
    )
    speeds: dict[str, QuestionSpeed] = {}
    summary = None
    if LATENCY in carried:
        settings = speed or SpeedSettings()
        target = settings.target_ms
        for o in observations:
            speeds[o.question_id] = question_speed(
                o.latency_ms,
                o.network_ms,
                target,
                failed=o.question_id in missing,
                flags=o.flags,
                before=settings.before,
            )
        summary = summarise_speed(speeds.values(), target)
    total = None
    if summary is not None and speed is not None and speed.weight is not None:
        total = _speed_total(metrics, rules, summary, speed.weight)
    return PredictionsScore(
        run_id=run_id,
        verdicts=tuple(verdicts),
        metrics=tuple(metrics),
        missing_ids=missing,
        format=fmt,
        system=system,
        path=path,
        scored_as_miss=as_miss,
        missing_reasons=dict.fromkeys(missing, missing_reason),
        unknown_turns=unknown,
        turns_checked=checked,
        carried=carried,
        dataset_key=dataset.key,
        sha256=digest,
        fields_seen=tuple(f for f in fmt.accepted if any(f in rec for _, rec in records)),
        answers_generated=sum(1 for o in observations if o.answer_generated),
        speed=speeds,
        speed_summary=summary,
        speed_total=total,
    )


def _speed_total(
    metrics: Sequence[MetricRow], rules: RuleSet, summary: SpeedSummary, weight: float
) -> tuple[float, float, float] | None:
    """(accuracy, weight, Glasshouse's total) from the first answer figure's plain row over
    all questions; None when there is no such figure, row value or measured speed."""
    if not rules.answer_figures or summary.score is None:
        return None
    name = rules.answer_figures[0].metric
    row = next(
        (r for r in metrics if r.metric == name and r.k is None and r.slice == "all"), None
    )
    if row is None or row.value is None:
        return None
    accuracy = 100.0 * row.value
    total = combined_speed(accuracy, summary.score, weight)
    return None if total is None else (accuracy, weight, total)


def per_question_lines(
    result: PredictionsScore, dataset: LoadedDataset, rules: RuleSet
) -> list[dict[str, Any]]:
    """One JSON object per question for ``--out``, shaped by the rule set; a question with no
    line adds ``"missing": true`` and ``"missing_reason"``, and a line with a field scored as a
    miss adds ``"scored_as_miss": {field: reason}``. When the file carries ``latency_ms``, every
    line also carries ``"speed"`` (the question's speed points, null when not measurable) and,
    when null, ``"speed_null_reason"`` (``rule: explanation``)."""
    questions = {q.id: q for q in dataset.questions}
    out = []
    for v in result.verdicts:
        line = rules.prediction_line(questions[v.question_id], v)
        if v.question_id in result.missing_reasons:
            line["missing"] = True
            line["missing_reason"] = result.missing_reasons[v.question_id]
        elif v.question_id in result.scored_as_miss:
            line["scored_as_miss"] = dict(result.scored_as_miss[v.question_id])
        if result.speed:
            speed = result.speed[v.question_id]
            line["speed"] = speed.points
            if speed.points is None:
                line["speed_null_reason"] = speed.reason
        out.append(line)
    return out
