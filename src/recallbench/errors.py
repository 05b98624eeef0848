"""The one family of errors a user can cause and fix (bad input, missing data, bad options).

The command line prints a :class:`UserError` as one line and exits with
:data:`USER_ERROR_EXIT`; any other exception is a bug in recallbench (or in a plugin): it is
shown with its traceback, or, when ``RECALLBENCH_TRACEBACK`` is off, summarised with the path of
a log file holding it. Each class keeps the built-in base it had before this module existed
(``ValueError``, ``RuntimeError``, ``LookupError``) so callers that caught those still work.
"""

from __future__ import annotations

from pathlib import Path

USER_ERROR_EXIT = 2


class UserError(Exception):
    """Something the user can fix: the message says what and how."""


class OptionError(UserError, ValueError):
    """A command-line or dataset option that is unknown or inconsistent."""


class DatasetRefError(OptionError):
    """A dataset reference (``name``, ``name:variant``, ``name@PATH``) that names nothing."""


class DatasetFormatError(UserError, ValueError):
    """Bad input in a dataset or predictions file; the message names the file and line."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class DataFileError(UserError, RuntimeError):
    """A data file that is missing, cannot be fetched, or fails its checksum."""


class ChecksumMismatchError(DataFileError):
    def __init__(self, path: Path, expected: str, actual: str) -> None:
        super().__init__(
            f"{path}: SHA-256 mismatch: expected {expected}, got {actual}. The file is damaged, "
            "truncated or not the pinned release; delete it to download it again."
        )
        self.path = path
        self.expected = expected
        self.actual = actual


class RunFolderError(UserError, RuntimeError):
    """A results folder that cannot be read, resumed or re-scored as it is."""


class ManifestVersionError(RunFolderError):
    """``run.json`` written by a newer recallbench (or in a format this one does not know)."""


class DuplicateObservationError(RunFolderError, ValueError):
    """Two observations for one (system, question) in a results folder."""


class RunLockedError(RunFolderError):
    """A results folder another process is writing (its lock is held): a second writer waits."""


class IncompleteRunError(RunFolderError):
    """Scoring a run some of whose questions were never asked, without ``--incomplete``."""


class UnknownSystemError(UserError, LookupError):
    pass


class SystemUnavailableError(UserError, RuntimeError):
    """A registered system whose optional dependencies are not installed."""

    def __init__(self, name: str, extra: str | None, cause: BaseException) -> None:
        hint = f' (install it with: pip install "recallbench[{extra}]")' if extra else ""
        super().__init__(f"system {name!r} is not available: {cause}{hint}")
        self.name = name
        self.extra = extra


class SystemConfigError(UserError, ValueError):
    """A system's ``--config`` options that it cannot run with."""


class RegistryError(UserError, LookupError):
    """Two plugins registered under one name, or a name that resolves to nothing."""
