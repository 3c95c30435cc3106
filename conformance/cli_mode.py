"""CLI mode: a case's steps against the real ``foldctl`` in subprocesses.

Contract §7, §6.3, §14. Each case gets a fresh temporary store directory
(created with ``init --budget B``) and its own empty XDG directories; every
``FOLD_*`` variable of the caller's environment is dropped so that nothing
outside the case can change its answers. Each command runs as
``python -m fold_core --store DIR <command> ...`` with options written as
``--opt=value`` (an annotation text starting with ``-`` stays a value).

Store-only ops act on the files: ``tear_tail`` appends an unfinished record
(no newline) to ``events.jsonl``, ``corrupt_line`` replaces one 1-based line
with garbage plus a newline, ``delete_snapshot`` removes ``snapshot.json``.
A ``crash`` step runs its commit with ``FOLD_FAULT`` set (and
``FOLD_SNAPSHOT_EVERY=1`` for ``mid_snapshot``), then asks
``history --batch ID`` whether the batch survived; that probe is the step's
document.

How a command starts (``launch``): ``"fork"`` (the default) forks it from a
server that has imported the CLI once (``conformance/forkserver.py``: still one
process per command, with its own streams, environment and crash); ``"exec"``
runs ``python -m fold_core`` each time.

With a ``postgresql://`` URL (``python -m conformance --store URL``) each
case gets a fresh store of that database instead (``store=conf-<random>-<case>``,
dropped afterwards), and every command runs with ``--store=URL``. There is no
log file to act on: ``tear_tail`` and ``delete_snapshot`` are skipped steps
(a transaction is never torn; the cached state is not a file), and a case
that corrupts a log line is skipped whole (``pg_skip_reason``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.case import Case, Step, crash_batch_id
from conformance.forkserver import ServerPool
from conformance.modes import ModeUnavailable, StepOutcome

__all__ = ["CRASH_EXIT", "LAUNCHES", "Launcher", "cli_unavailable", "pg_skip_reason", "run_cli"]

LAUNCHES = ("fork", "exec")

CRASH_EXIT = 137
# Exit codes after which stdout must hold exactly one JSON document (§7).
DOCUMENT_EXITS = (0, 1, 3, 4)
GARBAGE = b"#### line corrupted by the conformance runner ####"
TORN_SEED = (b'{"v": 1, "event_seq": 999999, "type": "commit", "at": "2026-01-01T00:00:00Z", '
             b'"actor": "conformance", "batch_id": "torn-write", "request": {"declarations": '
             b'[{"id": "torn", "title": "')


def cli_unavailable() -> str | None:
    """Why ``python -m fold_core`` cannot run here, or None when it can."""
    for module in ("fold_core.cli", "fold_core.__main__"):
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError) as exc:
            return f"cannot look up {module} ({type(exc).__name__}: {exc})"
        if found is None:
            return f"{module} does not exist yet (the CLI has not landed)"
    try:  # importing it runs nothing: the CLI builds everything in main()
        importlib.import_module("fold_core.cli")
    except Exception as exc:
        return f"fold_core.cli does not import ({type(exc).__name__}: {exc})"
    return None


def _package_root() -> str:
    spec = importlib.util.find_spec("fold_core")
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def _tail(text: str, limit: int = 300) -> str:
    """The end of ``text`` on one line (newlines shown as `` | ``)."""
    text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= limit else "…" + text[-limit:]


def _stderr_summary(err: str) -> str:
    """A traceback's last line and innermost frame, or the end of stderr."""
    lines = [line.strip() for line in err.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if "Traceback (most recent call last):" in lines:
        frames = [line for line in lines if line.startswith('File "')]
        where = f" ({frames[-1]})" if frames else ""
        return f"traceback: {lines[-1]}{where}"[:400]
    return _tail(err)


def pg_skip_reason(case: Case) -> str | None:
    """Why ``case`` cannot run against a PostgreSQL store (None: it can)."""
    if any(step.op == "corrupt_line" for step in case.steps):
        return "corrupt_line edits a line of events.jsonl; a PostgreSQL store has no log file"
    return None


class Launcher(ServerPool):
    """How the runner's threads start commands: forked from a server of their own (``fork``), or not (``exec``)."""

    def __init__(self, launch: str = "fork") -> None:
        if launch not in LAUNCHES:
            raise ValueError(f"launch must be one of {', '.join(LAUNCHES)}, got {launch!r}")
        super().__init__()
        self.fork = launch == "fork" and hasattr(os, "fork") and hasattr(os, "pidfd_open")


class _Store:
    """One case's temporary store and the way to run the CLI against it."""

    def __init__(self, root: Path, timeout: float, url: str | None = None, launcher: Launcher | None = None) -> None:
        self.launcher = launcher
        self.url = url
        self.dir = root / "store"
        self.dir.mkdir()
        self.location = url if url is not None else str(self.dir)
        self.log = self.dir / "events.jsonl"
        self.timeout = timeout
        env = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[name] = str(root / name.lower())
        env["PYTHONUTF8"] = "1"
        env["PYTHONIOENCODING"] = "utf-8"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_package_root(), env.get("PYTHONPATH")]))
        self.env = env
        self.cwd = root

    def run(self, args: list[str], stdin: str | None = None, extra_env: dict | None = None,
            ) -> tuple[int, str, str]:
        """``(exit code, stdout, stderr)`` of one CLI command; raises on timeout."""
        command = [sys.executable, "-m", "fold_core", f"--store={self.location}", *args]
        env = {**self.env, **(extra_env or {})}
        if self.launcher is not None and self.launcher.fork:
            return self._forked(command[3:], stdin, env)
        done = subprocess.run(command, input=(stdin or "").encode("utf-8"), capture_output=True,
                              env=env, cwd=self.cwd, timeout=self.timeout)
        code = done.returncode if done.returncode >= 0 else 128 - done.returncode
        return (code, done.stdout.decode("utf-8", errors="replace"),
                done.stderr.decode("utf-8", errors="replace"))


    def _forked(self, argv: list[str], stdin: str | None, env: dict[str, str]) -> tuple[int, str, str]:
        assert self.launcher is not None
        server = self.launcher.server(self.env, self.url is not None)
        code, out, err = server.run(argv, env, str(self.cwd), (stdin or "").encode("utf-8"), self.timeout)
        return code, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")


def run_cli(case: Case, timeout: float = 60.0, database: str | None = None,
            launcher: Launcher | None = None) -> list[StepOutcome]:
    """Run every step of ``case`` against the CLI on a fresh temporary store (of ``database``, a URL).

    ``launcher``: how commands start (None: ``python -m fold_core`` each time)."""
    reason = cli_unavailable()
    if reason is not None:
        raise ModeUnavailable(reason)
    url = _case_store(database, case) if database is not None else None
    with tempfile.TemporaryDirectory(prefix="fold-conformance-") as tmp:
        store = _Store(Path(tmp), timeout, url, launcher)
        try:
            return _run_steps(store, case, timeout)
        finally:
            if url is not None:
                _drop(url)


def _case_store(database: str, case: Case) -> str:
    """A URL naming a new store of ``database`` for this case."""
    import secrets

    from fold_core.store.location import compose

    name = f"conf-{secrets.token_hex(4)}-{case.name}"[:64]
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    return compose(database, name=name)


def _drop(url: str) -> None:
    from fold_core.errors import StoreUnavailable
    from fold_core.store.pg.recorder import drop_pg_store

    try:
        drop_pg_store(url)
    except StoreUnavailable:
        pass  # the database went away: nothing to clean


def _run_steps(store: _Store, case: Case, timeout: float) -> list[StepOutcome]:
    try:
        code, out, err = store.run(["init", f"--budget={case.budget}"])
    except subprocess.TimeoutExpired:
        raise ModeUnavailable(f"init --budget {case.budget} timed out after {timeout:g} s") from None
    if code != 0:
        raise ModeUnavailable(f"init --budget {case.budget} exited {code}: {_stderr_summary(err or out)}")
    return [_run_step(store, step) for step in case.steps]


def _run_step(store: _Store, step: Step) -> StepOutcome:
    try:
        if step.op in ("tear_tail", "corrupt_line", "delete_snapshot"):
            return _file_op(store, step)
        if step.op == "crash":
            return _crash(store, step)
        args, stdin = _command(step)
        return _answer(step, *store.run(args, stdin))
    except subprocess.TimeoutExpired as exc:
        return StepOutcome(step, error=f"{exc.cmd[4]} timed out after {exc.timeout:g} s")
    except (OSError, ValueError) as exc:
        return StepOutcome(step, error=f"could not run the step: {type(exc).__name__}: {exc}")


def _command(step: Step) -> tuple[list[str], str | None]:
    args = step.args
    if step.op == "commit":
        command = ["commit", f"--actor={args['actor']}", f"--now={args['now']}"]
        if "batch_id" in args:
            command.append(f"--batch-id={args['batch_id']}")
        return [*command, "-"], json.dumps(args["batch"], ensure_ascii=False)
    if step.op == "annotate":
        return (["annotate", f"--item={args['item']}", f"--text={args['text']}",
                 f"--author={args.get('author', 'user')}", f"--now={args['now']}"], None)
    if step.op == "state":
        command = ["state", f"--now={args['now']}"]
        for key, flag in (("item", "--item"), ("depth", "--depth"), ("not_active", "--not-active")):
            if key in args:
                command.append(f"{flag}={args[key]}")
        return [*command, "--format=json"], None
    if step.op == "history":
        command = ["history"]
        for key in ("batch", "item", "since", "limit"):
            if key in args:
                command.append(f"--{key}={args[key]}")
        return [*command, "--format=json"], None
    raise AssertionError(f"unhandled op {step.op}")  # the loader admits no other op


def _answer(step: Step, code: int, out: str, err: str) -> StepOutcome:
    """Parse stdout as one JSON document; no document where §7 requires one is an error."""
    outcome = StepOutcome(step, exit_code=code)
    # A traceback is never the answer (§7); one that is merely logged beside a
    # proper answer (say, a failed snapshot refresh) is not this runner's business.
    because = f"; stderr: {_stderr_summary(err)}" if err.strip() else ""
    if out.strip():
        try:
            outcome.document = json.loads(out)
        except json.JSONDecodeError as exc:
            outcome.error = (f"exit {code}, stdout is not one JSON document ({exc.msg} at line "
                             f"{exc.lineno} column {exc.colno}): {_tail(out, 200)}{because}")
    elif code in DOCUMENT_EXITS:
        outcome.error = f"exit {code} with nothing on stdout (one JSON document expected){because}"
    return outcome


def _crash(store: _Store, step: Step) -> StepOutcome:
    fault = step.args["fault"]
    extra = {"FOLD_FAULT": fault}
    if fault == "mid_snapshot":
        extra["FOLD_SNAPSHOT_EVERY"] = "1"
    args, stdin = _command(step.args["step"])
    code, out, err = store.run(args, stdin, extra)
    if code != CRASH_EXIT:
        answered = _answer(step, code, out, err)
        if answered.error is not None:
            return answered
    probe = _answer(step, *store.run(["history", f"--batch={crash_batch_id(step)}", "--format=json"]))
    if probe.error is None and probe.exit_code != 0:
        probe.error = f"history --batch after the crash exited {probe.exit_code}"
    if probe.error is not None:
        probe.error = f"probe after the crash: {probe.error}"
    probe.exit_code = code
    return probe


def _file_op(store: _Store, step: Step) -> StepOutcome:
    if store.url is not None:
        return StepOutcome(step, skipped="no log file in a PostgreSQL store")
    if step.op == "tear_tail":
        size = step.args["bytes"]
        fragment = (TORN_SEED + b"x" * max(0, size - len(TORN_SEED)))[:size]
        with open(store.log, "ab") as log:
            log.write(fragment)
    elif step.op == "corrupt_line":
        line = step.args["line"]
        data = store.log.read_bytes() if store.log.exists() else b""
        lines = data.split(b"\n")
        fragment = lines.pop()  # b"" when the log ends with a newline
        if fragment:
            lines.append(fragment)
        if line > len(lines):
            return StepOutcome(step, error=f"events.jsonl has {len(lines)} line(s), cannot corrupt line {line}")
        lines[line - 1] = GARBAGE
        rebuilt = b"\n".join(lines)
        store.log.write_bytes(rebuilt + b"\n" if line == len(lines) or not fragment else rebuilt)
    else:
        (store.dir / "snapshot.json").unlink(missing_ok=True)
    return StepOutcome(step)
