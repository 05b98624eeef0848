"""What ``run`` and ``score`` print, in the format asked for (``--format``).

``table`` (the default) and ``markdown`` show the tables a person reads; ``csv`` and ``json``
give a program the figures themselves: every metric row of the run (the rows of
``metrics.jsonl``, each with its value, denominator, exclusions, interval, run id, dataset
version and SHA-256), so nothing has to be parsed back out of a formatted cell. The JSON
document also names the run, its date and each dataset's files with their SHA-256.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence
from typing import Any

from recallbench.contracts import MetricRow, to_json_dict
from recallbench.report.tables import Table, markdown_table
from recallbench.results.scored import ScoredRun

OUTPUT_FORMATS = ("table", "markdown", "csv", "json")
"""The values of ``--format`` for a run's output."""

MACHINE_FORMATS = ("csv", "json")
"""Formats whose standard output is one document a program reads (notes go to stderr)."""

METRIC_COLUMNS = tuple(f.name for f in dataclasses.fields(MetricRow))
"""The CSV header: the fields of a metric row, in their order."""


def markdown_tables(tables: Sequence[Table]) -> str:
    """The tables as Markdown, one after another (as in ``summary.md``)."""
    return "\n".join(markdown_table(t) for t in tables)


def metrics_csv(rows: Sequence[MetricRow]) -> str:
    """One CSV line per metric row under a header of :data:`METRIC_COLUMNS`; a null is an
    empty cell, ``non_standard`` labels are joined by ``; ``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(METRIC_COLUMNS)
    for r in rows:
        cells = []
        for name in METRIC_COLUMNS:
            value = getattr(r, name)
            if isinstance(value, tuple):
                value = "; ".join(value)
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return buffer.getvalue()


def metrics_document(scored: ScoredRun) -> dict[str, Any]:
    """The run's figures as one JSON-able document: the run (id, date, format), each dataset
    (version, checksum, and each file's SHA-256), and every metric row."""
    m = scored.manifest
    return {
        "run_id": m.run_id,
        "run_date": m.started_at,
        "format_version": m.format_version,
        "datasets": [
            {
                "key": d.key,
                "version": d.version_label,
                "checksum": d.checksum,
                "checksum_is": "SHA-256 over the sorted 'name sha256' lines of its files",
                "pinned": d.pinned,
                "files": [
                    {"name": f.get("name"), "sha256": f.get("sha256"), "pinned": f.get("pinned")}
                    for f in d.files
                ],
            }
            for d in m.datasets
        ],
        "metrics": [to_json_dict(r) for r in scored.metrics],
    }


def metrics_json(scored: ScoredRun) -> str:
    """:func:`metrics_document` as indented JSON with sorted keys, ending in a newline."""
    return json.dumps(metrics_document(scored), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
