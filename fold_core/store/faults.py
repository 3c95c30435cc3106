"""Fault injection for tests (contract §6.3).

``FOLD_FAULT=<point>`` makes the process call ``os._exit(137)`` exactly at
that point of the write protocol: ``before_append``, ``mid_append`` (half of
the record's bytes written, no newline), ``after_append`` (before fsync),
``after_fsync`` (before the snapshot), ``mid_snapshot`` (temporary snapshot
written, before replace).

``FOLD_INJECT`` (comma-separated) turns an operation into an I/O error instead
of a crash, so tests can check that a failed write reports
``store_unavailable`` and leaves nothing partial: ``enospc_append`` (ENOSPC
after half of the record was written), ``eio_fsync`` (EIO from the log's
fsync), ``enospc_snapshot`` (ENOSPC while writing the snapshot; only logged).

Both are read from the environment at the point itself (so in-process tests
may set them); unset, each point costs one dict lookup (``environ_value``).
"""

from __future__ import annotations

import errno
import os

__all__ = ["FAULT_POINTS", "INJECTIONS", "crash_at", "environ_value", "fault_is", "injected"]

FAULT_POINTS = ("before_append", "mid_append", "after_append", "after_fsync", "mid_snapshot")
INJECTIONS = ("enospc_append", "eio_fsync", "enospc_snapshot")


# The encoded dict behind ``os.environ`` (CPython keeps it in step with every change made
# through ``os.environ``). ``os.environ.get`` of an unset name raises and catches a KeyError
# inside, about a microsecond; a commit asks for unset names at every one of its points.
_DATA = getattr(os.environ, "_data", None)
_ENCODE = getattr(os.environ, "encodekey", None)
_KEYS: dict[str, object] = {}


def environ_value(name: str) -> str | None:
    """``os.environ.get(name)``, answered from the encoded mapping when ``name`` is unset."""
    if _DATA is not None and _ENCODE is not None:
        key = _KEYS.get(name)
        if key is None:
            key = _KEYS[name] = _ENCODE(name)
        if key not in _DATA:
            return None
    return os.environ.get(name)


def crash_at(point: str) -> None:
    """Die here (exit status 137, no cleanup) when ``FOLD_FAULT`` names ``point``."""
    if environ_value("FOLD_FAULT") == point:
        os._exit(137)


def fault_is(point: str) -> bool:
    """Whether ``FOLD_FAULT`` names ``point`` (for points that must prepare the crash)."""
    return environ_value("FOLD_FAULT") == point


def injected(name: str) -> OSError | None:
    """The OSError to raise at ``name`` when ``FOLD_INJECT`` asks for it."""
    wanted = environ_value("FOLD_INJECT")
    if not wanted or name not in wanted.split(","):
        return None
    code = errno.EIO if name.startswith("eio") else errno.ENOSPC
    return OSError(code, os.strerror(code) + f" (injected: {name})")
