"""The shared encoder and its on-disk embedding cache, with an injected fake model (no torch)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from recallbench.systems import embeddings as emb
from recallbench.systems.base import SystemContext
from recallbench.testing import FakeEncoderModel

DIM = 64


CountingModel = FakeEncoderModel


@pytest.fixture
def fake() -> Iterator[CountingModel]:
    model = CountingModel(DIM)
    emb.register_model("fake-emb", model, revision="r1")
    yield model
    emb.forget_model("fake-emb")


def ctx(cache_dir: Path | None, **config: object) -> SystemContext:
    return SystemContext(cache_dir=cache_dir, config={"model": "fake-emb", **config})


def test_second_pass_over_same_texts_runs_no_inference(fake: CountingModel, tmp_path: Path):
    texts = ["the plot is a quarter acre", "the dog is called Biscuit", "water but no power"]
    first = emb.build_encoder(ctx(tmp_path))
    a = first.encode_passages(texts)
    assert len(fake.calls) == 1
    assert first.stats == {"hits": 0, "misses": 3, "encode_calls": 1}

    emb.close_shared_caches()  # a new run: nothing in memory, only the file on disk
    second = emb.build_encoder(ctx(tmp_path))
    b = second.encode_passages(texts)
    assert len(fake.calls) == 1
    assert second.stats == {"hits": 3, "misses": 0, "encode_calls": 0}
    np.testing.assert_array_equal(a, b)
    assert (tmp_path / "embeddings" / "embeddings.sqlite3").is_file()


def test_vectors_are_unit_length_and_in_input_order(fake: CountingModel):
    enc = emb.build_encoder(ctx(None))
    vecs = enc.encode_passages(["alpha beta", "gamma", "alpha beta"])
    assert vecs.shape == (3, DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    assert fake.calls == [["alpha beta", "gamma"]]  # duplicates encoded once


def test_partial_hits_only_encode_the_misses(fake: CountingModel, tmp_path: Path):
    enc = emb.build_encoder(ctx(tmp_path))
    enc.encode_passages(["one", "two"])
    enc.encode_passages(["two", "three", "one"])
    assert fake.calls[-1] == ["three"]
    assert enc.stats == {"hits": 2, "misses": 3, "encode_calls": 2}


def test_prefix_and_revision_are_part_of_the_key(fake: CountingModel, tmp_path: Path):
    emb.build_encoder(ctx(tmp_path)).encode_passages(["a fact"])
    other_prefix = emb.build_encoder(ctx(tmp_path, passage_prefix="passage: "))
    other_prefix.encode_passages(["a fact"])
    assert fake.calls[-1] == ["passage: a fact"]
    assert other_prefix.stats["misses"] == 1

    emb.register_model("fake-emb", fake, revision="r2")  # same id, changed weights
    retrained = emb.build_encoder(ctx(tmp_path))
    retrained.encode_passages(["a fact"])
    assert retrained.stats == {"hits": 0, "misses": 1, "encode_calls": 1}


def test_no_cache_dir_means_no_disk_cache(fake: CountingModel):
    enc = emb.build_encoder(ctx(None))
    enc.encode_passages(["x"])
    enc.encode_passages(["x"])
    assert enc.cache is None
    assert len(fake.calls) == 2


def test_queries_skip_the_cache_unless_asked(fake: CountingModel, tmp_path: Path):
    enc = emb.build_encoder(ctx(tmp_path, query_prefix="q: "))
    enc.encode_query("where is the plot")
    enc.encode_query("where is the plot")
    assert fake.calls == [["q: where is the plot"]] * 2

    cached = emb.build_encoder(ctx(tmp_path, query_prefix="q: ", cache_queries=True))
    cached.encode_query("where is the plot")
    cached.encode_query("where is the plot")
    assert len(fake.calls) == 3
    assert cached.stats["hits"] == 1


def test_known_prefixes():
    assert emb.known_prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")
    assert emb.known_prefixes("intfloat/e5-base-v2") == ("query: ", "passage: ")
    q, p = emb.known_prefixes("intfloat/multilingual-e5-large-instruct")
    assert q.startswith("Instruct: ") and q.endswith("Query: ") and p == ""
    assert emb.known_prefixes("sentence-transformers/all-MiniLM-L6-v2") == ("", "")
    assert emb.known_prefixes("some/three5-model") == ("", "")


def test_e5_defaults_and_explicit_override(tmp_path: Path):
    model = CountingModel(DIM)
    emb.register_model("intfloat/multilingual-e5-small", model)
    try:
        enc = emb.build_encoder(SystemContext(config={"model": "intfloat/multilingual-e5-small"}))
        enc.encode_passages(["text"])
        enc.encode_query("question")
        assert model.calls == [["passage: text"], ["query: question"]]
        plain = emb.build_encoder(
            SystemContext(
                config={
                    "model": "intfloat/multilingual-e5-small",
                    "query_prefix": "",
                    "passage_prefix": "",
                }
            )
        )
        plain.encode_query("question")
        assert model.calls[-1] == ["question"]
    finally:
        emb.forget_model("intfloat/multilingual-e5-small")


def test_model_is_loaded_once_per_process(fake: CountingModel):
    a = emb.build_encoder(ctx(None))
    b = emb.build_encoder(ctx(None, passage_prefix="x"))
    assert a.model is b.model is emb.load_model("fake-emb")


def test_bundled_aliases_are_one_model_id():
    assert emb.canonical_model_id(None) == emb.DEFAULT_MODEL
    assert emb.canonical_model_id("all-MiniLM-L6-v2") == emb.DEFAULT_MODEL
    assert emb.canonical_model_id("sentence-transformers/all-MiniLM-L6-v2") == emb.DEFAULT_MODEL
    assert emb.canonical_model_id("/models/e5") == "/models/e5"


def test_folder_revision_follows_the_weights(tmp_path: Path):
    (tmp_path / "model.safetensors").write_bytes(b"weights-1")
    (tmp_path / "README.md").write_text("docs")
    first = emb.folder_revision(tmp_path)
    (tmp_path / "README.md").write_text("other docs")
    assert emb.folder_revision(tmp_path) == first
    (tmp_path / "model.safetensors").write_bytes(b"weights-22")
    assert emb.folder_revision(tmp_path) != first
    assert first.startswith("sha256:")


def test_unknown_model_fails_clearly_without_download():
    pytest.importorskip("sentence_transformers")
    with pytest.raises(RuntimeError, match="never downloads"):
        emb.load_model("no-such-org/no-such-model-xyz")


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from recallbench.systems.embeddings import EmbeddingCache
    cache = EmbeddingCache(Path(sys.argv[1]))
    space = cache.space("m", "r", "", "", 4)
    offset = int(sys.argv[2])
    for start in range(0, 300, 10):
        cache.put_many(space, [
            (i.to_bytes(32, "big"), np.full(4, i, dtype=np.float32))
            for i in range(offset + start, offset + start + 10)
        ])
    """
)


def test_two_processes_can_write_one_cache(tmp_path: Path):
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(off)])
        for off in (0, 150)  # overlapping key ranges
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = emb.EmbeddingCache(tmp_path)
    try:
        assert cache.count() == 450
        space = cache.space("m", "r", "", "", 4)
        keys = [i.to_bytes(32, "big") for i in (0, 200, 449)]
        got = cache.get_many(space, keys, 4)
        assert [float(got[k][0]) for k in keys] == [0.0, 200.0, 449.0]
    finally:
        cache.close()


def test_unusable_cache_costs_inference_not_the_run(fake: CountingModel, tmp_path: Path):
    enc = emb.build_encoder(ctx(tmp_path))
    first = enc.encode_passages(["kept working"])
    emb.close_shared_caches()  # the handle this encoder holds is now closed
    again = enc.encode_passages(["kept working"])
    np.testing.assert_array_equal(first, again)
    assert len(fake.calls) == 2
