"""The speed table of a run: one line per system with its Glasshouse speed (its own column,
never mixed into accuracy), or ``speed not measurable, N3`` in place of a number."""

from __future__ import annotations

from recallbench.report.tables import Table
from recallbench.results.scored import ScoredRun
from recallbench.score.speed import CODES, NOT_SAMPLED, SPEED, row_label
from recallbench.spec import SpeedSpec

IN_PROCESS_ONLY = "N7"


def speed_table(scored: ScoredRun, dataset_key: str) -> Table | None:
    """The :data:`~recallbench.score.speed.SPEED` rows of one dataset, a line per system
    (speed, searches scored, what left the rest out), or None when every system's speed is
    null under N7 alone (a run of in-process systems only: nothing to show)."""
    rows = [r for r in scored.metrics if r.dataset == dataset_key and r.metric == SPEED]
    if not rows or all(
        r.value is None and (r.null_reason or "").startswith(IN_PROCESS_ONLY + ":") for r in rows
    ):
        return None
    opts = scored.spec.speed or SpeedSpec()
    target = max(50.0, opts.flow_limit_ms - opts.llm_ttft_ms)
    lines = []
    for r in rows:
        lines.append(
            (
                r.system,
                row_label(r),
                f"{r.denominator}/{r.denominator + r.n_excluded}",
                r.exclusion_rule or "-",
            )
        )
    used = sorted({c for r in rows for c in CODES if c in (r.exclusion_rule or "")})
    legend = "; ".join(f"{c}: {CODES[c]}" for c in used)
    sample = (
        f" Speed sample: {opts.sample} seeded questions per dataset, each searched alone (no "
        f"other call of the system running) after the rest of its group; only they are scored "
        f"for speed, the rest are left out as {NOT_SAMPLED!r}."
        if opts.sample
        else ""
    )
    caption = (
        f"Glasshouse speed points per question (-1 very slow .. +1 very fast), averaged over the "
        f"searches scored, never summed: latency (with one round trip removed where the record "
        f"carries network_ms) against a target of {target:g} ms (flow limit "
        f"{opts.flow_limit_ms:g} - LLM time to first token {opts.llm_ttft_ms:g}). Not "
        f"measurable is left out, never 0; failed searches are counted apart. Accuracy is "
        f"unaffected." + (f" {legend}." if legend else "") + sample
    )
    return Table(
        f"{dataset_key}: speed",
        ("system", "speed", "scored", "left out"),
        tuple(lines),
        caption,
    )
