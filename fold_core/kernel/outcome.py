"""Outcomes of the kernel and error records (contract §4.1, §4.2, §5).

The kernel answers with values: ``Accepted`` (new state, receipt, record) or
``Rejected`` (the §4.2 document with every error found). Error records are
plain dicts ``{"code", "message", <locators>}`` in the order the kernel found
them. Plain slotted classes, not dataclasses: the read path stays light.
"""

from __future__ import annotations

from fold_core.state import State

__all__ = ["Accepted", "Rejected", "RequestIdentity", "error", "rejection"]


class Accepted:
    """An accepted write: the state after it, the caller's receipt, the record to append."""

    __slots__ = ("state", "receipt", "record")

    def __init__(self, state: State, receipt: dict, record: dict) -> None:
        self.state, self.receipt, self.record = state, receipt, record


class Rejected:
    """A rejected request: nothing changes; ``document`` is what the caller receives."""

    __slots__ = ("document",)

    def __init__(self, document: dict) -> None:
        self.document = document

    @property
    def errors(self) -> list[dict]:
        return self.document["errors"]


class RequestIdentity:
    """What identifies a request under §6.2 step 2: its batch_id and digest."""

    __slots__ = ("batch_id", "digest")

    def __init__(self, batch_id: str, digest: str) -> None:
        self.batch_id, self.digest = batch_id, digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RequestIdentity) and (self.batch_id, self.digest) == (other.batch_id, other.digest)

    __hash__ = None  # type: ignore[assignment]


def error(code: str, message: str, **locators: object) -> dict:
    """One error record: code, message, then its locators (§5)."""
    return {"code": code, "message": message, **locators}


def rejection(errors: list[dict], *, revision: int, batch_id: object = ..., ) -> Rejected:
    """The §4.2 document; ``batch_id`` is left out for annotate and state answers."""
    document: dict = {"ok": False}
    if batch_id is not ...:
        document["batch_id"] = batch_id
    document["revision"] = revision
    document["errors"] = errors
    return Rejected(document)
