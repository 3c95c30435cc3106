"""Consumer delivery (contract §11, §12).

The host calls ``register_new`` at the start of a cycle (before its own
commit) and ``deliver_all`` after it. For each consumer instance:

* **Durable cursor.** ``host.db`` table ``consumers`` keeps the last
  event_seq the instance acknowledged by returning from ``deliver``. A new
  instance starts at the store's event_seq of that moment (``from = "start"``:
  at 0, replaying the whole history once).
* **In order, at least once.** Records after the cursor are handed over in
  event_seq order, in batches; the cursor moves only after ``deliver``
  returns, so a crash in between hands the same records over again. The
  idempotency key of a record is ``(instance name, event_seq)``.
* **Read-only.** The store is opened with ``file_store`` and used through its
  read API only (``state_document``, ``history``: shared lock). A consumer gets
  the records (its own copies, unless its type declares ``shares_records =
  True``: it promises to only read them, as the built-ins do), a ``StateView`` built from the §8 document,
  its own durable memory, the clock, the time zone, the language and the
  per-source coverage — nothing that leads back to the store's write path.
* **Isolation.** A consumer that raises is recorded (``failures``,
  ``last_error``, ``last_error_at``, ``next_try_at`` with exponential backoff)
  and skipped until ``next_try_at``; the others go on. ``deliver_all`` never
  raises for a consumer, and a store it cannot read is reported per instance.
* **Timeout.** An instance's ``build``, ``deliver`` and ``close`` run on one
  worker thread of its own; a call that has not returned after the
  instance's ``deliver_timeout`` (default 2 min) counts as a failure (the
  cursor stays) and the others go on. Until that call returns, the instance
  is skipped ("the previous delivery has not finished"), so a consumer never
  runs twice at once.
* **Idle calls.** A consumer type with ``idle_calls = True`` (push: a digest
  held through quiet hours, a failed send to retry) gets ``deliver([], ...)``
  when it has no new records.

The state view is the state at the event_seq captured at the start of the
run; records are read up to exactly that event_seq, so view and records agree.

**Several hosts** (a store in PostgreSQL): each ``deliver`` call happens in
its consumer's turn (``consumer_turn``): the cursor row locked for the call,
the cursor read again under the lock, moved (and the consumer's memory
written) in the same transaction — so each record is handed over by one host
once. A host that finds the row locked leaves that consumer to the host
delivering to it. A consumer instance's ``begin`` is called by the host that
registered it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Any

from fold_core.bounded import Hung, Worker, backoff
from fold_core.errors import StoreError
from fold_core.kernel.view import state_document
from fold_core.plugin_api import FEEDBACK_WINDOW, Consumer, ConsumerContext, StateView
from fold_core.state import empty_state
from fold_core.store.base import Store
from fold_core.store.locate import open_store
from fold_core.store.meta import StoreMissing
from fold_core.timefmt import instant
from fold_host.hostdb import HostDB

__all__ = ["BATCH", "READ_CHUNK", "deliver_all", "register_new", "retry_wait"]

READ_CHUNK = 5_000  # records read from the store at once (bounds memory on a replay from the start)
BATCH = 1_000  # records per deliver() call
BACKOFF_BASE, BACKOFF_CAP = timedelta(seconds=30), timedelta(hours=1)


def retry_wait(failures: int) -> timedelta:
    """Wait after the ``failures``-th failure in a row: 30 s, 1 min, 2 min, … at most 1 h."""
    return backoff(failures, BACKOFF_BASE, BACKOFF_CAP)


def register_new(db: HostDB, location: str, instances: Sequence[Any], *, now: str | None = None,
                 store: Store | None = None) -> list[str]:
    """Give every instance without a cursor its starting event_seq; the names registered.

    ``from = "now"`` (default): the store's current event_seq; ``"start"``: 0.
    A consumer with a ``begin(context)`` method is called once with the state
    at its starting point (to remember the items it will later compare with).
    """
    known = {row["name"] for row in db.consumer_rows()}
    new = [instance for instance in instances if instance.name not in known]
    if not new:
        return []
    now = now or _clock()
    document = _document(store or _store(location), now)
    _register(db, new, document, now)
    return [instance.name for instance in new]


def deliver_all(db: HostDB, location: str, instances: Sequence[Any], *, now: str, timezone: str, language: str,
                coverage: Sequence[Mapping[str, Any]], editor: Mapping[str, Any] | None = None,
                store: Store | None = None, public_url: str | None = None) -> list[dict]:
    """Hand every consumer the records after its cursor; one result per instance (see module doc).

    ``store``: an open ``Store`` of ``location`` to read through (a daemon's, kept between cycles);
    by default one is opened for this call. Only its read API is used.
    """
    if not instances:
        return []
    store_dir = location  # the hung calls' key
    store = store or _store(location)
    try:
        document = _document(store, now)
    except StoreError as error:
        return [_result(instance.name, "failed", 0, f"the store cannot be read: {error}") for instance in instances]
    rows = {row["name"]: row for row in db.consumer_rows()}
    new = [instance for instance in instances if instance.name not in rows]
    if new:
        _register(db, new, document, now)
        rows = {row["name"]: row for row in db.consumer_rows()}
    current = document["event_seq"] if document is not None else 0
    view = StateView(document) if document is not None else None
    feedback = tuple(db.recent_feedback(FEEDBACK_WINDOW))  # acknowledgements (push), read once per delivery
    runs: list[_Run] = []
    results: dict[str, dict] = {}
    for instance in instances:
        row = rows[instance.name]
        if _hung.busy((store_dir, instance.name)):
            results[instance.name] = _result(instance.name, "failed", 0, "the previous delivery has not finished "
                                             "(it outran deliver_timeout); skipped", event_seq=row["event_seq"])
        elif row["next_try_at"] and instant(row["next_try_at"]) > instant(now):
            results[instance.name] = _result(instance.name, "waiting", 0, row["last_error"],
                                             next_try_at=row["next_try_at"], event_seq=row["event_seq"])
        elif row["event_seq"] > current:
            message = (f"the consumer's cursor (event {row['event_seq']}) is ahead of the store (event {current}):"
                       " was the store replaced? reset the consumer's row in host.db to deliver again")
            results[instance.name] = _result(instance.name, "failed", 0, message, event_seq=row["event_seq"])
        elif view is not None:
            context = ConsumerContext(state=view, now=now, timezone=timezone, memory=db.memory(instance.name),
                                      coverage=tuple(dict(entry) for entry in coverage), language=language,
                                      editor=dict(editor) if editor else None, feedback=feedback,
                                      public_url=public_url, location=location)
            runs.append(_Run(instance, row["event_seq"], row["failures"], context, store_dir))
        else:
            results[instance.name] = _result(instance.name, "ok", 0, event_seq=row["event_seq"])
    try:
        (_hand_over_in_turns if db.shared else _hand_over)(db, store, runs, current, now)
    finally:
        for run in runs:
            run.close()
    for run in runs:
        if run.error is None and run.delivered == 0 and run.consumer_class.idle_calls and not run.elsewhere:
            if db.shared:
                _idle_call_in_turn(db, run, now)
            else:
                run.call(db, [], now)
            run.close()
        results[run.instance.name] = run.result()
    return [results[instance.name] for instance in instances]


class DeliveryTimeout(Exception):
    """A consumer's call outran its ``deliver_timeout``."""


_hung = Hung()  # (store, instance name) of calls that outran deliver_timeout, until their thread ends


class _Run:
    """One consumer instance during one ``deliver_all``."""

    def __init__(self, instance, cursor: int, failures: int, context: ConsumerContext, store_dir: str) -> None:
        self.instance, self.cursor, self.failures, self.context = instance, cursor, failures, context
        self.store_dir = store_dir
        self.consumer_class = instance.cls
        self.consumer: Consumer | None = None
        self.worker: Worker | None = None
        self.delivered = 0
        self.error: str | None = None
        self.next_try_at: str | None = None
        self.elsewhere = False  # several hosts: another host was delivering to this consumer

    def call(self, db: HostDB, records: list[dict], now: str) -> bool:
        """``deliver(records)``; the cursor moves on success, the failure is recorded otherwise."""
        try:
            consumer, context = self.consumer, self.context
            if consumer is None:
                consumer = self.consumer = self._on_worker(self.instance.build, "build()")
            self._on_worker(lambda: consumer.deliver(records, context), "deliver()")
        except Exception as error:  # any consumer bug: recorded, never stops the others
            self._failed(db, error, now)
            return False
        if records:
            self.cursor = records[-1]["event_seq"]
            self.delivered += len(records)
        db.set_consumer_cursor(self.instance.name, self.cursor, now=now, delivered=bool(records))
        self.failures = 0
        return True

    def _on_worker(self, function, what: str):
        """``function()`` on this instance's worker thread, waited for at most ``deliver_timeout``."""
        limit = getattr(self.instance.settings, "deliver_timeout", None)  # a type whose Settings are its own
        seconds = (limit if limit is not None else self.consumer_class.deliver_timeout).total_seconds()
        if self.worker is None:
            self.worker = Worker(f"consumer-{self.instance.name}")
        try:
            return self.worker.call(function, seconds)
        except TimeoutError:
            _hung.add((self.store_dir, self.instance.name), self.worker)
            self.worker, self.consumer = None, None  # still in use by that thread: neither closed nor used again
            raise DeliveryTimeout(f"{what} did not return within {seconds:g}s (deliver_timeout); "
                                  "the records will be handed over again") from None

    def _failed(self, db: HostDB, error: Exception, now: str) -> None:
        self.failures += 1
        message = f"{type(error).__name__}: {error}"
        self.error = message if len(message) <= 1000 else message[:997] + "..."
        self.next_try_at = (instant(now) + retry_wait(self.failures)).isoformat(timespec="seconds")
        db.consumer_failed(self.instance.name, failures=self.failures, next_try_at=self.next_try_at, error=self.error,
                           now=now)

    def close(self) -> None:
        if self.consumer is not None:
            try:
                self._on_worker(self.consumer.close, "close()")
            except Exception:  # closing is best effort
                pass
            self.consumer = None
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def result(self) -> dict:
        if self.error is not None:
            return _result(self.instance.name, "failed", self.delivered, self.error, next_try_at=self.next_try_at,
                           event_seq=self.cursor)
        return _result(self.instance.name, "ok", self.delivered, event_seq=self.cursor)


def _hand_over(db: HostDB, store: Store, runs: list[_Run], current: int, now: str) -> None:
    """Read the records after the lowest cursor once (in chunks) and hand each run its part."""
    behind = [run for run in runs if run.cursor < current]
    position = min((run.cursor for run in behind), default=current)
    while position < current and behind:
        chunk = store.history(since=position, limit=min(READ_CHUNK, current - position)).document["records"]
        if not chunk:
            break
        end = chunk[-1]["event_seq"]
        takers = [run for run in behind if run.error is None and run.cursor < end]
        # Types that declare ``shares_records`` (they only read records; the built-ins) share the
        # chunk and go first; every other consumer gets its own copy, the last one the chunk itself.
        takers.sort(key=lambda run: not run.consumer_class.shares_records)
        copies = sum(1 for run in takers if not run.consumer_class.shares_records) - 1
        text = json.dumps(chunk, ensure_ascii=False) if copies > 0 else ""
        for run in takers:
            records = chunk
            if not run.consumer_class.shares_records and copies > 0:
                records, copies = json.loads(text), copies - 1
            mine = [record for record in records if record["event_seq"] > run.cursor]
            for start in range(0, len(mine), BATCH):
                if not run.call(db, mine[start:start + BATCH], now):
                    break
        position = end
        behind = [run for run in behind if run.error is None and run.cursor < current]


def _hand_over_in_turns(db: HostDB, store: Store, runs: list[_Run], current: int, now: str) -> None:
    """Several hosts: each ``deliver`` call in its consumer's turn (the row locked, the cursor read again)."""
    for run in runs:
        done = False
        while run.error is None and not done:
            with db.consumer_turn(run.instance.name) as row:
                if row is None:
                    run.elsewhere = done = True
                else:
                    done = _turn(db, store, run, row, current, now)


def _turn(db: HostDB, store: Store, run: _Run, row: dict, current: int, now: str) -> bool:
    """One ``deliver`` call inside the consumer's turn; True when this consumer is done for this run."""
    run.cursor, run.failures = row["event_seq"], row["failures"]
    if row["next_try_at"] and instant(row["next_try_at"]) > instant(now):
        run.next_try_at = row["next_try_at"]  # another host's delivery failed meanwhile: wait as it says
        return True
    if run.cursor >= current:
        return True
    records = store.history(since=run.cursor, limit=min(BATCH, current - run.cursor)).document["records"]
    if not records:
        return True
    if not run.consumer_class.shares_records:
        records = json.loads(json.dumps(records, ensure_ascii=False))
    return not run.call(db, records, now) or run.cursor >= current


def _idle_call_in_turn(db: HostDB, run: _Run, now: str) -> None:
    with db.consumer_turn(run.instance.name) as row:
        if row is None:
            run.elsewhere = True
            return
        run.cursor = row["event_seq"]
        run.call(db, [], now)


def _register(db: HostDB, instances: Sequence[Any], document: dict | None, now: str) -> None:
    """Insert the cursor rows of new instances and call their ``begin``."""
    if not instances:
        return
    current = document["event_seq"] if document is not None else 0
    for instance in instances:
        start = 0 if getattr(instance.settings, "from_", "now") == "start" else current
        if not db.add_consumer(instance.name, start, now=now):
            continue  # another host registered it a moment ago (and called its begin)
        if getattr(instance.cls, "begin", Consumer.begin) is Consumer.begin:
            continue  # nothing to call: the default does nothing
        seen = document if document is not None and start == current else _empty_document(document, now)
        context = ConsumerContext(state=StateView(seen), now=now, memory=db.memory(instance.name),
                                  feedback=tuple(db.recent_feedback(FEEDBACK_WINDOW)))
        consumer = None
        try:
            consumer = instance.build()
            consumer.begin(context)
        except Exception as error:
            db.consumer_error(instance.name, f"begin: {type(error).__name__}: {error}"[:1000], now=now)
        finally:
            if consumer is not None:
                try:
                    consumer.close()
                except Exception:
                    pass


def _empty_document(document: dict | None, now: str) -> dict:
    return state_document(empty_state(document["budget"] if document is not None else 64), now)


def _store(location: str) -> Store:
    return open_store(location)


def _document(store: Store, now: str) -> dict | None:
    """The §8 document at ``now`` (shared lock), or None when there is no store yet."""
    try:
        answer = store.state_document(now=now)
    except StoreMissing:
        return None
    return answer.document


def _result(name: str, status: str, delivered: int, error: str | None = None, **extra: Any) -> dict:
    result = {"consumer": name, "status": status, "delivered": delivered}
    if error is not None:
        result["error"] = error
    result.update({key: value for key, value in extra.items() if value is not None})
    return result


def _clock() -> str:
    return datetime.now(dt_timezone.utc).astimezone().isoformat(timespec="seconds")
