"""Open, create or verify the store a location names: a directory or a ``postgresql://`` URL.

The core commands (``init``, ``state``, ``commit``, ``annotate``, ``history``,
``verify``) go through here, so each accepts both kinds of store alike. The
PostgreSQL engine (``pg``) is imported only when used: a command on a
directory never imports psycopg.
"""

from __future__ import annotations

import os

from fold_core.store.base import Store
from fold_core.store.file import file_store
from fold_core.store.location import is_url, parse_url
from fold_core.store.meta import create_store

__all__ = ["create", "describe", "is_url", "open_store", "verify"]


def open_store(location: str | os.PathLike, budget: int | None = None) -> Store:
    """The ``Store`` at ``location`` (``budget`` only matters when a write creates it)."""
    if is_url(location):
        # lazy: psycopg loads only for a postgresql:// store
        from fold_core.store.pg import recorder

        return recorder.postgres_store(location, budget)
    return file_store(location, budget)


def create(location: str | os.PathLike, budget: int) -> tuple[dict, bool]:
    """``init``: ``(meta, created)`` — the store's identity, and whether this call created it."""
    if is_url(location):
        # lazy: psycopg loads only for a postgresql:// store
        from fold_core.store.pg import recorder

        return recorder.create_pg_store(location, budget)
    return create_store(os.fspath(location), budget)


def verify(location: str | os.PathLike) -> dict:
    """``foldctl verify``: the report of a clean store; raises ``StoreCorrupt`` at the first problem."""
    if is_url(location):
        # lazy: psycopg loads only for a postgresql:// store
        from fold_core.store.pg import verify as pg_verify

        return pg_verify.verify_pg_store(location)
    # lazy: the full check is verify's alone; the other commands (a state read) do not load it
    from fold_core.store import verify as file_verify

    return file_verify.verify_store(os.fspath(location))


def describe(location: str | os.PathLike) -> str:
    """How answers name the store: the path, or the URL with any password masked."""
    return parse_url(location).display if is_url(location) else os.fspath(location)

