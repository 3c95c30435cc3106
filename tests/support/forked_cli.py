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
import subprocess
import sys

from conformance.forkserver import ServerPool

__all__ = ["run_fold_core"]

_pool = ServerPool()
atexit.register(_pool.close)


def run_fold_core(args: list[str], *, stdin: bytes, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    """``(exit code, stdout, stderr)`` of ``python -m fold_core ARGS`` run in this process's directory."""
    if os.environ.get("FOLD_TEST_FORK") == "0" or not hasattr(os, "pidfd_open"):
        done = subprocess.run([sys.executable, "-m", "fold_core", *args], input=stdin, capture_output=True,
                              env=env, timeout=timeout)
        return (done.returncode if done.returncode >= 0 else 128 - done.returncode), done.stdout, done.stderr
    postgres = any(arg.startswith("postgresql://") or "=postgresql://" in arg for arg in args)
    return _pool.server(env, postgres).run(args, env, os.getcwd(), stdin, timeout)
