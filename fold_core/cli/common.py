"""What every ``foldctl`` command shares (contract §7): store location, ``--now``, output.

* Store precedence: ``--store`` > ``FOLD_STORE`` > ``[store] path`` in the
  plugins.toml in use (``--config FILE``, else ``FOLD_CONFIG``, else
  ``./plugins.toml``, else ``$XDG_CONFIG_HOME/fold/plugins.toml``; a relative
  path there is relative to that file) > ``$XDG_DATA_HOME/fold/store``
  (default ``~/.local/share/fold/store``). ``main`` records the global
  ``--config`` once (``use_config``), so every command resolves alike.
* ``--now`` defaults to the current clock (the shell may read it; the kernel
  never does); a time that is not an instant with an offset is a usage error.
* stdout holds exactly one JSON document (``--format json``, the default when
  stdout is not a terminal) or the text view; explanations go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Protocol

from fold_core.errors import UsageError

__all__ = [
    "Commands",
    "FoldArgumentParser",
    "add_format",
    "add_store",
    "config_given",
    "emit",
    "explain",
    "non_negative",
    "positive",
    "resolve_now",
    "resolve_store",
    "store_location",
    "use_config",
    "wants_json",
]


class Commands(Protocol):
    """Where a command group adds its commands (``ArgumentParser.add_subparsers``)."""

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser: ...


class FoldArgumentParser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` (exit 2, one clear line) instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def whole_number(text: str, minimum: int = 0) -> int:
    """An integer ≥ ``minimum`` from an argument, or argparse's one-line error."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ {minimum}, got {text!r}")
    return value


def non_negative(text: str) -> int:
    """An argparse type: an integer ≥ 0."""
    return whole_number(text, 0)


def positive(text: str) -> int:
    """An argparse type: an integer ≥ 1."""
    return whole_number(text, 1)


def add_store(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--store DIR`` and ``--config FILE``, accepted before and after the command name."""
    parser.add_argument(
        "--store",
        metavar="DIR|URL",
        default=None if top else argparse.SUPPRESS,
        help="the store directory or postgresql:// URL (else $FOLD_STORE, [store] in plugins.toml,"
        " $XDG_DATA_HOME/fold/store)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=None if top else argparse.SUPPRESS,
        help="the plugins.toml (else $FOLD_CONFIG, ./plugins.toml, $XDG_CONFIG_HOME/fold/plugins.toml)",
    )


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("json", "text"),
        default=None,
        help="json (default when stdout is not a terminal) or text",
    )


def wants_json(args: argparse.Namespace) -> bool:
    chosen = getattr(args, "format", None)
    if chosen is not None:
        return chosen == "json"
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return True


def use_config(given: str | None) -> None:
    """Remember the global ``--config FILE`` of this command line (``main`` calls it once)."""
    global _CONFIG
    _CONFIG = given


_CONFIG: str | None = None


def config_given() -> str | None:
    """The ``--config FILE`` of this command line, if any."""
    return _CONFIG


def resolve_store(given: str | None, *, url_ok: bool = False) -> str:
    """The store (a directory, or with ``url_ok`` a ``postgresql://`` URL) by the contract's precedence.

    A command that needs a directory (``url_ok`` false) refuses a URL with a
    usage error rather than taking it for a relative path. A path naming a
    regular file, a device or a place in ``/proc``, ``/sys`` or ``/dev`` is
    refused too, naming where it came from (``--store``, ``$FOLD_STORE`` or
    ``[store] path``), before any command touches it.
    """
    if given:
        return _store_location(os.path.expanduser(given), url_ok, "--store")
    from_env = os.environ.get("FOLD_STORE")
    if from_env:
        return _store_location(os.path.expanduser(from_env), url_ok, "$FOLD_STORE")
    from fold_core.configfile import find_config, store_path

    from_config = store_path(_CONFIG)
    if from_config:
        return _store_location(from_config, url_ok, "[store] in plugins.toml", find_config(_CONFIG))
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "fold", "store")


def store_location(location: str, source: str) -> str:
    """``location`` as a store named by ``source`` (a flag): a usable directory path or a URL (checked here)."""
    from fold_core.store.location import is_url

    if is_url(location):
        from fold_core.store.location import parse_url

        parse_url(location)  # a malformed URL is a usage error before anything is opened
    return _store_location(location, True, source)


def _store_location(location: str, url_ok: bool, source: str, config_file: Path | None = None) -> str:
    from fold_core.store.location import is_url

    if is_url(location):
        if not url_ok:
            from fold_core.store.location import parse_url

            raise UsageError(f"{source} names a PostgreSQL store ({parse_url(location).display}); this command "
                             "needs a store directory (every command but `backup`, `restore` and `mcp` takes either)")
        return location
    return _usable_directory(location, source, config_file)


def _usable_directory(path: str, source: str, config_file: Path | None = None) -> str:
    from fold_core.files import directory_problem

    problem = directory_problem(path)
    if problem is None:
        return path
    if config_file is not None:
        from fold_core.errors import ConfigError

        raise ConfigError(f"{config_file}: [store], field 'path': expected a directory for the store; {problem}",
                          file=str(config_file), instance="[store]", field="path")
    raise UsageError(f"{source} {path}: expected a directory for the store; {problem}")


def resolve_now(given: str | None) -> str:
    """``--now`` checked as an instant with an offset, or the current clock."""
    from fold_core.timefmt import parse_instant

    if given is None:
        from datetime import datetime

        return datetime.now().astimezone().isoformat(timespec="seconds")
    if parse_instant(given) is None:
        raise UsageError(
            f"--now must be an ISO 8601 instant with an offset, like 2026-10-09T08:00:00+08:00; got {given!r}"
        )
    return given


def dumps(document: object) -> bytes:
    """One JSON document as UTF-8 bytes (ASCII escapes for anything UTF-8 cannot hold)."""
    text = json.dumps(document, ensure_ascii=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(document).encode("ascii") + b"\n"


def emit(document: object) -> None:
    """Write the one JSON document of this command to stdout."""
    _write_stdout(dumps(document))


def emit_text(text: str) -> None:
    """Write the text view to stdout."""
    _write_stdout(text.encode("utf-8", "replace") + (b"" if text.endswith("\n") else b"\n"))


def _write_stdout(data: bytes) -> None:
    out = sys.stdout
    out.flush()
    try:
        out.buffer.write(data)
        out.buffer.flush()
    except BrokenPipeError:
        # The reader went away (``foldctl state | head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())


def explain(message: str) -> None:
    """A human explanation on stderr."""
    try:
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
