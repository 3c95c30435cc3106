"""Helpers of the consumer tests: stores built through the real file store, consumer
instances built as plugins.toml would, and a real HTTP receiver for Apprise's json://."""

from __future__ import annotations

import json
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fold_core.config import Instance
from fold_core.plugins import load_types
from fold_host.plugins import plugin_manager as get_plugin_manager
from fold_core.store.file import file_store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def registry():
    return load_types(get_plugin_manager(entry_points=False))


def instance(name: str, type_name: str, base_dir, cls=None, **settings) -> Instance:
    """A consumer instance as ``[[consumers]]`` would make it (settings validated by the type's model)."""
    cls = cls or registry().get("consumer", type_name).cls
    model = cls.Settings.model_validate(settings, context={"base_dir": Path(base_dir)})
    return Instance("consumer", name, type_name, cls, model)


def commit(store_dir, batch: dict, now: str, actor: str = "agent") -> dict:
    answer = file_store(store_dir).commit(batch, actor=actor, now=now)
    assert answer.exit_code == 0, answer.document
    return answer.document


def annotate(store_dir, item: str, text: str, now: str, author: str = "user") -> dict:
    answer = file_store(store_dir).annotate(item=item, text=text, author=author, now=now)
    assert answer.exit_code == 0, answer.document
    return answer.document


def play(store_dir, steps: list[dict]) -> None:
    """Run steps ``{"batch": {...}, "now"}`` / ``{"annotate": item, "text", "now"}`` against the store."""
    for step in steps:
        if "annotate" in step:
            annotate(store_dir, step["annotate"], step["text"], step["now"], step.get("author", "user"))
        else:
            commit(store_dir, step["batch"], step["now"], step.get("actor", "agent"))


def store_files(store_dir) -> dict[str, bytes]:
    """Every file of the store proper (not host.db) and its bytes."""
    return {path.name: path.read_bytes() for path in sorted(Path(store_dir).iterdir())
            if path.is_file() and not path.name.startswith("host.db")}


class Receiver:
    """A local HTTP server that records the JSON bodies Apprise's json:// POSTs; can go down and come back."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.answer = "ok"  # or "flood" (50 MiB of answer) or "trickle" (a byte every 0.2 s until the client goes)
        self.port = 0
        self.server = None
        self.thread = None
        self.start()

    def start(self) -> None:
        received, receiver = self.bodies, self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                if receiver.answer == "ok":
                    self.send_header("Content-Length", "0")
                self.end_headers()
                try:
                    if receiver.answer == "flood":
                        for _ in range(800):
                            self.wfile.write(b" " * 65536)
                    while receiver.answer == "trickle":
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:  # the client went away
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/notify"

    def titles(self) -> list[str]:
        return [body["title"] for body in self.bodies]


SEED = [{"id": "seed", "title": "Existing item", "weight": "normal", "kind": "fyi"}]


@contextmanager
def push_world(tmp_path, receiver: "Receiver", monkeypatch, seeded_at: str,
               seed: list[dict] | None = None) -> Iterator[types.SimpleNamespace]:
    """A store with its first batch (``seed``, else one ``fyi`` item) committed at ``seeded_at``, its host.db
    open, and ``FOLD_TEST_PUSH_URLS`` naming the receiver (emptied first): what every push test starts from."""
    from fold_host.hostdb import open_host_db

    receiver.bodies.clear()
    monkeypatch.setenv("FOLD_TEST_PUSH_URLS", receiver.url)
    store_dir = tmp_path / "store"
    commit(store_dir, {"batch_id": "seed", "declarations": SEED if seed is None else seed}, seeded_at)
    db = open_host_db(store_dir)
    try:
        yield types.SimpleNamespace(store=store_dir, db=db, tmp=tmp_path, receiver=receiver)
    finally:
        db.close()


@contextmanager
def receiving() -> Iterator["Receiver"]:
    """A Receiver for a module's tests, stopped after them."""
    server = Receiver()
    try:
        yield server
    finally:
        server.stop()
