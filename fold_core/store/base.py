"""The store protocol (contract §6.2, §7), shared by every recorder.

A ``Store`` runs the write protocol — recover, identify the request, build and
check the candidate with the pure kernel, append, return the receipt — and the
reads (state document, history) over a ``Recorder``. A recorder is the thin,
replaceable part: it holds the lock, brings the state to the last complete
record, finds a batch_id in O(1), appends one record durably and reads records
back. ``MemoryRecorder`` keeps everything in memory (the kernel mode of the
conformance runner); the file recorder keeps ``events.jsonl`` and a snapshot.

Invariants: request identification happens before any validation; a rejected
batch writes nothing; once ``Session.append`` returns, the batch is committed
and nothing later may report otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager

from fold_core import kernel
from fold_core.state import State

__all__ = ["Answer", "Recorder", "Session", "Store"]

EXIT_OK, EXIT_REJECTED = 0, 1


class Answer:
    """One JSON document for stdout and the exit code that goes with it."""

    __slots__ = ("document", "exit_code")

    def __init__(self, document: dict, exit_code: int = EXIT_OK) -> None:
        self.document, self.exit_code = document, exit_code

    def __repr__(self) -> str:
        return f"Answer(exit_code={self.exit_code}, document={self.document!r})"


class Session(ABC):
    """A recovered view of the store, valid while the recorder's lock is held."""

    state: State

    @abstractmethod
    def lookup(self, batch_id: str) -> tuple[int, str | None] | None:
        """``(event_seq, request_digest)`` of an accepted batch, or None (a record without a digest: a replay of
        it is a conflict)."""

    @abstractmethod
    def record(self, event_seq: int) -> dict:
        """The record with this event_seq."""

    @abstractmethod
    def records(self, since: int = 0) -> Iterator[dict]:
        """Records with event_seq > ``since``, oldest first."""

    def records_about(self, item: str, since: int = 0) -> Iterator[dict]:
        """Records after ``since`` holding a post-image of ``item`` or an annotation on it, oldest first.

        By default a filter over ``records``; a recorder with an index may answer from it.
        """
        return (record for record in self.records(since) if mentions(record, item))

    @abstractmethod
    def append(self, record: dict, state: State) -> None:
        """Durably append ``record`` (whose result is ``state``); committed on return."""

    def state_for_view(self, *, item: str | None, not_active: int | None) -> State:
        """A state good enough for this state-document request (by default the whole state).

        A recorder may answer with less — e.g. without old withdrawn items
        when the document will not list them — as long as the document is
        the same.
        """
        return self.state


class Recorder(ABC):
    """Durable records, their cache and the lock around them."""

    @abstractmethod
    def session(self, *, write: bool) -> AbstractContextManager[Session]:
        """Take the lock (exclusive when ``write``), recover, yield the session."""

    def close(self) -> None:
        """A long-lived reader's clean end (its cache brought up to date, its files closed); none by default."""


class Store:
    """Commit, annotate, state and history over one recorder."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    # -- writes -----------------------------------------------------------

    def commit(self, batch: object, *, actor: str, now: str, batch_id: str | None = None) -> Answer:
        """Submit a batch: the receipt (new or replayed) or the rejection."""
        with self.recorder.session(write=True) as session:
            identity = kernel.request_identity(batch, actor=actor, batch_id=batch_id)
            if identity is not None:
                known = session.lookup(identity.batch_id)
                if known is not None:
                    return self._replay(session, identity, *known)
            outcome = kernel.apply_batch(session.state, batch, actor=actor, now=now, batch_id=batch_id,
                                         identity=identity)
            if isinstance(outcome, kernel.Rejected):
                return Answer(outcome.document, EXIT_REJECTED)
            session.append(outcome.record, outcome.state)
            return Answer(outcome.receipt)

    @staticmethod
    def _replay(session: Session, identity: kernel.RequestIdentity, event_seq: int, digest: str | None) -> Answer:
        if digest != identity.digest:
            return Answer(kernel.batch_conflict(session.state, identity.batch_id, event_seq), EXIT_REJECTED)
        receipt = dict(session.record(event_seq)["receipt"])
        receipt["replayed"] = True
        return Answer(receipt)

    def annotate(self, *, item: str, text: str, author: str, now: str) -> Answer:
        """Save a user annotation (status ``saved``)."""
        with self.recorder.session(write=True) as session:
            outcome = kernel.save_annotation(session.state, item=item, text=text, author=author, now=now)
            if isinstance(outcome, kernel.Rejected):
                return Answer(outcome.document, EXIT_REJECTED)
            session.append(outcome.record, outcome.state)
            return Answer(outcome.receipt)

    # -- reads ------------------------------------------------------------

    def state(self) -> State:
        """The recovered current state."""
        with self.recorder.session(write=False) as session:
            return session.state

    def state_document(self, *, now: str, item: str | None = None, depth: int | None = None,
                       not_active: int | None = kernel.NOT_ACTIVE_DEFAULT) -> Answer:
        """The §8 state document (or an item's view) with the time projection at ``now``."""
        with self.recorder.session(write=False) as session:
            state = session.state_for_view(item=item, not_active=not_active)
        outcome = kernel.state_document(state, now, item=item, depth=depth, not_active=not_active)
        if isinstance(outcome, kernel.Rejected):
            return Answer(outcome.document, EXIT_REJECTED)
        return Answer(outcome)

    def history(self, *, batch: str | None = None, item: str | None = None,
                since: int | None = None, limit: int | None = None) -> Answer:
        """``{records, last_event_seq}``, or ``{found, record}`` for ``batch``."""
        with self.recorder.session(write=False) as session:
            if batch is not None:
                known = session.lookup(batch)
                record = session.record(known[0]) if known is not None else None
                return Answer({"found": record is not None, "record": record})
            last = session.state.event_seq
            selected = []
            found = session.records(since or 0) if item is None else session.records_about(item, since or 0)
            for record in found:
                selected.append(record)
                if limit is not None and len(selected) >= limit:
                    break
            return Answer({"records": selected, "last_event_seq": last})


def mentions(record: Mapping, item: str) -> bool:
    """Whether a record holds a post-image of ``item`` or an annotation on it."""
    if record["type"] == "annotation":
        return record["annotation"]["item"] == item
    return any(change["item"]["id"] == item for change in record["changes"])
