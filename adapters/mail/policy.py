"""The parsing policy of the mail adapters: the modern ``EmailMessage`` model at the old parser's speed.

``email.policy.default`` gives ``EmailMessage`` (``get_body``,
``iter_parts``, ``is_attachment``, ``get_filename``,
``get_payload(decode=True)``) but builds a header object through the header
registry on every ``get()``; finding the body and the attachments asks for
``Content-Type`` about 25 times per message, and those parses cost several
times the parse of the whole message. Its decoding also cannot use the
message's own charset hints.

``parser_policy()`` keeps the modern message model and changes only where
header values come from: each header is stored as the parser found it (a
plain ``str``, 8-bit bytes as surrogates) and handed back as it is. The
message methods above only need strings; the headers a person reads are
decoded by ``fold_adapters.text.clean.header_text`` instead. ``MailMessage``
remembers its content type, which ``get_body`` and the walk ask for again
and again, indexes its header fields by name for ``get``, and keeps the
parameters of header texts it has parsed (a mailbox repeats a handful of
Content-Type values); a message is never changed after it is parsed.

``parse(raw)`` is the message the standard library's parser builds from
``raw`` with this policy. The parser reads a message line by line; for a
message of one part (not multipart, not ``message/*``) with ``\n`` line ends
and headers the parser reads without a defect — most of a Maildir — what it
builds is the header lines up to the first empty line, each field through
``header_source_parse``, and the rest of the text as the payload: ``parse``
builds exactly that directly, and hands anything else to the parser.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse", "parser_policy"]

_POLICY = None
_PARAMS: dict = {}  # header text → its parameters, as ``Message._get_params_preserve`` finds them
_PARAMS_LIMIT = 512  # texts kept at most (then forgotten all at once)
_PARAMS_TEXT = 256  # longer header texts are not kept: at most about half a megabyte, whatever mail arrives
_NAME = r"[\041-\071\073-\176]++"  # the field name of ``email.feedparser.headerRE`` (printable ASCII but ':')
_HEADER_BLOCK = re.compile(rf"{_NAME}:[^\n]*+(?:\n(?:{_NAME}:|[ \t])[^\n]*+)*+")
# One field and its line end: in a block that ``_HEADER_BLOCK`` accepts, each match starts where the last ended.
_FIELD = re.compile(rf"({_NAME}):[ \t]*+([^\n]*+(?:\n[ \t][^\n]*+)*+)\n?")


def parse(raw: bytes):
    """The ``MailMessage`` in ``raw`` (the same object the standard library's parser would build)."""
    policy = parser_policy()
    message = None
    # A CR is a line end too (the parser's case); a header block that names a multipart or message/* type
    # anywhere goes straight to the parser (cheap byte searches: a hint, the direct path checks the type).
    end = raw.find(b"\n\n")
    if end > 0 and b"\r" not in raw and raw.find(b"ultipart/", 0, end) < 0 and raw.find(b"essage/", 0, end) < 0:
        message = _one_part(raw, policy)
    if message is None:
        from email.parser import BytesParser

        message = BytesParser(policy=policy).parsebytes(raw)
    return message


def _one_part(raw: bytes, policy):
    """The message of a one-part ``raw`` with ``\\n`` line ends and well-formed headers, else None.

    The parser's rules for such a message (``email.feedparser``): header lines
    are those matching its ``headerRE`` up to the first empty line (dropped); a
    line starting with white space continues the field before it; a field is
    split at its first colon and ``header_source_parse`` keeps the value from
    its first character that is not a space or tab, continuation lines and
    their line ends included, without the final line end. ``_HEADER_BLOCK``
    accepts only blocks the parser reads without a defect: the first line is a
    field, every line is a field or a continuation (a ``From `` line, a line
    without a name or without a colon do not match), so ``_FIELD`` finds
    exactly the parser's fields.
    """
    text = raw.decode("ascii", "surrogateescape")
    end = text.find("\n\n")
    if end <= 0 or _HEADER_BLOCK.fullmatch(text, 0, end) is None:
        return None
    message = policy.message_factory(policy=policy)
    message._headers = _FIELD.findall(text, 0, end)  # what ``set_raw`` appends: (name, value) per field
    if message.get_content_maintype() in ("multipart", "message"):
        return None
    message.set_payload(text[end + 2:])
    return message


def parser_policy():
    """The shared policy instance (built on first use: ``email`` is imported only when mail is read)."""
    global _POLICY
    if _POLICY is None:
        _POLICY = _build()
    return _POLICY


def _build():
    from email.message import EmailMessage
    from email.policy import EmailPolicy

    class Disposition(str):
        """``Content-Disposition`` as ``EmailMessage.is_attachment`` reads it."""

        __slots__ = ()

        @property
        def content_disposition(self) -> str | None:
            return self.split(";", 1)[0].strip().lower() or None

    class MailMessage(EmailMessage):
        _headers: list[tuple[str, Any]]  # email.message.Message's own state, which typeshed leaves out
        _default_type: str  # the same
        _type = None  # (the header list, its length, default type, content type) when last asked
        _fields = None  # (the header list, its length, {lower-case name: its first (name, value)})

        def first_fields(self) -> dict:
            """``{lower-case name: (name, value)}`` of each header's first field (what ``get`` returns)."""
            headers, known = self._headers, self._fields
            if known is not None and known[0] is headers and known[1] == len(headers):
                return known[2]
            first = {field[0].lower(): field for field in reversed(headers)}  # the first of a name wins
            self._fields = (headers, len(headers), first)
            return first

        def __contains__(self, name):
            # ``get_param`` (so ``get_content_charset``) asks first; the stdlib lower-cases every name to answer.
            return name.lower() in self.first_fields()

        def get(self, name, failobj=None):
            # The stdlib scans every field, lower-casing each name, on every call (the parser and the
            # body search call it ~10 times per part); a message's fields are indexed once instead.
            field = self.first_fields().get(name.lower())
            return failobj if field is None else self.policy.header_fetch_parse(*field)

        def replace_header(self, _name, _value):
            self._fields = self._type = None  # the one change made in place (same list, same length)
            super().replace_header(_name, _value)

        def _get_params_preserve(self, failobj, header):
            # Parameters depend only on the header's text, and a mailbox repeats a few Content-Type
            # texts ("text/plain; charset=UTF-8"): parsed once each, then copied from memory.
            field = self.first_fields().get(header.lower())
            if field is None:
                return failobj
            value = field[1]
            if len(value) > _PARAMS_TEXT:  # an odd, long header text: parsed each time, never kept
                return super()._get_params_preserve(failobj, header)  # type: ignore[misc]  # typeshed lacks it
            params = _PARAMS.get(value)
            if params is None:
                params = super()._get_params_preserve(failobj, header)  # type: ignore[misc]  # typeshed lacks it
                if len(_PARAMS) >= _PARAMS_LIMIT:
                    _PARAMS.clear()
                _PARAMS[str(value)] = params
            return list(params)

        def get_content_type(self) -> str:
            headers, known = self._headers, self._type
            if (known is not None and known[0] is headers and known[1] == len(headers)
                    and known[2] == self._default_type):
                return known[3]
            found = super().get_content_type()
            self._type = (headers, len(headers), self._default_type, found)
            return found

    class MailPolicy(EmailPolicy):
        def header_source_parse(self, sourcelines):
            name, value = sourcelines[0].split(":", 1)
            value = value.lstrip(" \t") + "".join(sourcelines[1:])
            return name, value.rstrip("\r\n")

        def header_fetch_parse(self, name, value):
            if len(name) == 19 and name.lower() == "content-disposition":
                return Disposition(value)
            return value

    return MailPolicy(message_factory=MailMessage)
