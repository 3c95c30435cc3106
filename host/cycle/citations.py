"""A rebuilt host.db never offers again what the store's records already cite (contract §9).

Before each window the host reads the records it has not read yet, keeps
which observation ids their items cite as sources (``event:<id>``), and
settles every pending observation the store already cites as ``used`` —
without asking the editor, which would otherwise see it as new and might
bring back an item it had withdrawn. In normal running nothing is pending
that the store cites (a window's observations are marked when its batch is
committed, and an interrupted commit is finished first); only a host.db that
was lost and built anew has such observations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fold_core.store.base import Store
from fold_host.hostdb import HostDB

__all__ = ["citations", "settle_cited"]

READ_CHUNK = 5_000  # records read from the store at once


def citations(records: Iterable[Mapping]) -> list[tuple[str, str]]:
    """``(observation id, item id)`` for every ``event:<id>`` source in the records' item images."""
    found: list[tuple[str, str]] = []
    for record in records:
        for change in record.get("changes") or ():
            image: Mapping[str, Any] = change.get("item") or {}
            for source in image.get("sources") or ():
                ref = source.get("ref") if isinstance(source, Mapping) else None
                if isinstance(ref, str) and ref.startswith("event:"):
                    found.append((ref[len("event:"):], image["id"]))  # an item image always has its id
    return found


def settle_cited(store: Store, db: HostDB, now: str) -> list[str]:
    """Learn the records' citations up to the store's last record; settle what is cited; the settled ids."""
    through = db.cited_through()
    while True:
        answer = store.history(since=through, limit=READ_CHUNK).document
        if answer["last_event_seq"] < through:  # another store (restored from a backup): learn it from the start
            db.forget_cited()
            through = 0
            continue
        records = answer["records"]
        if not records:
            break
        through = records[-1]["event_seq"]
        db.add_cited(citations(records), through=through)
        if len(records) < READ_CHUNK:
            break
    return db.settle_cited(now=now)
