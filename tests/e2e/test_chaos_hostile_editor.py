"""The daemon killed again and again over every source type, with a hostile editor endpoint in the mix.

Sources: IMAP (a private Dovecot), a maildir, an mbox, an RSS feed (a local
HTTP server) and a work-log directory. The editor is the ``openai`` backend
against the scripted server, which answers most requests correctly (every
event used, one trace item per event citing it) but some with an endless
body, a trickle or a 400 MB answer. Between rounds new mail, entries and
log lines arrive; each round the daemon runs for a random moment and is
killed with SIGKILL. At the end one daemon — whose first answer is a
trickle — runs until everything is processed and is stopped with SIGTERM.
Then:

* nothing lost — every delivered message, entry and line is one observation,
  processed, related to an active item that cites it;
* nothing duplicated — no observation twice in host.db, no item created
  twice, no batch applied twice, each observation cited by exactly one item;
* the hostile answers were met: the call log holds their failures (at least
  the last daemon's ``timeout``; the others unless a kill came first).
"""

from __future__ import annotations

import hashlib
import json
import random
import signal
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from email.utils import format_datetime

from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from support.feed_server import FeedServer, rss2
from tests.support.host_workspace import Workspace
from tests.support.hostile_http import endless, oversized, trickle_body
from tests.support.llm_servers import LLMServer, hostile, respond

ROUNDS = 10
SOURCES = ("imap", "maildir", "mbox", "news", "agent")
# Request numbers answered with hostility while the daemon is being killed, and the first answer of the
# last, uninterrupted daemon (so that at least one trickle runs into the timeout whatever the kills hit).
HOSTILE_AT = {2: endless(), 3: trickle_body(0.5), 5: oversized(400 * 1024 ** 2), 7: trickle_body(0.5),
              8: endless(), 11: oversized(400 * 1024 ** 2)}
FINAL = trickle_body(0.5)
PASSWORD_ENV = "FOLD_TEST_IMAP_PASSWORD"


def item_for(event_id: str) -> str:
    return "t-" + hashlib.sha256(event_id.encode()).hexdigest()[:16]


class Editor:
    """The scripted server's answers: hostile at some request numbers, else every event tracked."""

    def __init__(self) -> None:
        self.count = 0
        self.final = False  # set for the last daemon: its first request gets FINAL
        self.lock = threading.Lock()

    def __call__(self, request):
        with self.lock:
            self.count += 1
            number, final, self.final = self.count, self.final, False
        if final:
            return hostile(FINAL)
        if number in HOSTILE_AT:
            return hostile(HOSTILE_AT[number])
        events = json.loads(request.message_texts("user")[0])["events"]
        return json.dumps({
            "dispositions": [{"event": e["id"], "disposition": "used", "why": "tracked",
                              "related": [item_for(e["id"])]} for e in events],
            "batch": {"declarations": [{"id": item_for(e["id"]), "title": (e.get("title") or e["id"])[:24],
                                        "weight": "trace", "kind": "fyi",
                                        "sources": [{"channel": e["channel"], "ref": f"event:{e['id']}"}]}
                                       for e in events], "acknowledges": []}})


def mail(source: str, n: int) -> bytes:
    date = format_datetime(datetime(2026, 10, 9, 8, n, tzinfo=timezone.utc))
    return (f"From: Sender <s{n}@example.org>\r\nTo: zhang.wei@example.com\r\nSubject: {source} {n}\r\n"
            f"Date: {date}\r\nMessage-ID: <{source}-{n}@example.org>\r\n\r\nbody {n}\r\n").encode()


def deliver(ws: Workspace, dovecot, feed, n: int) -> None:
    """One new message, entry and line for every source."""
    dovecot.append(mail("imap", n))
    temp = ws.root / "maildir" / "tmp" / f"{n}.fold-test"
    temp.write_bytes(mail("maildir", n))
    temp.rename(ws.root / "maildir" / "new" / f"{n}.fold-test")
    with open(ws.root / "inbox.mbox", "ab") as mbox:
        mbox.write(b"From sender@example.org Fri Oct  9 08:00:00 2026\n" + mail("mbox", n).replace(b"\r\n", b"\n")
                   + b"\n")
    feed.entries.append({"title": f"news {n}", "guid": f"news-{n}", "description": f"entry {n}"})
    feed.route.body = rss2(feed.entries)
    with open(ws.root / "worklog" / "agent.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"at": "2026-10-09T08:00:00+08:00", "agent": "coder", "text": f"step {n}"}) + "\n")


def configure(tmp_path, dovecot, feed_url: str, llm: LLMServer) -> Workspace:
    agent = (f'type = "openai"\nmodel = "scripted-model"\nbase_url = "{llm.openai_url}"\ntimeout = "3s"\n')
    sources = (f'[[adapters]]\nname = "imap"\ntype = "email"\nhost = "127.0.0.1"\nport = {dovecot.plain_port}\n'
               f'security = "none"\nusername = "test"\npassword_env = "{PASSWORD_ENV}"\nfirst_run = "last:50"\n'
               'every = "1s"\n'
               '[[adapters]]\nname = "maildir"\ntype = "maildir"\npath = "maildir"\nfirst_run = "last:50"\n'
               'every = "1s"\n'
               '[[adapters]]\nname = "mbox"\ntype = "mbox"\npath = "inbox.mbox"\nfirst_run = "last:50"\n'
               'every = "1s"\n'
               f'[[adapters]]\nname = "news"\ntype = "rss"\nurl = "{feed_url}"\nevery = "1s"\n'
               '[[adapters]]\nname = "agent"\ntype = "worklog"\npath = "worklog"\nevery = "1s"\n')
    ws = Workspace(tmp_path, sources=(), agent=agent, host='review_every = "1d"\nmax_events = 8\n', extra=sources)
    for folder in ("tmp", "new", "cur"):
        (tmp_path / "maildir" / folder).mkdir(parents=True)
    (tmp_path / "worklog").mkdir()
    return ws


def inbox(ws: Workspace) -> list[dict]:
    with open_host_db(ws.store) as db:
        return db.observations(limit=100_000)


def test_sigkill_over_every_source_type_with_a_hostile_editor_loses_and_duplicates_nothing(tmp_path, dovecot):
    rng = random.Random(1903)
    env = {PASSWORD_ENV: "secret"}
    editor = Editor()
    with FeedServer() as feeds, LLMServer([respond(editor)] * 1000) as llm:
        feed = type("Feed", (), {"entries": [], "route": feeds.route("/news.xml", rss2([]))})()
        ws = configure(tmp_path, dovecot, feeds.url("/news.xml"), llm)
        for n in range(1, ROUNDS + 1):
            deliver(ws, dovecot, feed, n)
            daemon = ws.spawn("run", env=env)
            time.sleep(rng.uniform(1.0, 5.0))
            daemon.send_signal(signal.SIGKILL)
            daemon.communicate(timeout=30)
        deliver(ws, dovecot, feed, ROUNDS + 1)  # the last daemon has fresh work, and meets a trickle first
        editor.final = True
        daemon = ws.spawn("run", env=env)
        lines: list[bytes] = []
        reader = threading.Thread(target=lambda: lines.extend(daemon.stderr), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 420
            while time.monotonic() < deadline:
                started = any(b" start " in line for line in list(lines))
                listed = inbox(ws) if started else []
                if len(listed) >= len(SOURCES) * (ROUNDS + 1) and all(o["status"] == "processed" for o in listed):
                    break
                time.sleep(1)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
            reader.join(timeout=10)
        err = b"".join(lines)
        assert daemon.returncode == 0 and b"Traceback" not in err, err.decode()[-3000:]
        hostile_calls = llm.requests  # every request the editor endpoint saw
    listed = inbox(ws)
    per_source = Counter(o["source"] for o in listed)
    assert per_source == {source: ROUNDS + 1 for source in SOURCES}, per_source  # nothing lost, nothing twice
    assert all(o["status"] == "processed" and o["disposition"] == "used" for o in listed), \
        [o for o in listed if o["status"] != "processed"]
    records = [r for r in file_store(ws.store).history().document["records"] if r["type"] != "annotation"]
    batches = Counter(r["batch_id"] for r in records)
    assert max(batches.values()) == 1  # no batch applied twice
    created = Counter(entry["item"] for r in records for entry in r["receipt"]["changes"] if entry["op"] == "created")
    assert max(created.values()) == 1 and len(created) == len(listed)  # each item created once, one per observation
    cited = Counter(src["ref"] for r in records for change in r["changes"] for src in change["item"]["sources"]
                    if change["item"]["id"] in created)
    assert set(cited) == {f"event:{o['id']}" for o in listed}
    state = file_store(ws.store).state_document(now="2026-10-10T08:00:00+08:00").document
    active = {item["id"] for item in state["root"]["items"]}
    assert all(o["related"] == [item_for(o["id"])] and item_for(o["id"]) in active for o in listed)
    with open_host_db(ws.store) as db:
        failures = [json.loads(call["error"]) for call in db.calls(limit=10_000) if call["outcome"] == "unavailable"]
    kinds = {failure.get("class") for failure in failures}
    assert len(hostile_calls) > len(records) and "timeout" in kinds, (kinds, len(hostile_calls))
    print(f"chaos: {ROUNDS} SIGKILLs, {len(listed)} observations, {len(records)} batches, "
          f"{len(hostile_calls)} editor requests, editor failures {Counter(f.get('class') for f in failures)}")
