"""A seeded corpus of realistic mail for the mail benchmark (``bench_mail.py``).

Shaped after a working person's inbox, not after the test fixtures: every
message carries the header block a large provider adds (Received chain,
DKIM and ARC signatures, Authentication-Results — about 3 kB), and the
bodies follow the usual mix:

| share | kind | shape |
|---|---|---|
| 40 % | person to person | multipart/alternative, plain + HTML, quoted-printable, quoted history |
| 20 % | reply | text/plain, a few new lines over a long quoted thread |
| 12 % | newsletter | HTML only, 8–25 kB with tables and inline CSS |
| 10 % | notification | multipart/alternative, short plain + templated HTML |
| 10 % | with attachment | text + a 30–150 kB PDF (base64) |
|  8 % | Chinese / Japanese | GB18030, Big5 or ISO-2022-JP, base64 |

``build_maildir(path, count, seed)`` writes them as a Maildir (``new/``).
"""

from __future__ import annotations

import base64
import os
import quopri
import random

__all__ = ["build_maildir", "message"]

WORDS = ("the review moved to thursday please read design budget layer item kernel store commit batch "
         "deadline report weekly meeting invoice payment visa bank statement flight change release branch "
         "merge request feedback thanks regards team project plan risk rollback migration data schema").split()
ZH = "签证材料银行流水周报会议预算评审发布分支合并请求反馈谢谢团队项目计划风险回滚迁移数据截止日期付款账单航班变更"
JA = "会議資料送付確認来週水曜日午後打合予定変更連絡宜願"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _paragraphs(rng: random.Random, count: int) -> list[str]:
    return [" ".join(_sentence(rng, rng.randint(6, 16)) for _ in range(rng.randint(2, 5))) for _ in range(count)]


def _qp(text: str) -> str:
    return quopri.encodestring(text.encode("utf-8")).decode("ascii")


def _b64(data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76))


def _headers(rng: random.Random, n: int, subject: str, sender: str, extra: str = "") -> str:
    token = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(40))
    signature = base64.b64encode(rng.randbytes(256)).decode("ascii")
    hops = "".join(
        f"Received: from mail-{rng.randint(1, 99)}.relay.example (mail-{rng.randint(1, 99)}.relay.example "
        f"[198.51.100.{rng.randint(1, 254)}])\n        by mx.example.com with ESMTPS id {token[:12]}{hop}\n"
        f"        for <zhang.wei@example.com>; Mon, 12 Oct 2026 {hop + 8:02d}:{n % 60:02d}:11 +0000\n"
        for hop in range(rng.randint(3, 5)))
    return (
        f"Delivered-To: zhang.wei@example.com\n{hops}"
        f"ARC-Seal: i=1; a=rsa-sha256; t=1791705600; cv=none; d=example.com; s=arc-20160816;\n"
        f"        b={signature[:300]}\n"
        f"ARC-Message-Signature: i=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=arc-20160816;\n"
        f"        h=to:subject:message-id:date:from:mime-version:dkim-signature;\n        bh={token}=;\n"
        f"        b={signature[:340]}\n"
        f"ARC-Authentication-Results: i=1; mx.example.com; dkim=pass header.i=@relay.example; spf=pass\n"
        f"Return-Path: <{sender}>\n"
        f"Received-SPF: pass (example.com: domain of {sender} designates 198.51.100.7 as permitted sender)\n"
        f"Authentication-Results: mx.example.com; dkim=pass header.i=@relay.example header.s=20230601;\n"
        f"       spf=pass smtp.mailfrom={sender}; dmarc=pass (p=NONE sp=NONE dis=NONE)\n"
        f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=relay.example; s=20230601; t=1791705600;\n"
        f"        h=to:subject:message-id:date:from:mime-version:from:to:cc:subject:date:message-id;\n"
        f"        bh={token}=;\n        b={signature}\n"
        f"MIME-Version: 1.0\nFrom: {sender.split('@')[0].title()} <{sender}>\nDate: Mon, 12 Oct 2026 "
        f"{8 + n % 12:02d}:{n % 60:02d}:{n % 59:02d} +0800\nMessage-ID: <bench-{n}-{token[:16]}@relay.example>\n"
        f"Subject: {subject}\nTo: Zhang Wei <zhang.wei@example.com>\n{extra}")


def _person(rng: random.Random, n: int) -> str:
    paragraphs = _paragraphs(rng, rng.randint(1, 3))
    quoted = "\n".join("> " + line for line in _paragraphs(rng, rng.randint(1, 4)))
    plain = "\n\n".join(paragraphs) + f"\n\nOn Fri, someone wrote:\n{quoted}\n"
    html = ("<div dir=\"ltr\">" + "".join(f"<div>{p}</div><div><br></div>" for p in paragraphs)
            + f"</div><br><div class=\"gmail_quote\"><blockquote style=\"margin:0 0 0 .8ex;border-left:1px "
              f"#ccc solid;padding-left:1ex\">{quoted.replace(chr(10), '<br>')}</blockquote></div>")
    return (_headers(rng, n, _sentence(rng, 5)[:-1], f"colleague{n % 40}@example.org",
                     f"Content-Type: multipart/alternative; boundary=\"b{n}\"\n")
            + f"\n--b{n}\nContent-Type: text/plain; charset=\"UTF-8\"\nContent-Transfer-Encoding: quoted-printable"
              f"\n\n{_qp(plain)}\n--b{n}\nContent-Type: text/html; charset=\"UTF-8\"\n"
              f"Content-Transfer-Encoding: quoted-printable\n\n{_qp(html)}\n--b{n}--\n")


def _reply(rng: random.Random, n: int) -> str:
    history = "\n".join(">" * rng.randint(1, 3) + " " + _sentence(rng, rng.randint(6, 14))
                        for _ in range(rng.randint(20, 60)))
    body = "\n\n".join(_paragraphs(rng, 1)) + f"\n\nOn Thu, Oct 8, 2026 someone wrote:\n{history}\n"
    return (_headers(rng, n, "Re: " + _sentence(rng, 4)[:-1], f"peer{n % 30}@example.net",
                     "Content-Type: text/plain; charset=us-ascii\nContent-Transfer-Encoding: 7bit\n")
            + "\n" + body)


def _newsletter(rng: random.Random, n: int) -> str:
    rows = "".join(f"<tr><td style=\"padding:8px;font-family:Arial\">{_sentence(rng, 6)}</td>"
                   f"<td style=\"padding:8px\">{rng.randint(1, 999)}.{rng.randint(10, 99)}</td></tr>"
                   for _ in range(rng.randint(4, 12)))
    stories = "".join(f"<table width=\"100%\"><tr><td><h2 style=\"font-size:18px\">{_sentence(rng, 5)}</h2>"
                      f"<p style=\"color:#333;line-height:1.5\">{p}</p><a href=\"https://news.example/{n}/{i}\" "
                      f"style=\"color:#06c\">Read more</a></td></tr></table>"
                      for i, p in enumerate(_paragraphs(rng, rng.randint(4, 10))))
    html = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>{'.c%d{margin:0;padding:0}' * 1 % n}"
            f"body{{font-family:Helvetica}} td{{vertical-align:top}}</style></head><body>"
            f"<div style=\"display:none\">Preview text &zwnj;&nbsp;&zwnj;&nbsp;</div>"
            f"<table width=\"600\" align=\"center\"><tr><td>{stories}<table>{rows}</table>"
            f"<p style=\"font-size:11px\">You receive this because you subscribed. "
            f"<a href=\"https://news.example/unsub\">Unsubscribe</a></p></td></tr></table>"
            f"<img src=\"https://news.example/open.gif?n={n}\" width=\"1\" height=\"1\"></body></html>")
    return (_headers(rng, n, f"Weekly digest #{n % 52}: " + _sentence(rng, 4)[:-1], "news@digest.example",
                     "List-Id: <digest.news.example>\nList-Unsubscribe: <https://news.example/unsub>\n"
                     "Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n")
            + "\n" + _qp(html) + "\n")


def _notification(rng: random.Random, n: int) -> str:
    plain = f"{_sentence(rng, 8)}\n\nView it: https://git.example/fold/pull/{n}\n"
    html = (f"<table><tr><td><p>{_sentence(rng, 8)}</p><p><a href=\"https://git.example/fold/pull/{n}\">"
            f"View it on Git</a></p><p style=\"font-size:12px;color:#666\">Reply to this email directly.</p>"
            f"</td></tr></table>")
    return (_headers(rng, n, f"[fold] {_sentence(rng, 6)[:-1]} (#{n})", "notifications@git.example",
                     f"Content-Type: multipart/alternative; boundary=\"n{n}\"\n")
            + f"\n--n{n}\nContent-Type: text/plain; charset=UTF-8\n\n{plain}\n--n{n}\n"
              f"Content-Type: text/html; charset=UTF-8\n\n{html}\n--n{n}--\n")


def _attachment(rng: random.Random, n: int) -> str:
    pdf = b"%PDF-1.4\n" + rng.randbytes(rng.randint(30_000, 150_000)) + b"\n%%EOF\n"
    return (_headers(rng, n, "Invoice " + str(10_000 + n), f"billing{n % 5}@vendor.example",
                     f"Content-Type: multipart/mixed; boundary=\"m{n}\"\n")
            + f"\n--m{n}\nContent-Type: text/plain; charset=utf-8\n\n" + "\n\n".join(_paragraphs(rng, 2))
            + f"\n\n--m{n}\nContent-Type: application/pdf; name=\"invoice-{n}.pdf\"\n"
              f"Content-Disposition: attachment; filename=\"invoice-{n}.pdf\"\nContent-Transfer-Encoding: base64\n\n"
            + _b64(pdf) + f"\n--m{n}--\n")


def _east_asian(rng: random.Random, n: int) -> str:
    charset, alphabet = rng.choice([("gb18030", ZH), ("big5", "簽證材料銀行流水週報會議預算評審發布分支合併請求謝謝團隊"),
                                    ("iso-2022-jp", JA)])
    text = "\n".join("".join(rng.choice(alphabet) for _ in range(rng.randint(20, 60))) + "。"
                     for _ in range(rng.randint(3, 12)))
    subject = "".join(rng.choice(alphabet) for _ in range(10))
    encoded_subject = f"=?{charset}?B?{base64.b64encode(subject.encode(charset)).decode('ascii')}?="
    return (_headers(rng, n, encoded_subject, f"tongshi{n % 20}@example.cn",
                     f"Content-Type: text/plain; charset={charset}\nContent-Transfer-Encoding: base64\n")
            + "\n" + _b64(text.encode(charset)) + "\n")


KINDS = ((0.40, _person), (0.20, _reply), (0.12, _newsletter), (0.10, _notification), (0.10, _attachment),
         (0.08, _east_asian))


def message(rng: random.Random, n: int) -> bytes:
    pick, total = rng.random(), 0.0
    for share, make in KINDS:
        total += share
        if pick < total:
            return make(rng, n).encode("ascii")
    return _east_asian(rng, n).encode("ascii")


def build_maildir(path: str, count: int, seed: int = 7) -> int:
    """Write ``count`` messages into the Maildir at ``path``; the total bytes written."""
    rng = random.Random(seed)
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(path, sub), exist_ok=True)
    written = 0
    for n in range(count):
        data = message(rng, n)
        with open(os.path.join(path, "new", f"{1791705600 + n}.M{n}P1.bench"), "wb") as file:
            file.write(data)
        written += len(data)
    return written
