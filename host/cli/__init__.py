"""``foldctl``: every command of Fold, the core's and the host's (contract §7, §11.2).

The console script points here. The core's ``main`` does the parsing, the
one answer per command and the exit codes; this module only hands it the
host's command groups beside the core ones. Each group imports nothing but
argparse at registration, so ``foldctl state`` stays as light as
``python -m fold_core state``.
"""

from __future__ import annotations

from fold_core import cli as core_cli
from fold_host.cli import (backup, brief, calls, commands, evaluate, mcp, migrate, overview, report, serve, skill,
                           sources)

__all__ = ["GROUPS", "build_parser", "main"]

GROUPS = (*core_cli.CORE_GROUPS, overview, skill, brief, commands, calls, evaluate, serve, sources, mcp, backup,
          migrate, report)


def build_parser():
    """The whole ``foldctl`` parser."""
    return core_cli.build_parser(GROUPS)


def main(argv: list[str] | None = None) -> int:
    """Run one ``foldctl`` command; returns the exit code."""
    return core_cli.main(argv, groups=GROUPS)
