"""The store's identity file ``meta.json`` and store creation (contract §6, §7 ``init``).

``meta.json`` = ``{"format": "fold-store", "version": 1, "budget": B,
"created_at": ...}``; the budget is fixed for the store's life (8 ≤ B ≤ 4096).
A directory without ``meta.json`` holds no store: reads answer
``StoreMissing`` (exit 3, never "empty"), writes create it — ``init``
explicitly, the first accepted commit or annotation implicitly (default
budget 64). ``meta.json`` is written before the first record, via a temporary
file, fsync, ``os.replace`` and a directory fsync.
"""

from __future__ import annotations

import json
import os

from fold_core.errors import StoreCorrupt, StoreUnavailable
from fold_core.store.locking import StoreLock
from fold_core.store.log import fsync_dir, unavailable

__all__ = ["DEFAULT_BUDGET", "StoreMissing", "create_store", "read_meta", "write_meta"]

DEFAULT_BUDGET = 64
META_FORMAT, META_VERSION = "fold-store", 1


class StoreMissing(StoreUnavailable):
    """A read found no store at the path (exit 3: it cannot answer, it never says "empty")."""


def read_meta(path: str) -> dict | None:
    """``meta.json`` of the store at ``path``, None when absent; StoreCorrupt when unusable."""
    try:
        with open(os.path.join(path, "meta.json"), "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return None
    try:
        meta = json.loads(data)
        budget = meta["budget"]
        valid = meta["format"] == META_FORMAT and meta["version"] == META_VERSION
    except (ValueError, TypeError, KeyError):
        valid, meta, budget = False, None, None
    if not valid or type(budget) is not int or not 8 <= budget <= 4096:
        raise StoreCorrupt(
            f"{os.path.join(path, 'meta.json')}: expected"
            ' {"format": "fold-store", "version": 1, "budget": 8…4096, ...}'
        )
    return meta


def write_meta(path: str, budget: int, created_at: str | None = None) -> dict:
    """Write ``meta.json`` durably (the caller holds the exclusive lock); ``created_at`` defaults to now."""
    from datetime import datetime, timezone  # write path only

    if created_at is None:
        created_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    meta = {"format": META_FORMAT, "version": META_VERSION, "budget": budget, "created_at": created_at}
    temp = os.path.join(path, ".meta.json.tmp")
    with open(temp, "wb") as file:
        file.write(json.dumps(meta).encode() + b"\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, os.path.join(path, "meta.json"))
    fsync_dir(path)
    return meta


def create_store(path: str, budget: int = DEFAULT_BUDGET) -> tuple[dict, bool]:
    """``init``: create the store at ``path`` unless one exists; ``(meta, created)``."""
    if not 8 <= budget <= 4096:
        raise ValueError(f"budget must be 8…4096, got {budget}")
    try:
        os.makedirs(path, exist_ok=True)
        lock = StoreLock(os.path.join(path, "lock"), exclusive=True, create=True)
    except OSError as error:
        raise unavailable(error, f"cannot create a store in {path}") from error
    try:
        meta = read_meta(path)
        if meta is not None:
            return meta, False
        if os.path.exists(os.path.join(path, "events.jsonl")):
            raise StoreCorrupt(f"{path}: events.jsonl exists but meta.json is missing")
        try:
            return write_meta(path, budget), True
        except OSError as error:
            raise unavailable(error, f"cannot create a store in {path}") from error
    finally:
        lock.release()
