"""Open, create or verify the store a location names: a directory or a ``postgresql://`` URL.

The core commands (``init``, ``state``, ``commit``, ``annotate``, ``history``,
``verify``) go through here, so each accepts both kinds of store alike. The
backend's module is imported only when used: a command on a directory never
imports psycopg, one on a URL never reads a file store.
"""

from __future__ import annotations

import os

from fold_core.store.base import Store
from fold_core.store.location import is_url, parse_url

__all__ = ["create", "describe", "is_url", "open_store", "verify"]


def open_store(location: str | os.PathLike, budget: int | None = None) -> Store:
    """The ``Store`` at ``location`` (``budget`` only matters when a write creates it)."""
    if is_url(location):
        from fold_core.store.pg.recorder import postgres_store

        return postgres_store(location, budget)
    from fold_core.store.file import file_store

    return file_store(location, budget)


def create(location: str | os.PathLike, budget: int) -> tuple[dict, bool]:
    """``init``: ``(meta, created)`` — the store's identity, and whether this call created it."""
    if is_url(location):
        from fold_core.store.pg.recorder import create_pg_store

        return create_pg_store(location, budget)
    from fold_core.store.meta import create_store

    return create_store(os.fspath(location), budget)


def verify(location: str | os.PathLike) -> dict:
    """``foldctl verify``: the report of a clean store; raises ``StoreCorrupt`` at the first problem."""
    if is_url(location):
        from fold_core.store.pg.verify import verify_pg_store

        return verify_pg_store(location)
    from fold_core.store.verify import verify_store

    return verify_store(os.fspath(location))


def describe(location: str | os.PathLike) -> str:
    """How answers name the store: the path, or the URL with any password masked."""
    return parse_url(location).display if is_url(location) else os.fspath(location)
