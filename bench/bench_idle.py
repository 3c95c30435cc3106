"""Benchmark: how long a new mail takes to reach the inbox under ``foldctl run`` with IMAP IDLE.

Method: a private Dovecot on 127.0.0.1 (``tests/support/dovecot.py``) and
``foldctl run`` as a real process with one ``email`` source, ``every =
"1h"`` (so no scheduled poll can deliver within the run) and the default
``idle_delay`` (10 s: mail that arrives together is gathered into one
poll). After the watch says it is connected, ``--deliveries`` mails are
appended one at a time over IMAP (as another client would deliver them);
for each, the time from the APPEND returning to the observation being in
host.db (``foldctl inbox``, asked every 0.1 s) is measured. The baseline
is the scheduled poll alone: without IDLE the same mail waits up to
``every`` (3,600 s; 1,800 s on average). Target: median ≤ 15 s.
``--doc`` writes the section ``idle`` of ``docs/benchmarks.md``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "tests"), HERE]

from doc_sections import replace_section  # noqa: E402

PASSWORD_ENV = "FOLD_BENCH_IMAP_PASSWORD"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deliveries", type=int, default=10)
    parser.add_argument("--idle-delay", default="10s")
    parser.add_argument("--doc", action="store_true", help="write the 'idle' section of docs/benchmarks.md")
    args = parser.parse_args(argv)

    import signal
    import threading

    from tests.support.dovecot import PASSWORD, Dovecot
    from tests.support.host_workspace import Workspace

    server = Dovecot().start()
    root = Path(tempfile.mkdtemp(prefix="fold-bench-idle-"))
    process = None
    try:
        ws = Workspace(root, sources=(), extra=f'''
            [[adapters]]
            name = "mail"
            type = "email"
            every = "1h"
            idle_delay = "{args.idle_delay}"
            host = "127.0.0.1"
            port = {server.plain_port}
            security = "none"
            username = "test"
            password_env = "{PASSWORD_ENV}"
        ''')
        process = ws.spawn("run", env={PASSWORD_ENV: PASSWORD})
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(raw.decode(errors="replace") for raw in process.stderr),
                         daemon=True).start()
        deadline = time.monotonic() + 60
        while not any("status=connected" in line for line in lines):
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("the watch did not connect:\n" + "".join(lines))
            time.sleep(0.1)
        time.sleep(2)  # let the start-up polls finish
        latencies = []
        for n in range(args.deliveries):
            subject = f"bench idle {n}"
            server.append((f"From: a@example.org\r\nTo: test@example.com\r\nSubject: {subject}\r\n"
                           f"Message-ID: <bench-idle-{n}@example.org>\r\n\r\nbody\r\n").encode())
            started = time.monotonic()
            while True:
                code, document, _ = ws.run("inbox", "--source", "mail", "--limit", "5")
                if any(o["title"] == subject for o in document.get("observations", [])):
                    break
                if time.monotonic() - started > 120:
                    raise SystemExit(f"{subject!r} not delivered in 120 s:\n" + "".join(lines))
                time.sleep(0.1)
            latencies.append(time.monotonic() - started)
            print(f"delivery {n + 1}: {latencies[-1]:.1f} s", flush=True)
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
        server.stop()

    median = statistics.median(latencies)
    print(f"median {median:.1f} s, min {min(latencies):.1f} s, max {max(latencies):.1f} s")
    if args.doc:
        section = "\n".join([
            "## 13. New mail to the inbox with IMAP IDLE",
            "",
            "`python bench/bench_idle.py --doc` — a private Dovecot on 127.0.0.1 and `foldctl run` as a real "
            "process with one `email` source, `every = \"1h\"` (no scheduled poll can deliver within the run) and "
            f"`idle_delay = \"{args.idle_delay}\"` (the default: mail that arrives together is gathered into one "
            f"poll). {args.deliveries} mails appended one at a time over IMAP; each measured from the APPEND to "
            "its observation in host.db (`foldctl inbox`, asked every 0.1 s). Baseline: without IDLE the same mail "
            "waits for the scheduled poll, up to `every` (3,600 s, 1,800 s on average). Target: median ≤ 15 s.",
            "",
            "| deliveries | median | min | max | ratio of the median to the mean wait without IDLE |",
            "|---|---|---|---|---|",
            f"| {len(latencies)} | {median:.1f} s | {min(latencies):.1f} s | {max(latencies):.1f} s | "
            f"{median / 1800:.4f}× |",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f} at the end; measured {datetime.now().date().isoformat()}.",
        ])
        replace_section(os.path.join(REPO, "docs", "benchmarks.md"), "idle", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
