"""The state's item and annotation tables: persistent maps (contract §6.1 "replay").

Every accepted record produces a new ``State``; copying its item table each
time would make a commit cost grow with the store's history. A ``Table``
shares structure instead:

* ``base`` — a large dict shared by every version derived from it;
* ``top`` — a small dict of the entries changed since (each version has its
  own copy; it is folded into a new ``base`` once it grows past ``FOLD_AT``);
* ``source`` — optionally, entries kept outside memory (a file store's
  snapshot archive), looked up one key at a time with ``source.get(key)`` and
  loaded whole only when the table is iterated (``source.load()``).

Lookups go ``top``, then ``base``, then ``source``: later entries shadow
earlier ones. Nothing is ever deleted (ids are never reused). A table is
never changed in place; ``derive`` returns the next version. Values are the
JSON-shaped dicts of records and snapshots, never None.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

__all__ = ["FOLD_AT", "Source", "Table", "derive", "in_memory", "whole"]

FOLD_AT = 1024  # entries in ``top`` before it is folded into a new ``base``


class Source(Protocol):
    """Entries kept outside memory: one at a time (None: no such entry), or all."""

    def get(self, key: object) -> dict | None: ...

    def load(self) -> dict: ...


class Table(Mapping):
    """An immutable mapping ``key -> dict`` with structural sharing (see the module docstring)."""

    __slots__ = ("base", "top", "source", "_size")

    def __init__(self, base: dict | None = None, top: dict | None = None, *, size: int | None = None,
                 source: Source | None = None) -> None:
        self.base = {} if base is None else base
        self.top = {} if top is None else top
        self.source = source  # None, or an object with get(key) -> dict | None and load() -> dict
        if size is None:
            if source is not None:
                raise ValueError("a table with a source needs its size")
            size = len(self.base) + sum(1 for key in self.top if key not in self.base)
        self._size = size

    def get(self, key, default=None):
        value = self.top.get(key)
        if value is None:
            value = self.base.get(key)
            if value is None and self.source is not None:
                value = self.source.get(key)
            if value is None:
                return default
        return value

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        return iter(self.whole())

    def values(self):
        return self.whole().values()

    def items(self):
        return self.whole().items()

    def keys(self):
        return self.whole().keys()

    def whole(self) -> dict:
        """Every entry as one dict (loads the source: as costly as the history is long)."""
        if self.source is None and not self.top:
            return self.base
        merged = dict(self.source.load()) if self.source is not None else {}
        merged.update(self.base)
        merged.update(self.top)
        return merged

    def in_memory(self) -> dict:
        """The entries held in memory (``base`` and ``top``), without the source."""
        if not self.top:
            return self.base
        return {**self.base, **self.top}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return len(self) == len(other) and self.whole() == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        # pickle and deepcopy give a plain dict of every entry (a source is a file).
        return (dict, (self.whole(),))

    def __repr__(self) -> str:
        where = f", source={self.source!r}" if self.source is not None else ""
        return f"Table({len(self)} entries, {len(self.base)} in base, {len(self.top)} on top{where})"


def derive(table: Mapping, changes: dict, added: int) -> Table:
    """The next version of ``table`` with ``changes`` applied; ``added`` of them are new keys.

    ``changes`` is taken over (the caller must not change it afterwards). A
    plain dict becomes the ``base`` of a new table (shared, never copied).
    """
    if not isinstance(table, Table):
        table = Table(table if isinstance(table, dict) else dict(table), size=len(table))
    if not changes:
        return table
    top = {**table.top, **changes} if table.top else changes
    size = len(table) + added
    if len(top) > FOLD_AT:
        return Table({**table.base, **top}, size=size, source=table.source)
    return Table(table.base, top, size=size, source=table.source)


def whole(table: Mapping) -> dict:
    """Every entry of a state's table as a dict (``Table.whole``; a dict is itself: nothing may change it)."""
    if isinstance(table, Table):
        return table.whole()
    return table if isinstance(table, dict) else dict(table)


def in_memory(table: Mapping) -> dict:
    """The entries of a state's table held in memory (``Table.in_memory``; a dict is itself)."""
    if isinstance(table, Table):
        return table.in_memory()
    return table if isinstance(table, dict) else dict(table)
