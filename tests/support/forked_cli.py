"""``python -m fold_core`` for tests that run it hundreds of times: forked, not started anew.

The crash matrix and the store protocol run a real CLI process per operation,
several thousand in all. Started as ``python -m fold_core``, each spends most
of its CPU importing (and, for a PostgreSQL store, importing the driver: more
than the command itself). ``run_fold_core`` hands the command to a fork server
(``conformance/forkserver.py``, one per thread of this process) that imported
the CLI once: the command is still its own process — its own environment,
working directory, standard streams, exit status, and its own death at a
``FOLD_FAULT`` point — only without the start-up.

``FOLD_TEST_FORK=0`` runs every command as ``python -m fold_core`` instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from conformance.forkserver import ForkServer, ForkTimeout

__all__ = ["run_fold_core"]

_local = threading.local()
_servers: list[tuple[ForkServer, Path]] = []
_lock = threading.Lock()


def run_fold_core(args: list[str], *, stdin: bytes, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    """``(exit code, stdout, stderr)`` of ``python -m fold_core ARGS`` run in this process's directory."""
    if os.environ.get("FOLD_TEST_FORK") == "0" or not hasattr(os, "pidfd_open"):
        done = subprocess.run([sys.executable, "-m", "fold_core", *args], input=stdin, capture_output=True,
                              env=env, timeout=timeout)
        return (done.returncode if done.returncode >= 0 else 128 - done.returncode), done.stdout, done.stderr
    server, scratch = _server(env, any(arg.startswith("postgresql://") or "=postgresql://" in arg for arg in args))
    files = {name: str(scratch / name) for name in ("stdin", "stdout", "stderr")}
    Path(files["stdin"]).write_bytes(stdin)
    try:
        code = server.run(args, env, os.getcwd(), files, timeout)
    except ForkTimeout:
        raise subprocess.TimeoutExpired(args, timeout) from None
    return code, Path(files["stdout"]).read_bytes(), Path(files["stderr"]).read_bytes()


def _server(env: dict[str, str], postgres: bool) -> tuple[ForkServer, Path]:
    """This thread's server (with the PostgreSQL driver imported, or not) and its scratch directory."""
    attribute = "postgres" if postgres else "files"
    found = getattr(_local, attribute, None)
    if found is None:
        found = (ForkServer(env, postgres=postgres), Path(tempfile.mkdtemp(prefix="fold-forked-")))
        setattr(_local, attribute, found)
        with _lock:
            if not _servers:
                atexit.register(_close)
            _servers.append(found)
    return found


def _close() -> None:
    with _lock:
        servers = list(_servers)
        _servers.clear()
    for server, scratch in servers:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)
