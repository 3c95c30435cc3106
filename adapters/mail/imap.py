"""The ``email`` adapter type: IMAP folders, read-only (contract §10, §11.1).

A built-in plugin (``fold_adapters.mail.imap`` in ``fold_host.plugins.BUILTIN_PLUGINS``); imapclient
is imported only when a poll runs.

Invariants:

* nothing on the server changes: each folder is selected read-only
  (EXAMINE) and fetched with ``BODY.PEEK[]``, so ``\\Seen`` is never set;
* cursor (JSON) = per folder ``uidvalidity``, ``last_uid`` (the highest UID
  handled, never UIDNEXT: mail that arrives during a poll has a higher UID
  and is taken by the next one) and ``watermark`` (the server's INTERNALDATE
  of the newest message handled), plus the shared ``seen`` fingerprint cache;
* a changed UIDVALIDITY re-baselines the folder from the server's own dates:
  the messages since the watermark are compared with the cache by their
  header fingerprint (fetched without bodies) and only unseen ones are
  observed; a health note says so;
* the first run follows ``first_run`` (default ``new``) and says so;
* the login (password or OAuth2) is ``fold_adapters.mail.imap_connect``;
  under ``foldctl run`` the first ``WATCHED_FOLDERS`` folders are watched
  with IMAP IDLE, a connection each (``watch``, ``fold_adapters.mail.idle``;
  servers cap a user's connections — Dovecot at 10 per address — and the
  poll needs one too): news only makes the daemon poll sooner — the poll,
  with its UID cursor, reads;
* a poll is all or nothing: any failure returns the cursor it was given,
  no observations, and ``Health.failed`` with an error class — ``auth``,
  ``network``, ``timeout``, ``protocol`` (or ``internal`` for a bug); no
  imaplib, socket or ssl exception leaves the adapter.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote

from fold_adapters.mail.imap_connect import connect, health_for, port_of
from fold_adapters.mail.imap_settings import EmailSettings, is_loopback
from fold_adapters.mail.idle import watch_folders
from fold_adapters.mail.oauth import TokenSource, token_source
from fold_adapters.mail.source import FirstRun, SeenCache, Tally, fingerprint, observe
from fold_core.hookspecs import hookimpl
from fold_core.observation import Health, Poll
from fold_core.plugin_api import Adapter

__all__ = ["EmailAdapter", "EmailSettings", "health_for", "is_loopback"]

BODY_CHUNK = 20  # messages per FETCH of bodies
WATCHED_FOLDERS = 4  # folders watched with IDLE, one connection each; the others wait for the poll
REBASELINE_LIMIT = 500  # newest messages compared with the cache after a UIDVALIDITY change
_HEADER_FIELDS = "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID DATE FROM TO SUBJECT)]"


class EmailAdapter(Adapter):
    """IMAP folders → observations (one per message, plus one per forwarded message)."""

    type_name: ClassVar[str] = "email"
    channel: ClassVar[str] = "email"
    Settings: ClassVar[type[EmailSettings]] = EmailSettings
    settings: EmailSettings

    def __init__(self, name: str, settings: EmailSettings) -> None:
        super().__init__(name, settings)
        self._tokens: TokenSource | None = None  # the OAuth2 token source, shared by the polls and the IDLE watch

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        state = _cursor(cursor)
        try:
            client = self._connect()
        except Exception as error:  # translated at the boundary: nothing escapes
            return Poll(cursor=cursor, health=health_for(error, self._where()))
        try:
            run = _Run(self, client, state, now)
            for folder in self.settings.folders:
                run.folder(folder)
            return Poll(observations=run.observations, cursor=run.cursor(), health=Health.ok(*run.notes()))
        except Exception as error:
            return Poll(cursor=cursor, health=health_for(error, self._where()))
        finally:
            try:
                client.logout()
            except Exception:
                pass

    def probe(self, *, timeout: float) -> Health:
        """Connect and log in (``doctor --probe``), then log out: no folder is opened."""
        try:
            client = self._connect(timeout)
        except Exception as error:  # translated at the boundary, as in poll
            return health_for(error, self._where())
        try:
            client.logout()
        except Exception:
            pass
        return Health.ok(f"{self._where()}: logged in as {self.settings.username}")

    def watch_delay(self) -> timedelta | None:
        """``idle_delay`` when ``idle`` is on (the default), else None: polled only."""
        return self.settings.idle_delay if self.settings.idle else None

    def watch(self, notify, stopping) -> None:
        """IMAP IDLE on the first ``WATCHED_FOLDERS`` folders, a connection each (``fold_adapters.mail.idle``)."""
        watch_folders(self._connect, self.settings.folders[:WATCHED_FOLDERS], notify, stopping)

    def _where(self) -> str:
        return f"{self.settings.host}:{self._port()}"

    def _port(self) -> int:
        return port_of(self.settings)

    def _connect(self, read_timeout: float | None = None):
        if self.settings.auth == "oauth2" and self._tokens is None:
            self._tokens = token_source(self.settings)
        seconds = self.settings.poll_timeout.total_seconds() if read_timeout is None else read_timeout
        return connect(self.settings, self._tokens, read_timeout=seconds)


def _cursor(cursor: Any) -> dict:
    if isinstance(cursor, dict) and isinstance(cursor.get("folders"), dict):
        return {"folders": {k: dict(v) for k, v in cursor["folders"].items() if isinstance(v, dict)},
                "seen": list(cursor.get("seen") or [])}
    return {"folders": {}, "seen": []}


class _Run:
    """One poll over the configured folders."""

    def __init__(self, adapter: EmailAdapter, client: Any, state: dict, now: datetime) -> None:
        self.adapter, self.client, self.now = adapter, client, now
        self.settings: EmailSettings = adapter.settings
        self.folders = state["folders"]
        self.seen = SeenCache(state["seen"])
        self.tally = Tally()
        self.observations: list = []
        self.budget = self.settings.max_per_poll
        self._notes: list[str] = []

    def cursor(self) -> dict:
        return {"v": 1, "folders": self.folders, "seen": self.seen.to_json()}

    def notes(self) -> list[str]:
        return self._notes + self.tally.notes()

    def folder(self, name: str) -> None:
        info = self.client.select_folder(name, readonly=True)
        validity = int(info[b"UIDVALIDITY"])
        known = self.folders.get(name)
        if known is None:
            known = self._first_run(name, validity, info)
        elif int(known.get("uidvalidity", -1)) != validity:
            known = self._rebaseline(name, validity, known)
        self.folders[name] = known
        criteria: list[Any] = ["UID", f"{int(known['last_uid']) + 1}:*"]
        if known.get("since"):
            criteria += ["SINCE", datetime.fromisoformat(known["since"]).date()]
        uids = sorted(u for u in self.client.search(criteria) if u > int(known["last_uid"]))
        skipped = set(known.pop("skip_until", ()))  # after a re-baseline: only what the cache has not seen
        uids = [u for u in uids if u not in skipped]
        self._take(name, known, uids)

    def _first_run(self, name: str, validity: int, info: dict) -> dict:
        policy: FirstRun = self.settings.first_run_policy
        all_uids = sorted(self.client.search(["ALL"]))
        state: dict[str, Any] = {"uidvalidity": validity, "last_uid": 0, "watermark": None}
        if policy.kind == "new":
            state["last_uid"] = all_uids[-1] if all_uids else max(int(info.get(b"UIDNEXT", 1)) - 1, 0)
            if all_uids:  # the newest message's date and fingerprint anchor a later re-baseline
                fetched = self.client.fetch([all_uids[-1]], ["INTERNALDATE", _HEADER_FIELDS])
                for item in fetched.values():
                    state["watermark"] = _instant(item.get(b"INTERNALDATE"))
                    self.seen.add(_header_fingerprint(item))
            taken = 0
        elif policy.kind == "last":
            kept = all_uids[-policy.last:] if policy.last else []
            state["last_uid"] = all_uids[-len(kept) - 1] if len(all_uids) > len(kept) else 0
            taken = len(kept)
        else:
            state["since"] = policy.since_date.isoformat()
            taken = len(self.client.search(["SINCE", policy.since_date]))
        self._notes.append(policy.describe(name, len(all_uids), taken))
        return state

    def _rebaseline(self, name: str, validity: int, known: dict) -> dict:
        old = known.get("uidvalidity")
        watermark = known.get("watermark")
        state = {"uidvalidity": validity, "last_uid": 0, "watermark": watermark}
        if not watermark:
            uids = sorted(self.client.search(["ALL"]))
            state["last_uid"] = uids[-1] if uids else 0
            self._notes.append(f"{name}: UIDVALIDITY changed ({old} → {validity}); nothing was observed there "
                               f"before, so the folder was re-baselined as new")
            return state
        mark = datetime.fromisoformat(watermark)
        since = (mark - timedelta(days=1)).date()
        uids = sorted(self.client.search(["SINCE", since]))[-REBASELINE_LIMIT:]
        fetched = self.client.fetch(uids, ["INTERNALDATE", _HEADER_FIELDS]) if uids else {}
        seen, older = [], []
        for uid in uids:
            item = fetched.get(uid)
            if item is None:
                continue
            when = _instant(item.get(b"INTERNALDATE"))
            if when is not None and datetime.fromisoformat(when) < mark:
                older.append(uid)
            elif _header_fingerprint(item) in self.seen:
                seen.append(uid)
        state["since"] = since.isoformat()
        state["skip_until"] = seen + older
        self._notes.append(f"{name}: UIDVALIDITY changed ({old} → {validity}); re-baselined from the server's "
                           f"dates since {since.isoformat()}: {len(seen) + len(older)} message(s) handled before "
                           f"skipped, {len(uids) - len(seen) - len(older)} to read")
        return state

    def _take(self, name: str, known: dict, uids: list[int]) -> None:
        waiting = max(len(uids) - self.budget, 0)
        uids = uids[:self.budget]
        if waiting:
            self._notes.append(f"{name}: {waiting} more message(s) wait for the next poll (max_per_poll)")
        elif known.get("since"):
            known.pop("since")  # caught up: from now on every new UID is new mail
        if not uids:
            return
        meta = self.client.fetch(uids, ["RFC822.SIZE", "INTERNALDATE", "FLAGS"])
        limit = self.settings.max_message_bytes
        for start in range(0, len(uids), BODY_CHUNK):
            chunk = [u for u in uids[start:start + BODY_CHUNK] if u in meta]
            small = [u for u in chunk if int(meta[u].get(b"RFC822.SIZE", 0)) <= limit]
            large = [u for u in chunk if u not in small]
            bodies = self.client.fetch(small, ["BODY.PEEK[]"]) if small else {}
            if large:
                bodies.update(self.client.fetch(large, [f"BODY.PEEK[]<0.{limit}>"]))
            for uid in chunk:
                self._observe(name, known, uid, meta[uid], bodies.get(uid, {}))
        known["last_uid"] = max(int(known["last_uid"]), uids[-1])
        self.budget -= len(uids)

    def _observe(self, name: str, known: dict, uid: int, info: dict, body: dict) -> None:
        raw = next((v for k, v in body.items() if k.startswith(b"BODY[")), None)
        internal = _instant(info.get(b"INTERNALDATE"))
        if internal and (not known.get("watermark") or internal > known["watermark"]):
            known["watermark"] = internal
        if not isinstance(raw, bytes):
            return  # expunged between SEARCH and FETCH: nothing left to observe
        settings = self.settings
        flags = [f.decode("ascii", "replace") if isinstance(f, bytes) else str(f) for f in info.get(b"FLAGS", ())]
        url = (f"imap://{quote(settings.username)}@{settings.host}:{self.adapter._port()}/"
               f"{quote(name)};UIDVALIDITY={known['uidvalidity']}/;UID={uid}")
        self.observations += observe(
            raw, seen=self.seen, tally=self.tally, source=self.adapter.name,
            native_id=f"{name}/{known['uidvalidity']}/{uid}", now=self.now,
            full_size=int(info.get(b"RFC822.SIZE", len(raw))),
            fallback_at=datetime.fromisoformat(internal) if internal else None, fallback="internaldate",
            url=url, meta={"folder": name, "uid": uid, "flags": flags[:10]})


def _instant(value: Any) -> str | None:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.isoformat()
    return None


def _header_fingerprint(item: dict) -> str:
    raw = next((v for k, v in item.items() if k.startswith(b"BODY[HEADER")), b"")
    return fingerprint(raw if isinstance(raw, bytes) else b"")


@hookimpl
def fold_adapter_types():
    return [EmailAdapter]
