"""A benchmark's own answer and judge instruments, read from its pinned source.

:mod:`~recallbench.instruments.pins` downloads and verifies the authors' files (pinned by commit
and SHA-256, cached, never committed); :mod:`~recallbench.instruments.extract` reads prompts,
rules and settings out of them mechanically (Python's ``ast``), so no prompt is retyped;
:mod:`~recallbench.instruments.protocol` is the interface a benchmark's instrument implements
(reader, judge, verdict parsing, judge-check cases) and the pipeline calls.
"""
