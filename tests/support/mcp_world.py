"""A Fold for the MCP tests: a configuration and a store, and ``foldctl mcp`` driven by the SDK's own client.

``World(tmp_path)`` writes ``plugins.toml`` (``[store] path = "store"``,
``[host] timezone``, whatever ``[mcp]`` the test gives) and a store whose
state holds a parent with two children, a few root items, a merged pair and
a withdrawn item. ``world.stdio(*args)`` starts ``foldctl mcp`` as a real
process through ``mcp.client.stdio.stdio_client`` and yields an initialised
``ClientSession``; ``world.http(*args)`` starts ``foldctl mcp --http --port 0``
and yields its URL once it listens. ``call`` returns a tool's document (the
JSON of its one text block) and whether it was an error.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from fold_core.store.locate import create, open_store

FOLDCTL = str(Path(sys.executable).with_name("foldctl"))
NOW = "2026-10-09T08:00:00+08:00"
SOURCE = [{"channel": "email", "ref": "event:mail:1", "quote": "请在 12 日前补交"}]


def _item(item_id: str, title: str, weight: str, kind: str, **more) -> dict:
    return {"id": item_id, "title": title, "summary": f"{title}.", "weight": weight, "kind": kind,
            "reason": "test", "sources": SOURCE, **more}


ITEMS = [
    _item("visa", "Visa: bank stmt by 12th", "critical", "needs-you", due_at="2026-10-12T18:00:00+08:00"),
    _item("trip", "Trip to Chengdu", "high", "in-progress", children=[
        _item("flight", "Flight booked", "normal", "done"),
        _item("hotel", "Hotel not booked", "normal", "needs-you")]),
    _item("report", "Weekly report", "normal", "in-progress"),
    _item("news", "Newsletter", "trace", "fyi"),
    _item("a1", "Parcel one", "low", "fyi"),
    _item("a2", "Parcel two", "low", "fyi"),
    _item("gone", "Old matter", "low", "fyi"),
]


class World:
    def __init__(self, root: Path, *, mcp: str = "", timezone: str = "Asia/Shanghai",
                 store_url: str | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.store = self.root / "store"
        self.location = store_url or str(self.store)  # ``store_url``: the store in PostgreSQL instead
        self.config = self.root / "plugins.toml"
        where = f'url = "{store_url}"' if store_url else 'path = "store"'
        text = f'[store]\n{where}\n\n[host]\ntimezone = "{timezone}"\n'
        if mcp:
            text += "\n[mcp]\n" + textwrap.dedent(mcp)
        self.config.write_text(text, encoding="utf-8")
        create(self.location, 64)
        store = open_store(self.location)
        for batch in ({"batch_id": "b1", "declarations": ITEMS},
                      {"batch_id": "b2", "declarations": [
                          {"id": "parcels", "relation": "merges:[a1, a2]", "title": "Two parcels", "weight": "low",
                           "kind": "fyi", "reason": "same courier"},
                          {"id": "gone", "relation": "withdraw", "reason": "over"}]}):
            answer = store.commit(batch, actor="agent:test", now=NOW)
            assert answer.exit_code == 0, answer.document

    # -- foldctl ----------------------------------------------------------------------

    def env(self, **extra: str) -> dict:
        env = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
        env.update(extra)
        return env

    def foldctl(self, *args: str, env: dict | None = None, timeout: float = 120) -> tuple[int, dict | None, str]:
        """A real ``foldctl --config … ARGS --format json``: (exit code, the JSON document, stderr)."""
        done = subprocess.run([FOLDCTL, "--config", str(self.config), *args, "--format", "json"],
                              capture_output=True, text=True, env=self.env(**(env or {})), cwd=self.root,
                              timeout=timeout)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr

    @asynccontextmanager
    async def stdio(self, *args: str, env: dict | None = None):
        """An initialised ``ClientSession`` on ``foldctl mcp ARGS`` over stdio."""
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(command=FOLDCTL, args=["--config", str(self.config), "mcp", *args],
                                       env=env or {}, cwd=str(self.root))
        with open(self.root / "mcp-stderr.log", "a", encoding="utf-8") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        assert "Traceback" not in (self.root / "mcp-stderr.log").read_text(encoding="utf-8")

    @contextmanager
    def http(self, *args: str, env: dict | None = None):
        """``foldctl mcp --http --port 0 ARGS`` running; yields ``(url, process)``; SIGTERM at the end."""
        process = subprocess.Popen([FOLDCTL, "--config", str(self.config), "mcp", "--http", "--port", "0", *args,
                                    "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=self.env(**(env or {})), cwd=self.root)
        url, process.early = None, []
        deadline = time.monotonic() + 60
        while url is None:
            line = process.stderr.readline()
            process.early.append(line)
            if not line:
                raise AssertionError(f"foldctl mcp --http ended (exit {process.wait()}) before it listened: "
                                     f"{process.stderr.read()}")
            found = re.search(r"(http://\S+/mcp)", line)
            url = found.group(1) if found else None
            assert time.monotonic() < deadline, "foldctl mcp --http did not listen within 60 s"
        try:
            yield url, process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=30)
            process.final = (process.returncode, out, err)
            assert "Traceback" not in err, err


async def call(session, name: str, arguments: dict | None = None) -> tuple[dict, bool]:
    """A tool's ``(document, is_error)``: the JSON document of its one text block."""
    result = await session.call_tool(name, arguments or {})
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text), result.is_error


def codes(document: dict) -> list[str]:
    return [error["code"] for error in document.get("errors", ())]
