"""Configuration errors in plain words, and secrets read from files (``*_file``), for ``config``.

``plain_message(model, error)`` turns one pydantic error into what a person
can act on: what was expected, an example, and what was found — never a raw
regular expression. The words come from the field's own ``description`` and
``examples`` when it has them (a settings model says ``Field(pattern=…,
description="an http:// or https:// address", examples=["https://…"])``), else
from the kind of check that failed.

``file_secrets(model, raw, …)``: every ``X_env`` setting may instead be given
as ``X_file`` — a file holding the secret (systemd credentials, Docker
secrets). The file must exist and must not be readable by other users (mode
``0600`` / ``0400``; a group may read it). The setting then holds
``file:<path>`` and ``settings.env_value`` reads the file each time the secret
is needed, so a rotated secret is picked up without a restart.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fold_core.errors import ConfigError
from fold_core.settings import FILE_SECRET_PREFIX

__all__ = ["file_secrets", "plain_message"]

_PLACEHOLDER = "FOLD_SECRET_FROM_FILE"  # stands in for a required *_env while the model validates

_KINDS = {
    "string_type": ("text in quotes", '"…"'),
    "int_type": ("a whole number", "3"), "int_parsing": ("a whole number", "3"),
    "int_from_float": ("a whole number", "3"),
    "float_type": ("a number", "0.5"), "float_parsing": ("a number", "0.5"),
    "bool_type": ("true or false (without quotes)", "true"), "bool_parsing": ("true or false (without quotes)",
                                                                              "true"),
    "list_type": ("a list in square brackets", '["INBOX"]'), "tuple_type": ("a list in square brackets",
                                                                            '["INBOX"]'),
    "dict_type": ("a table", "{ key = \"value\" }"), "model_type": ("a table", "{ key = \"value\" }"),
}
_PATTERNS = (  # what a few common patterns mean, for fields that do not say it themselves
    ("://", "an http:// or https:// address", "https://example.org/feed.xml"),
    ("[a-z0-9-]", "lower-case letters, digits and dashes", "work-mail"),
    ("[A-Za-z_]", "a Python module path (letters, digits, _ and dots)", "my_fold_plugin"),
)


def plain_message(model: type, error: Mapping[str, Any]) -> str:
    """One pydantic error of ``model`` as ``expected …, for example …; found …``."""
    kind, context = error["type"], error.get("ctx") or {}
    field = _field(model, error["loc"])
    described = getattr(field, "description", None)
    examples = getattr(field, "examples", None) or []
    example = _toml(examples[0]) if examples else None
    if kind == "string_pattern_mismatch":
        what, fallback = _pattern_words(str(context.get("pattern", "")))
        what, example = described or what, example or (_toml(fallback) if fallback else None)
    elif kind in _KINDS:
        what, fallback = _KINDS[kind]
        example = example or fallback
    elif kind == "literal_error":
        what = "one of " + str(context.get("expected", "")).replace(" or ", ", ")
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤", "less_than": "<"}[kind]
        limit = next(iter(context.values()), "?")
        what = f"a number {sign} {limit}"
    elif kind in ("string_too_long", "too_long"):
        what = f"at most {context.get('max_length')} {'characters' if kind == 'string_too_long' else 'entries'}"
    elif kind in ("string_too_short", "too_short"):
        least = context.get("min_length")
        what = ("some text (not empty)" if kind == "string_too_short" and least == 1 else
                f"at least {least} {'characters' if kind == 'string_too_short' else 'entries'}")
    else:
        # our own validators already say what they expected and found
        message = error["msg"].removeprefix("Value error, ")
        return message if "found" in message else f"{message}; found {_shown(error.get('input'))}"
    if described and kind != "string_pattern_mismatch":
        what = f"{described}: {what}"
    hint = f", for example {example}" if example else ""
    return f"expected {what}{hint}; found {_shown(error.get('input'))}"


def _field(model: type, loc: tuple) -> Any:
    fields = getattr(model, "model_fields", {})
    by_alias = {field.alias: field for field in fields.values() if field.alias}
    for part in loc:
        if isinstance(part, str) and (part in fields or part in by_alias):
            return fields.get(part) or by_alias[part]
    return None


def _pattern_words(pattern: str) -> tuple[str, str | None]:
    for marker, words, example in _PATTERNS:
        if marker in pattern:
            return words, example
    return "a value in the form docs/configuration.md gives for this setting", None


def _toml(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        return "(a value nested too deeply to show)"
    return text if len(text) <= 80 else text[:77] + "..."


def file_secrets(model: type, raw: dict, *, where: str, label: str, name: str | None, base_dir: Path) -> dict:
    """``raw`` with every ``X_file`` of an ``X_env`` setting checked and noted; ``{X_env: "file:<path>"}``."""
    fields = getattr(model, "model_fields", {})
    found = {}
    for key in [k for k in raw if k.endswith("_file") and k not in fields and f"{k[:-5]}_env" in fields]:
        env_key = f"{key[:-5]}_env"
        if env_key in raw:
            raise ConfigError(f"{where}: {label}, field {key!r}: give {env_key} or {key}, not both",
                              file=where, instance=name or label, field=key)
        path = _secret_path(raw.pop(key), base_dir, where=where, label=label, name=name, key=key)
        raw[env_key] = _PLACEHOLDER
        found[env_key] = FILE_SECRET_PREFIX + str(path)
    return found


def _secret_path(value: Any, base_dir: Path, *, where: str, label: str, name: str | None, key: str) -> Path:
    def refuse(message: str) -> ConfigError:
        return ConfigError(f"{where}: {label}, field {key!r}: {message}", file=where, instance=name or label,
                           field=key)

    if not isinstance(value, str) or not value:
        raise refuse(f'expected the path of a file holding the secret, for example "/run/credentials/fold/'
                     f'{key[:-5]}"; found {_shown(value)}')
    path = Path(os.path.expanduser(value))
    path = path if path.is_absolute() else base_dir / path
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise refuse(f"cannot read the secret file {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise refuse(f"{path} is not a file")
    if mode & stat.S_IROTH:
        raise refuse(f"{path} is readable by every user (mode {stat.S_IMODE(mode):04o}): a secret must not be; "
                     f"chmod o-r {path} (or 600)")
    if not os.access(path, os.R_OK):
        raise refuse(f"cannot read the secret file {path} (permission denied for this user)")
    return path
