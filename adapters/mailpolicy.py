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
decoded by ``fold_adapters.mailtext.header_text`` instead. ``MailMessage``
remembers its content type, which ``get_body`` and the walk ask for again
and again; a message is never changed after it is parsed.
"""

from __future__ import annotations

__all__ = ["parser_policy"]

_POLICY = None


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
        _type = None  # (header count, default type, content type) when last asked

        def get_content_type(self) -> str:
            known = self._type
            if known is not None and known[0] == len(self._headers) and known[1] == self._default_type:
                return known[2]
            found = super().get_content_type()
            self._type = (len(self._headers), self._default_type, found)
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
