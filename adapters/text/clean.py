"""Bytes and header values of mail → clean Unicode text (contract §10: the source's own words).

Used by ``fold_adapters.mail.mime``. Everything here is total: any input gives a
string and, when something had to be guessed or replaced, a note saying so —
never an exception, never an invention.

* ``decode_bytes`` — the declared charset through a table of supersets that
  real mail needs (GB2312/GBK → GB18030, Big5 → CP950/Big5-HKSCS,
  ISO-2022-JP → its extensions, Latin-1/ASCII labels → Windows-1252), then
  UTF-8, then charsets declared elsewhere in the same message, then
  charset-normalizer as the last resort (given enough non-ASCII bytes to
  judge by), then UTF-8 with replacement marks. Declared text with a few
  broken sequences keeps its charset, the broken bytes marked.
* ``header_text`` — an unstructured header value: raw 8-bit bytes decoded as
  above, RFC 2047 encoded words (adjacent words of one charset joined before
  decoding, since mailers split multi-byte characters across them), folding
  removed.
* ``clean_text`` — control characters, lone surrogates and invisible padding
  removed; at most one blank line in a row.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["clean_line", "clean_text", "cut_line", "decode_bytes", "header_text"]

#: declared label → codecs to try in order (supersets first: what mailers really send).
_SUPERSETS = {
    "gb2312": ("gb18030",), "gbk": ("gb18030",), "x-gbk": ("gb18030",), "cp936": ("gb18030",),
    "euc-cn": ("gb18030",), "csgb2312": ("gb18030",), "gb_2312-80": ("gb18030",), "chinese": ("gb18030",),
    "big5": ("cp950", "big5hkscs"), "big-5": ("cp950", "big5hkscs"), "x-big5": ("cp950", "big5hkscs"),
    "cn-big5": ("cp950", "big5hkscs"), "cp950": ("cp950", "big5hkscs"),
    "iso-2022-jp": ("iso2022_jp_2", "iso2022_jp_ext", "iso2022_jp_3"), "csiso2022jp": ("iso2022_jp_2",),
    "shift_jis": ("cp932",), "shift-jis": ("cp932",), "sjis": ("cp932",), "x-sjis": ("cp932",),
    "euc-kr": ("cp949",), "ks_c_5601-1987": ("cp949",), "ks_c_5601": ("cp949",),
    "iso-8859-1": ("cp1252", "latin-1"), "latin1": ("cp1252", "latin-1"), "latin-1": ("cp1252", "latin-1"),
    "us-ascii": ("ascii",), "ascii": ("ascii",), "utf8": ("utf-8",), "unicode-1-1-utf-8": ("utf-8",),
}
#: labels that declare nothing.
_UNDECLARED = frozenset({"", "unknown-8bit", "x-unknown", "unknown", "default", "charset", "none", "8bit"})
_DETECT_SAMPLE = 64 * 1024
DETECT_MATERIAL = 12  # fewer non-ASCII bytes than this: a detector's answer is noise, not a reading
_ASCII = bytes(range(128))

_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,64})\?([bBqQ])\?([^?\s]*)\?=")
_FOLD = re.compile(r"\r?\n[ \t]*")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\u200c\u200d\u200e\u2060\ufeff\u034f\u00ad]")
_ASCII_CONTROLS = bytes([*range(0, 9), 11, 12, *range(14, 32), 0x7F])
_LINE_CONTROL = re.compile("[\x00-\x1f\x7f\u2028\u2029\u0085]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TRAILING = re.compile(r"[ \t\u00a0]+\n")
_BLANKS = re.compile(r"\n{3,}")


def _candidates(charset: str | None) -> tuple[str, ...]:
    label = (charset or "").strip().strip('"').lower()
    if label in _UNDECLARED:
        return ()
    return _SUPERSETS.get(label, (label,))


def _try(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError, ValueError, TypeError):
        return None


def decode_bytes(data: bytes, charset: str | None = None, hints: Iterable[str] = ()) -> tuple[str, str | None]:
    """``(text, note)``: ``data`` decoded; ``note`` says what was guessed (None when the label held)."""
    if not data:
        return "", None
    label = (charset or "").strip().strip('"').lower() or None
    declared = tuple(codec for codec in _candidates(charset) if _is_codec(codec))
    for codec in declared:
        text = _try(data, codec)
        if text is not None:
            return text, None
    if data.isascii():
        if b"\x1b$" in data or b"\x1b(" in data:  # ISO-2022-JP announces itself with escapes
            text = _try(data, "iso2022_jp_2")
            if text is not None:
                return text, None if declared else "no charset declared; ISO-2022-JP escapes found"
        return data.decode("ascii"), None
    if declared:
        why = f"charset {label!r} did not fit the bytes"
    elif label and label not in _UNDECLARED:
        why = f"charset {label!r} is unknown"
    else:
        why = "no charset declared"
    material = len(data.translate(None, _ASCII))  # how many non-ASCII bytes there are to judge by
    if declared:  # a few broken sequences in otherwise fitting text: keep the declared charset
        text = data.decode(declared[0], errors="replace")
        broken = text.count("\ufffd")
        if broken <= max(2, material // 50):
            return text, f"charset {label!r}: {broken} undecodable byte sequence(s) replaced"
    tried = set(declared)
    for codec in ("utf-8",) + tuple(c for hint in hints for c in _candidates(hint)):
        if codec in tried:
            continue
        tried.add(codec)
        text = _try(data, codec)
        if text is not None:
            return text, f"{why}; read as {codec}"
    detected = _detect(data) if material >= DETECT_MATERIAL else None
    if detected is not None:
        return data.decode(detected, errors="replace"), f"{why}; read as {detected} (detected)"
    fallback = declared[0] if declared and _is_codec(declared[0]) else "utf-8"
    return data.decode(fallback, errors="replace"), f"{why}; undecodable bytes replaced (read as {fallback})"


def _is_codec(name: str) -> bool:
    """True for a text codec ("zlib_codec" or "rot13" are codecs too, but not charsets)."""
    return _known_codec(name) if len(name) <= 64 else _codec_check(name)


@lru_cache(maxsize=256)  # asked on every decode (a lookup by name costs); real labels are few and short
def _known_codec(name: str) -> bool:
    return _codec_check(name)


def _codec_check(name: str) -> bool:
    try:
        b"a".decode(name)
    except LookupError:
        return False
    except (UnicodeError, ValueError):
        return True
    return True


def _detect(data: bytes) -> str | None:
    """charset-normalizer's best guess for ``data`` (a sample of it), or None.

    UTF-16/32 guesses are refused for data without NUL bytes: on short mixed
    text the detector offers them, and mail text never is bare UTF-16.
    """
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(data[:_DETECT_SAMPLE]).best()
    except Exception:  # the detector is a guess: its failure is "no guess"
        return None
    if best is None:
        return None
    encoding = best.encoding
    if encoding.startswith(("utf_16", "utf_32")) and b"\x00" not in data:
        return None
    return encoding if _is_codec(encoding) else None


def header_text(value: str | None, hints: Iterable[str] = ()) -> tuple[str, str | None]:
    """``(text, note)`` for one unstructured header value as the parser kept it (8-bit as surrogates)."""
    if not value:
        return "", None
    note = None
    if _SURROGATE.search(value) or not value.isascii():
        raw = value.encode("utf-8", "surrogateescape")
        value, note = decode_bytes(raw, None, hints)
    value = _FOLD.sub(" ", value)
    if "=?" in value:
        value = _decode_words(value, hints)
    return clean_line(value), note


def _decode_words(value: str, hints: Iterable[str]) -> str:
    """RFC 2047: adjacent encoded words of one charset are joined as bytes, then decoded."""
    out: list[str] = []
    pending: list[bytes] = []
    pending_charset: str | None = None
    position = 0

    def flush() -> None:
        nonlocal pending, pending_charset
        if pending:
            out.append(decode_bytes(b"".join(pending), pending_charset, hints)[0])
        pending, pending_charset = [], None

    for match in _ENCODED_WORD.finditer(value):
        gap = value[position:match.start()]
        position = match.end()
        charset = match.group(1).split("*", 1)[0]  # RFC 2231 language suffix
        data = _word_bytes(match.group(2), match.group(3))
        if data is None:  # a malformed word stays as written
            flush()
            out.append(gap + match.group(0))
            continue
        if gap and not (pending and gap.isspace()):  # white space between two words is dropped
            flush()
            out.append(gap)
        if pending and charset.lower() != (pending_charset or "").lower():
            flush()
        pending.append(data)
        pending_charset = charset
    flush()
    out.append(value[position:])
    return "".join(out)


def _word_bytes(encoding: str, text: str) -> bytes | None:
    try:
        if encoding in "bB":
            return base64.b64decode(text + "=" * (-len(text) % 4))
        return binascii.a2b_qp(text.replace("_", " ").encode("ascii"), header=False)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


def clean_text(text: str) -> str:
    """Body text as a person reads it: no control characters, no invisible padding, tidy blank lines."""
    if not text:
        return ""
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    ascii = text.isascii()
    if ascii:  # the common case, checked on bytes in C
        data = text.encode("ascii")
        if len(data.translate(None, _ASCII_CONTROLS)) != len(data):
            text = _CONTROL.sub("", text)
    elif _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    # Each regex pass costs and most text needs none. A two-character search scans the whole text, a
    # one-character one (memchr) is several times faster: look for a tab or a no-break space first.
    if (" \n" in text or "\t" in text and "\t\n" in text
            or not ascii and "\u00a0" in text and "\u00a0\n" in text):
        text = _TRAILING.sub("\n", text)
    if "\n\n\n" in text:
        text = _BLANKS.sub("\n\n", text)
    return text.strip()


def clean_line(text: str) -> str:
    """One-line text (subject, names): controls and line breaks become single spaces."""
    if not text:
        return ""
    if not text.isprintable():  # printable text has no controls, breaks, surrogates or zero-width marks
        if _SURROGATE.search(text):
            text = _SURROGATE.sub("\ufffd", text)
        text = _LINE_CONTROL.sub(" ", text)
        text = _CONTROL.sub("", text)
    return " ".join(text.split()) if "  " in text or text[:1].isspace() or text[-1:].isspace() else text


def cut_line(text: str | None, limit: int) -> str:
    """``clean_line(text)`` of at most ``limit`` code points; a cut one ends with ``…``.

    Only the first part of a huge string is cleaned, so a 1 MB one-line title
    costs no more than its first few hundred characters.
    """
    if not text:
        return ""
    head = text[: limit * 2 + 64]
    line = clean_line(head)
    if len(line) <= limit and len(head) == len(text):
        return line
    return line[: limit - 1].rstrip() + "…"
