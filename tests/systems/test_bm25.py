"""The BM25 baseline: its stop words, its index built at the end of ingest, and its strength."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallbench.contracts import Chunk, Session, Turn
from recallbench.errors import SystemConfigError
from recallbench.pipeline import start_run
from recallbench.spec import RunSpec
from recallbench.systems.base import SystemContext, declared_hooks
from recallbench.systems.bm25 import FUNCTION_WORDS, BM25Index, BM25System

TEXTS = [
    "I moved to Lisbon in March",
    "The first time I ran a marathon was in 2019",
    "We did not buy the blue car",
    "My sister has two cats",
]


def session() -> Session:
    turns = tuple(Turn(f"t{i}", "s1", "user", text) for i, text in enumerate(TEXTS))
    return Session("s1", None, turns, tuple(Chunk(t.turn_id, "s1", None, (t,)) for t in turns))


def test_function_words_drop_pronouns_and_wh_words_but_keep_what_questions_turn_on() -> None:
    for gone in ("i", "my", "you", "when", "did", "the", "of"):
        assert gone in FUNCTION_WORDS
    for kept in ("first", "last", "not", "no", "two", "2019", "before", "many", "never"):
        assert kept not in FUNCTION_WORDS


@pytest.mark.parametrize("stopwords", ["function", "en", None, ["marathon"]])
def test_stopword_options(stopwords: object) -> None:
    index = BM25Index(stopwords=stopwords)
    index.add(TEXTS)
    top = index.top("when was the first marathon", 2)
    if stopwords == ["marathon"]:
        assert top[0][0] == 1  # "first" still finds it
    else:
        assert top[0][0] == 1


def test_an_unknown_stopword_set_is_a_config_error() -> None:
    with pytest.raises(SystemConfigError, match="stopwords must be one of function, en"):
        BM25Index(stopwords="klingon")


def test_the_default_keeps_the_negation_bm25s_english_list_drops() -> None:
    ours, theirs = BM25Index(), BM25Index(stopwords="en")
    for index in (ours, theirs):
        index.add(["we bought it", "we did not buy it"])
    assert [i for i, _ in ours.top("not", 2)] == [1]
    assert theirs.top("not", 2) == []


def test_the_index_is_built_in_finish_ingest_not_at_the_first_search() -> None:
    system = BM25System(SystemContext())
    assert declared_hooks(system) == {"finish_ingest"}
    system.add(session())
    assert system._index._retriever is None
    system.finish_ingest()
    built = system._index._retriever
    assert built is not None
    assert system.search("Lisbon", 1)[0].source_turns == ("t0",)
    assert system._index._retriever is built  # the search did not rebuild it


def test_the_hook_time_is_ingest_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recallbench import testing
    from recallbench.systems import registry

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()
    spec = RunSpec(systems=("slow-finish",), datasets=("sample",), k=(1,))
    scored = start_run(spec, tmp_path, tmp_path / "out")
    (ingest,) = [json.loads(x) for x in (scored.run_dir / "ingest.jsonl").read_text().splitlines()]
    delay_ms = testing.SlowFinishBM25.finish_delay_s * 1000
    assert ingest["finish_ms"] >= delay_ms and ingest["ingest_ms"] >= ingest["finish_ms"]
    first = json.loads((scored.run_dir / "observations.jsonl").read_text().splitlines()[0])
    assert first["latency_ms"] < delay_ms  # the first search carries no build


@pytest.mark.slow  # over 4 s on 2 cores: the full suite runs it
def test_default_bm25_is_at_least_glasshouses_own_on_medium(
    shared_data: Path, tmp_path: Path
) -> None:
    """Glasshouse's published BM25 (bm25_baseline.py): 16.0% at k=1, 34.7% at k=10."""
    if not (shared_data / "glasshouse-v0.1" / "glasshouse_v0.1_medium.jsonl").exists():
        pytest.skip("Glasshouse medium tier not in the shared data")
    spec = RunSpec(
        systems=("bm25",), datasets=("glasshouse-v0.1:medium",), k=(1, 10), chunking="turn"
    )
    scored = start_run(spec, shared_data, tmp_path)
    rows = {(r.metric, r.k): r for r in scored.metrics if r.slice == "all" and r.system == "bm25"}
    assert rows[("evidence_hit", 1)].denominator == 830
    assert rows[("evidence_hit", 1)].value >= 0.160
    assert rows[("evidence_hit", 10)].value >= 0.347
