"""docs/cli.md documents every ``foldctl`` command and every one of its flags.

The parser is the truth: a command without a ``## foldctl NAME`` section, or a
flag its section never names, fails here (the shared ``--store``,
``--config`` and ``--format`` are documented once, at the top).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from fold_host.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"--help", "--store", "--config", "--format"}


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    return {part.split("\n", 1)[0].strip(): part for part in parts[1:]}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_and_flag_is_in_the_cli_reference():
    sections = _sections((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    problems = []
    for name, parser in _commands().items():
        section = sections.get(f"foldctl {name}")
        if section is None:
            problems.append(f"foldctl {name}: no section `## foldctl {name}` (synopsis, flags, exit codes, "
                            "JSON shape and a run example)")
            continue
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in SHARED and not re.search(re.escape(flag) + r"\b", section):
                    problems.append(f"foldctl {name}: the flag {flag} is not named in its section")
    assert not problems, "docs/cli.md is missing:\n" + "\n".join(problems)


def test_the_reference_names_no_command_that_does_not_exist():
    sections = _sections((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    documented = {title.split()[1] for title in sections if title.startswith("foldctl ")}
    assert documented <= set(_commands()), sorted(documented - set(_commands()))
