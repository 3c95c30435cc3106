"""Exceptions of Fold's shell (contract §5, §6, §7).

Kernel outcomes are values (``Rejected`` with error records), never
exceptions. Exceptions are for what the shell cannot answer::

    FoldError
    ├── StoreError                 the store could not give a trustworthy answer
    │   ├── StoreUnavailable       lock timeout, failed fsync, I/O error: outcome unknown (exit 3)
    │   └── StoreCorrupt           a complete log line that does not parse or breaks order (exit 4)
    └── UsageError                 a command line or input the CLI cannot act on (exit 2)
        └── ConfigError            plugins.toml or a plugin is wrong: names file, instance, field (exit 2)
"""

from __future__ import annotations

import errno

__all__ = ["ConfigError", "ConfigErrors", "FoldError", "StoreCorrupt", "StoreError", "StoreUnavailable", "UsageError",
           "os_error_text"]


class FoldError(Exception):
    """Base of every exception Fold raises on purpose."""

    exit_code = 1

    def to_error(self) -> dict:
        """The contract's error record for this exception."""
        return {"code": "error", "message": str(self)}


class StoreError(FoldError):
    """The store could not answer; never means "not found"."""


class StoreUnavailable(StoreError):
    """The outcome is unknown: retry with the same batch_id."""

    exit_code = 3

    def to_error(self) -> dict:
        return {"code": "store_unavailable", "message": str(self)}


class StoreCorrupt(StoreError):
    """A complete log line does not parse or breaks the event_seq order."""

    exit_code = 4

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def to_error(self) -> dict:
        return {"code": "store_corrupt", "message": str(self), "line": self.line}


class UsageError(FoldError):
    """A usage error of the command line (exit 2)."""

    exit_code = 2

    def to_error(self) -> dict:
        return {"code": "usage", "message": str(self)}


class ConfigError(UsageError):
    """plugins.toml, an instance's settings or a plugin is wrong (exit 2).

    The message names the file, the instance and the field, what was expected
    and what was found.
    """

    def __init__(self, message: str, *, file: str | None = None, instance: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.file, self.instance, self.field = file, instance, field

    def to_error(self) -> dict:
        return {"code": "config", "message": str(self), "file": self.file, "instance": self.instance,
                "field": self.field}

    def to_errors(self) -> list[dict]:
        return [self.to_error()]


class ConfigErrors(ConfigError):
    """Several problems in one plugins.toml, all reported at once (one per line, in file order)."""

    def __init__(self, problems: list[ConfigError]) -> None:
        first = problems[0]
        super().__init__("\n".join(str(problem) for problem in problems), file=first.file,
                         instance=first.instance, field=first.field)
        self.problems = list(problems)

    def to_error(self) -> dict:
        return self.problems[0].to_error()

    def to_errors(self) -> list[dict]:
        return [problem.to_error() for problem in self.problems]


_OS_ERRORS = {errno.ENOSPC: "disk full: no space left on the device", errno.EDQUOT: "disk full: the disk quota is used up",
              errno.EROFS: "read-only file system: nothing can be written there",
              errno.EACCES: "permission denied", errno.EPERM: "not permitted", errno.EIO: "disk I/O error"}


def os_error_text(error: OSError) -> str:
    """An OSError in words a user acts on ("disk full: …", "read-only file system: …"), naming the file."""
    said = (_OS_ERRORS.get(error.errno) if error.errno is not None else None) or error.strerror or str(error)
    where = f" ({error.filename})" if error.filename else ""
    return f"{said}{where}"
