"""Several ``foldctl run`` processes on one configuration and one PostgreSQL store, for tests and the benchmark.

``Fleet`` writes a plugins.toml in a directory: the store URL, maildir
sources (``mail-a`` …: real maildirs written with ``mailbox.Maildir``) and
feed sources (``feed-a`` …: RSS documents served by ``FeedServer`` on
127.0.0.1), the ``command`` editor ``tests/fixtures/command_editor.py
digest MS`` (a fixed delay, then every event used: the item ``digest`` gets
exactly the window's events as its sources), and a ``log`` consumer from the
start (``changes.jsonl``). ``start(i)`` runs host *i* as a real process (its
log in ``host-<i>.log``), ``kill(i)`` SIGKILLs it, ``stop()`` ends them all
with SIGTERM.

``audit()`` reads what a user could look at afterwards — the host tables, the
store's records, the change log — and returns the findings: observations
without exactly one disposition, observations in no record or in several,
dispositions naming a batch the store does not hold, change-log entries
missing or written twice.
"""

from __future__ import annotations

import json
import mailbox
import os
import signal
import subprocess
import sys
import time
from email.message import EmailMessage
from pathlib import Path

from tests.support.feed_server import FeedServer, rss2

__all__ = ["Fleet"]

REPO = Path(__file__).resolve().parents[2]
EDITOR = REPO / "tests" / "fixtures" / "command_editor.py"


class Fleet:
    def __init__(self, root: Path, url: str, *, maildirs: int = 2, feeds: int = 2, lease: str = "30s",
                 max_events: int = 10, delay_ms: int = 50, every: str = "1s") -> None:
        self.root, self.url = Path(root), url
        self.root.mkdir(parents=True, exist_ok=True)
        self.server = FeedServer()
        self.boxes = {f"mail-{chr(97 + n)}": self.root / f"maildir-{n}" for n in range(maildirs)}
        self.feeds = {f"feed-{chr(97 + n)}": f"/feed-{n}.xml" for n in range(feeds)}
        self.entries: dict[str, list[dict]] = {name: [] for name in self.feeds}
        self.sent = 0
        for path in self.boxes.values():
            mailbox.Maildir(str(path), create=True)
        for name, route in self.feeds.items():
            self.server.route(route, rss2([], title=name))
        self.processes: dict[int, subprocess.Popen] = {}
        self.offsets: dict[int, int] = {}  # where each running host's own lines begin in its log
        self.config = self.root / "plugins.toml"
        self.config.write_text(self._config(lease, max_events, delay_ms, every), encoding="utf-8")

    def _config(self, lease: str, max_events: int, delay_ms: int, every: str) -> str:
        editor = json.dumps([sys.executable, "-S", str(EDITOR), "digest", str(delay_ms)])  # -S: the standard library only
        parts = [f'[store]\nurl = "{self.url}"\n',
                 f'[host]\nlease = "{lease}"\nmax_events = {max_events}\nreview_every = "30d"\n',
                 f'[agent]\ntype = "command"\ncommand = {editor}\ntimeout = "120s"\n',
                 '[[consumers]]\nname = "changes"\ntype = "log"\npath = "changes.jsonl"\nfrom = "start"\n']
        for name, path in self.boxes.items():
            parts.append(f'[[adapters]]\nname = "{name}"\ntype = "maildir"\nevery = "{every}"\npath = "{path}"\n'
                         f'first_run = "last:10000"\nmax_per_poll = 10000\n')
        for name, route in self.feeds.items():
            parts.append(f'[[adapters]]\nname = "{name}"\ntype = "rss"\nevery = "{every}"\n'
                         f'url = "{self.server.url(route)}"\nfirst_run = "all"\n')
        return "\n".join(parts)

    # -- what comes in -----------------------------------------------------------------

    def add(self, count: int) -> None:
        """``count`` more observations, spread over the sources in turn, arriving at once.

        Mail is written to a staging folder first and then moved into the
        maildirs' ``new/`` (as a delivery agent does); the feeds change their
        documents in one step.
        """
        sources = list(self.boxes) + list(self.feeds)
        staging = self.root / "staging"
        staging.mkdir(exist_ok=True)
        moves, changed = [], set()
        for _ in range(count):
            name = sources[self.sent % len(sources)]
            self.sent += 1
            if name in self.boxes:
                message = EmailMessage()
                message["From"], message["To"] = f"sender{self.sent}@example.org", "me@example.org"
                message["Subject"], message["Message-ID"] = f"mail {self.sent}", f"<m{self.sent}@example.org>"
                message["Date"] = "Fri, 09 Oct 2026 08:00:00 +0800"
                message.set_content(f"Message number {self.sent}.")
                key = f"{int(time.time())}.M{self.sent}P{os.getpid()}.fleet"
                (staging / key).write_bytes(message.as_bytes())
                moves.append((staging / key, self.boxes[name] / "new" / key))
            else:
                self.entries[name].append({"title": f"entry {self.sent}", "guid": f"urn:entry:{self.sent}",
                                           "link": f"http://example.org/{self.sent}",
                                           "description": f"Entry number {self.sent}.",
                                           "pubDate": "Fri, 09 Oct 2026 08:00:00 +0800"})
                changed.add(name)
        documents = {name: rss2(self.entries[name], title=name) for name in changed}
        for source, target in moves:
            os.rename(source, target)
        for name, document in documents.items():
            self.server.route(self.feeds[name], document)

    # -- the hosts -----------------------------------------------------------------------

    def start(self, index: int) -> subprocess.Popen:
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
        environment["PYTHONPATH"] = os.pathsep.join([str(REPO), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        log = open(self.root / f"host-{index}.log", "ab")
        self.offsets[index] = log.tell()  # a host killed before its start line leaves none: read only this one's
        process = subprocess.Popen([sys.executable, "-m", "fold_host", "--config", str(self.config), "run"],
                                   cwd=self.root, env=environment, stdout=log, stderr=log)
        log.close()
        self.processes[index] = process
        return process

    def started(self) -> bool:
        """Whether every running host has logged its ``start`` line (its signal handlers are in place by then)."""
        return all(b" start store=" in (self.root / f"host-{index}.log").read_bytes()[self.offsets.get(index, 0):]
                   for index in self.processes)

    def kill(self, index: int) -> None:
        process = self.processes.pop(index)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> list[int]:
        """SIGTERM to every host; their exit codes."""
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        codes = []
        for process in self.processes.values():
            try:
                codes.append(process.wait(timeout=60))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        self.processes.clear()
        return codes

    def close(self) -> None:
        for process in self.processes.values():
            process.kill()
            process.wait()
        self.processes.clear()
        self.server.close()

    def logs(self) -> str:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in sorted(self.root.glob("host-*.log")))

    # -- what came of it ---------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        from fold_host.hostdb import host_db_exists, open_host_db

        if not host_db_exists(self.url):
            return {}
        with open_host_db(self.url) as db:
            return db.status_counts()

    def wait_processed(self, count: int, timeout: float) -> float:
        """Seconds until ``count`` observations are processed (AssertionError after ``timeout``)."""
        started = time.monotonic()
        while self.counts() != {"processed": count}:
            assert time.monotonic() - started < timeout, f"{self.counts()} after {timeout}s\n{self.logs()[-3000:]}"
            for index, process in self.processes.items():
                assert process.poll() is None, f"host {index} exited {process.returncode}\n{self.logs()[-3000:]}"
            time.sleep(0.1)
        return time.monotonic() - started

    def ready(self, hosts: int) -> bool:
        """Whether ``hosts`` hosts are running and every source was polled once."""
        from fold_core.errors import StoreError
        from fold_host.hostdb import host_db_exists, open_host_db

        try:
            if not host_db_exists(self.url):
                return False
            with open_host_db(self.url) as db:
                running = sum(host["alive"] for host in db.hosts())
                return running == hosts and len(db.source_rows()) == len(self.boxes) + len(self.feeds)
        except StoreError:
            return False

    def wait_delivered(self, timeout: float) -> None:
        """Until the log consumer's cursor reaches the store's last record (a host delivers what another left)."""
        from fold_core.store.locate import open_store
        from fold_host.hostdb import open_host_db

        started = time.monotonic()
        last = open_store(self.url).state().event_seq
        while True:
            with open_host_db(self.url) as db:
                if db.consumer_cursor("changes") == last:
                    return
            assert time.monotonic() - started < timeout, f"changes not delivered up to {last}\n{self.logs()[-3000:]}"
            time.sleep(0.1)

    def audit(self) -> dict:
        """The findings (see the module doc); every list empty and ``verify`` ok when all went right."""
        import psycopg

        from fold_core.store.locate import open_store, verify
        from fold_core.store.location import parse_url
        from fold_host.hostdb.pg.schema import schema_name

        location = parse_url(self.url)
        with psycopg.connect(location.conninfo, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema_name(location.name)}"')
            marks = dict(conn.execute("SELECT id, batch_id FROM observations").fetchall())
            kept = conn.execute("SELECT observation, count(*), min(batch_id) FROM dispositions "
                                "GROUP BY observation").fetchall()
            claims = conn.execute("SELECT count(*) FROM observations WHERE claim IS NOT NULL").fetchone()[0]
            windows = conn.execute("SELECT count(*) FROM windows").fetchone()[0]
        dispositions = {observation: (times, batch) for observation, times, batch in kept}
        records = [r for r in open_store(self.url).history().document["records"] if r["type"] == "commit"]
        cited: dict[str, list[str]] = {}
        for record in records:
            for change in record["changes"]:
                for source in change["item"].get("sources") or ():
                    cited.setdefault(source["ref"].removeprefix("event:"), []).append(record["batch_id"])
        log = [json.loads(line)["event_seq"] for line in
               (self.root / "changes.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        last = open_store(self.url).state().event_seq
        return {
            "observations": len(marks), "records": len(records), "batches": len({r["batch_id"] for r in records}),
            "not_once_disposed": sorted(o for o in marks if dispositions.get(o, (0,))[0] != 1),
            "not_in_one_record": sorted(o for o in marks if len(cited.get(o, ())) != 1),
            "record_not_its_batch": sorted(o for o in marks if cited.get(o, [None])[0] != marks[o]),
            "log_missing": sorted(set(range(1, last + 1)) - set(log)),
            "log_twice": sorted({seq for seq in log if log.count(seq) > 1}),
            "claims_left": claims, "windows_left": windows, "verify": verify(self.url)["ok"],
        }
