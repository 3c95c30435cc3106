"""Hostile mail: messages built to crash, stall, fool or make a reader fetch and run things.

``hostile_messages(url)`` returns ``{name: bytes}``; every remote reference
in them points at ``url`` (a local HTTP server that records requests), so a
test can prove nothing was fetched.
"""

from __future__ import annotations

import base64


def hostile_messages(url: str) -> dict[str, bytes]:
    head = "From: Mallory <m@evil.example>\r\nTo: zhang.wei@example.com\r\nDate: Mon, 12 Oct 2026 10:00:00 +0000\r\n"
    html = f"""<html><head><base href="{url}/base/"><meta http-equiv="refresh" content="0;url={url}/refresh">
<link rel="stylesheet" href="{url}/style.css"><style>@import url("{url}/import.css"); body {{ background: url({url}/bg.png) }}</style>
<script src="{url}/script.js"></script><script>fetch("{url}/inline-fetch"); document.write("SCRIPT-RAN")</script>
</head><body onload="fetch('{url}/onload')">
<p>Hello <a href="javascript:fetch('{url}/js-link')">click me</a> and <a href="{url}/plain-link">this</a>.</p>
<img src="{url}/pixel.gif"><iframe src="{url}/frame"></iframe><object data="{url}/object"></object>
<video poster="{url}/poster.png" src="{url}/video.mp4"></video><svg><image href="{url}/svg.png"/></svg>
<form action="{url}/form"><input type="image" src="{url}/input.png"></form>
<noscript>NOSCRIPT-TEXT</noscript><template>TEMPLATE-TEXT</template>
</body></html>"""
    messages = {
        "scripts-and-remote-references": (
            head + "Subject: <script>alert(1)</script> invoice\r\nMessage-ID: <h1@evil.example>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html).encode(),
        "one-megabyte-subject": (
            head + "Subject: " + "A" * 1_048_576 + "\r\nMessage-ID: <h2@evil.example>\r\n\r\nbody\r\n").encode(),
        "one-megabyte-encoded-words": (
            head + "Subject: " + " ".join(["=?utf-8?B?5L2g5aW9?="] * 50_000) + "\r\n\r\nbody\r\n").encode(),
        "nul-bytes": (head.encode() + b"Subject: zero\x00byte\r\nFrom: Nul\x00 <n@x.example>\r\n"
                      b"Message-ID: <h3\x00@evil.example>\r\n\r\nbody with \x00 NUL \x00 bytes\r\n"),
        "invalid-utf8": (head.encode() + b"Subject: =?utf-8?B?" + base64.b64encode(b"\xff\xfe bad \xc3\x28") +
                         b"?= and raw \xe9\xff\xfe\r\nMIME-Version: 1.0\r\n"
                         b"Content-Type: text/plain; charset=utf-8\r\n\r\n\xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc\r\n"),
        "absurd-declared-sizes": (
            head + "Subject: sizes\r\nContent-Length: 999999999999999999999999\r\nMIME-Version: 1.0\r\n"
            "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
            "--b\r\nContent-Type: application/zip; name=bomb.zip\r\n"
            "Content-Disposition: attachment; filename=bomb.zip; size=18446744073709551616000\r\n"
            "Content-Length: 1e308\r\nContent-Transfer-Encoding: base64\r\n\r\nUEsDBBQAAAAIAA==\r\n"
            "--b\r\nContent-Type: message/partial; id=x; number=1; total=99999999999999\r\n\r\npart\r\n--b--\r\n"
        ).encode(),
        "deep-nesting": (head + "Subject: deep\r\nMIME-Version: 1.0\r\n" + "".join(
            f"Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n" for i in range(300))
            + "Content-Type: text/plain\r\n\r\ninnermost\r\n").encode(),
        "many-parts": (head + "Subject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=p\r\n\r\n"
                       + "".join(f"--p\r\nContent-Type: application/octet-stream; name=f{i}.bin\r\n\r\nx\r\n"
                                 for i in range(3000)) + "--p--\r\n").encode(),
        "huge-parameter": (head + "Subject: param\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=q\r\n\r\n"
                           "--q\r\nContent-Type: text/plain; charset=utf-8; x=" + "y" * 1_000_000 +
                           "\r\n\r\ninner text\r\n--q--\r\n").encode(),
        "thousands-of-recipients": (
            head.replace("To: zhang.wei@example.com\r\n", "To: " + ", ".join(
                f'"Person, {i}" <p{i}@example.org>' for i in range(10_000)) + "\r\n")
            + "Subject: all hands\r\n\r\nhi all\r\n").encode(),
        "weird-charsets": (head + "Subject: =?zlib_codec?B?eJzLSM3JyQcABiwCFQ==?= =?rot13?Q?uryyb?=\r\n"
                           "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=base64_codec\r\n\r\naGVsbG8=\r\n").encode(),
        "empty": b"",
        "binary-noise": bytes(range(256)) * 64,
        "headers-only-no-colon": b"this is not a header\r\nnor this\r\n",
    }
    return messages
