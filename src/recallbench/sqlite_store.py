"""The SQLite plumbing shared by recallbench's on-disk caches (embeddings, LLM responses).

One database file per cache, opened once per process and shared by its threads
(``check_same_thread=False``, every use under the caller's lock), in WAL mode so that several
processes read and write it at once. SQLite may answer "database is locked" or "busy" without
waiting (switching a fresh file to WAL, two writers racing for ``BEGIN IMMEDIATE``):
:func:`retry_locked` retries those, and only those, with a capped exponential wait.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

LOCK_WAIT_S = 120.0
"""How long a cache waits for another process's lock before giving up (the error is raised)."""


def retry_locked(fn: Callable[[], T], seconds: float = LOCK_WAIT_S) -> T:
    """Call ``fn``, retrying while SQLite reports the database locked or busy.

    Waits 10 ms, doubling to at most 0.5 s, until ``seconds`` have passed; then the last
    ``sqlite3.OperationalError`` is raised. Any other error is raised at once.
    """
    deadline = time.monotonic() + seconds
    delay = 0.01
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def open_database(path: Path, schema: Sequence[str] = ()) -> sqlite3.Connection:
    """Open (creating its folder) the database at ``path`` in WAL mode, in autocommit
    (``isolation_level=None``: transactions only where :func:`write_transaction` opens one),
    usable from any thread, then run each ``CREATE ... IF NOT EXISTS`` statement of ``schema``.
    The setup is retried as :func:`retry_locked` says."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=LOCK_WAIT_S, check_same_thread=False, isolation_level=None)

    def setup() -> None:
        # Switching to WAL needs a moment alone with the file; when two processes open a new
        # cache at once, SQLite may answer "locked" without waiting, hence the retry around it.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        for statement in schema:
            conn.execute(statement)

    try:
        retry_locked(setup)
    except BaseException:
        conn.close()
        raise
    return conn


def write_transaction(
    conn: sqlite3.Connection, statement: str, rows: Iterable[Sequence[Any]]
) -> None:
    """Run ``statement`` once per row inside one ``BEGIN IMMEDIATE`` transaction (rolled back on
    any error), retried while the database is locked or busy."""
    batch = [tuple(r) for r in rows]
    if not batch:
        return

    def write() -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(statement, batch)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    retry_locked(write)
