"""What the three mail adapters share (contract §10, §11.1).

* ``MailSettings`` — the keys every mail source understands besides its own:
  ``first_run`` (``new`` | ``since:YYYY-MM-DD`` | ``last:N``), ``max_per_poll``
  (a large first run or backlog arrives over several polls, never as one
  huge batch) and ``max_message_bytes`` (a bigger message is read up to that
  many bytes, and says so).
* ``FirstRun`` — the parsed policy, with ``describe()`` for the health note
  that states it on the first poll.
* ``SeenCache`` — a bounded, ordered list of ``Mail.fingerprint`` values kept
  in the cursor: a message seen again (the same message delivered twice, a
  mailbox re-numbered by a UIDVALIDITY change or rewritten) is not observed
  twice.
* ``observe`` — raw bytes → observations through ``fold_adapters.mail.mime``, the
  seen check included; ``fingerprint`` — what the seen check compares.

``mime`` (the email parser, the HTML and charset readers) loads with the
first message read: the host loads the adapters' modules to register their
types on every command.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from typing import Any

from pydantic import Field, field_validator

from fold_core.observation import Observation
from fold_core.settings import AdapterSettings

__all__ = ["FirstRun", "MailSettings", "SeenCache", "fingerprint", "observe"]

SEEN_LIMIT = 1024
_FIRST_RUN = re.compile(r"^(new|since:(\d{4}-\d{2}-\d{2})|last:(\d{1,6}))$")


@dataclass(frozen=True)
class FirstRun:
    """``new`` | ``since`` a date | the ``last`` N messages."""

    kind: str
    since: date | None = None
    last: int = 0  # messages taken by a ``last`` policy

    @classmethod
    def parse(cls, value: str) -> "FirstRun":
        match = _FIRST_RUN.match(value.strip()) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f'expected "new", "since:YYYY-MM-DD" or "last:N", found {value!r}')
        if match.group(2):
            return cls("since", since=date.fromisoformat(match.group(2)))
        if match.group(3):
            return cls("last", last=int(match.group(3)))
        return cls("new")

    @property
    def since_date(self) -> date:
        """The date of a ``since`` policy (ValueError for the others)."""
        if self.since is None:
            raise ValueError(f"first_run = {self.kind} names no date")
        return self.since

    @property
    def since_instant(self) -> datetime:
        """Midnight UTC of a ``since`` policy's date (ValueError for the others)."""
        return datetime.combine(self.since_date, time(0), tzinfo=timezone.utc)

    def describe(self, where: str, existing: int, taken: int) -> str:
        if self.kind == "new":
            return (f"first run (first_run = new): {existing} existing messages in {where} left as they are; "
                    f"only mail arriving from now on is observed")
        if self.kind == "last":
            return f"first run (first_run = last:{self.last}): {taken} of {existing} messages in {where} taken"
        return (f"first run (first_run = since:{self.since_date.isoformat()}): {taken} of {existing} messages in "
                f"{where} arrived since then")


class MailSettings(AdapterSettings):
    """Keys of every mail source (besides ``every`` and ``poll_timeout``)."""

    first_run: str = "last:50"
    max_per_poll: int = Field(default=200, ge=1, le=10_000)
    max_message_bytes: int = Field(default=10 * 1024 * 1024, ge=64 * 1024, le=1024 * 1024 * 1024)

    @field_validator("first_run")
    @classmethod
    def _first_run(cls, value: str) -> str:
        FirstRun.parse(value)
        return value.strip()

    @property
    def first_run_policy(self) -> FirstRun:
        return FirstRun.parse(self.first_run)


class SeenCache:
    """The fingerprints of the last ``SEEN_LIMIT`` messages observed, oldest first."""

    def __init__(self, values: Iterable[Any] = ()) -> None:
        self._order = [v for v in values if isinstance(v, str)][-SEEN_LIMIT:]
        self._set = set(self._order)

    def __contains__(self, fingerprint: str) -> bool:
        return fingerprint in self._set

    def add(self, fingerprint: str) -> None:
        if fingerprint in self._set:
            return
        self._order.append(fingerprint)
        self._set.add(fingerprint)
        if len(self._order) > SEEN_LIMIT:
            self._set.discard(self._order.pop(0))

    def to_json(self) -> list[str]:
        return list(self._order)


@dataclass
class Tally:
    """Counts for the poll's health notes."""

    duplicates: int = 0
    truncated: int = 0

    def notes(self) -> list[str]:
        found = []
        if self.duplicates:
            found.append(f"{self.duplicates} message(s) skipped: already observed (same Message-ID, Date, From, "
                         f"To and Subject)")
        if self.truncated:
            found.append(f"{self.truncated} message(s) larger than max_message_bytes were read only in part")
        return found


def observe(raw: bytes, *, seen: SeenCache, tally: Tally, source: str, native_id: str | None, now: datetime,
            full_size: int | None = None, fallback_at: datetime | None = None, fallback: str | None = None,
            url: str | None = None, meta: dict[str, Any] | None = None) -> list[Observation]:
    """Observations of one message (empty when it was already seen). ``native_id`` None: by fingerprint."""
    # lazy: mime loads the email parser, lxml and charset_normalizer (see the module docstring)
    from fold_adapters.mail import mime

    mail = mime.read_mail(raw)
    if mail.fingerprint in seen:
        tally.duplicates += 1
        return []
    seen.add(mail.fingerprint)
    if full_size is not None and full_size > len(raw):
        tally.truncated += 1
        mail.size = full_size
        mail.notes.append(f"only the first {len(raw)} of {full_size} bytes were read (max_message_bytes)")
    if native_id is None:
        native_id = mail.fingerprint if mail.message_id else _digest(raw)
    return mime.mail_observations(mail, source=source, native_id=native_id, observed_at=now,
                             fallback_at=fallback_at, fallback=fallback, url=url, meta=meta)


def fingerprint(raw: bytes) -> str:
    """The fingerprint ``SeenCache`` keeps of a message, read from its bytes (its header suffices)."""
    # lazy: mime loads the email parser, lxml and charset_normalizer (see the module docstring)
    from fold_adapters.mail import mime

    return mime.read_mail(raw).fingerprint


def _digest(raw: bytes) -> str:
    return "sha-" + hashlib.sha256(raw).hexdigest()[:24]


__all__ += ["Tally"]
