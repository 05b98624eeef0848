"""``dense``: exact search, ANN switch, cache reuse (fake model) and a real MiniLM check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")  # the dense extra (tests below use a fake model)

from recallbench.contracts import Chunk, Session, Turn  # noqa: E402
from recallbench.systems import embeddings as emb
from recallbench.systems.base import MemorySystem, SystemContext  # noqa: E402
from recallbench.systems.dense import CARD_NOTE, DenseSystem, VectorIndex, exact_top  # noqa: E402
from recallbench.systems.registry import create_system  # noqa: E402
from recallbench.testing import FakeEncoderModel  # noqa: E402

DIM = 64
FACTS = [
    ("s1", "I just signed a lease on a quarter acre plot.", "A quarter acre is a nice size."),
    ("s1", "My dog is called Biscuit and he loves the beach.", "Biscuit is a great name."),
    ("s2", "The plot has water but no electricity.", "You could bring a generator."),
    ("s2", "I bake sourdough bread every Sunday morning.", "Homemade bread is the best."),
    ("s3", "My sister Ana moved to Lisbon last spring.", "Lisbon is lovely in spring."),
]


def corpus() -> list[Session]:
    """Sessions of user/assistant pairs; chunk ids c<n>, turn ids t<n>."""
    sessions: dict[str, list[tuple[Turn, Turn]]] = {}
    n = 0
    for sid, user, assistant in FACTS:
        pair = (
            Turn(f"t{n}", sid, "user", user, "2026-03-02"),
            Turn(f"t{n + 1}", sid, "assistant", assistant, "2026-03-02"),
        )
        sessions.setdefault(sid, []).append(pair)
        n += 2
    out = []
    for sid, pairs in sessions.items():
        chunks = tuple(Chunk(f"c{p[0].turn_id[1:]}", sid, "2026-03-02", p) for p in pairs)
        out.append(Session(sid, "2026-03-02", tuple(t for p in pairs for t in p), chunks))
    return out


CountingModel = FakeEncoderModel


@pytest.fixture
def fake() -> Iterator[CountingModel]:
    model = CountingModel(DIM)
    emb.register_model("fake-dense", model, revision="r1")
    yield model
    emb.forget_model("fake-dense")


def fake_system(cache_dir: Path | None = None, **config: object) -> DenseSystem:
    return DenseSystem(SystemContext(cache_dir=cache_dir, config={"model": "fake-dense", **config}))


def ingest(system: MemorySystem) -> None:
    for session in corpus():
        system.add(session)


def test_search_finds_the_fact_with_its_source_turns(fake: CountingModel):
    system = fake_system()
    ingest(system)
    top = system.search("what is the dog called", 2)
    assert top[0].id == "c2"
    assert top[0].source_turns == ("t2", "t3")
    assert top[0].text == "user: My dog is called Biscuit and he loves the beach.\n" + (
        "assistant: Biscuit is a great name."
    )
    assert top[0].score is not None and top[0].score >= top[1].score
    assert len(system.search("anything", 100)) == len(FACTS)


def test_every_memory_is_one_chunk(fake: CountingModel):
    system = fake_system()
    ingest(system)
    by_id = {c.chunk_id: c for s in corpus() for c in s.chunks}
    for memory in system.search("plot", 10):
        assert memory.source_turns == by_id[memory.id].turn_ids


def test_ingest_encodes_and_reset_forgets(fake: CountingModel):
    system = fake_system()
    ingest(system)
    assert fake.call_count == len(corpus())  # one batch per session, at ingest time
    system.reset()
    assert system.search("dog", 5) == []
    ingest(system)
    assert system.search("dog Biscuit", 1)[0].id == "c2"


def test_second_ingest_of_same_corpus_makes_zero_model_calls(fake: CountingModel, tmp_path: Path):
    first = fake_system(tmp_path)
    ingest(first)
    calls_after_first = fake.call_count
    assert calls_after_first == len(corpus())

    emb.close_shared_caches()
    second = fake_system(tmp_path)  # another run, same cache folder
    ingest(second)
    assert fake.call_count == calls_after_first
    assert second.cache_stats == {"hits": len(FACTS), "misses": 0, "encode_calls": 0}
    assert [m.id for m in second.search("sourdough bread", 3)] == [
        m.id for m in first.search("sourdough bread", 3)
    ]


def test_k_zero_and_empty(fake: CountingModel):
    system = fake_system()
    assert system.search("x", 5) == []
    ingest(system)
    assert system.search("x", 0) == []


def test_capabilities_and_card_note(fake: CountingModel):
    caps = DenseSystem.capabilities
    assert caps.in_process and caps.returns_source_turns
    assert not caps.accepts_images and caps.llm_inside is None
    assert "English" in CARD_NOTE
    system = create_system("dense", SystemContext(config={"model": "fake-dense"}))
    assert isinstance(system, MemorySystem) and system.name == "dense"


def test_exact_top_orders_by_score_then_row():
    m = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    q = np.array([1, 0], dtype=np.float32)
    assert exact_top(m, q, 2) == [(0, 1.0), (2, 1.0)]
    assert [r for r, _ in exact_top(m, q, 10)] == [0, 2, 3, 1]


def test_index_stays_exact_below_threshold():
    idx = VectorIndex(2, ann_threshold=10)
    idx.add(np.eye(2, dtype=np.float32))
    assert not idx.approximate
    assert idx.top(np.array([0, 1], dtype=np.float32), 1) == [(1, 1.0)]


@pytest.mark.parametrize("backend", ["faiss", "usearch"])
def test_ann_backend_agrees_with_exact(backend: str):
    pytest.importorskip("usearch.index" if backend == "usearch" else backend)
    rng = np.random.default_rng(0)
    vecs = emb.normalize_rows(rng.standard_normal((2000, 32)).astype(np.float32))
    idx = VectorIndex(32, ann_threshold=1000, ann_backend=backend)
    idx.add(vecs[:1500])
    idx.add(vecs[1500:])
    assert idx.approximate
    queries = vecs[:20] + 0.05 * rng.standard_normal((20, 32)).astype(np.float32)
    agree = 0
    for q in queries:
        ann = [r for r, _ in idx.top(q, 10)]
        exact = [r for r, _ in exact_top(vecs, q, 10)]
        agree += len(set(ann) & set(exact))
        assert ann[0] == exact[0]
    assert agree >= 0.9 * 20 * 10


# --------------------------------------------------------------------------- real model


def test_real_model_finds_the_facts(minilm: emb.LoadedModel, tmp_path: Path):
    system = DenseSystem(SystemContext(cache_dir=tmp_path))
    assert system.encoder.model is minilm and minilm.dim == 384
    ingest(system)
    assert system.search("What is the name of the user's pet?", 1)[0].id == "c2"
    assert system.search("Does the land have power?", 1)[0].id == "c4"
    assert system.search("Where does the user's sibling live now?", 1)[0].id == "c8"
    assert minilm.revision.startswith("sha256:")
