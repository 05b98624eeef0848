"""The statement-level readers of recallbench.instruments.extract, on a made-up file."""

from __future__ import annotations

import pytest

from recallbench.instruments import extract

SOURCE = """
import os

def answer(qa, args):
    out = []
    if qa["category"] == 2:
        out.append(qa["question"] + " suffix")
    elif qa['category'] == 5:
        out.append("five")
    else:
        out.append(qa["question"])
    if args.batch_size == 1:
        reply = call(out[0], tokens=32, temperature=0, model=args.model)
    else:
        reply = call(out, tokens=64)
    return reply

os.system("never run")
"""


def test_branch_matches_the_condition_as_code_not_as_spacing() -> None:
    module = extract.parse(SOURCE, "f.py")
    fn = extract.function(module, "answer", "f.py")
    node = extract.branch(fn, "qa['category']==5", "f.py")
    assert extract.calls(node, "out.append")[0].args[0].value == "five"  # type: ignore[attr-defined]
    with pytest.raises(extract.InstrumentFormatError, match="no branch 'if qa"):
        extract.branch(fn, "qa['category'] == 3", "f.py")


def test_calls_and_literal_keywords() -> None:
    fn = extract.function(extract.parse(SOURCE, "f.py"), "answer", "f.py")
    single = extract.branch(fn, "args.batch_size == 1", "f.py")
    assert len(extract.calls(single, "call")) == 2  # the else branch belongs to the if node
    (first,) = [c for s in single.body for c in extract.calls(s, "call")]
    assert extract.keywords(first) == {"tokens": 32, "temperature": 0}


def test_statements_run_alone_in_a_fresh_namespace() -> None:
    fn = extract.function(extract.parse(SOURCE, "f.py"), "answer", "f.py")
    chain = extract.branch(fn, "qa['category'] == 2", "f.py")
    code = extract.compile_statements([chain], "f.py")
    for category, expected in ((2, "q suffix"), (5, "five"), (1, "q")):
        ns = extract.run(code, {"qa": {"category": category, "question": "q"}, "out": []})
        assert ns["out"] == [expected]
    assert "os" not in extract.run(code, {"qa": {"category": 1, "question": ""}, "out": []})
