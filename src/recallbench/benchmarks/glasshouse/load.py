"""``glasshouse-v0.1``: Glasshouse v0.1 (Apache-2.0, Copyright 2026 Wontopos), loaded faithfully.

One synthetic life over 17 months told in four nested haystack tiers (``core`` 1,882 turns,
``small`` 7,186, ``medium`` 12,884, ``full`` 103,572; the 1,882 story turns are the same in every
tier and what grows is filler), 17 scoring axes with weights, 800 cross-language questions and
500 false-memory probes. Files come from github.com/wontopos/glasshouse at a fixed commit,
folder ``glasshouse-v0.1/``, and are verified against the SHA-256 of its ``HASHES.json``.

Variants are the tiers (default ``core``). Options:

- ``questions``: ``tier`` (default: the tier's own ``questions_<tier>.jsonl``), ``xling``
  (``questions_xling.jsonl``, small or larger) or ``probes`` (``glasshouse_v0.1_probes.jsonl``);
  a tier name is accepted only for the chosen tier (``turn_id`` restarts in every tier, so a
  question file of another tier is refused; its evidence ids are also checked against the corpus);
- ``image_mode``: ``native`` (image references kept on the turns; the runner hands them only to
  systems that accept images, and :func:`image_files` then resolves the files), ``caption``
  (needs ``caption_model``; the photographs are described in the turn text from
  ``captions/<model>.jsonl``) or ``skip`` (no image to anyone);
- scoring a predictions file (``predictions=True``): the corpus is then optional, and when
  present its turn lengths go to ``LoadedDataset.turn_chars`` for the character checks.

Hygiene: a system gets turns with turn id, session id, speaker, text, date and image only (the
corpus fields ``kind``, ``category``, ``src_turn``, ``core_session``, ``lang``, ``image_no`` stay
here). Each question is asked by its text alone: ``XLING_QUERY`` rows in ``question`` (their
``query_lang``), every other row in ``question_en``. The raw row is kept as gold-side
``Question.extra`` for the scorer (:mod:`recallbench.benchmarks.glasshouse.metrics`).
``evidence_turns`` is used; ``evidence_sessions`` (the story's own session numbers) is never
used as corpus sessions.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallbench.benchmarks.glasshouse.metrics import AXIS_WEIGHTS
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.contracts import Question, Session, Turn
from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    FileRecord,
    FileSpec,
    HaystackGroup,
    LoadedDataset,
    check_image_mode,
)
from recallbench.datasets.fetch import ensure_file, sha256_file
from recallbench.datasets.jsonl import read_jsonl, require
from recallbench.errors import (
    ChecksumMismatchError,
    DataFileError,
    DatasetFormatError,
    OptionError,
)

NAME = "glasshouse-v0.1"
COMMIT = "2eeb19eaa587dfa9685a9bdcaec6a9a397a8c109"
VERSION = f"0.1-{COMMIT[:7]}"
REPOSITORY = "https://github.com/wontopos/glasshouse"
BASE_URL = f"https://raw.githubusercontent.com/wontopos/glasshouse/{COMMIT}/glasshouse-v0.1/"
TIERS: tuple[str, ...] = ("core", "small", "medium", "full")
TIER_TURNS: dict[str, int] = {"core": 1882, "small": 7186, "medium": 12884, "full": 103572}
QUESTION_SETS: tuple[str, ...] = ("tier", "xling", "probes")
XLING_FILE = "questions_xling.jsonl"
PROBES_FILE = "glasshouse_v0.1_probes.jsonl"
GROUP = "all"
STORY_MISMATCH_TOLERANCE = 0.02
"""Share of evidence turns allowed to sit outside their question's story sessions before the
question file is refused as belonging to another tier (the published files have 1 in 2,332)."""

# SHA-256 of every published file, as in the repository's HASHES.json at COMMIT.
HASHES: dict[str, str] = {
    "glasshouse_v0.1_core.jsonl": (
        "77161944faf03f10c5764ee653f2fbc7f62c47d951d12674c83b6be8ad01560f"
    ),
    "glasshouse_v0.1_small.jsonl": (
        "08a5029f6d8df955da64f7882207fec47474e0282a8ab1cb752ff0d90500490f"
    ),
    "glasshouse_v0.1_medium.jsonl": (
        "ee1240a9b608818543cb6147fa05019b9b5523e4cafd3d3a7c4fa90c44fbd74a"
    ),
    "glasshouse_v0.1_full.jsonl": (
        "87ae8339dbfe290f7936919202ce9536c856bbb2d9aff25d23d51d3e97a9dfcf"
    ),
    "questions_core.jsonl": "019a19f6dffb54daa6fc9bc598b398e2009a7c8dd7b63844adb2fbc3069d59db",
    "questions_small.jsonl": "32481ecf45ac38e8f1ca5fbf83cb8a99d930b85d2f3f4590538c2a7d352dace8",
    "questions_medium.jsonl": "19308510cd70c590707463e0638a4e8a7a8aff22dd067a8c927e236ab2b5974a",
    "questions_full.jsonl": "d2b4c2fb82ab7cb8997e44c290361e9e373a379ba24a536de4b201fb57ff22d3",
    "questions_xling.jsonl": "9a4de90996bbd0a941ae44fb4fb0932ab859edd383e5c33e29c6286a6ad0f734",
    "glasshouse_v0.1_probes.jsonl": (
        "3e799a0294fbfccc22c1cc86e0b80447bf24f2f12faa10db7949ae01c788a7af"
    ),
    "img/img01.png": "3bcfab9af51b68d3a67e05263391bb0ffc7e0e25db1709bbeaee81525bb329bf",
    "img/img02.png": "3ad3eb6e4b27793be0f6453fd1c42d15102eee45b6b8e346e508250588ad3dbb",
    "img/img03.png": "424e4d6dc16f9d6f0755f67029586e71aeb35483c70bcaace62d6415683adf11",
    "img/img04.png": "f8fab5459c7ae58de7f6741aa6295ff3f77ee72fe8f7792192c635bc4eb0c25c",
    "img/img05.png": "737682db25efa75dcd629ceae57aa3ffc4dac0351a0b2be13e0a5be494b14916",
    "img/img06.png": "1654671d4c9d6c12befab022caddcee2ec8fd91618c67ae9843526cd7bdb8a54",
    "img/img07.png": "f2072a8099734a05abffbbaf6ae63ec13ed7d5f40b5568c182b110a7db9e48b8",
    "img/img08.png": "721aeaee9e97fff8342f5de07fdbf7efd88c834bbdbb774352ca65447413e207",
    "img/img09.png": "02a452fff04b84fc8c10658a73ff932a607a9de371d49f09f0394aea416cc484",
    "img/img10.png": "66c5d29a7095b4f8c45ad452138d9c591acb6c3ec58c1690a4c45efe611ce5cb",
    "img/img11.png": "f2c81ea980b1e363e9d6c94db49eea9d85ebc493cfb6e7faa2b39939319f19ad",
    "img/img12.png": "e9e8bdcd8602fb745cfbbd0d8c92663951c0c954ab506648679caaf58a294b00",
    "img/img13.png": "b3c8a97d7ce49e01fa66b78fd2301f394f7c2556a56dbb84f91d22b0f77f51da",
    "img/img14.png": "2b1255f648cc5abbe0fc77b08a466b8386c675d874efdba63816ff25bcf8566a",
    "img/img15.png": "8b57447bbd4395de92b764855717020c0f9da632105a94f9eee2bafca1dd86ff",
    "img/img16.png": "5d2501282da72ff3754ac14cc21d0f43c669aa6f81c998c34b1bbc7fa8b0295a",
    "img/img17.png": "73cbafe43bf0cceb952bcb59879204ba2aa4f2778f411be98b013058cf82ddfb",
    "img/img18.png": "c4f7b5a36b175a2e81232797feb72512115b6d8851071f2f36c98bbe45cb39b2",
    "img/img19.png": "c7249b185c6a85967decb6fc3cef0544cae8185f9c43f84cb01f11edd6725ec0",
    "img/img20.png": "7417200ad73637e2c5688b325db644c0f30678e006b6e22748d01c56eb9af520",
    "img/img21.png": "f622a23830982cc72e89f959df44a2094e682ca69ebb5e421e4a876d0a9c8ce3",
    "img/img22.png": "bf03c7466692aaea803df78115c0f75b121b0dc9d36053bd43afd60fa64ebe92",
    "img/img23.png": "6abab03e5a6b462b55577a914daa7c9a4c47a6a50b5d738234c453d72d8e5ec6",
    "img/img24.png": "f2d7b4546a4c5b3df34f85510a0f849889f6a842f02c34ebfc428dd903e0affa",
    "img/img25.png": "62b108c532bcc6ed777563902e007f4a9218db636c313394645713e23b7654df",
    "img/img26.png": "6ecd59ed6433507e9bebba4ac651fde3db1a58a996074c62afb5a5611dac3e66",
    "img/img27.png": "6b71ad2751c2305035d5b03ff48b9a27697a4e18c946e30500c770397ee9f474",
    "img/img28.png": "6725eaf12bd48b124e8889046468b0f0de8fbdd54049725e3aad25dffc7ebaa8",
    "img/img29.png": "08fb22dba6d3c52c51368234f48904a11050b4159f9c40df5206b78f9a9959c4",
    "img/img30.png": "d38b22035a904f64d4b02ce53a4cf179801103db7fc78e090f1cdc3b6928d0f5",
    "img/img31.png": "ae4476d546eaf7b7bf4e3691a4ab27f1998efb3e8f98cea3ec3639c0c1f76112",
    "img/img32.png": "d2c29672c1458877e02400b9171ed21afaa2397f8a1ebf9929999712791d3bd9",
    "img/img33.png": "535523341f86040db975f7f2fb0b81ae85eb8498f758111982bcbe65bba1fe2c",
    "img/img34.png": "281c4c41ebb2b2dc04feaa80bb122fdc1429f70d3d8d04f0aa4ea44ceabce844",
    "img/img35.png": "1f776bf232b5ed6f8ef0812d32e4913e84bfaedf72819642ea84d89cbdf0f9f1",
    "img/img36.png": "3ef2345cfe071b7bba778d3fec296e4df8ad0870248f8a286151b078975bf9cb",
    "img/img37.png": "2e21516a98af6f07130ecb503e5476b5831d9f2ad8d31a17fd24d4fb86cf8b65",
    "img/img38.png": "edc40fd343d50b20c4f141db501ea51662861a4a5a19c97a9b5b310f6ec015f6",
    "img/img39.png": "6257d03b99ee660fdfc5e7f55c584e12b0208dce80191b1cf4bd73588bdc0cd7",
    "img/img40.png": "a9e9b15ceec069e1cdd8f00de48446b958a58cbae27f296198dfcfbc989a90f7",
    "img/img41.png": "d98521be2f4e5ae241d3515c745c0042a4e7d3e215632ca5b09e455c466a382e",
    "img/img42.png": "6f3ef4c22b3e61d9f576f56469061aebe7106c9283b4f5e305c78fc741dd39d3",
    "img/img43.png": "438191241f3d58a688afedd3360d73609e07ae04a9b0e91dbb27ee8d6865b9d5",
    "img/img44.png": "2084966ddb7539213ccb069139f849ad9d8431ef1f734a9154e1566da822b14a",
    "img/img45.png": "e2c6eb2d03d0064b483bb25dc2b1f4f74065e89af9ee2e17c9eec9c3b03f120f",
    "img/img46.png": "20de09769bec255fb2f2f049b9b7651e2349205d87d42c035286c383b5eee539",
    "img/img47.png": "6679f8994e024f14d8cc9b69003f1c13d2f5f0a74d07afd921d88deae8a8e6a7",
    "img/img48.png": "2da70e30f4fb48981bf4fa6e491bf4fb70b9690d05c69c3d72be72406929bc61",
    "img/img49.png": "ac92b2c36a7146f3d9024bdaaf9bcb04c83472f8aa8fa1d3cbdf8bde11996b82",
    "img/img50.png": "bcdbd309968802c1513214a17aacbaa2b9d3cbaf21102d2ea342bb39e7b5cf15",
}


class GlasshouseOptionError(OptionError):
    """An option combination Glasshouse does not allow (the message says what to do)."""


def corpus_file(tier: str) -> str:
    return f"glasshouse_v0.1_{tier}.jsonl"


def questions_file(tier: str) -> str:
    return f"questions_{tier}.jsonl"


def file_spec(name: str) -> FileSpec:
    """The pinned published file ``name`` (a path inside ``glasshouse-v0.1/``)."""
    return FileSpec(name, HASHES[name], BASE_URL + name)


def question_set(options: DatasetOptions | None, tier: str) -> str:
    """``tier``, ``xling`` or ``probes`` from ``options.questions``; refuses other tiers."""
    raw = options.questions if isinstance(options, GlasshouseOptions) else None
    chosen = "tier" if raw in (None, "") else str(raw).strip().lower()
    if chosen in ("tier", tier):
        return "tier"
    if chosen in TIERS:
        raise GlasshouseOptionError(
            f"{NAME}: {questions_file(chosen)} belongs to the {chosen} tier, but the corpus is "
            f"the {tier} tier. turn_id restarts in every tier, so its evidence ids would point "
            f"at the wrong turns. Use --questions tier (or {tier}), or choose the "
            f"{chosen} tier."
        )
    if chosen not in QUESTION_SETS:
        raise GlasshouseOptionError(
            f"{NAME}: unknown question set {raw!r}; choose tier, xling, probes "
            f"(or a tier name: {', '.join(TIERS)})"
        )
    if chosen == "xling" and tier == "core":
        raise GlasshouseOptionError(
            f"{NAME}: the cross-language questions need the small tier or larger: core has no "
            "foreign-language sessions and no photographs, so they cannot be asked of it. "
            "Choose glasshouse-v0.1:small, :medium or :full."
        )
    return chosen


def question_set_label(tier: str, qset: str) -> str:
    """The name of a question set in file names and ``--questions``: the tier, xling, probes."""
    return tier if qset == "tier" else qset


def question_files(tier: str, qset: str) -> tuple[str, ...]:
    if qset == "xling":
        return (XLING_FILE, questions_file(tier))  # the tier's file lends evidence turns
    if qset == "probes":
        return (PROBES_FILE,)
    return (questions_file(tier),)


def variant_files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    tier = variant or "core"
    if tier not in TIERS:
        return ()
    names = [corpus_file(tier), questions_file(tier), PROBES_FILE]
    if tier != "core":
        names.append(XLING_FILE)
    if isinstance(options, GlasshouseOptions) and options.questions:
        names += question_files(tier, question_set(options, tier))
    return tuple(file_spec(n) for n in dict.fromkeys(names))


# ------------------------------------------------------------------------------------ files


class _Files:
    """Fetches and verifies files from the data directory (pinned) or a local copy."""

    def __init__(self, data_dir: Path, local_path: Path | None) -> None:
        self.data_dir = data_dir
        self.local_path = local_path
        self.records: dict[str, FileRecord] = {}

    @property
    def folder(self) -> Path:
        return self.local_path if self.local_path is not None else self.data_dir / NAME

    def present(self, name: str) -> bool:
        return (self.folder / name).exists()

    def get(self, name: str) -> Path:
        spec = file_spec(name)
        if self.local_path is not None:
            path = self.local_path / name
            if not path.exists():
                raise DataFileError(
                    f"{path} is missing: {NAME} needs {name} (published at {spec.url})"
                )
            actual = sha256_file(path)
            pinned = actual == spec.sha256
            note = None if pinned else "local file, not the pinned release"
            self.records[name] = FileRecord(name, actual, pinned=pinned, note=note)
            return path
        path, record = ensure_file(NAME, spec, self.data_dir)
        self.records[name] = record
        return path


def _corpus_missing(exc: DataFileError, files: _Files, tier: str) -> DataFileError:
    name = corpus_file(tier)
    spec = file_spec(name)
    return DataFileError(
        f"{NAME}:{tier} needs the {tier} corpus {name} ({TIER_TURNS[tier]:,} turns), which is "
        f"not in {files.folder} and could not be fetched from {spec.url} (SHA-256 "
        f"{spec.sha256}). Download it there, or run a tier whose corpus is present. "
        f"Cause: {exc}"
    )


# ----------------------------------------------------------------------------------- corpus


def _image_ref(value: Any) -> str | None:
    """An image reference, or ``None`` (Glasshouse writes "no image" as the string "None")."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "None", "null") else text


class _Corpus:
    """The turns (neutral fields only) plus the hidden fields kept here for checks."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.story_session: dict[str, int | None] = {}
        self.image: dict[str, str | None] = {}
        self.session: dict[str, str] = {}


def read_corpus(path: Path) -> _Corpus:
    corpus = _Corpus()
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        turn_id = str(require(path, line, obj, "turn_id"))
        if turn_id in seen:
            raise DatasetFormatError(
                path, line, f"duplicate turn id {turn_id!r} (first on line {seen[turn_id]})"
            )
        seen[turn_id] = line
        image = _image_ref(obj.get("image"))
        turn = Turn(
            turn_id=turn_id,
            session_id=str(require(path, line, obj, "session_id")),
            speaker=str(require(path, line, obj, "speaker")),
            text=str(require(path, line, obj, "text")),
            date=None if obj.get("date") is None else str(obj["date"]),
            image=image,
        )
        corpus.turns.append(turn)
        story = obj.get("core_session")
        corpus.story_session[turn_id] = None if story is None else int(story)
        corpus.image[turn_id] = image
        corpus.session[turn_id] = turn.session_id
    if not corpus.turns:
        raise DatasetFormatError(path, None, "no turns")
    return corpus


def sessions_in_order(turns: Sequence[Turn]) -> tuple[Session, ...]:
    """Sessions in the order the corpus tells them (it is chronological), turns in file order."""
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session_id, []).append(t)
    return tuple(
        Session(session_id=sid, date=ts[0].date, turns=tuple(ts)) for sid, ts in by_session.items()
    )


def _safe_name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", model.strip())


def _apply_captions(turns: list[Turn], files: _Files, model: str) -> tuple[list[Turn], FileRecord]:
    """``caption`` mode: each photograph described in its turn's text, no image handed over."""
    path = files.folder / "captions" / f"{_safe_name(model)}.jsonl"
    if not path.exists():
        raise DataFileError(
            f"image mode caption with caption model {model!r} needs the captions of the "
            f"Glasshouse photographs made by that model in {path} (one JSON object per line: "
            '{"image": "img/img01.png", "caption": "..."}). Write them there, or use '
            "--image-mode skip."
        )
    captions: dict[str, str] = {}
    for line, obj in read_jsonl(path):
        captions[str(require(path, line, obj, "image"))] = str(require(path, line, obj, "caption"))
    needed = sorted({t.image for t in turns if t.image})
    missing = [ref for ref in needed if ref not in captions]
    if missing:
        raise DataFileError(
            f"{path}: no caption for {len(missing)} photograph(s) of the corpus: "
            f"{', '.join(missing[:5])}"
        )
    out = []
    for t in turns:
        if t.image:
            text = f"{t.text}\n[photo: {captions[t.image]}]"
            out.append(Turn(t.turn_id, t.session_id, t.speaker, text, t.date, None))
        else:
            out.append(t)
    record = FileRecord(
        f"captions/{path.name}", sha256_file(path), pinned=False, note=f"captions by {model}"
    )
    return out, record


# -------------------------------------------------------------------------------- questions


def _question(
    row: Mapping[str, Any],
    path: Path,
    line: int,
    evidence: tuple[str, ...] | None,
    unknown_reason: str | None = None,
) -> Question:
    qid = str(require(path, line, row, "id"))
    axis = str(require(path, line, row, "axis"))
    if axis not in AXIS_WEIGHTS:
        raise DatasetFormatError(path, line, f"question {qid!r}: unknown axis {axis!r}")
    if axis == "XLING_QUERY":
        # Asked in the language the benchmark prescribes, never in English.
        text = str(require(path, line, row, "question"))
        lang = str(row.get("query_lang") or "")
    else:
        text = str(require(path, line, row, "question_en"))
        lang = "en"
    gold = row.get("gold_answer")
    alts = row.get("gold_alts") or ()
    if isinstance(alts, str):
        alts = (alts,)
    return Question(
        id=qid,
        dataset=NAME,
        group=GROUP,
        text=text,
        gold=None if gold is None else str(gold),
        alternates=tuple(str(a) for a in alts if a is not None),
        expect=str(row.get("expect") or "answer"),
        evidence_turns=evidence,
        evidence_sessions=(),
        axis=axis,
        weight=float(AXIS_WEIGHTS[axis]),
        lang=lang,
        evidence_unknown_reason=unknown_reason,
        extra=dict(row),
    )


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = list(read_jsonl(path))
    seen: dict[str, int] = {}
    for line, row in rows:
        qid = str(require(path, line, row, "id"))
        if qid in seen:
            raise DatasetFormatError(path, line, f"duplicate question id {qid!r}")
        seen[qid] = line
    return rows


def _evidence(row: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(e) for e in row.get("evidence_turns") or ())


def read_tier_questions(path: Path) -> list[Question]:
    return [_question(row, path, line, _evidence(row)) for line, row in _rows(path)]


def read_probes(path: Path) -> list[Question]:
    # False-memory probes: nothing to retrieve by design (expect no_memory).
    return [_question(row, path, line, ()) for line, row in _rows(path)]


def read_xling(
    path: Path, tier_questions: Sequence[Question], tier_file: str
) -> tuple[list[Question], dict[str, int]]:
    """Cross-language questions with evidence borrowed from the tier's file via ``source_id``."""
    source = {q.id: q for q in tier_questions}
    rows = _rows(path)
    xling_ids = {str(r["id"]) for _, r in rows}
    counts = {"borrowed": 0, "store": 0, "xling_source": 0, "missing_source": 0, "by_design": 0}
    out = []
    for line, row in rows:
        axis = row.get("axis")
        sid = row.get("source_id")
        evidence: tuple[str, ...] | None = None
        reason: str | None = None
        if _evidence(row):
            evidence = _evidence(row)
        elif sid is None:
            counts["store"] += 1
            reason = (
                f"{axis} row without a source question: it is stored in a foreign-language "
                "session and carries no evidence turns (Glasshouse cannot check its retrieval)"
            )
        elif str(sid) in source:
            src = source[str(sid)]
            if src.evidence_turns:
                evidence = tuple(src.evidence_turns)
                counts["borrowed"] += 1
            else:
                evidence = ()
                counts["by_design"] += 1
        elif str(sid) in xling_ids:
            counts["xling_source"] += 1
            reason = f"its source {sid} is itself a cross-language row without evidence turns"
        else:
            counts["missing_source"] += 1
            reason = f"its source {sid} is not a question of {tier_file}"
        out.append(_question(row, path, line, evidence, reason))
    return out, counts


def check_evidence(
    questions: Sequence[Question], corpus: _Corpus, question_path: Path, corpus_name: str
) -> list[str]:
    """Refuse a question file whose evidence ids do not fit the corpus (another tier's file).

    Every evidence turn must be a turn of the corpus; evidence turns must sit in their
    question's story sessions (the corpus's hidden ``core_session``) and an image question's
    evidence turn must carry its photograph. A few disagreements are tolerated and reported
    (the published files have one); more mean the file belongs to another tier.
    """
    missing: list[str] = []
    checked = 0
    odd: list[str] = []
    for q in questions:
        if not q.evidence_turns:
            continue
        story = {int(s) for s in q.extra.get("evidence_sessions") or () if s is not None}
        image = _image_ref(q.extra.get("image")) if q.axis == "IMAGE" else None
        for e in q.evidence_turns:
            if e not in corpus.session:
                missing.append(f"{q.id} -> {e}")
                continue
            if story and corpus.story_session.get(e) is not None:
                checked += 1
                if corpus.story_session[e] not in story:
                    odd.append(
                        f"{q.id}: evidence turn {e} is in story session "
                        f"{corpus.story_session[e]}, not in its evidence_sessions "
                        f"{sorted(story)}"
                    )
            if image is not None:
                checked += 1
                if corpus.image.get(e) != image:
                    odd.append(f"{q.id}: evidence turn {e} does not carry its photograph {image}")
    advice = (
        f"turn_id restarts in every tier, so {question_path.name} does not belong to the "
        f"corpus {corpus_name}; use the question file of the same tier"
    )
    if missing:
        raise DatasetFormatError(
            question_path,
            None,
            f"{len(missing)} evidence turn id(s) are not turns of {corpus_name} "
            f"(e.g. {', '.join(missing[:3])}): {advice}",
        )
    if checked and len(odd) > max(2, STORY_MISMATCH_TOLERANCE * checked):
        raise DatasetFormatError(
            question_path,
            None,
            f"{len(odd)} of {checked} evidence turns disagree with the corpus "
            f"(e.g. {odd[0]}): {advice}",
        )
    return [f"{question_path.name}: {o}" for o in odd]


# ------------------------------------------------------------------------------------ images


@dataclass(frozen=True, slots=True)
class ImageFiles:
    """The image resolver of a loaded tier: its photographs' folder, and whether it is the
    data directory (pinned files, fetched and verified) or a user's local copy."""

    root: Path
    pinned: bool

    def __call__(self, ds: LoadedDataset) -> dict[str, str]:
        return image_files(ds, self.root, self.pinned)


def image_files(ds: LoadedDataset, root: Path | None, pinned: bool = True) -> dict[str, str]:
    """Local paths of the photographs referenced by the dataset's turns, verified.

    Called by the runner only when a system that accepts images runs in ``native`` mode; a
    missing or damaged file is a clear error naming it.
    """
    refs = sorted({t.image for g in ds.groups for s in g.sessions for t in s.turns if t.image})
    if not refs:
        return {}
    if not root:
        raise DataFileError(f"{ds.key}: image files are not available in this image mode")
    folder = Path(root)
    out: dict[str, str] = {}
    for ref in refs:
        if ref not in HASHES:
            raise DatasetFormatError(folder / ref, None, "not a published Glasshouse image")
        spec = file_spec(ref)
        if not pinned:
            path = folder / ref
            if not path.exists():
                raise DataFileError(
                    f"image mode native: {path} is missing (a system that accepts images "
                    f"runs); published at {spec.url}"
                )
            out[ref] = str(path.resolve())
            continue
        try:
            path, _ = ensure_file(NAME, spec, folder.parent)
        except ChecksumMismatchError:
            raise
        except DataFileError as exc:
            raise DataFileError(
                f"image mode native: a system that accepts images runs, so the Glasshouse "
                f"photographs are needed; {folder / ref} is missing and could not be fetched "
                f"from {spec.url} ({exc}). Put the 50 files in {folder / 'img'}, or use "
                "--image-mode skip (or caption)."
            ) from exc
        out[ref] = str(path.resolve())
    return out


# ------------------------------------------------------------------------------------ loader


def _image_mode(options: GlasshouseOptions) -> tuple[str, str | None]:
    mode = check_image_mode(NAME, options.image_mode)
    model = options.caption_model
    model = str(model).strip() if model else None
    if mode == "caption" and not model:
        raise GlasshouseOptionError(
            f"{NAME}: --image-mode caption needs a named caption model (--caption-model NAME): "
            "the photographs are described by that model and the run records which one"
        )
    return mode, model


def load(
    spec: DatasetSpec,
    variant: str,
    data_dir: Path,
    options: DatasetOptions,
    local_path: Path | None = None,
    predictions: bool = False,
) -> LoadedDataset:
    """One tier with its question set. ``predictions``: for scoring a predictions file, when
    the corpus is optional (read if present, for the character checks)."""
    if not isinstance(options, GlasshouseOptions):
        options = GlasshouseOptions(image_mode=options.image_mode)
    if local_path is not None and local_path.is_file():
        # glasshouse-v0.1@PATH/glasshouse_v0.1_<tier>.jsonl: the tier is named by the corpus
        match = re.fullmatch(r"glasshouse_v0\.1_(\w+)\.jsonl", local_path.name)
        if match is None or match.group(1) not in TIERS:
            raise GlasshouseOptionError(
                f"{NAME}@{local_path}: give a folder holding the Glasshouse files, or a corpus "
                "file named glasshouse_v0.1_<tier>.jsonl"
            )
        variant, local_path = match.group(1), local_path.parent
    tier = (variant or options.tier or "core").strip().lower()
    if tier not in TIERS:
        raise GlasshouseOptionError(
            f"{NAME}: unknown tier {tier!r}; choose one of {', '.join(TIERS)}"
        )
    qset = question_set(options, tier)
    image_mode, caption_model = _image_mode(options)
    scoring_file_only = predictions
    files = _Files(data_dir, local_path)
    label = question_set_label(tier, qset)
    notes: list[str] = []
    report: list[str] = []

    # The questions first: scoring a predictions file needs nothing else.
    qfiles = question_files(tier, qset)
    qpaths = {name: files.get(name) for name in qfiles}
    tier_qs: list[Question] = []
    xling_counts: dict[str, int] = {}
    if qset == "probes":
        questions = read_probes(qpaths[PROBES_FILE])
    elif qset == "xling":
        tier_qs = read_tier_questions(qpaths[questions_file(tier)])
        questions, xling_counts = read_xling(qpaths[XLING_FILE], tier_qs, questions_file(tier))
    else:
        questions = read_tier_questions(qpaths[questions_file(tier)])

    # The corpus: required for a run, read when present when scoring a file.
    cname = corpus_file(tier)
    corpus: _Corpus | None = None
    if not scoring_file_only or files.present(cname):
        try:
            corpus = read_corpus(files.get(cname))
        except ChecksumMismatchError:
            raise
        except DataFileError as exc:
            raise _corpus_missing(exc, files, tier) from exc
    turns: list[Turn] = []
    if corpus is not None:
        checked = tier_qs if qset == "xling" else questions
        qpath = qpaths[questions_file(tier)] if qset == "xling" else qpaths[qfiles[0]]
        report += check_evidence(checked, corpus, qpath, cname)
        turns = corpus.turns
        sessions_of = corpus.session
        questions = [_with_sessions(q, sessions_of) if q.evidence_turns else q for q in questions]
    else:
        notes.append(
            f"corpus {cname} not read (absent): evidence turn ids are not checked against it"
        )

    n_images = sum(1 for t in turns if t.image)
    n_image_questions = sum(
        1 for q in questions if q.axis == "IMAGE" or _image_ref(q.extra.get("image"))
    )
    resolver: ImageFiles | None = None
    if image_mode == "skip":
        turns = [Turn(t.turn_id, t.session_id, t.speaker, t.text, t.date, None) for t in turns]
        image_note = "image mode skip: no image is handed to any system"
    elif image_mode == "caption":
        assert caption_model is not None
        if n_images:
            turns, record = _apply_captions(turns, files, caption_model)
            files.records[record.name] = record
        image_note = (
            f"image mode caption: the {n_images} photographs are described in their turns' "
            f"text by {caption_model}; no image file is handed to any system"
        )
    else:
        image_note = (
            f"image mode native: the {n_images} photographs are handed as image files to "
            "systems that accept images; text-only systems get the turn's text alone"
        )
        if n_images:
            resolver = ImageFiles(files.folder, pinned=local_path is None)
    if corpus is not None and not n_images:
        image_note = f"image mode {image_mode}: the {tier} tier carries no photographs"
    elif corpus is None:
        image_note = f"image mode {image_mode} (corpus not read)"
    if n_image_questions:
        image_note += f"; the {n_image_questions} photograph questions are asked and scored alike"
    notes.append(image_note)

    sessions = sessions_in_order(turns)
    qfile_name = qfiles[0]
    haystack = (
        f"{len(turns):,} turns in {len(sessions)} sessions, one global haystack"
        if corpus is not None
        else "corpus not read"
    )
    notes.insert(
        0,
        f"tier {tier}: {haystack}; questions {qfile_name} ({len(questions)}); systems get "
        "turn id, session id, date, speaker, text and image only",
    )
    notes.append(
        "asked in question_en; XLING_QUERY rows in `question` (their query_lang), never "
        "question_en. Evidence from evidence_turns; evidence_sessions (story session "
        "numbers) is never used"
    )
    if qset == "xling":
        unknown = xling_counts["store"] + xling_counts["xling_source"]
        unknown += xling_counts["missing_source"]
        notes.append(
            f"cross-language evidence: borrowed from {questions_file(tier)} via source_id for "
            f"{xling_counts['borrowed']} of {len(questions)} rows; unknown for {unknown} "
            f"(retrieval null: {xling_counts['store']} XLING_STORE rows, "
            f"{xling_counts['xling_source']} whose source is another cross-language row"
            + (
                f", {xling_counts['missing_source']} whose source is not in the tier's file"
                if xling_counts["missing_source"]
                else ""
            )
            + f"); none by design for {xling_counts['by_design']} (abstention source)"
        )
    if qset == "probes" and tier == "core":
        notes.append(
            "Glasshouse's SUBMITTING.md scores the probes against small or larger (core has no "
            "filler)"
        )
    record_list = tuple(files.records[n] for n in sorted(files.records))
    group = HaystackGroup(
        group_id=GROUP, sessions=sessions, question_ids=tuple(q.id for q in questions)
    )
    resolved = GlasshouseOptions(
        image_mode=image_mode,
        questions=label,
        caption_model=caption_model if image_mode == "caption" else None,
        tier=tier,
    )
    turn_chars = None
    if predictions and corpus is not None:
        # For the character checks of a predictions file (never written to a run).
        turn_chars = {t.turn_id: len(t.text) for t in corpus.turns}
    return LoadedDataset(
        name=spec.name,
        variant=tier,
        version=spec.version,
        haystack="global",
        files=record_list,
        groups=(group,),
        questions=tuple(questions),
        benchmark=spec.name,
        load_report=tuple(report),
        card_notes=tuple(notes),
        options=resolved,
        image_resolver=resolver,
        turn_chars=turn_chars,
        facts={"question_file": qfile_name, "corpus_read": corpus is not None},
    )


def _with_sessions(q: Question, session_of: Mapping[str, str]) -> Question:
    """Corpus session ids of the evidence turns (never the file's story session numbers)."""
    assert q.evidence_turns is not None
    sessions = tuple(sorted({session_of[e] for e in q.evidence_turns if e in session_of}))
    return dataclasses.replace(q, evidence_sessions=sessions)


SPEC = DatasetSpec(
    name=NAME,
    version=VERSION,
    description=(
        "Glasshouse v0.1: one synthetic life over 17 months in four nested haystack tiers, "
        "17 weighted axes, 800 cross-language questions and 500 false-memory probes."
    ),
    license="Apache-2.0",
    haystack="global",
    variants=TIERS,
    default_variant="core",
    loader=load,
    variant_files=variant_files,
    source=f"{REPOSITORY} at commit {COMMIT}, folder glasshouse-v0.1/",
    variant_notes={},
)
