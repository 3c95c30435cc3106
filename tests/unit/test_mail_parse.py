"""``policy.parse``: a one-part message is built without the feed parser, as the feed parser builds it.

The direct path must build the very message ``BytesParser`` builds — the
same header fields in the same order with the same raw values, the same
payload, no defect — and must leave every message it cannot build that way
to the parser. Compared here on generated messages (hypothesis: odd names,
folding, white space, 8-bit bytes, lines the parser calls defects, every
kind of line end) and on the benchmark corpus, which it must build directly.
"""

from __future__ import annotations

import random
import sys
from email.parser import BytesParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fold_adapters.mail import policy
from fold_adapters.mail.policy import parse, parser_policy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from mail_corpus import KINDS  # noqa: E402


def by_the_parser(raw: bytes):
    return BytesParser(policy=parser_policy()).parsebytes(raw)


def facts(message) -> tuple:
    """Everything the parser sets on a message (and on its parts)."""
    payload = message._payload
    payload = [facts(part) for part in payload] if isinstance(payload, list) else payload
    return (type(message), message._headers, payload, [type(d) for d in message.defects],
            message._unixfrom, message._charset, message.preamble, message.epilogue, message._default_type,
            message.policy is parser_policy(), message.is_multipart())


def check(raw: bytes) -> bool:
    """The direct path's message equals the parser's; True when the direct path took it."""
    direct = policy._one_part(raw, parser_policy()) if b"\r" not in raw else None
    reference = by_the_parser(raw)
    if direct is not None:
        assert facts(direct) == facts(reference)
        assert direct.defects == [] and reference.defects == []
    assert facts(parse(raw)) == facts(reference)
    return direct is not None


NAMES = st.sampled_from(["Subject", "From", "To", "X-Odd_Name!", "received", "Content-Type", "DKIM-Signature",
                         "From", "X", "a~b", "Content-Transfer-Encoding"])
VALUES = st.text(alphabet=st.sampled_from(list("ab =?:;\t ,<>@\"\\()") + ["\u00e9", "签", "\udce9", "\x00"]),
                 max_size=30)
TYPES = st.sampled_from(["text/plain; charset=utf-8", "text/html", "multipart/mixed; boundary=b",
                         "message/rfc822", "message/delivery-status", "application/pdf", "TEXT/PLAIN", "multipart/x"])


@st.composite
def messages(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        roll = draw(st.integers(0, 19))
        if roll == 0:
            lines.append(draw(st.sampled_from([" folded", "\tfolded", "From someone", ": no name", "no colon",
                                               "Name : space", "", " ", "X:"])))
        elif roll == 1:
            lines.append(f"Content-Type: {draw(TYPES)}")
        else:
            lines.append(f"{draw(NAMES)}:{draw(VALUES)}")
            for _ in range(draw(st.integers(0, 2))):
                lines.append(draw(st.sampled_from([" ", "\t"])) + draw(VALUES))
    body = draw(st.sampled_from(["", "body\n", "line one\n\nline two", "--b\nContent-Type: text/plain\n\nhi\n--b--\n",
                                 "\n\n\n", "From me\n"]))
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    separator = draw(st.sampled_from(["\n\n", "\n", "\n \n", ""]))
    text = "\n".join(lines) + separator + body
    if end != "\n" and draw(st.booleans()):
        text = text.replace("\n", end)
    return text.encode("utf-8", "surrogateescape")


@settings(max_examples=1500, deadline=None)
@given(messages())
def test_the_direct_path_builds_what_the_parser_builds(raw):
    check(raw)


def test_one_part_mail_of_the_corpus_takes_the_direct_path_and_multipart_mail_does_not():
    rng = random.Random(3)
    for _, make in KINDS:
        for n in range(20):
            raw = make(rng, n).encode("ascii")
            direct = check(raw)
            one_part = make.__name__ in ("_reply", "_newsletter", "_east_asian")
            assert direct == one_part, make.__name__
            assert not check(raw.replace(b"\n", b"\r\n"))  # CRLF mail is the parser's


def test_what_the_parser_calls_a_defect_is_left_to_it():
    head = b"From: a@example.com\nSubject: hi\n"
    for odd in (b"From a@example.com Mon Oct 12\n" + head, b" folded first\n" + head, head + b"no colon here\n",
                head + b": no name\n", head + b"From inside\n", b"\n" + head, head + b"X: 1\r\n"):
        assert not check(odd + b"\nbody\n")
    assert check(head + b"\nbody\n") and not check(head) and not check(head + b"Content-Type: message/rfc822\n\nx")
