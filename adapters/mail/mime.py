"""One mail message (bytes) → canonical observations (contract §10).

Shared by the ``email`` (IMAP), ``maildir`` and ``mbox`` adapters. The
message is parsed with the standard library's modern policy
(``email.policy.default``); what a person would read is kept, bounded, and
whatever had to be guessed or could not be read is said in ``meta``:

* text: ``text/plain`` preferred (an empty or stub plain part of an
  alternative gives way to its HTML), HTML through ``htmltext.html_to_text``;
  other inline text parts outside the alternative follow the body; the text is
  capped before decoding (``PART_BYTES``) and after (``bound_text``);
* charsets and RFC 2047 headers through ``mailtext`` (never an exception);
* attachments as metadata only: name, type, size counted from the encoded
  payload (a declared size is never believed, nothing is decoded for it);
* a forwarded message (``message/rfc822``) becomes an observation of its own, id ``<outer id>#fwd-N``;
* thread key: the first ``References`` id (the thread's root), else
  ``In-Reply-To``, else the message's own ``Message-ID``;
* date: the ``Date`` header, tz-aware; when it is missing or unreadable the
  caller's fallback (IMAP INTERNALDATE, file mtime) and ``meta.date_source``
  say so;
* delivery facts the editor reads to tell bulk and automated mail from
  personal mail (``Mail.delivery``, only when present): ``precedence`` and
  ``auto_submitted`` (lower-cased, ≤ 32 characters; ``X-Autoreply`` /
  ``X-Autorespond`` count as ``auto-replied``), ``list_unsubscribe``
  (true; the address itself is never kept) and ``bulk_headers`` (the names of
  the bulk-sending services' headers present, from ``headers.BULK_HEADERS``);
* ``Mail.fingerprint``: a digest of Message-ID, Date, From, To and Subject, the
  same whether computed from a whole message or from its header alone (the
  adapters' "already seen" cache and the mbox ids use it).

``read_mail`` never raises: a message it cannot parse at all still gives a
``Mail`` whose ``unreadable`` says why; one whose parts nest too deeply for
the parser keeps what its header says (subject, sender, date, thread).
"""

from __future__ import annotations

import binascii
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fold_adapters.text.html import html_to_text
from fold_adapters.mail.headers import addresses, delivery_facts, fingerprint, first_id, message_date
from fold_adapters.mail.policy import parse, parser_policy
from fold_adapters.text.clean import clean_line, clean_text, decode_bytes, header_text
from fold_core.observation import Observation, bound_text

__all__ = ["Mail", "mail_observations", "read_mail"]

PLAIN_BYTES = 64 * 1024  # a plain text part is cut to this many bytes before decoding (4,000 code points are kept)
HTML_BYTES = 1024 * 1024  # an HTML part: markup and style take most of its bytes
HEADER_LINE_BYTES = 16 * 1024  # one header line (a 1 MB subject) is cut to this before parsing
HEADER_BLOCK_BYTES = 256 * 1024
MAX_EMBEDDED = 5
MAX_DEPTH = 2
MAX_LISTED = 20  # recipients per header, attachments
MAX_NESTING = 32
META_CHARS = 15_000  # Observation.meta must stay under 16,000 characters as JSON
STUB_PLAIN = 40  # a plain alternative shorter than this gives way to the HTML one

_HINT = re.compile(rb"""(?:charset\s*=\s*["']?|=\?)([A-Za-z0-9_.:-]{2,40})""", re.IGNORECASE)
#: every byte outside the base64 alphabet (deleted with ``bytes.translate`` to count the alphabet's characters).
_NOT_BASE64 = bytes(b for b in range(256)
                    if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b in (43, 47)))


@dataclass
class Mail:
    """The facts of one message, decoded and bounded."""

    message_id: str | None = None
    subject: str = ""
    sender: str | None = None
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)
    date: datetime | None = None
    thread: str | None = None
    list_id: str | None = None
    delivery: dict[str, Any] = field(default_factory=dict)  # precedence, auto_submitted, list_unsubscribe, …
    text: str = ""
    text_from: str | None = None  # "plain" | "html" | None
    attachments: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was guessed
    unreadable: list[str] = field(default_factory=list)  # what could not be read
    fingerprint: str = ""
    size: int | None = None
    embedded: list["Mail"] = field(default_factory=list)


def read_mail(raw: bytes) -> Mail:
    """The ``Mail`` in ``raw`` (RFC 5322 bytes); never raises."""
    try:
        bounded, cut = _bound_headers(raw)
        try:
            message = parse(bounded)
            mail = _read_message(message, _Hints(raw), depth=0, budget=[MAX_EMBEDDED])
        except RecursionError:  # parts nested far beyond MAX_NESTING: the parser gives up, the header is fine
            from email.parser import BytesParser

            message = BytesParser(policy=parser_policy()).parsebytes(bounded, headersonly=True)
            mail = _read_message(message, _Hints(raw), depth=0, budget=[0], body=False)
            mail.unreadable.append("MIME parts nested too deeply to parse; the body was not read")
        if cut:
            mail.notes.append(cut)
    except Exception as error:  # the last line of defence: the adapter must go on
        mail = Mail(unreadable=[f"the message could not be parsed ({type(error).__name__})"],
                    fingerprint=hashlib.sha256(raw).hexdigest()[:24])
    mail.size = len(raw)
    return mail


class _Hints:
    """Charsets the message declares anywhere: the best guess for its undeclared parts.

    Found on first use only (most messages never need them).
    """

    __slots__ = ("_raw", "_found")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._found: tuple[str, ...] | None = None

    def __iter__(self):
        if self._found is None:
            found: list[str] = []
            for match in _HINT.finditer(self._raw[:65536]):
                label = match.group(1).decode("ascii").lower()
                if label not in found and label not in ("utf-8", "us-ascii", "ascii"):
                    found.append(label)
            self._found = tuple(found[:4])
        return iter(self._found)


def _bound_headers(raw: bytes) -> tuple[bytes, str | None]:
    """``raw`` with over-long top-level header lines cut, so no parser meets a 1 MB header."""
    end = raw.find(b"\n\n")
    end = end if end >= 0 else len(raw)
    if raw.find(b"\r", 0, end) >= 0:  # one byte is found with memchr; most files have no CR to look for
        crlf = raw.find(b"\n\r\n", 0, end)
        end = crlf if crlf >= 0 else end
    head = raw[:end]
    if len(head) <= HEADER_LINE_BYTES:
        return raw, None
    lines = head.split(b"\n")
    if max(map(len, lines)) <= HEADER_LINE_BYTES and len(head) <= HEADER_BLOCK_BYTES:
        return raw, None
    kept, size = [], 0
    for line in lines:
        line = line[:HEADER_LINE_BYTES]
        size += len(line) + 1
        if size > HEADER_BLOCK_BYTES:
            break
        kept.append(line)
    return b"\n".join(kept) + raw[end:], f"over-long header lines cut to {HEADER_LINE_BYTES} bytes"


def _read_message(message: Any, hints: _Hints, *, depth: int, budget: list[int], body: bool = True) -> Mail:
    headers = {name: field[1] for name, field in message.first_fields().items()}  # first field of each name
    mail = Mail()

    def text_of(name: str) -> str:
        text, note = header_text(headers.get(name), hints)
        if note:
            mail.notes.append(f"{name} header: {note}")
        return text

    mail.subject = text_of("subject")
    mail.message_id = first_id(headers.get("message-id"))
    senders = addresses(headers.get("from") or headers.get("sender"), hints, 1)
    mail.sender = senders[0] if senders else (text_of("from") or None)
    mail.to = addresses(headers.get("to"), hints, MAX_LISTED)
    mail.cc = addresses(headers.get("cc"), hints, MAX_LISTED)
    mail.date, date_note = message_date(headers.get("date"))
    if date_note:
        mail.notes.append(date_note)
    root = first_id(headers.get("references")) or first_id(headers.get("in-reply-to"))
    mail.thread = root or mail.message_id
    mail.list_id = first_id(headers.get("list-id")) or (text_of("list-id") or None)
    mail.delivery = delivery_facts(headers)
    mail.fingerprint = fingerprint(headers)
    if body:
        _read_body(message, mail, hints, depth, budget)
    return mail


def _read_body(message: Any, mail: Mail, hints: _Hints, depth: int, budget: list[int]) -> None:
    body = message.get_body(preferencelist=("plain", "html"))
    texts: list[str] = []
    if body is not None:
        text = _part_text(body, mail, hints)
        if body.get_content_subtype() == "plain" and len(text.strip()) < STUB_PLAIN:
            html = message.get_body(preferencelist=("html",))
            html_text = _part_text(html, mail, hints) if html is not None else ""
            if len(html_text.strip()) > len(text.strip()):
                body, text = html, html_text
        mail.text_from = body.get_content_subtype()
        texts.append(text)
    elif not message.is_multipart() and message.get_content_maintype() in ("text", "multipart"):
        texts.append(_part_text(message, mail, hints, as_plain=True))  # malformed MIME: read what is there
        mail.text_from = "plain"
        if message.get_content_maintype() == "multipart":
            mail.notes.append("malformed MIME (multipart without parts); its content was read as plain text")
    extras: list[Any] = []
    forwarded: list[Any] = []
    _walk(message, body, False, mail, extras, forwarded, top=True)
    for part in extras[:3]:
        texts.append(_part_text(part, mail, hints))
    for part in forwarded:
        inner = part.get_payload(0) if part.is_multipart() else None
        if inner is None or depth >= MAX_DEPTH or budget[0] <= 0:
            continue
        budget[0] -= 1
        embedded = _read_message(inner, hints, depth=depth + 1, budget=budget)
        mail.embedded.append(embedded)
        texts.append(f"[forwarded message: {embedded.subject or '(no subject)'} — from {embedded.sender or '?'}]")
    mail.text = clean_text("\n\n".join(t for t in texts if t.strip()))
    parts = message.walk() if message.is_multipart() else (message,)  # what walk() yields for one part
    defects = sorted({type(d).__name__ for part in parts for d in getattr(part, "defects", ())})
    if defects:
        mail.notes.append("malformed MIME: " + ", ".join(defects[:8]))
    if body is None and not mail.text:
        mail.unreadable.append("no readable text part")


def _walk(part: Any, body: Any, in_alternative: bool, mail: Mail, extras: list, forwarded: list,
          top: bool = False, level: int = 0) -> None:
    """Attachments, extra inline text parts and forwarded messages, in order (not into forwards)."""
    content_type = part.get_content_type()
    if content_type.startswith("multipart/") and part.is_multipart():
        if level >= MAX_NESTING:
            mail.unreadable.append(f"MIME parts nested deeper than {MAX_NESTING} levels were not read")
            return
        alternative = in_alternative or content_type == "multipart/alternative"
        for sub in part.iter_parts():
            _walk(sub, body, alternative, mail, extras, forwarded, level=level + 1)
        return
    if part is body or (top and content_type.startswith(("text/", "multipart/"))):
        return
    if content_type in ("message/rfc822", "message/global") and part.is_multipart():
        forwarded.append(part)
        return
    if content_type in ("text/plain", "text/html") and not part.is_attachment():
        if not in_alternative:
            extras.append(part)
        return
    if len(mail.attachments) < MAX_LISTED:
        mail.attachments.append(_attachment(part, content_type))
    elif len(mail.attachments) == MAX_LISTED:
        mail.notes.append(f"more than {MAX_LISTED} attachments; only the first {MAX_LISTED} are listed")
        mail.attachments.append({"name": "…", "type": "", "size": 0})


def _part_text(part: Any, mail: Mail, hints: _Hints, as_plain: bool = False) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    html = part.get_content_subtype() == "html" and not as_plain
    limit = HTML_BYTES if html else PLAIN_BYTES
    if len(payload) > limit:
        mail.notes.append(f"a text part of {len(payload)} bytes was cut to {limit} bytes before reading")
        payload = payload[:limit]
    text, note = decode_bytes(payload, part.get_content_charset(), hints)
    if note:
        mail.notes.append(f"body: {note}")
    if html:
        text, note = html_to_text(text)
        if note:
            mail.notes.append(note)
    elif "flowed" in str(part.get("content-type", "")).lower() and str(part.get_param("format", "")).lower() == "flowed":
        text = _unflow(text, str(part.get_param("delsp", "")).lower() == "yes")
    return text


def _unflow(text: str, delete_space: bool) -> str:
    """RFC 3676 format=flowed: a line ending in a space continues on the next one."""
    out: list[str] = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if out and out[-1].endswith(" ") and not out[-1].startswith(">") and line != "-- ":
            out[-1] = (out[-1][:-1] if delete_space else out[-1]) + line
        else:
            out.append(line)
    return "\n".join(out)


def _attachment(part: Any, content_type: str) -> dict:
    entry: dict[str, Any] = {"name": _filename(part), "type": content_type[:100], "size": _size(part)}
    if part.get_content_disposition() == "inline":
        entry["inline"] = True
    return entry


def _filename(part: Any) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        name = None
    if not name:
        return None
    name = str(name)
    text = header_text(name)[0] if ("=?" in name or not name.isascii()) else clean_line(name)
    return bound_text(text, 200) or None


def _size(part: Any) -> int:
    """Bytes of the decoded attachment, counted from its encoded form (nothing is decoded)."""
    payload = part.get_payload()
    if not isinstance(payload, str):
        return 0
    encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
    if encoding == "base64":
        # Counted in C: non-ASCII characters (8-bit bytes kept as surrogates) are never base64, so "ignore"
        # drops them with the line breaks and padding; a regex pass over a 150 kB payload cost ~20× more.
        data = payload.encode("ascii", "ignore").translate(None, _NOT_BASE64)
        return len(data) * 3 // 4
    raw = payload.encode("ascii", "surrogateescape") if payload.isascii() else payload.encode("utf-8", "surrogateescape")
    if encoding == "quoted-printable":
        try:
            return len(binascii.a2b_qp(raw))
        except (binascii.Error, ValueError):
            return len(raw)
    return len(raw)


def mail_observations(mail: Mail, *, source: str, native_id: str, observed_at: datetime, channel: str = "email",
                      fallback_at: datetime | None = None, fallback: str | None = None, url: str | None = None,
                      meta: dict[str, Any] | None = None) -> list[Observation]:
    """The observation of ``mail`` (id ``<source>:<native_id>``), then one per forwarded message."""
    outer_id = f"{source}:{clean_line(native_id)[:480]}"
    found = [_observation(mail, outer_id, source, channel, observed_at, fallback_at, fallback, url, meta or {})]
    for index, inner in enumerate(mail.embedded, start=1):
        extra = {"forwarded_in": outer_id}
        found.append(_observation(inner, f"{outer_id}#fwd-{index}", source, channel, observed_at,
                                  mail.date or fallback_at, "the forwarding message", None, extra,
                                  thread=mail.thread))
    return found


def _observation(mail: Mail, obs_id: str, source: str, channel: str, observed_at: datetime,
                 fallback_at: datetime | None, fallback: str | None, url: str | None, extra: dict,
                 thread: str | None = None) -> Observation:
    meta: dict[str, Any] = {}
    at = mail.date
    if at is not None:
        meta["date_source"] = "header"
    elif fallback_at is not None:
        at = fallback_at
        meta["date_source"] = fallback or "fallback"
    else:
        meta["date_source"] = None
    for key, value in (("message_id", mail.message_id), ("to", mail.to), ("cc", mail.cc),
                       ("list_id", mail.list_id), ("attachments", mail.attachments),
                       ("text_from", mail.text_from), ("size", mail.size)):
        if value:
            meta[key] = list(value) if isinstance(value, list) else value
    meta.update(mail.delivery)
    meta.update(extra)
    if mail.notes:
        meta["notes"] = [bound_text(note, 300) for note in mail.notes[:10]]
    if mail.unreadable:
        meta["unreadable"] = [bound_text(note, 300) for note in mail.unreadable[:10]]
    _fit(meta)
    return Observation(id=obs_id, source=source, channel=channel, sender=_line(mail.sender),
                       at=at.isoformat() if at else None, observed_at=observed_at.isoformat(),
                       title=_line(mail.subject), text=bound_text(mail.text), url=url,
                       thread=_line(thread or mail.thread), meta=meta)


def _fit(meta: dict[str, Any]) -> None:
    """Shorten the long lists until ``meta`` is small enough, saying so."""
    import json

    if sum(len(meta.get(key) or ()) for key in ("cc", "to", "attachments", "notes", "unreadable")) <= 24:
        return  # each entry is bounded (≤ 330 characters): these fit, no need to measure
    for key in ("cc", "to", "attachments", "notes"):
        size = len(json.dumps(meta, ensure_ascii=False))
        if size <= META_CHARS:
            return
        values = meta.get(key)
        while values and len(json.dumps(meta, ensure_ascii=False)) > META_CHARS:
            values.pop()
        meta.setdefault("cut", []).append(key)


def _line(value: str | None) -> str | None:
    return bound_text(value.replace("\x00", ""), 900) if value else None
