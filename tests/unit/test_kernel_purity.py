"""The pure kernel reads no clock, draws no randomness and touches no file,
network, process or plugin machinery (contract §1 "now", STYLE "functional
core, imperative shell").

The check is static: every module under ``fold_core/kernel/`` and the pure
helpers it builds on are parsed with ``ast`` and searched for forbidden
imports and calls. A failure names the file and line. The scanner is itself
tested on small bad and clean snippets, so that this test can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_HELPERS = ("state.py", "table.py", "shares.py", "timefmt.py", "text.py", "digest.py")


def pure_modules() -> list[Path]:
    kernel = sorted((ROOT / "fold_core" / "kernel").glob("*.py"))
    return kernel + [ROOT / "fold_core" / name for name in PURE_HELPERS]


# Modules whose import alone means a file, network, process, clock, randomness
# or plugin dependency. Checked on the first dotted component.
FORBIDDEN_MODULES = {
    # files and the operating system
    "os": "file system / environment", "io": "file I/O", "pathlib": "file system",
    "shutil": "file system", "tempfile": "file system", "glob": "file system",
    "fileinput": "file I/O", "mmap": "file I/O", "fcntl": "file locking",
    "sqlite3": "database files", "dbm": "database files", "shelve": "database files",
    "pickle": "serialised objects from outside",
    # network
    "socket": "network", "ssl": "network", "http": "network", "urllib": "network",
    "urllib3": "network", "requests": "network", "httpx": "network", "ftplib": "network",
    "smtplib": "network", "imaplib": "network", "email": "mail handling", "select": "network",
    "selectors": "network", "asyncio": "event loop / I/O",
    # processes and threads
    "subprocess": "processes", "multiprocessing": "processes", "threading": "threads",
    "concurrent": "threads / processes", "signal": "process signals", "ctypes": "foreign code",
    # plugin machinery and dynamic loading
    "pluggy": "plugin machinery", "importlib": "dynamic imports",
    # clocks and randomness
    "time": "clock", "random": "randomness", "secrets": "randomness", "uuid": "randomness",
}
# Method names that read a clock whatever object they are called on
# (datetime.now, datetime.utcnow, datetime.today, date.today, time.time, ...).
CLOCK_CALLS = {"now", "utcnow", "today", "time", "time_ns", "monotonic", "monotonic_ns",
               "perf_counter", "perf_counter_ns", "process_time", "process_time_ns",
               "localtime", "gmtime", "ctime", "asctime", "clock_gettime"}
RANDOM_CALLS = {"urandom", "getrandom", "uuid1", "uuid4", "token_hex", "token_bytes",
                "token_urlsafe", "randint", "randrange", "shuffle", "choice", "choices", "sample"}
# Built-ins that do I/O, load code, or differ from process to process
# (hash() of a str is salted per process; id() is a memory address).
FORBIDDEN_BUILTINS = {
    "open": "file I/O", "input": "reads stdin", "print": "writes stdout",
    "breakpoint": "debugger", "__import__": "dynamic import", "exec": "dynamic code",
    "eval": "dynamic code", "compile": "dynamic code", "hash": "salted per process",
    "id": "memory address, differs per process",
}
# Other fold_core modules the pure code may import: importing a shell module
# (the store, the CLI, the host) would bring its I/O in through the back door.
PURE_PACKAGES = ("fold_core.kernel",)
PURE_FOLD_MODULES = {"fold_core." + name[:-3] for name in PURE_HELPERS} | {"fold_core.errors"}


def _module_allowed_in_fold(name: str) -> bool:
    return name in PURE_FOLD_MODULES or any(name == p or name.startswith(p + ".") for p in PURE_PACKAGES)


def scan_source(source: str, filename: str) -> list[str]:
    """Every forbidden construct in ``source`` as ``"file:line: what"``."""
    found: list[str] = []
    tree = ast.parse(source, filename=filename)

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{node.lineno}: {what}")

    def check_module(node: ast.AST, name: str) -> None:
        head = name.split(".")[0]
        if head in FORBIDDEN_MODULES:
            flag(node, f"imports {name} ({FORBIDDEN_MODULES[head]})")
        elif head == "fold_core" and name != "fold_core" and not _module_allowed_in_fold(name):
            flag(node, f"imports {name}, which is not part of the pure kernel")
        # datetime itself is allowed: parsing is pure; reading the clock is caught at the call

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check_module(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module is not None:
                check_module(node, node.module)
                if node.module == "fold_core":
                    for alias in node.names:
                        check_module(node, f"fold_core.{alias.name}")
                if node.module.split(".")[0] == "datetime":
                    for alias in node.names:
                        if alias.name in CLOCK_CALLS:
                            flag(node, f"imports the clock function {node.module}.{alias.name}")
            elif node.level > 0:
                flag(node, "relative import (use absolute fold_core.* imports so purity can be checked)")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in CLOCK_CALLS:
                    flag(node, f"calls .{func.attr}() (reads a clock)")
                elif func.attr in RANDOM_CALLS:
                    flag(node, f"calls .{func.attr}() (randomness)")
                elif func.attr in ("import_module", "load_entry_point", "entry_points"):
                    flag(node, f"calls .{func.attr}() (dynamic loading / plugins)")
            elif isinstance(func, ast.Name) and func.id in FORBIDDEN_BUILTINS:
                flag(node, f"calls {func.id}() ({FORBIDDEN_BUILTINS[func.id]})")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "sys" and node.attr in ("stdin", "stdout", "stderr", "argv", "exit"):
                flag(node, f"uses sys.{node.attr} (process I/O)")
    return found


def test_the_scanned_files_exist():
    modules = pure_modules()
    assert len(modules) >= len(PURE_HELPERS) + 5, modules
    for path in modules:
        assert path.is_file(), path
    names = {path.name for path in modules}
    assert {"batch.py", "annotate.py", "__init__.py"} <= names


@pytest.mark.parametrize("path", pure_modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_pure_module_reads_no_clock_and_touches_no_io(path: Path):
    problems = scan_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not problems, "the pure kernel must stay pure:\n" + "\n".join(problems)


# -- the scanner itself can fail ---------------------------------------------

BAD_SNIPPETS = [
    ("import os\n", "imports os"),
    ("import os.path as p\n", "imports os.path"),
    ("from pathlib import Path\n", "imports pathlib"),
    ("import io\n", "imports io"),
    ("import shutil, tempfile\n", "imports shutil"),
    ("import socket\n", "imports socket"),
    ("from http import client\n", "imports http"),
    ("from urllib.request import urlopen\n", "imports urllib.request"),
    ("import subprocess\n", "imports subprocess"),
    ("import threading\n", "imports threading"),
    ("import pluggy\n", "imports pluggy"),
    ("import sqlite3\n", "imports sqlite3"),
    ("import fcntl\n", "imports fcntl"),
    ("import random\n", "imports random"),
    ("from secrets import token_hex\n", "imports secrets"),
    ("import uuid\n", "imports uuid"),
    ("import time\n", "imports time"),
    ("from time import monotonic\n", "imports time"),
    ("from datetime import datetime\nx = datetime.now()\n", "calls .now()"),
    ("import datetime\nx = datetime.datetime.utcnow()\n", "calls .utcnow()"),
    ("from datetime import date\nx = date.today()\n", "calls .today()"),
    ("import datetime as dt\nx = dt.datetime.now(dt.timezone.utc)\n", "calls .now()"),
    ("x = clock.perf_counter()\n", "calls .perf_counter()"),
    ("x = t.time_ns()\n", "calls .time_ns()"),
    ("x = r.shuffle(items)\n", "calls .shuffle()"),
    ("with open('f') as f:\n    pass\n", "calls open()"),
    ("x = hash('a')\n", "calls hash()"),
    ("print('hello')\n", "calls print()"),
    ("m = __import__('os')\n", "calls __import__()"),
    ("import sys\nsys.stdout.write('x')\n", "uses sys.stdout"),
    ("from fold_core.store import memory\n", "imports fold_core.store"),
    ("import fold_core.cli\n", "imports fold_core.cli"),
    ("from fold_core import store\n", "imports fold_core.store"),
    ("from . import helpers\n", "relative import"),
]


@pytest.mark.parametrize(("source", "expected"), BAD_SNIPPETS, ids=[s for s, _ in BAD_SNIPPETS])
def test_scanner_flags_a_bad_snippet(source: str, expected: str):
    problems = scan_source("'''doc'''\n\n" + source, "bad_example.py")
    assert problems, f"the scanner missed: {source!r}"
    assert any(expected in problem for problem in problems), problems
    # the report names the file and the line of the offending statement
    assert all(problem.startswith("bad_example.py:") for problem in problems)
    assert any(problem.split(":")[1] in ("3", "4") for problem in problems), problems


def test_scanner_reports_the_right_line():
    source = "import json\n\n\ndef f(now):\n    return now\n\n\nimport socket\n"
    assert scan_source(source, "m.py") == ["m.py:8: imports socket (network)"]


def test_scanner_accepts_pure_code():
    clean = (
        "from __future__ import annotations\n"
        "import hashlib, json, re, unicodedata, heapq\n"
        "from datetime import datetime, timedelta\n"
        "from functools import lru_cache\n"
        "from fold_core.state import State\n"
        "from fold_core.kernel.outcome import error\n"
        "def parse(text, now):\n"
        "    moment = datetime.fromisoformat(text)\n"
        "    self_now = now\n"
        "    return moment - timedelta(minutes=1), self_now, hashlib.sha256(b'').hexdigest()\n"
    )
    assert scan_source(clean, "clean.py") == []
