"""The core command line (contract §7): init, commit, annotate, state, history, verify.

``python -m fold_core`` runs these commands alone: what the editor skill and
the conformance runner use, with nothing above the core loaded. ``foldctl``
(``fold_host.cli``) is the same ``main`` with the host's command groups
added through ``groups`` — the core never imports the host.

``main`` parses the command line, runs one command and turns its outcome into
exactly one answer: one JSON document on stdout (or the text view with
``--format text``), explanations on stderr, and the contract's exit code —

    0  accepted / answered (a replayed receipt too)
    1  rejected by validation (the rejection on stdout)
    2  usage error (bad flag, bad --now, unreadable FILE, bad plugins.toml)
    3  store_unavailable: lock timeout, I/O error, failed fsync, no store to
       read, a full or read-only disk — the outcome is unknown: retry with
       the same batch_id
    4  store_corrupt: a complete log line that does not parse or breaks order

A traceback is never the answer to bad input. Command groups live in their own
modules (``writes``: init, commit, annotate; ``reads``: state, history,
verify); a group is any module with ``register(commands)``, whose commands set
``run`` (and optionally ``render_text``); each imports the store only when
run, so ``foldctl state`` loads no more than it needs.
"""

from __future__ import annotations

import argparse
import os

from collections.abc import Sequence
from types import ModuleType

from fold_core.cli import reads, writes
from fold_core.cli.common import (FoldArgumentParser, add_store, config_given, emit, emit_text, explain, use_config,
                                  wants_json)
from fold_core.errors import FoldError, StoreCorrupt, StoreUnavailable, UsageError, os_error_text

__all__ = ["CORE_GROUPS", "build_parser", "main"]

CORE_GROUPS: tuple[ModuleType, ...] = (writes, reads)
EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_CORRUPT = 2, 3, 4


def build_parser(groups: Sequence[ModuleType] = CORE_GROUPS) -> FoldArgumentParser:
    parser = FoldArgumentParser(
        prog="foldctl",
        description="Fold: many information channels folded into one small, budgeted, traceable state.",
        epilog="exit codes: 0 ok, 1 rejected, 2 usage, 3 store unavailable (outcome unknown), 4 store corrupt",
    )
    add_store(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=FoldArgumentParser)
    commands.required = True
    for group in groups:
        group.register(commands)
    return parser


def main(argv: list[str] | None = None, *, groups: Sequence[ModuleType] = CORE_GROUPS) -> int:
    """Run one command of ``groups``; returns the exit code."""
    args = None
    try:
        args = build_parser(groups).parse_args(argv)
        use_config(args.config)
        document, code = args.run(args)
        if document is not None:  # a command that spoke on stdout itself (``foldctl mcp`` over stdio)
            _answer(args, document)
        if code == 1:
            explain(f"foldctl {args.command}: {getattr(args, 'exit_one', 'rejected (see the errors on stdout)')}")
        return code
    except UsageError as error:
        return _fail(args, error, EXIT_USAGE, "")
    except StoreUnavailable as error:
        hint = "outcome unknown: retry with the same batch_id" if _writes(args) else "the store could not be read"
        return _fail(args, error, EXIT_UNAVAILABLE, hint)
    except StoreCorrupt as error:
        hint = "run `foldctl verify`; the log is never repaired silently"
        return _fail(args, error, EXIT_CORRUPT, hint)
    except FoldError as error:
        return _fail(args, error, error.exit_code, "")
    except OSError as error:  # the machine, not Fold: a full or read-only disk, a permission
        hint = "outcome unknown: retry with the same batch_id" if _writes(args) else ""
        return _fail(args, StoreUnavailable(os_error_text(error)), EXIT_UNAVAILABLE, hint)
    except KeyboardInterrupt:
        explain("foldctl: interrupted")
        return 130
    except Exception as error:  # a bug: still one answer, never a traceback for the user
        if os.environ.get("FOLD_DEBUG"):
            import traceback

            traceback.print_exc()
        unknown = StoreUnavailable(
            f"internal error ({type(error).__name__}: {error}); please report it"
            " (set FOLD_DEBUG=1 for the traceback)"
        )
        return _fail(args, unknown, EXIT_UNAVAILABLE, "outcome unknown: retry with the same batch_id")


def _writes(args: argparse.Namespace | None) -> bool:
    return args is not None and args.command in ("commit", "annotate", "init")


def _answer(args: argparse.Namespace, document: dict) -> None:
    if wants_json(args):
        emit(document)
        return
    from fold_core.configfile import view_settings
    from fold_core.words import Words, use_view_words

    use_view_words(Words(*view_settings(config_given())))
    if getattr(args, "render_text", None) is not None:  # a command group's own text view
        emit_text(args.render_text(document))
        return
    from fold_core.cli import textview

    if args.command == "state" and "schema" in document:
        emit_text(textview.render_state(document))
    elif args.command == "history" and document.get("ok") is not False:
        emit_text(textview.render_history(document))
    else:
        emit_text(textview.render_answer(args.command, document))


def _fail(args: argparse.Namespace | None, error: FoldError, code: int, hint: str) -> int:
    document = {"ok": False, "errors": error.to_errors() if hasattr(error, "to_errors") else [error.to_error()]}
    command = f"foldctl {args.command}" if args is not None else "foldctl"
    message = "\n".join(line if line.startswith("foldctl") else f"{command}: {line}"
                        for line in str(error).splitlines() or [""])
    explain(message + (f"\n{command}: {hint}" if hint else ""))
    if args is None or wants_json(args):
        emit(document)
    return code
