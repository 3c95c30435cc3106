"""The in-memory recorder (contract §6, §14 kernel mode).

Same request identification, records and event_seq as the file recorder, no
files: the model the file store is tested against.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from fold_core.state import State, empty_state
from fold_core.store.base import Recorder, Session, Store

__all__ = ["MemoryRecorder", "memory_store"]


class _MemorySession(Session):
    def __init__(self, recorder: "MemoryRecorder") -> None:
        self._recorder = recorder
        self.state = recorder.state

    def lookup(self, batch_id: str) -> tuple[int, str | None] | None:
        return self._recorder.batches.get(batch_id)

    def record(self, event_seq: int) -> dict:
        return self._recorder.log[event_seq - 1]

    def records(self, since: int = 0) -> Iterator[dict]:
        return iter(self._recorder.log[max(since, 0):])

    def append(self, record: dict, state: State) -> None:
        recorder = self._recorder
        if record["event_seq"] != len(recorder.log) + 1:
            raise ValueError(f"record {record['event_seq']} does not follow {len(recorder.log)}")
        # Keep a JSON copy, as the file recorder does: later changes to the
        # caller's objects never alter the log, and non-JSON values fail here.
        recorder.log.append(json.loads(json.dumps(record, ensure_ascii=False)))
        if "batch_id" in record:
            recorder.batches[record["batch_id"]] = (record["event_seq"], record["request_digest"])
        recorder.state = state
        self.state = state


class MemoryRecorder(Recorder):
    """Records in a list, the batch index in a dict, the state in memory."""

    def __init__(self, budget: int = 64) -> None:
        self.state: State = empty_state(budget)
        self.log: list[dict] = []
        self.batches: dict[str, tuple[int, str]] = {}

    @contextmanager
    def session(self, *, write: bool) -> Iterator[Session]:
        yield _MemorySession(self)


def memory_store(budget: int = 64) -> Store:
    """A store that lives only in this process."""
    return Store(MemoryRecorder(budget))
