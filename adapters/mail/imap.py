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
* a poll is all or nothing: any failure returns the cursor it was given,
  no observations, and ``Health.failed`` with an error class — ``auth``,
  ``network``, ``timeout``, ``protocol`` (or ``internal`` for a bug); no
  imaplib, socket or ssl exception leaves the adapter.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import Field, model_validator

from fold_adapters.mail.source import FirstRun, MailSettings, SeenCache, Tally, observe
from fold_core import hookimpl
from fold_core.observation import Health, Poll
from fold_core.plugin_api import Adapter
from fold_core.settings import ConfigPath, EnvName, env_value

__all__ = ["EmailAdapter", "EmailSettings"]

BODY_CHUNK = 20  # messages per FETCH of bodies
REBASELINE_LIMIT = 500  # newest messages compared with the cache after a UIDVALIDITY change
_HEADER_FIELDS = "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID DATE FROM TO SUBJECT)]"


class EmailSettings(MailSettings):
    """``[[adapters]] type = "email"`` (contract §11.1) plus ``ca_file``."""

    host: str = Field(min_length=1, max_length=255)
    port: int | None = Field(default=None, ge=1, le=65535)
    security: Literal["ssl", "starttls", "none"] = "ssl"
    username: str = Field(min_length=1, max_length=320)
    password_env: EnvName
    folders: tuple[str, ...] = Field(default=("INBOX",), min_length=1, max_length=64)
    first_run: str = "new"
    ca_file: ConfigPath | None = None  # a PEM file of certificates to trust (a self-signed server)

    @model_validator(mode="after")
    def _plaintext_only_on_loopback(self) -> "EmailSettings":
        if self.security == "none" and not is_loopback(self.host):
            raise ValueError(f'security = "none" sends the password in clear text; it is allowed only for a '
                             f'loopback host (127.0.0.1, ::1, localhost), found host {self.host!r}: use "ssl" '
                             f'or "starttls"')
        return self


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class EmailAdapter(Adapter):
    """IMAP folders → observations (one per message, plus one per forwarded message)."""

    type_name: ClassVar[str] = "email"
    channel: ClassVar[str] = "email"
    Settings: ClassVar[type[EmailSettings]] = EmailSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        state = _cursor(cursor)
        password = env_value(self.settings.password_env)
        if password is None:
            return Poll(cursor=cursor, health=Health.failed(
                "auth", f"the environment variable {self.settings.password_env} (password_env) is not set"))
        try:
            client = self._connect(password)
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
        password = env_value(self.settings.password_env)
        if password is None:
            return Health.failed("auth", f"the environment variable {self.settings.password_env} (password_env) "
                                         "is not set")
        try:
            client = self._connect(password, timeout)
        except Exception as error:  # translated at the boundary, as in poll
            return health_for(error, self._where())
        try:
            client.logout()
        except Exception:
            pass
        return Health.ok(f"{self._where()}: logged in as {self.settings.username}")

    def _where(self) -> str:
        return f"{self.settings.host}:{self._port()}"

    def _port(self) -> int:
        return self.settings.port or (993 if self.settings.security == "ssl" else 143)

    def _connect(self, password: str, seconds: float | None = None):
        import ssl

        from imapclient import IMAPClient, SocketTimeout

        seconds = self.settings.poll_timeout.total_seconds() if seconds is None else seconds
        timeout = SocketTimeout(connect=min(seconds, 30.0), read=seconds)
        context = None
        if self.settings.security != "none":
            context = ssl.create_default_context(cafile=str(self.settings.ca_file) if self.settings.ca_file else None)
        client = IMAPClient(self.settings.host, port=self._port(), ssl=self.settings.security == "ssl",
                            ssl_context=context, timeout=timeout)
        try:
            if self.settings.security == "starttls":
                client.starttls(context)
            client.normalise_times = False  # INTERNALDATE stays tz-aware
            client.login(self.settings.username, password)
        except Exception:
            try:
                client.shutdown()
            except Exception:
                pass
            raise
        return client


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
        state = {"uidvalidity": validity, "last_uid": 0, "watermark": None}
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
            state["since"] = policy.since.isoformat()
            taken = len(self.client.search(["SINCE", policy.since]))
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
    from fold_adapters.mail.mime import read_mail

    raw = next((v for k, v in item.items() if k.startswith(b"BODY[HEADER")), b"")
    return read_mail(raw if isinstance(raw, bytes) else b"").fingerprint


def health_for(error: BaseException, where: str) -> Health:
    """A failed ``Health`` with an error class for any exception met while talking to the server."""
    import imaplib
    import socket
    import ssl

    try:
        from imapclient.exceptions import LoginError
    except ImportError:  # imapclient missing: every error below is still classified
        LoginError = ()  # noqa: N806

    detail = f"{type(error).__name__}: {error}"[:500]
    if isinstance(error, LoginError):
        return Health.failed("auth", f"{where}: the server refused the login ({error})")
    if isinstance(error, (socket.timeout, TimeoutError)):
        return Health.failed("timeout", f"{where}: no answer in time ({detail})")
    if isinstance(error, ssl.SSLError):
        return Health.failed("network", f"{where}: TLS failed ({detail})")
    if isinstance(error, imaplib.IMAP4.abort):
        return Health.failed("network", f"{where}: the connection broke ({detail})")
    if isinstance(error, imaplib.IMAP4.error):
        return Health.failed("protocol", f"{where}: the server said no ({detail})")
    if isinstance(error, OSError):
        return Health.failed("network", f"{where}: cannot reach the server ({detail})")
    return Health.failed("internal", f"{where}: unexpected {detail}")


@hookimpl
def fold_adapter_types():
    return [EmailAdapter]
