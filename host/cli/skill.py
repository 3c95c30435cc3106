"""``foldctl skill [--lang zh|en] [--format text|json]`` (contract §11.2): the editor's instructions.

Text (the Markdown itself) is the default whatever stdout is, since the
instructions are meant to be read or piped into another editor; ``--format
json`` gives ``{"lang", "skill", "output_schema"}``. Light to import: the skill
package is loaded only when the command runs.
"""

from __future__ import annotations

__all__ = ["register"]


def register(commands) -> None:
    skill = commands.add_parser(
        "skill",
        help="print the editor agent's instructions",
        description="The editor agent's instructions (the skill sent to LLM backends with the §9 input).",
    )
    skill.add_argument("--lang", choices=("zh", "en"), default=None,
                       help="language of the text (default: [host] language of the plugins.toml in use, else zh)")
    skill.add_argument("--format", choices=("text", "json"), default="text",
                       help="text (the Markdown, default) or json ({lang, skill, output_schema})")
    skill.set_defaults(run=run_skill, render_text=lambda document: document["skill"])


def run_skill(args) -> tuple[dict, int]:
    from fold_host.skill import load_skill, output_schema

    lang = args.lang or _configured_language(getattr(args, "config", None))
    return {"lang": lang, "skill": load_skill(lang), "output_schema": output_schema()}, 0


def _configured_language(given: str | None) -> str:
    """``[host] language`` of the plugins.toml in use; zh when there is none or it cannot be read."""
    try:
        from fold_host.plugins import load_config

        config = load_config(given)
    except Exception:  # no or a broken plugins.toml: the skill is still printable
        return "zh"
    return config.host.language
