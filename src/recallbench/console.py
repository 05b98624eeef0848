"""The console a person reads: tables that fit the terminal, and progress per phase.

* Width: ``$COLUMNS`` when set (also when the output is piped, so ``COLUMNS=80 recallbench run
  ... | less`` lays tables out for 80 columns); else the terminal's width; else, off a
  terminal, :data:`PIPE_WIDTH`. A table wider than that is split into parts that fit
  (:func:`recallbench.report.layout.fit_to_width`): no cell or header is ever cut, and a
  column that cannot fit even alone folds onto a second line rather than losing characters.
* Progress: one task per phase (ingest, search, answer, judge) of each system and dataset,
  with an ETA from a smoothed rate (:class:`SmoothedRate`) that does not jump when items
  finish in bursts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, Task, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table as RichTable
from rich.text import Text

from recallbench.report.layout import fit_to_width
from recallbench.report.tables import Table
from recallbench.run.runner import Progress

PIPE_WIDTH = 160
"""Columns off a terminal when ``$COLUMNS`` is not set (CI logs, pipes)."""

console = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Both consoles soft-wrap lines (a message is never broken by the console: the terminal
wraps it); tables are laid out at the console's width."""


def console_width(stream: IO[str], environ: dict[str, str] | None = None) -> int | None:
    """The width to lay out for: ``$COLUMNS`` if it is a positive integer, else None (the
    terminal's own width) on a terminal, else :data:`PIPE_WIDTH`."""
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        tty = False
    return None if tty else PIPE_WIDTH


def fit_consoles(stdout: IO[str], stderr: IO[str]) -> None:
    """Set both consoles' widths for this invocation (see :func:`console_width`)."""
    console.width = console_width(stdout)  # type: ignore[assignment]
    err.width = console_width(stderr)  # type: ignore[assignment]


def print_table(t: Table, out: Console | None = None) -> None:
    """A table on the console, split into parts that fit its width (never truncated). Its
    title and caption are lines of their own, word-wrapped at the console's width on a
    terminal and one line each off it (so ``grep`` finds them whole)."""
    target = out or console
    wrap = not target.is_terminal
    for part in fit_to_width(t, target.width):
        target.print(part.title, style="italic", markup=False, highlight=False, soft_wrap=wrap)
        rt = RichTable()
        for i, c in enumerate(part.columns):
            # escape: cells hold names such as "x[draft]", never markup
            numbers = i >= t.key_columns and all(_numeric(row[i]) for row in part.rows)
            justify = "right" if numbers else "left"
            rt.add_column(escape(c), justify=justify, overflow="fold")
        for row in part.rows:
            rt.add_row(*(escape(c) for c in row))
        target.print(rt)
        if part.caption:
            target.print(part.caption, markup=False, highlight=False, soft_wrap=wrap)


def _numeric(cell: str) -> bool:
    """Whether a cell holds a figure (``0.455 (n=633)``, ``12/50``, ``null``, ``-``): such
    columns are right-aligned, text columns left-aligned."""
    text = cell.strip()
    return text in ("", "-", "null", "n/a") or text.lstrip("+-")[:1].isdigit()


class SmoothedRate:
    """Items per second, smoothed exponentially (half-life ``half_life_s``), and the time
    left at that rate.

    The rate is measured from one completion to the next (items done since the last one, over
    the time since it), never over an idle stretch alone, so items that finish in bursts give
    the burst's true average and not "stopped" then "ten times faster"; each measurement moves
    the rate by a share that grows with the time it covers. Between completions the time left
    counts down with the clock, so the ETA moves steadily instead of jumping at each burst."""

    def __init__(self, half_life_s: float = 30.0) -> None:
        self.half_life_s = half_life_s
        self.rate: float | None = None
        self._event: tuple[float, float] | None = None  # (time, completed) of the last change
        self._now = 0.0

    def update(self, now: float, completed: float) -> None:
        """Record that ``completed`` items were done at time ``now`` (seconds)."""
        self._now = now
        if self._event is None:
            self._event = (now, completed)
            return
        t0, c0 = self._event
        dt = now - t0
        if completed <= c0 or dt <= 0:
            return
        measured = (completed - c0) / dt
        if self.rate is None:
            self.rate = measured
        else:
            share = 1.0 - 0.5 ** (dt / self.half_life_s)
            self.rate += share * (measured - self.rate)
        self._event = (now, completed)

    def remaining_s(self, completed: float, total: float | None) -> float | None:
        """Seconds left for ``total - completed`` items at the smoothed rate, less the time
        since the last completion (None: not known yet)."""
        if total is None or self.rate is None or self.rate <= 0 or self._event is None:
            return None
        left = max(0.0, total - completed) / self.rate
        return max(0.0, left - (self._now - self._event[0]))


class SmoothedEtaColumn(ProgressColumn):
    """Time left for a task, from its :class:`SmoothedRate`."""

    def __init__(self) -> None:
        super().__init__()
        self._rates: dict[int, SmoothedRate] = {}

    def render(self, task: Task) -> Text:
        if task.finished:
            return Text("done", style="progress.remaining")
        rate = self._rates.setdefault(int(task.id), SmoothedRate())
        rate.update(task.get_time(), task.completed)
        left = rate.remaining_s(task.completed, task.total)
        if left is None:
            return Text("eta -:--:--", style="progress.remaining")
        minutes, seconds = divmod(int(left + 0.5), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"eta {hours}:{minutes:02d}:{seconds:02d}", style="progress.remaining")


class PhaseBar:
    """The progress display of a command: a task per phase of each system and dataset."""

    def __init__(self, enabled: bool) -> None:
        self.progress = RichProgress(
            "[progress.description]{task.description}",
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            SmoothedEtaColumn(),
            console=err,
            disable=not enabled,
        )
        self.task: object = None

    def callbacks(self) -> Progress:
        def start(description: str, total: int) -> None:
            self.task = self.progress.add_task(escape(description), total=total)

        def advance(n: int) -> None:
            if self.task is not None:
                self.progress.advance(self.task, n)  # type: ignore[arg-type]

        def start_phase(phase: str, what: str, total: int) -> Callable[[int], None]:
            task = self.progress.add_task(escape(f"{phase:<6} {what}"), total=total)
            return lambda n: self.progress.advance(task, n)

        return Progress(start_task=start, advance=advance, start_phase=start_phase)
