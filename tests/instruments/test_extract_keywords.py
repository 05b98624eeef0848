"""extract.keywords: the literal keyword arguments of a call, the others left out."""

from __future__ import annotations

import ast

from recallbench.instruments import extract

SOURCE = """
obj = Build(model_url=None, model_name="m-1", api_key=cfg["k"]["key"], temperature=0, **more)
"""


def test_keywords_keep_literals_only() -> None:
    module = extract.parse(SOURCE, "x.py")
    call = extract.assigned_expr(module, "obj")
    assert isinstance(call, ast.Call)
    assert extract.keywords(call) == {
        "model_url": None,
        "model_name": "m-1",
        "temperature": 0,
    }
