"""A Fold host set up in a temporary directory, for the host tests.

``Workspace`` writes a plugins.toml (the fixture plugins of
``tests.support.host_plugins`` plus whatever the test adds), a feed file per
source and an editor script, and runs ``foldctl`` either in this process
(``run``: fast, the real ``main``) or as a real subprocess (``spawn``, with
``PYTHONPATH`` set so the fixture plugins import). Every answer is checked for
"no traceback".
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from fold_host.cli import main

REPO = Path(__file__).resolve().parents[2]


class Workspace:
    def __init__(self, root: Path, *, sources=("mail",), script=("track",), agent: str | None = None,
                 host: str = "", extra: str = "", store_url: str | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.store = self.root / "store"
        self.location = store_url or str(self.store)  # a store in PostgreSQL: its URL
        self.script = self.root / "script.json"
        self.set_script(script)
        agent = agent if agent is not None else 'type = "scripted"\nscript = "script.json"\n'
        store = f'[store]\nurl = "{store_url}"\n' if store_url else '[store]\npath = "store"\n'
        parts = [store, '[[plugins]]\nmodule = "tests.support.host_plugins"\n']
        if host:
            parts.append("[host]\n" + textwrap.dedent(host))
        if agent:
            parts.append("[agent]\n" + agent)
        for name in sources:
            parts.append(f'[[adapters]]\nname = "{name}"\ntype = "fixture-feed"\nevery = "1m"\n'
                         f'path = "{name}.jsonl"\n')
        parts.append(textwrap.dedent(extra))
        self.config = self.root / "plugins.toml"
        self.config.write_text("\n".join(parts), encoding="utf-8")

    # -- inputs --------------------------------------------------------------------

    def set_script(self, replies) -> None:
        self.script.write_text(json.dumps(list(replies), ensure_ascii=False), encoding="utf-8")
        Path(str(self.script) + ".pos").unlink(missing_ok=True)

    def feed(self, source: str, *entries: dict) -> None:
        with open(self.root / f"{source}.jsonl", "a", encoding="utf-8") as file:
            for entry in entries:
                file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def requests(self) -> list[dict]:
        """What the scripted editor was asked, in order."""
        path = Path(str(self.script) + ".requests.jsonl")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    # -- foldctl ---------------------------------------------------------------------

    def args(self, *args: str) -> list[str]:
        return ["--config", str(self.config), *args]

    def run(self, *args: str) -> tuple[int, dict, str]:
        """``foldctl --config … ARGS`` in this process: (exit code, the JSON document, stderr)."""
        code, text, err = self.run_text(*args, "--format", "json")
        return code, json.loads(text), err

    def run_text(self, *args: str) -> tuple[int, str, str]:
        """``foldctl --config … ARGS`` in this process: (exit code, stdout, stderr)."""
        out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(self.args(*args))
        out.flush()
        assert "Traceback" not in err.getvalue(), err.getvalue()
        return code, out.buffer.getvalue().decode(), err.getvalue()

    def tick(self, now: str) -> dict:
        code, document, err = self.run("tick", "--now", now)
        assert code == 0, (document, err)
        return document

    def env(self, **extra: str) -> dict:
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
        environment["PYTHONPATH"] = os.pathsep.join([str(REPO), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        environment.update(extra)
        return environment

    def spawn(self, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
        """``python -m fold_host --config … ARGS`` as a real process."""
        popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}  # a caller may give a file
        return subprocess.Popen([sys.executable, "-m", "fold_host", *self.args(*args)], cwd=self.root,
                                env=self.env(**(env or {})), **popen)

    def call(self, *args: str, env: dict | None = None, timeout: float = 60) -> tuple[int, str, str]:
        """A real ``foldctl`` process to its end: (exit code, stdout, stderr)."""
        process = self.spawn(*args, env=env)
        out, err = process.communicate(timeout=timeout)
        assert b"Traceback" not in err, err.decode()
        return process.returncode, out.decode(), err.decode()
