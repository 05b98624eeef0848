"""Regenerate a checked-in statistics file: ``python -m recallbench.benchmarks.stats REF``.

``REF`` as on the command line (``locomo``, ``beam@{data}/beam/chats/100K/1``; ``{data}`` stands
for the data directory, so the file stays free of local paths). The statistics themselves are
computed by :mod:`recallbench.datasets.stats`; this module only adds the registry lookup.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from recallbench.benchmarks import load_dataset
from recallbench.datasets.fetch import resolve_data_dir
from recallbench.datasets.stats import DATA_PLACEHOLDER, compute_stats, render


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("ref", help="dataset reference; {data} stands for the data directory")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="default: print to stdout")
    args = parser.parse_args(argv)
    data = resolve_data_dir(args.data_dir)
    ds = load_dataset(args.ref.replace(DATA_PLACEHOLDER, str(data)), data)
    text = render(compute_stats(ds), args.ref)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
