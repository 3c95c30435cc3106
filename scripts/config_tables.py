"""The settings tables of docs/configuration.md, generated from the pydantic models (contract §11.1).

    python scripts/config_tables.py                 # every table, as Markdown
    python scripts/config_tables.py adapter email   # one table (kinds: section, adapter, consumer, agent)
    python scripts/config_tables.py --check docs/configuration.md

In the document each table follows a marker line ``<!-- settings: KIND NAME -->``;
its first three columns (key, type, default) must be what this script prints,
the fourth (meaning) is written by hand and must not be empty. ``--check``
(and tests/e2e/test_configuration_doc.py) fails when a table drifts from its
model, when a built-in type or a section has no table, or a marker names one
that does not exist — so a new setting or type cannot go undocumented.
"""

from __future__ import annotations

import re
import sys
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["check", "documented_models", "render_table", "table_rows"]

MARKER = re.compile(r"^<!-- settings: (section|adapter|consumer|agent) ([a-z0-9_-]+) -->\s*$")
HEADER = "| key | type | default | meaning |"


def documented_models() -> dict[tuple[str, str], type[BaseModel]]:
    """Every settings model a user can write: the sections of plugins.toml and each built-in type."""
    from fold_core import config
    from fold_core.plugins import load_types
    from fold_host import settings
    from fold_host.plugins import plugin_manager as get_plugin_manager

    models: dict[tuple[str, str], type[BaseModel]] = {
        ("section", "store"): config.StoreSection,
        ("section", "host"): settings.HostSection,
        ("section", "user"): config.UserSection,
        ("section", "pinboard"): settings.PinboardSection,
        ("section", "mcp"): settings.McpSection,
        ("section", "plugins"): config.PluginModule,
    }
    for entry in load_types(get_plugin_manager(entry_points=False)).all():
        models[(entry.kind, entry.type_name)] = entry.cls.Settings
    return models


def table_rows(model: type[BaseModel]) -> list[tuple[str, str, str]]:
    """(key, type, default) of every field, in the model's order."""
    return [(f"`{field.alias or name}`", _type(field.annotation, field.metadata), _default(field))
            for name, field in model.model_fields.items()]


def render_table(model: type[BaseModel]) -> str:
    lines = [HEADER, "|---|---|---|---|"]
    lines += [f"| {key} | {kind} | {default} | … |" for key, kind, default in table_rows(model)]
    return "\n".join(lines)


def check(path: Path) -> list[str]:
    """Where the document's tables differ from the models (empty: they agree)."""
    models = documented_models()
    problems, seen = [], set()
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        match = MARKER.match(line)
        if not match:
            continue
        key = (match.group(1), match.group(2))
        where = f"{path}:{number} ({key[0]} {key[1]})"
        if key not in models:
            problems.append(f"{where}: no such section or built-in type")
            continue
        seen.add(key)
        problems += _compare(where, _doc_table(lines, number), table_rows(models[key]), models[key])
    for kind, name in sorted(set(models) - seen):
        problems.append(f"{path}: no table for {kind} {name!r}: add a line `<!-- settings: {kind} {name} -->` and "
                        f"the table that `python scripts/config_tables.py {kind} {name}` prints, with a meaning "
                        "for each key")
    return problems


def _doc_table(lines: list[str], marker_line: int) -> list[list[str]]:
    rows = []
    for line in lines[marker_line:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[2:] if len(rows) >= 2 and "|".join(rows[0]) == "key|type|default|meaning" else []


def _compare(where: str, shown: list[list[str]], expected: list[tuple[str, str, str]], model) -> list[str]:
    if not shown:
        return [f"{where}: expected the table `{HEADER}` right after the marker:\n{render_table(model)}"]
    problems = []
    shown_keys = [row[0] for row in shown]
    expected_keys = [row[0] for row in expected]
    if shown_keys != expected_keys:
        problems.append(f"{where}: keys {', '.join(shown_keys)}; the model has {', '.join(expected_keys)}")
    by_key = {row[0]: row for row in shown}
    for key, kind, default in expected:
        row = by_key.get(key)
        if row is None:
            continue
        if len(row) != 4:
            problems.append(f"{where}: the row of {key} needs 4 cells, has {len(row)}")
            continue
        if (row[1], row[2]) != (kind, default):
            problems.append(f"{where}: {key} is shown as type {row[1]!r}, default {row[2]!r}; "
                            f"the model says type {kind!r}, default {default!r}")
        if not row[3] or row[3] == "…":
            problems.append(f"{where}: {key} has no meaning written")
    return problems


# -- formatting a field -------------------------------------------------------------------------


def _type(annotation: Any, metadata: list) -> str:
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(arguments) < len(typing.get_args(annotation))
        if len(arguments) > 1:  # one of several forms (`"last"` or a duration): each as it would be alone
            return " \\| ".join(_type(a, metadata) for a in arguments) + (" or unset" if optional else "")
        annotation = arguments[0]
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata = [*metadata, *extra]
    text = _base_type(annotation, metadata)
    return text + (" or unset" if optional else "")


def _base_type(annotation: Any, metadata: list) -> str:
    names = {getattr(getattr(m, "func", None), "__name__", "") for m in metadata}
    if "parse_duration" in names:
        return "duration"
    if "_path" in names:
        return "path"
    if "_env_name" in names:
        return "environment variable name"
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " \\| ".join(f'`"{value}"`' for value in typing.get_args(annotation))
    if origin in (list, tuple):
        item = typing.get_args(annotation)[0]
        if typing.get_origin(item) is Literal:
            return "list of " + ", ".join(f'`"{value}"`' for value in typing.get_args(item))
        return f"list of {_plural(_base_type(item, []))}"
    if isinstance(getattr(annotation, "config_label", None), str):  # a table type names itself
        return annotation.config_label
    if annotation is bool:
        return "boolean"
    if annotation in (int, float):
        return ("integer" if annotation is int else "number") + _bounds(metadata)
    if annotation is str:
        pattern = next((getattr(m, "pattern", None) for m in metadata if getattr(m, "pattern", None)), None)
        if pattern and (choices := re.fullmatch(r"\^\(([a-z|]+)\)\$", pattern)):
            return " \\| ".join(f'`"{value}"`' for value in choices.group(1).split("|"))
        if pattern:
            return f"string matching `{pattern}`"
        longest = next((m.max_length for m in metadata if getattr(m, "max_length", None) is not None), None)
        return f"string (≤ {longest} characters)" if longest else "string"
    return getattr(annotation, "__name__", str(annotation))


def _plural(word: str) -> str:
    return {"string": "strings", "path": "paths"}.get(word, word)


def _bounds(metadata: list) -> str:
    low = next((f"≥ {m.ge}" for m in metadata if getattr(m, "ge", None) is not None), None) or \
        next((f"> {m.gt}" for m in metadata if getattr(m, "gt", None) is not None), None)
    high = next((f"≤ {m.le}" for m in metadata if getattr(m, "le", None) is not None), None)
    parts = [p for p in (low, high) if p]
    return f" ({', '.join(parts)})" if parts else ""


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is None:
        return "unset"
    return f"`{_toml(value)}`"


def _toml(value: Any) -> str:
    if isinstance(value, timedelta):
        return f'"{_duration(value)}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f'"{value}"'


def _duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        problems = check(Path(argv[1] if len(argv) > 1 else "docs/configuration.md"))
        print("\n".join(problems) or "the settings tables agree with the models")
        return 1 if problems else 0
    models = documented_models()
    chosen = [(argv[0], argv[1])] if len(argv) == 2 else sorted(models)
    for key in chosen:
        if key not in models:
            print(f"no such section or built-in type: {key[0]} {key[1]}; known: "
                  + ", ".join(" ".join(k) for k in sorted(models)), file=sys.stderr)
            return 2
        print(f"<!-- settings: {key[0]} {key[1]} -->\n{render_table(models[key])}\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1:]))
