"""[hardening-2] 6: an IMAP server flooding IDLE with untagged lines cannot grow Fold.

A hostile server on loopback (a small threaded socket server in this file)
speaks enough IMAP for a login, LIST, EXAMINE and IDLE, then sends untagged
lines without end. The daemon's real watch thread (``Watcher`` around the
``email`` adapter's ``watch``) runs in a child Python under ``prlimit --as``
until the third drop (a few seconds) and reports its log and its peak resident memory
(``VmHWM``). Reading the flood whole grew ``foldctl run`` by ~11 MB/s; now
each look reads at most ``MAX_LINES`` / ``MAX_BYTES``, the connection is
dropped and re-established with a growing backoff, and memory stays flat.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CEILING = 600 * 1024 * 1024  # bytes of address space for the child
WATCH_SECONDS = 40.0  # at most: the child stops after the third drop (1 s + 2 s of backoff)
FLOOD = (b"* OK " + b"x" * 200 + b"\r\n") * 300  # ~60 KiB per send


class Hostile(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.connections += 1  # type: ignore[attr-defined]
        sock: socket.socket = self.request
        sock.sendall(b"* OK [CAPABILITY IMAP4rev1 IDLE] hostile ready\r\n")
        reader = sock.makefile("rb")
        try:
            for raw in reader:
                tag, _, rest = raw.decode("ascii", "replace").strip().partition(" ")
                command = rest.split(" ", 1)[0].upper()
                if command == "CAPABILITY":
                    sock.sendall(f"* CAPABILITY IMAP4rev1 IDLE\r\n{tag} OK done\r\n".encode())
                elif command == "LIST":
                    sock.sendall(f'* LIST () "/" INBOX\r\n{tag} OK done\r\n'.encode())
                elif command in ("EXAMINE", "SELECT"):
                    sock.sendall(f"* 3 EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY 7] ok\r\n"
                                 f"{tag} OK [READ-ONLY] done\r\n".encode())
                elif command == "IDLE":
                    sock.sendall(b"+ idling\r\n")
                    while True:  # until the client goes away
                        sock.sendall(FLOOD)
                elif command == "LOGOUT":
                    sock.sendall(f"* BYE bye\r\n{tag} OK done\r\n".encode())
                    return
                else:
                    sock.sendall(f"{tag} OK done\r\n".encode())
        except OSError:
            return


CHILD = """
import json, sys, threading, time
from fold_adapters.mail.imap import EmailAdapter, EmailSettings
from fold_host.daemon.watch import Watcher

port, seconds = int(sys.argv[1]), float(sys.argv[2])
adapter = EmailAdapter("hostile", EmailSettings(host="127.0.0.1", port=port, security="none", username="u",
                                                password_env="HOSTILE_IMAP_PASSWORD"))

class Instance:
    name = "hostile"

log, stopping = [], threading.Event()
watcher = Watcher(Instance(), adapter, lambda *args: None, lambda kind, **fields: log.append({"kind": kind, **fields}),
                  stopping)
watcher.start()
deadline = time.monotonic() + seconds
while sum(entry.get("status") == "dropped" for entry in log) < 3 and time.monotonic() < deadline:
    time.sleep(0.1)  # three drops are enough to see the backoff grow; the deadline only ends a broken run
stopping.set()
watcher.join(15)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"log": log, "peak_kib": peak, "alive": watcher.thread.is_alive()}))
"""


def test_a_flooding_server_is_dropped_and_retried_with_backoff_memory_flat():
    prlimit = shutil.which("prlimit")
    assert prlimit is not None, "prlimit (util-linux) is needed to bound the child's memory"
    socketserver.ThreadingTCPServer.daemon_threads = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Hostile)
    server.connections = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "2", "HOSTILE_IMAP_PASSWORD": "pw"}
        done = subprocess.run([prlimit, f"--as={CEILING}", "--", sys.executable, "-c", CHILD,
                               str(server.server_address[1]), str(WATCH_SECONDS)],
                              capture_output=True, text=True, env=env, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["peak_kib"] < 150 * 1024, outcome["peak_kib"]  # reading it whole: ~11 MB/s without end
    dropped = [entry for entry in outcome["log"] if entry.get("status") == "dropped"]
    assert len(dropped) >= 3 and all("IdleFlood" in entry["error"] for entry in dropped), outcome["log"]
    # Re-established each time, ever more slowly: the backoff grows instead of starting again.
    assert [entry["retry_in"] for entry in dropped[:3]] == ["1s", "2s", "4s"]
    assert server.connections >= 3  # type: ignore[attr-defined]
    assert outcome["alive"] is False  # a stop still ends the watch
