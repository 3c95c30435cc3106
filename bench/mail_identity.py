"""What the mail adapters make of a fixed set of mail, one JSON line each: to compare two versions byte for byte.

A speed-up of the mail path must not change one observation. This script
writes, for every message of a fixed, seeded set, the JSON of its
observations (``read_mail`` + ``mail_observations``, canonical: sorted keys,
ASCII), and for a set of random HTML documents the output of
``html_to_text``. Run it with the code before and after a change and compare
the files (``cmp``); ``--before COMMIT`` does both and says where they differ.

The set: the benchmark corpus (``mail_corpus``: every kind, ``--per-kind``
messages each), the Maildir the benchmark reads (when it exists), the test
fixtures (``tests/fixtures/mail``), the hostile messages
(``tests/support/hostile_mail``); and each of them changed in the ways that
decide how a message is parsed: CRLF and lone CR line ends, a leading
``From `` line, a first line that is a continuation, a line without a colon
or without a name among the headers, headers only, a multipart type without
boundary, a ``message/rfc822`` wrapper, 8-bit bytes in a header, a cut at a
random place, random bytes changed.

``python bench/mail_identity.py OUT [--per-kind N] [--html N]``
``python bench/mail_identity.py --before COMMIT [--per-kind N] [--html N]``
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, REPO)

from timing import SCRATCH, code_at, clean_env  # noqa: E402

NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)


def variants(raw: bytes, rng: random.Random) -> dict[str, bytes]:
    """``raw`` and the changes of it that take other paths through the parser."""
    head, sep, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    middle = len(lines) // 2
    found = {
        "as-is": raw,
        "crlf": raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"),
        "lone-cr": raw.replace(b"\n", b"\r", 3),
        "unix-from": b"From sender@example.com Mon Oct 12 10:00:00 2026\n" + raw,
        "continuation-first": b" folded start\n" + raw,
        "no-colon-line": b"\n".join(lines[:middle] + [b"this line has no colon"] + lines[middle:]) + sep + body,
        "no-name-line": b"\n".join(lines[:middle] + [b": no name"] + lines[middle:]) + sep + body,
        "from-inside": b"\n".join(lines[:middle] + [b"From inside the headers"] + lines[middle:]) + sep + body,
        "headers-only": head,
        "headers-only-newline": head + b"\n",
        "empty-body": head + b"\n\n",
        "leading-blank": b"\n" + raw,
        "multipart-no-boundary": b"Content-Type: multipart/mixed\n" + raw,
        "rfc822-wrapper": b"From: outer@example.com\nContent-Type: message/rfc822\n\n" + raw,
        "delivery-status": b"Content-Type: message/delivery-status\n\n" + raw,
        "eight-bit-header": b"X-Note: caf\xe9 \xff\n" + raw,
        "cut": raw[:rng.randrange(1, max(2, len(raw)))],
    }
    flipped = bytearray(raw)
    for _ in range(6):
        if flipped:
            flipped[rng.randrange(len(flipped))] = rng.choice(b"\n\r :\t\x00\xe9=?-aZ")
    found["flipped"] = bytes(flipped)
    return found


def messages(per_kind: int) -> list[tuple[str, bytes]]:
    from mail_corpus import KINDS

    from tests.support.hostile_mail import hostile_messages

    found = []
    rng = random.Random(11)
    for _, make in KINDS:
        found += [(f"{make.__name__}-{n}", make(rng, n).encode("ascii")) for n in range(per_kind)]
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "mail", "*.eml"))):
        with open(path, "rb") as file:
            found.append((os.path.basename(path), file.read()))
    found += sorted(hostile_messages("http://127.0.0.1:9").items())
    return found


def html_documents(count: int) -> list[str]:
    """Random documents from the pieces mail HTML is made of (and some broken ones)."""
    rng = random.Random(5)
    tags = ["p", "div", "span", "td", "tr", "table", "li", "ul", "ol", "br", "pre", "h2", "a", "b", "blockquote",
            "style", "script", "head", "title", "center", "font", "hr", "img", "tbody", "th", "caption", "svg"]
    styles = ["", ' style="display:none"', ' style="DISPLAY: None"', ' style="mso-hide:all"', ' hidden',
              ' style="color:#333"', ' style="display : none ;"', ' style="visibility:hidden"']
    words = ["签证", "the", "  spaced  out ", "\n", "\t", "&nbsp;", "&amp;", "&lt;b&gt;", "|", " ", "x" * 30, "\ue000",
             "<!-- note -->", "<?pi x?>", "café", "会議", "<", ">", "&#x4e2d;"]
    documents = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 40)):
            roll = rng.random()
            if roll < 0.45:
                parts.append(f"<{rng.choice(tags)}{rng.choice(styles)}>")
            elif roll < 0.7:
                parts.append(f"</{rng.choice(tags)}>")
            else:
                parts.append(rng.choice(words))
        documents.append("".join(parts))
    return documents


def dump(out: str, per_kind: int, html: int) -> str:
    from fold_adapters.mail.mime import mail_observations, read_mail
    from fold_adapters.text.html import html_to_text

    digest = hashlib.sha256()
    rng = random.Random(3)
    corpus = os.path.join(SCRATCH, "mail-corpus-v1-10000", "new")
    files = sorted(glob.glob(os.path.join(corpus, "*")))
    with open(out, "w", encoding="ascii") as file:
        def write(line: str) -> None:
            file.write(line + "\n")
            digest.update(line.encode("ascii") + b"\n")

        for name, raw in messages(per_kind):
            for label, data in variants(raw, rng).items():
                found = mail_observations(read_mail(data), source="check", native_id=f"{name}/{label}",
                                          observed_at=NOW)
                write(json.dumps([name, label, [obs.model_dump(mode="json") for obs in found]], sort_keys=True))
        for path in files:
            with open(path, "rb") as mail:
                found = mail_observations(read_mail(mail.read()), source="check", native_id=os.path.basename(path),
                                          observed_at=NOW)
            write(json.dumps(["corpus", path, [obs.model_dump(mode="json") for obs in found]], sort_keys=True))
        for index, document in enumerate(html_documents(html)):
            write(json.dumps(["html", index, html_to_text(document)], sort_keys=True))
    return digest.hexdigest()


def compare(before: str, per_kind: int, html: int) -> int:
    import subprocess

    outs = {label: os.path.join(SCRATCH, f"mail-identity-{label}.jsonl") for label in ("before", "after")}
    for label, code in (("before", code_at(before, REPO)), ("after", None)):
        env = clean_env()
        env.pop("PYTHONPATH", None)
        if code is not None:
            env["PYTHONPATH"] = code
        subprocess.run([sys.executable, os.path.abspath(__file__), outs[label], "--per-kind", str(per_kind),
                        "--html", str(html)], env=env, cwd=REPO, check=True)
    with open(outs["before"], encoding="ascii") as one, open(outs["after"], encoding="ascii") as two:
        differ = [(a, b) for a, b in zip(one, two) if a != b]
        count = sum(1 for _ in open(outs["after"], encoding="ascii"))
    for a, b in differ[:5]:
        print("before:", a[:600], "\nafter: ", b[:600], file=sys.stderr)
    print(json.dumps({"lines": count, "differ": len(differ), "before": before}))
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--before")
    parser.add_argument("--per-kind", type=int, default=200)
    parser.add_argument("--html", type=int, default=30_000)
    args = parser.parse_args(argv)
    if args.before:
        return compare(args.before, args.per_kind, args.html)
    print(dump(args.out, args.per_kind, args.html))
    return 0


if __name__ == "__main__":
    sys.exit(main())
