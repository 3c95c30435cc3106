"""Commands documented in Markdown, extracted and run as written.

Conventions, for whoever writes a ```sh block in README.md or docs/*.md:

* Every command line of a ```sh (also ```bash, ```shell) block runs, in order,
  in one bash session per document (``export`` and ``cd`` carry over), and must
  exit 0.
* ``# exit N`` in a command's trailing comment: it must exit N instead.
* ``# doc-test: skip (reason)`` in a trailing comment: not run; the reason is
  required. ``<!-- doc-test: skip (reason) -->`` on the line before a fence
  skips the whole block (invisible when the Markdown is rendered).
* ``# doc-test: until "TEXT"``: a long-running simple command (``foldctl
  run``, ``foldctl serve``; no pipe or ``&&``: it is ``exec``-ed so that the
  signal reaches it): started in the background, it must print TEXT (stdout or
  stderr) within 30 s while still running; it is then stopped with SIGTERM and
  must exit 0 (or the ``# exit N`` given).
* A ```json or ```text block right after a ```sh block (nothing but blank
  lines between) is the output of that block's last command: the test compares
  it (``json``: every key shown exists in the real output, every value shown
  equals the real one except paths and timestamps, a list may be shown
  shorter; ``text``: exactly, line by line).
* Synopses (``foldctl tick [--now T]``) are not commands: put them in a
  ```text block.
* The session starts in a copy of the repository (the clone) with a fresh
  ``$HOME`` whose default store holds the US-03 story; a document that starts
  from nothing (no store) says ``<!-- doc-test: fresh home -->`` anywhere
  (tests/e2e/test_documented_commands.py prepares the environment).

A command spans continuation lines (trailing ``\\``), here-documents and any
construct bash needs more lines for: lines are joined until ``bash -n``
accepts them.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Command", "Outcome", "compare_json", "extract", "run_session"]

SHELL_FENCES = ("sh", "bash", "shell")
OUTPUT_FENCES = ("json", "text")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_SKIP = re.compile(r"#.*doc-test:\s*skip\s*\(([^)]+)\)")
_BLOCK_SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s*\(([^)]+)\)\s*-->")
_UNTIL = re.compile(r"#.*doc-test:\s*until\s+\"([^\"]+)\"")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
UNTIL_SECONDS = 30


@dataclass
class Command:
    doc: str
    line: int
    text: str
    expect_exit: int = 0
    skip: str | None = None
    until: str | None = None
    output: tuple[str, str, int] | None = None  # (fence, text, line) of the block shown after it

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Outcome:
    command: Command
    exit_code: int | None
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)


def _blocks(text: str):
    """(fence info, first body line number, body lines, skip reason) of every fenced block."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, fence, info = match.groups()
        skip = None
        if index > 0 and (hidden := _BLOCK_SKIP.search(lines[index - 1])):
            skip = hidden.group(1)
        body, start = [], index + 1
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            line = lines[index]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            index += 1
        end = index
        index += 1
        yield info.lower(), start + 1, body, skip, end


def extract(path: Path, root: Path) -> list[Command]:
    """The commands of every shell block of ``path``, in document order, with their shown outputs."""
    doc = str(path.relative_to(root))
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    commands: list[Command] = []
    last_shell_end = None
    last_block_commands: list[Command] = []
    for info, first, body, skip, end in _blocks(text):
        if info in OUTPUT_FENCES and last_shell_end is not None and last_block_commands:
            between = lines[last_shell_end + 1:first - 2]
            if all(not line.strip() for line in between):
                last_block_commands[-1].output = (info, "\n".join(body), first)
            last_shell_end = None
            continue
        last_shell_end = None
        if info not in SHELL_FENCES:
            continue
        block = list(_split(body, doc, first))
        for command in block:
            if skip and command.skip is None:
                command.skip = skip
        commands.extend(block)
        last_block_commands, last_shell_end = block, end
    return commands


def _split(body: list[str], doc: str, first: int):
    pending: list[str] = []
    start = 0
    for offset, line in enumerate(body):
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = first + offset
        pending.append(line)
        joined = "\n".join(pending)
        if joined.endswith("\\") or _open_heredoc(pending) or not _complete(joined):
            continue
        yield _command(doc, start, joined)
        pending = []
    if pending:
        raise ValueError(f"{doc}:{start}: the command does not end inside its block: {pending[0]!r}")


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def _open_heredoc(lines: list[str]) -> bool:
    """Whether a here-document opened in ``lines`` has not met its delimiter yet (bash -n accepts that)."""
    waiting: list[tuple[str, bool]] = []
    for line in lines:
        if waiting:
            delimiter, tabs = waiting[0]
            if (line.lstrip("\t") if tabs else line) == delimiter:
                waiting.pop(0)
            continue
        waiting.extend((m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(line))
    return bool(waiting)


def _complete(source: str) -> bool:
    checked = subprocess.run(["bash", "-n"], input=source + "\n", capture_output=True, text=True)
    return checked.returncode == 0


def _command(doc: str, line: int, text: str) -> Command:
    head = text.splitlines()[0]
    command = Command(doc=doc, line=line, text=text)
    if found := _SKIP.search(head):
        command.skip = found.group(1).strip()
    if found := _UNTIL.search(head):
        command.until = found.group(1)
    if found := _EXIT.search(head):
        command.expect_exit = int(found.group(1))
    return command


# -- running ------------------------------------------------------------------------------------


def run_session(commands: list[Command], *, cwd: Path, env: dict[str, str], work: Path,
                timeout: float = 600, command_timeout: float = 180,
                until_seconds: int = UNTIL_SECONDS) -> list[Outcome]:
    """Run the commands (skipped ones left out) in one bash session; one Outcome per command run.

    A command still running after ``command_timeout`` seconds (or the session after ``timeout``)
    is taken for one that never ends: the session is killed and the command named.
    """
    work.mkdir(parents=True, exist_ok=True)
    script = ["set +e"]
    runnable = [c for c in commands if c.skip is None]
    current = work / "current"
    for number, command in enumerate(runnable):
        out, err, code = (shlex.quote(str(work / f"{number}.{part}")) for part in ("out", "err", "rc"))
        script.append(f"echo {number} > {shlex.quote(str(current))}")
        if command.until:
            script.append(_background(command, out, err, code, until_seconds))
        else:
            script.append(f"{{\n{command.text}\n}} > {out} 2> {err} < /dev/null\necho $? > {code}")
    script.append("exit 0")
    session = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    running, since = None, started
    try:
        while True:
            try:
                _, session_err = session.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if (index := _read(current).strip()) != running:
                    running, since = index, now
                elif now - since > command_timeout or now - started > timeout:
                    stuck = runnable[int(running)] if running else runnable[0]
                    raise AssertionError(
                        f"{stuck.where}: `{stuck.text}` was still running after {now - since:.0f} s; a command "
                        "that runs until stopped needs `# doc-test: until \"TEXT\"` (or a skip with its reason)")
    finally:
        try:
            os.killpg(session.pid, signal.SIGKILL)  # anything a command left running
        except ProcessLookupError:
            pass
        if session.returncode is None:
            session.communicate()
    outcomes = []
    for number, command in enumerate(runnable):
        code_file = work / f"{number}.rc"
        code = int(code_file.read_text().strip()) if code_file.exists() else None
        outcomes.append(Outcome(command, code, _read(work / f"{number}.out"), _read(work / f"{number}.err")))
    if session.returncode != 0:
        raise AssertionError(f"the bash session itself failed ({session.returncode}): {session_err[-2000:]}")
    return outcomes


def _background(command: Command, out: str, err: str, code: str, seconds: int) -> str:
    """Start, wait for the ready text while it runs, SIGTERM, record the exit code (124: never ready)."""
    lexer = shlex.shlex(command.text, posix=True, punctuation_chars=True)
    if any(set(token) <= set(";|&()") for token in lexer):
        raise ValueError(f"{command.where}: a `doc-test: until` command must be one simple command")
    until = shlex.quote(command.until)
    return f"""(
exec {command.text}
) > {out} 2> {err} < /dev/null &
doc_pid=$!
doc_ready=no
for doc_i in $(seq {seconds * 10}); do
  if grep -qF -- {until} {out} {err} 2>/dev/null; then doc_ready=yes; break; fi
  kill -0 $doc_pid 2>/dev/null || break
  sleep 0.1
done
kill -TERM $doc_pid 2>/dev/null
wait $doc_pid
doc_rc=$?
if [ $doc_ready = yes ]; then echo $doc_rc > {code}; else echo 124 > {code}; fi"""


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


# -- shown output ---------------------------------------------------------------------------------

_VOLATILE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d|/")


def compare_json(shown, actual, path: str = "$") -> list[str]:
    """Where the shown JSON is not a part of the actual one (keys, list prefixes, stable values)."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{path}: shown an object, the command printed {type(actual).__name__}"]
        problems = []
        for key, value in shown.items():
            if key not in actual:
                problems.append(f"{path}.{key}: shown, but not in the output (keys: {', '.join(actual)})")
            else:
                problems.extend(compare_json(value, actual[key], f"{path}.{key}"))
        return problems
    if isinstance(shown, list):
        if not isinstance(actual, list):
            return [f"{path}: shown a list, the command printed {type(actual).__name__}"]
        if len(shown) > len(actual):
            return [f"{path}: shown {len(shown)} entries, the output has {len(actual)}"]
        return [p for index, value in enumerate(shown) for p in compare_json(value, actual[index], f"{path}[{index}]")]
    if isinstance(shown, str) and isinstance(actual, str) and _VOLATILE.search(shown) and _VOLATILE.search(actual):
        return []  # a path or a timestamp: differs from machine to machine
    if shown != actual or type(shown) is not type(actual):
        return [f"{path}: shown {shown!r}, the command printed {actual!r}"]
    return []
