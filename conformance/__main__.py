"""``python -m conformance [--mode kernel|cli|both] [--store URL] [-v] [DIR|FILE ...]`` (contract §14).

Runs ``conformance/cases`` (or the given directories and files), prints one
``FAIL`` line per failing case (file, step, mode, precise diff), ``ok`` lines
for passing cases with ``-v``, and as the very last line ``N passed, M
failed`` counting cases. Exit status 0 only when nothing failed; 2 for a
usage error (an unknown path, no case files, a --store that is not a URL).

``--store postgresql://…`` runs CLI mode against PostgreSQL: each case on a
new store of that database, dropped afterwards. A case about the log file
itself cannot run there: it is named on a ``SKIP <case>: <reason>`` line and
the last line becomes ``N passed, M failed, K skipped``.

Without ``--mode`` both modes run; while ``fold_core.cli`` is not importable
the default falls back to kernel mode only and says so on stderr.
"""

from __future__ import annotations

import argparse
import sys

from conformance.cli_mode import cli_unavailable
from conformance.runner import collect_case_files, resolve_modes, run_cases


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", metavar="DIR", help="case directories or files (default: conformance/cases)")
    parser.add_argument("--mode", choices=("kernel", "cli", "both"), default=None,
                        help="which implementation to run against (default: both, or kernel while the CLI is missing)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list passing cases, and every failure")
    parser.add_argument("--jobs", type=int, default=2, help="CLI-mode cases run in parallel (default 2)")
    parser.add_argument("--launch", choices=("fork", "exec"), default="fork",
                        help="start each CLI command forked from a server that imported the CLI once (default),"
                             " or as `python -m fold_core` (exec)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per CLI command (default 60)")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="run CLI mode against this PostgreSQL database (postgresql://…), a new store per case")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    mode = args.mode
    if mode is None:
        missing = cli_unavailable()
        mode = "both" if missing is None else "kernel"
        if missing is not None:
            print(f"conformance: CLI mode skipped: {missing}; running kernel mode only", file=sys.stderr)
    elif mode in ("cli", "both") and (missing := cli_unavailable()) is not None:
        print(f"conformance: CLI mode cannot run: {missing}", file=sys.stderr)
    if args.store is not None:
        from fold_core.store.location import is_url

        if not is_url(args.store):
            print(f"conformance: --store must be a postgresql:// URL, got {args.store!r}", file=sys.stderr)
            return 2
    try:
        if not collect_case_files(args.paths):
            print("conformance: no case files (*.json) found", file=sys.stderr)
            return 2
        results = run_cases(args.paths, resolve_modes(mode), jobs=args.jobs, timeout=args.timeout,
                            database=args.store, launch=args.launch)
    except (FileNotFoundError, ValueError) as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    for result in results:
        if result.skipped is not None:
            print(result.line())
            continue
        if result.passed:
            if args.verbose:
                print(result.line())
            continue
        print(result.line())
        if args.verbose:
            for failure in result.failures[1:]:
                print(f"     {failure.describe()}")
    skipped = sum(result.skipped is not None for result in results)
    failed = sum(not result.passed and result.skipped is None for result in results)
    closing = f"{len(results) - failed - skipped} passed, {failed} failed"
    print(closing + (f", {skipped} skipped" if skipped or args.store is not None else ""))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
