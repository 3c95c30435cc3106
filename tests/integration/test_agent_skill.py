"""``foldctl skill --format agent-skill --out DIR``: a valid Agent Skill, generated from the same sources.

The folder passes the Agent Skills reference validator (``skills-ref``); its
SKILL.md carries the skill text of ``foldctl skill`` verbatim, its references
name every tool ``foldctl mcp`` lists (with every argument) and every command
the ``foldctl`` parser has, so none of them can drift from the others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from skills_ref.parser import read_properties
from skills_ref.validator import validate

from fold_host.cli import build_parser
from fold_host.mcp.catalogue import TOOLS
from fold_host.skill import load_skill, output_schema

FOLDCTL = str(Path(sys.executable).with_name("foldctl"))


def foldctl(*args: str, cwd: Path) -> tuple[int, dict, str]:
    done = subprocess.run([FOLDCTL, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_skill_folder_is_a_valid_agent_skill_from_the_same_sources(tmp_path, lang):
    code, answer, _ = foldctl("skill", "--lang", lang, "--format", "agent-skill", "--out", "skills/fold", cwd=tmp_path)
    folder = tmp_path / "skills" / "fold"
    assert code == 0 and answer == {"ok": True, "out": str(folder), "name": "fold", "lang": lang, "files": [
        "SKILL.md", "references/foldctl.md", "references/mcp-tools.md", "references/output-schema.json"]}
    assert validate(folder) == []
    properties = read_properties(folder)
    assert properties.name == "fold" and 100 <= len(properties.description) <= 1024
    skill = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert skill.endswith(load_skill(lang).rstrip("\n") + "\n")
    for link in ("references/mcp-tools.md", "references/foldctl.md", "references/output-schema.json"):
        assert f"]({link})" in skill and (folder / link).is_file()
    tools = (folder / "references" / "mcp-tools.md").read_text(encoding="utf-8")
    for tool in TOOLS:
        section = tools.split(f"## `{tool.name}`", 1)[1].split("\n## ", 1)[0]
        assert tool.description in section
        for argument in tool.schema()["properties"]:
            assert f"| `{argument}` |" in section, (tool.name, argument)
    commands = (folder / "references" / "foldctl.md").read_text(encoding="utf-8")
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, command in subcommands.items():
        section = commands.split(f"## `foldctl {name}`", 1)[1].split("\n## ", 1)[0]
        for action in command._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and action.help != argparse.SUPPRESS and flag != "--help":
                    assert flag in section, (name, flag)
    assert json.loads((folder / "references" / "output-schema.json").read_text(encoding="utf-8")) == output_schema()


def test_writing_it_again_replaces_it_and_bad_requests_are_usage_errors(tmp_path):
    folder = tmp_path / "fold-editor"
    assert foldctl("skill", "--lang", "zh", "--format", "agent-skill", "--out", str(folder), cwd=tmp_path)[0] == 0
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    assert foldctl("skill", "--lang", "en", "--format", "agent-skill", "--out", str(folder), cwd=tmp_path)[0] == 0
    assert (folder / "SKILL.md").read_text(encoding="utf-8").endswith(load_skill("en").rstrip("\n") + "\n")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine" and validate(folder) == []
    for args, phrase in ((("--format", "agent-skill", "--out", "Fold Skill"), "the folder's name is the skill's name"),
                         (("--format", "agent-skill"), "needs --out DIR"),
                         (("--format", "json", "--out", "fold"), "--out belongs to --format agent-skill")):
        code, answer, err = foldctl("skill", *args, cwd=tmp_path)
        assert code == 2 and phrase in answer["errors"][0]["message"] and phrase in err
    assert not (tmp_path / "Fold Skill").exists() and not (tmp_path / "fold").exists()
