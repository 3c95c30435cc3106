"""A fork server for CLI mode: each command a fresh process, without paying Python's start-up every time.

CLI mode runs every step as its own process. Started as ``python -m fold_core``,
each one spends most of its time importing (the PostgreSQL driver alone takes
about 0.2 s of CPU, more than the command itself), and the cases run some 850
commands. The server (``serve()``) imports the CLI and the store
drivers once, then, for each request, forks a child that becomes the command:
its own process, with the step's environment, working directory, standard
input, output and error (files, dup'ed onto 0, 1 and 2, new ``sys`` streams
over them), ``argv``, its exit status and its own crash (``FOLD_FAULT``'s
``os._exit(137)`` kills only the child). The server reports the status; a
child that outlives the timeout is killed and reported as such.

Protocol, one JSON line each way over the server's stdin and stdout:
``{"argv", "env", "cwd", "stdin", "stdout", "stderr", "timeout"}`` (paths of
files) → ``{"code": N}`` (a negative N: killed by signal -N) or
``{"timeout": true}``.

``ForkServer`` is the client side (it writes the streams' files in a scratch
directory of its own); ``ServerPool`` keeps one per thread, as a server serves
one request at a time. ``--launch exec`` in ``python -m conformance`` runs the
commands the plain way instead.
"""

from __future__ import annotations

import atexit
import gc
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["ForkServer", "ServerPool", "serve"]


class ForkServer:
    """A running server process, started with ``env`` (the interpreter's settings: PYTHON*), and the
    scratch directory that carries its commands' streams (it serves one command at a time)."""

    def __init__(self, env: dict[str, str], postgres: bool = False) -> None:
        command = f"from conformance.forkserver import serve; serve(postgres={postgres!r})"
        self.scratch = Path(tempfile.mkdtemp(prefix="fold-fork-"))
        self.process = subprocess.Popen([sys.executable, "-c", command], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def run(self, argv: list[str], env: dict[str, str], cwd: str, stdin: bytes,
            timeout: float) -> tuple[int, bytes, bytes]:
        """``(exit code, stdout, stderr)`` of ``argv`` run in a forked child (128 + N when killed by signal N);
        ``subprocess.TimeoutExpired`` when it outlived ``timeout`` (it has been killed)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        files = {name: str(self.scratch / name) for name in ("stdin", "stdout", "stderr")}
        Path(files["stdin"]).write_bytes(stdin)
        request = {"argv": argv, "env": env, "cwd": cwd, "timeout": timeout, **files}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended (exit {self.process.wait()})")
        answer = json.loads(line)
        if answer.get("timeout"):
            raise subprocess.TimeoutExpired(argv, timeout)
        code = int(answer["code"])
        return (code if code >= 0 else 128 - code), Path(files["stdout"]).read_bytes(), Path(files["stderr"]).read_bytes()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


class ServerPool:
    """One server per thread (a server serves one command at a time), with the PostgreSQL driver or without."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._servers: list[ForkServer] = []
        self._lock = threading.Lock()

    def server(self, env: dict[str, str], postgres: bool) -> ForkServer:
        """This thread's server (started with ``env`` for the interpreter's own settings); ``postgres``:
        one that has the PostgreSQL driver imported."""
        attribute = "postgres" if postgres else "files"
        server = getattr(self._local, attribute, None)
        if server is None:
            server = ForkServer(env, postgres=postgres)
            setattr(self._local, attribute, server)
            with self._lock:
                self._servers.append(server)
        return server

    def close(self) -> None:
        with self._lock:
            servers, self._servers = self._servers, []
        for server in servers:
            server.close()

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(postgres: bool = False) -> None:
    """Answer requests on stdin until it closes (see the module's protocol).

    ``postgres``: also import the PostgreSQL driver (commands on a ``postgresql://`` store need it; a file
    store's would only carry it along).
    """
    import fold_core.cli  # noqa: F401

    if postgres:
        try:
            import fold_core.store.pg.recorder  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError:
            pass
    # What is imported now is shared by every child: kept out of the collector's sight, a child's
    # collections do not touch (and so copy) those pages.
    gc.collect()
    gc.freeze()
    requests = sys.stdin.buffer
    answers = sys.stdout
    for line in requests:
        request = json.loads(line)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            _become(request)  # never returns
        answers.write(json.dumps(_wait(pid, float(request["timeout"]))) + "\n")
        answers.flush()


def _wait(pid: int, timeout: float) -> dict[str, Any]:
    handle = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([handle], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timeout": True}
        _, status = os.waitpid(pid, 0)
        return {"code": os.waitstatus_to_exitcode(status)}
    finally:
        os.close(handle)


def _become(request: dict[str, Any]) -> NoReturn:
    """In the child: take the step's streams, environment and directory, then run the command.

    It ends as an interpreter ends, with the command's code (atexit handlers run, streams flushed), or
    with an uncaught exception's traceback and status 1.
    """
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(request[name], flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # New streams over the new descriptors, as the interpreter makes them at start-up
    # (PYTHONIOENCODING=utf-8 in the step's environment, as in the server's).
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["fold_core", *request["argv"]]
    from fold_core.cli import main

    code = 1
    try:
        code = main(request["argv"])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # as an uncaught exception ends an interpreter: its traceback, status 1
        import traceback

        traceback.print_exc()
    finally:
        # What an interpreter does on its way out that a command can see (atexit handlers, the streams'
        # last bytes); the teardown of every module the server imported is skipped: nothing of it is
        # the command's.
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


