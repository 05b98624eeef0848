"""The full-context baseline ignores k: its @k figures are null, its all-returned figure stays."""

from __future__ import annotations

import json
from pathlib import Path

from recallbench.pipeline import start_run
from recallbench.spec import RunSpec


def test_naive_at_k_figures_are_null_with_the_reason(tmp_path: Path) -> None:
    spec = RunSpec(
        systems=("naive", "bm25"),
        datasets=("sample",),
        k=(1, 10),
        system_configs={"naive": {"char_budget": 50_000}},
    )
    scored = start_run(spec, tmp_path, tmp_path / "out")
    naive = [v for v in scored.verdicts if v.system == "naive"]
    assert len(naive) == 50
    for v in naive:
        assert v.metrics["evidence_hit@1"] is None and v.metrics["ndcg@10"] is None
        rule = "no_evidence" if v.slice == "abstain" else "ignores_k: naive returns"
        assert v.null_reasons["evidence_hit@10"].startswith(rule)
    with_evidence = [v for v in naive if v.metrics.get("evidence_recall_all_returned") is not None]
    assert len(with_evidence) == 43  # the recall over everything returned is still measured
    bm25 = [v for v in scored.verdicts if v.system == "bm25"]
    assert any(v.metrics["evidence_hit@10"] == 1.0 for v in bm25)  # only naive is affected
    rows = {(r.system, r.metric, r.k): r for r in scored.metrics if r.slice == "all"}
    hit = rows[("naive", "evidence_hit", 10)]
    assert hit.value is None and hit.exclusion_rule and "ignores_k" in hit.exclusion_rule
    manifest = json.loads((scored.run_dir / "run.json").read_text())
    (record,) = [s for s in manifest["systems"] if s["name"] == "naive"]
    assert record["capabilities"]["ignores_k"] is True
    assert record["settings"] == {"char_budget": 50_000}
    summary = (scored.run_dir / "summary.md").read_text()
    assert "naive ignores k" in summary and "50,000 characters" in summary
