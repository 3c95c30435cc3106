"""``foldctl skill [--lang zh|en] [--format text|json|agent-skill] [--out DIR]`` (contract §11.2).

The editor's instructions. Text (the Markdown itself) is the default whatever
stdout is, since the instructions are meant to be read or piped into another
editor; ``--format json`` gives ``{"lang", "skill", "output_schema"}``.
``--format agent-skill --out DIR`` writes the same text as an Agent Skill
folder (``fold_host.cli.agent_skill``: ``SKILL.md`` with its front matter,
references of the MCP tools and of the commands), named after ``DIR``, and
answers ``{"ok", "out", "name", "lang", "files"}``. Light to import: the
skill package is loaded only when the command runs.
"""

from __future__ import annotations

__all__ = ["register"]


def register(commands) -> None:
    skill = commands.add_parser(
        "skill",
        help="print the editor agent's instructions (or write them as an Agent Skill)",
        description="The editor agent's instructions (the skill sent to LLM backends with the §9 input); "
                    "--format agent-skill --out DIR writes them as an Agent Skill folder.",
    )
    skill.add_argument("--lang", choices=("zh", "en"), default=None,
                       help="language of the text (default: [host] language of the plugins.toml in use, else zh)")
    skill.add_argument("--format", choices=("text", "json", "agent-skill"), default="text",
                       help="text (the Markdown, default), json ({lang, skill, output_schema}) or agent-skill "
                            "(a skill folder, with --out)")
    skill.add_argument("--out", metavar="DIR",
                       help="with --format agent-skill: the skill folder to write (its name is the skill's name)")
    # The commands reference of an Agent Skill describes the parser this command runs from.
    skill.set_defaults(run=run_skill, render_text=_text, every_command=commands)


def run_skill(args) -> tuple[dict, int]:
    from fold_core.errors import UsageError
    from fold_host.skill import load_skill, output_schema

    lang = args.lang or _configured_language(getattr(args, "config", None))
    if args.format != "agent-skill":
        if args.out is not None:
            raise UsageError("--out belongs to --format agent-skill")
        return {"lang": lang, "skill": load_skill(lang), "output_schema": output_schema()}, 0
    args.format = None  # the answer (or the refusal): JSON unless stdout is a terminal, like other commands
    if args.out is None:
        raise UsageError("--format agent-skill needs --out DIR: the skill folder to write, "
                         "like ~/.claude/skills/fold")
    return _write_agent_skill(args.out, lang, args.every_command), 0


def _write_agent_skill(out: str, lang: str, commands) -> dict:
    import os

    from fold_core.errors import UsageError
    from fold_host.cli.agent_skill import NAME_RULE, skill_files

    folder = os.path.abspath(os.path.expanduser(out))
    name = os.path.basename(folder)
    if not NAME_RULE.match(name):
        raise UsageError(f"--out {out}: the folder's name is the skill's name and must be lowercase letters and "
                         f"digits with single hyphens (at most 64), like ~/.claude/skills/fold; got {name!r}")
    files = skill_files(lang, name, commands)
    try:
        for relative, text in files.items():
            path = os.path.join(folder, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = path + ".tmp"
            with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.replace(temporary, path)
    except OSError as error:
        raise UsageError(f"--out {out}: cannot write the skill there: {error.strerror or error}") from None
    return {"ok": True, "out": folder, "name": name, "lang": lang, "files": sorted(files)}


def _text(document: dict) -> str:
    if "skill" in document:
        return document["skill"]
    return f"wrote the Agent Skill {document['name']} ({document['lang']}) to {document['out']}: " \
           f"{', '.join(document['files'])}\n"


def _configured_language(given: str | None) -> str:
    """``[host] language`` of the plugins.toml in use; zh when there is none or it cannot be read."""
    try:
        from fold_host.plugins import load_config

        config = load_config(given)
    except Exception:  # no or a broken plugins.toml: the skill is still printable
        return "zh"
    return config.host.language
