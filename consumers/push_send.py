"""One Apprise notification, sent by a child process so that a push target's answer is bounded.

Apprise reads a target's HTTP answer whole, in the calling process, and
bounds only each socket operation: a broken or hostile target could answer
with gigabytes, or trickle a byte at a time for ever. ``send(url, title,
body, timeout)`` therefore runs Apprise in a child process (``python -m
fold_consumers.push_send``) that

* reads its request as JSON on stdin (the URL holds a secret: never on the
  command line, never in a file);
* refuses any HTTP answer over ``MAX_ANSWER_BYTES`` (decompressed), by
  wrapping ``requests``' body reader in that process only;
* writes its outcome as one line of JSON on stdout;

and is killed when it outlives ``timeout`` by ``START_SECONDS`` (its own
start-up included). The answer is ``None`` when the notification was sent,
else an error in words that never holds the URL.
"""

from __future__ import annotations

import json
import subprocess
import sys

__all__ = ["MAX_ANSWER_BYTES", "START_SECONDS", "send"]

MAX_ANSWER_BYTES = 1 << 20  # a push service answers with a few hundred bytes of JSON
START_SECONDS = 15.0  # the child's start and Apprise's import, on a busy machine
ERROR_CHARS = 300
TOO_LARGE = "the answer is larger than"
CAPPED = f"Socket Exception: {TOO_LARGE}"


def send(url: str, title: str, body: str, timeout: float) -> str | None:
    """Send one notification through Apprise in a child process; None when sent, else the error."""
    request = json.dumps({"url": url, "title": title, "body": body, "timeout": timeout}).encode()
    limit = timeout + START_SECONDS
    try:
        done = subprocess.run([sys.executable, "-m", "fold_consumers.push_send"], input=request,
                              capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return f"the push target did not answer within {limit:g}s"
    try:
        outcome = json.loads(done.stdout.decode("utf-8").strip().splitlines()[-1])
        error = outcome["error"]
    except (ValueError, IndexError, KeyError, TypeError):
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        error = f"the sender failed (exit {done.returncode}): {said[-1] if said else 'no message'}"
    return None if error is None else str(error).replace(url, "<url>")[:ERROR_CHARS]


def _cap_answers(limit: int) -> None:
    """Every ``requests`` body read in this process stops with an error past ``limit`` bytes."""
    import requests

    read = requests.models.Response.iter_content

    def capped(self, chunk_size=1, decode_unicode=False):
        seen = 0
        for chunk in read(self, chunk_size, decode_unicode):
            seen += len(chunk)
            if seen > limit:
                self.close()
                raise requests.exceptions.ContentDecodingError(f"{TOO_LARGE} {limit:,} bytes")
            yield chunk

    requests.models.Response.iter_content = capped  # type: ignore[method-assign]  # every response here is capped


def _notify(request: dict) -> str | None:
    import apprise

    client = apprise.Apprise()
    if not client.add(request["url"]):
        return "not a usable Apprise URL (check the scheme and its options)"
    with apprise.LogCapture(level=apprise.logging.DEBUG) as output:
        sent = client.notify(body=request["body"], title=request["title"], timeout=request["timeout"])
    if sent:
        return None
    said = [line.split(" - ", 2)[1:] for line in output.getvalue().splitlines() if line.count(" - ") >= 2]
    warned = [text for level, text in said if level in ("WARNING", "ERROR")]
    # Apprise names the cause on the wire only at DEBUG level, where requests' messages can hold a URL's
    # path (a Telegram bot token is one): only the cap's own words are taken from there.
    capped = [text for level, text in said if level == "DEBUG" and text.startswith(CAPPED)]
    error = warned[-1] if warned else "the notification was not delivered"
    return f"{error} ({capped[-1].removeprefix('Socket Exception: ')})" if capped else error


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
    _cap_answers(MAX_ANSWER_BYTES)
    error = _notify(request)
    sys.stdout.write(json.dumps({"error": error}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
