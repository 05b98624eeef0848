"""``recallbench leaderboard DIR``: one table of the bundles in a folder that pass ``validate``.

Every folder or archive directly inside ``DIR`` is a bundle. Each is validated
(:func:`recallbench.submissions.validate.validate`); one that fails any check is listed under
"Excluded" with the checks it failed, never ranked. A valid bundle gives one row per dataset and
system: the headline metric (slice ``all``) with its interval, denominator and exclusions, the
run id and run date, and the conditions it was measured under. Conditions come from the run's
``run.json`` (mode, reader, judge, k, chunking, concurrency, full run or subset, repeats) and are
completed or overridden by the YAML header of its ``card.md`` when there is one
(:data:`CARD_CONDITIONS`). Rows are grouped into one table per dataset version, checksum and
metric (numbers on other data or another metric are never ranked together), ranked by value,
highest first; an unmeasured value reads ``unmeasured`` with its reason and ranks last. A run
sent twice (the same run id in two valid bundles) is ranked once, from the first bundle by name.

The headline metric is ``--metric`` when given (``name`` or ``name@k``), else the judge's metric
of a memory- or answer-mode run, else ``evidence_recall@10`` (at the run's largest k when 10 was
not run). The Markdown and the HTML hold the same rows; the HTML is one self-contained file (no
script, no external resource). Neither holds the time it was built.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.results.manifest import RunManifest
from recallbench.submissions.bundle import Limits, is_archive
from recallbench.submissions.validate import Validation, validate

DEFAULT_METRIC = "evidence_recall"
DEFAULT_K = 10
OUTPUTS = ("leaderboard.md", "leaderboard.html")
CARD_CONDITIONS = (
    "operator",
    "subset",
    "reader",
    "judge",
    "k",
    "chunking",
    "concurrency",
    "repeats",
    "image_mode",
    "hardware",
)
"""Keys of a card's YAML header shown as conditions when present (a scalar or a short list)."""
DETAIL_CHARS = 240


@dataclass(frozen=True, slots=True)
class Entry:
    """One ranked row: a system on a dataset, from one valid bundle."""

    bundle: str
    dataset: str
    dataset_version: str
    dataset_sha256: str
    system: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    null_reason: str | None
    denominator: int | None
    n_excluded: int | None
    run_id: str
    run_date: str
    conditions: tuple[tuple[str, str], ...]

    @property
    def group(self) -> tuple[str, str, str]:
        return (self.dataset_version, self.dataset_sha256, self.metric)


@dataclass(frozen=True, slots=True)
class Excluded:
    bundle: str
    reasons: tuple[str, ...]


@dataclass(slots=True)
class Leaderboard:
    entries: list[Entry] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)

    def groups(self) -> list[tuple[tuple[str, str, str], list[Entry]]]:
        """Entries per (dataset version, checksum, metric), each ranked."""
        out: dict[tuple[str, str, str], list[Entry]] = {}
        for e in self.entries:
            out.setdefault(e.group, []).append(e)
        return [(g, sorted(out[g], key=_rank_key)) for g in sorted(out)]


def _rank_key(e: Entry) -> tuple[int, float, str, str]:
    return (e.value is None, -(e.value or 0.0), e.system, e.run_id)


def bundles_in(folder: Path) -> list[Path]:
    """Folders and archives directly inside ``folder`` (hidden names and our outputs skipped)."""
    return sorted(
        p
        for p in folder.iterdir()
        if not p.name.startswith(".") and p.name not in OUTPUTS and (p.is_dir() or is_archive(p))
    )


def parse_metric(text: str) -> tuple[str, int | None]:
    name, _, k = text.partition("@")
    if k and not k.isdigit():
        raise ValueError(f"--metric {text!r}: write name or name@k (k a whole number)")
    return name, int(k) if k else None


def headline(manifest: RunManifest, dataset: str, metric: str | None) -> tuple[str, int | None]:
    """The (metric, k) ranked for one dataset of a run."""
    if metric:
        return parse_metric(metric)
    info = (manifest.answering.get("datasets") or {}).get(dataset) or {}
    if info.get("metrics"):
        return str(info["metrics"][0]), None
    ks = manifest.spec.k
    return DEFAULT_METRIC, DEFAULT_K if DEFAULT_K in ks else max(ks)


def _short(value: Any) -> str | None:
    if isinstance(value, str | int | float | bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(x, str | int | float) for x in value):
        return ",".join(str(x) for x in value)
    return None


def conditions(
    manifest: RunManifest, dataset: str, card: Mapping[str, Any] | None
) -> tuple[tuple[str, str], ...]:
    """What the row was measured under: ``run.json``, then the card's header over it."""
    spec = manifest.spec
    out: dict[str, str] = {"mode": spec.mode}
    info = (manifest.answering.get("datasets") or {}).get(dataset) or {}
    for role in ("reader", "judge"):
        used = info.get(role)
        if isinstance(used, Mapping) and used.get("model"):
            out[role] = str(used["model"])
    out["k"] = ",".join(str(k) for k in spec.k)
    out["chunking"] = spec.chunking
    out["concurrency"] = str(spec.concurrency)
    subset = getattr(spec, "subset", None)
    out["subset"] = "full" if subset is None else str(subset.label)
    repeats = getattr(spec, "repeats", 1)
    if repeats != 1:
        out["repeats"] = str(repeats)
    header = card_conditions(card)
    for key in CARD_CONDITIONS:
        value = _short(header.get(key))
        if value is not None:
            out[key] = value
    return tuple(out.items())


def card_conditions(card: Mapping[str, Any] | None) -> dict[str, Any]:
    """The card header's conditions under the leaderboard's names: ``operator``, ``scope`` as
    ``subset``, the ``conditions`` mapping (k, chunking, concurrency, repeats, ...) and the
    hardware's CPU (:func:`recallbench.report.card.read_card` gives the header)."""
    if not card:
        return {}
    flat: dict[str, Any] = dict(card.get("conditions") or {})
    flat["operator"] = card.get("operator")
    flat["subset"] = card.get("scope")
    hardware = card.get("hardware")
    if isinstance(hardware, Mapping):
        flat["hardware"] = hardware.get("cpu")
    return flat


def entries_of(v: Validation, bundle: str, metric: str | None) -> list[Entry]:
    """The rows a valid bundle contributes."""
    m = v.manifest
    assert m is not None
    run_date = m.started_at[:10]
    out = []
    for ds in m.datasets:
        name, k = headline(m, ds.key, metric)
        label = name if k is None else f"{name}@{k}"
        conds = conditions(m, ds.key, v.card)
        for r in v.metrics:
            if (
                r.get("dataset") == ds.key
                and r.get("metric") == name
                and r.get("k") == k
                and r.get("slice") == "all"
                and r.get("repeat") in (None, 0)
            ):
                out.append(
                    Entry(
                        bundle=bundle,
                        dataset=ds.key,
                        dataset_version=str(r.get("dataset_version") or ds.version_label),
                        dataset_sha256=str(r.get("dataset_sha256") or ds.checksum),
                        system=str(r.get("system")),
                        metric=label,
                        value=r.get("value"),
                        ci_low=r.get("ci_low"),
                        ci_high=r.get("ci_high"),
                        null_reason=r.get("null_reason"),
                        denominator=r.get("denominator"),
                        n_excluded=r.get("n_excluded"),
                        run_id=m.run_id,
                        run_date=run_date,
                        conditions=conds,
                    )
                )
    return out


def build(
    folder: Path,
    data_dir: Path,
    cache_dir: Path,
    metric: str | None = None,
    limits: Limits | None = None,
) -> Leaderboard:
    """Validate every bundle in ``folder`` and rank the valid ones."""
    if metric:
        parse_metric(metric)
    lb = Leaderboard()
    seen: dict[str, str] = {}
    for path in bundles_in(folder):
        v = validate(path, data_dir, cache_dir, limits)
        if not v.ok:
            reasons = tuple(_clip(f"{c.name}: {c.detail}") for c in v.failed)
            lb.excluded.append(Excluded(path.name, reasons))
            continue
        assert v.manifest is not None
        run_id = v.manifest.run_id
        if run_id in seen:
            lb.excluded.append(
                Excluded(path.name, (f"the same run ({run_id}) as {seen[run_id]}, ranked once",))
            )
            continue
        seen[run_id] = path.name
        rows = entries_of(v, path.name, metric)
        if not rows:
            lb.excluded.append(
                Excluded(path.name, (f"valid, but holds no {metric or 'headline'} row",))
            )
        lb.entries.extend(rows)
    return lb


def _clip(text: str) -> str:
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


# ----------------------------------------------------------------------------- rendering


def _value(e: Entry) -> str:
    if e.value is None:
        return f"unmeasured ({e.null_reason or 'no reason recorded'})"
    return f"{e.value:.3f}"


def _interval(e: Entry) -> str:
    if e.ci_low is None or e.ci_high is None:
        return "not computed"
    return f"[{e.ci_low:.3f}, {e.ci_high:.3f}]"


def _n(e: Entry) -> str:
    n = "?" if e.denominator is None else str(e.denominator)
    return n + (f" ({e.n_excluded} excluded)" if e.n_excluded else "")


def _ranks(rows: Sequence[Entry]) -> list[str]:
    out: list[str] = []
    for i, e in enumerate(rows):
        if e.value is None:
            out.append("-")
        elif i and rows[i - 1].value == e.value:
            out.append(out[-1])
        else:
            out.append(str(i + 1))
    return out


HEADER = ("rank", "system", "value", "95% interval", "n", "run date", "run id", "conditions",
          "bundle")  # fmt: skip


def _cells(rows: Sequence[Entry]) -> list[tuple[str, ...]]:
    return [
        (
            rank,
            e.system,
            _value(e),
            _interval(e),
            _n(e),
            e.run_date,
            e.run_id,
            "; ".join(f"{k} {v}" for k, v in e.conditions),
            e.bundle,
        )
        for rank, e in zip(_ranks(rows), rows, strict=True)
    ]


def _title(group: tuple[str, str, str]) -> str:
    version, sha, metric = group
    return f"{version} (sha256 {sha}): {metric}, slice all"


def _md(cell: str) -> str:
    return cell.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


NOTE = (
    "Only bundles that pass `recallbench validate` are ranked: every hash matches, every "
    "figure is recomputed from the per-question records, reader and judge are those the "
    "benchmark pins, and no unmeasured cell is filled. Numbers from different dataset "
    "versions or metrics are never ranked together."
)


def render_markdown(lb: Leaderboard) -> str:
    lines = ["# Leaderboard", "", NOTE, ""]
    if not lb.entries:
        lines += ["No valid bundle.", ""]
    for group, rows in lb.groups():
        lines += [f"## {_md(_title(group))}", ""]
        lines.append("| " + " | ".join(HEADER) + " |")
        lines.append("|" + "|".join("---" for _ in HEADER) + "|")
        lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in _cells(rows)]
        lines.append("")
    lines += ["## Excluded", ""]
    if not lb.excluded:
        lines += ["None.", ""]
    for x in lb.excluded:
        lines.append(f"- `{_md(x.bundle)}`: " + "; ".join(_md(r) for r in x.reasons))
    if lb.excluded:
        lines.append("")
    return "\n".join(lines)


STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin-bottom:2em}"
    "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".excluded li{margin:.3em 0}"
)
NUMERIC = frozenset({0, 2, 3, 4})


def render_html(lb: Leaderboard) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>recallbench leaderboard</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Leaderboard</h1>",
        f"<p>{e(NOTE)}</p>",
    ]
    if not lb.entries:
        parts.append("<p>No valid bundle.</p>")
    for group, rows in lb.groups():
        parts.append(f"<h2>{e(_title(group))}</h2><table><thead><tr>")
        parts += [f"<th>{e(h)}</th>" for h in HEADER]
        parts.append("</tr></thead><tbody>")
        for row in _cells(rows):
            tds = (
                f'<td class="num">{e(c)}</td>' if i in NUMERIC else f"<td>{e(c)}</td>"
                for i, c in enumerate(row)
            )
            parts.append("<tr>" + "".join(tds) + "</tr>")
        parts.append("</tbody></table>")
    parts.append('<h2>Excluded</h2><ul class="excluded">')
    if not lb.excluded:
        parts.append("<li>None.</li>")
    for x in lb.excluded:
        parts.append(f"<li><code>{e(x.bundle)}</code>: {e('; '.join(x.reasons))}</li>")
    parts.append("</ul></body></html>")
    return "\n".join(parts) + "\n"
