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

import re
from pathlib import Path

from recallbench.benchmarks.glasshouse.corpus import (
    GROUP,
    _Corpus,
    _image_ref,
    _with_sessions,
    check_evidence,
    read_corpus,
    read_probes,
    read_tier_questions,
    read_xling,
    sessions_in_order,
)
from recallbench.benchmarks.glasshouse.files import (
    COMMIT,
    NAME,
    PROBES_FILE,
    REPOSITORY,
    TIERS,
    VERSION,
    XLING_FILE,
    GlasshouseOptionError,
    _corpus_missing,
    _Files,
    corpus_file,
    question_files,
    question_set,
    question_set_label,
    questions_file,
    variant_files,
)
from recallbench.benchmarks.glasshouse.images import ImageFiles, _apply_captions
from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.contracts import Question, Turn
from recallbench.datasets.dataset import (
    DatasetOptions,
    DatasetSpec,
    HaystackGroup,
    LoadedDataset,
    check_image_mode,
)
from recallbench.errors import ChecksumMismatchError, DataFileError


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
        facts={
            "question_file": qfile_name,
            "corpus_read": corpus is not None,
            **({"xling_evidence": xling_counts} if qset == "xling" else {}),
        },
    )


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
