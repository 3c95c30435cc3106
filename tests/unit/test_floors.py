"""The floors of the code hold: imports point down, modules stay small, host.db SQL has one owner.

Floors, bottom up (docs/decisions.md, "The layout"): ``fold_core`` (kernel,
store, plugin API, config loading, the core CLI) ← ``fold_adapters`` and
``fold_consumers`` (plugins: each imports only ``fold_core`` and itself) ←
``fold_host`` (the application). Every import statement is scanned — also the
ones inside functions, where the lazy imports live — so a layering slip
cannot hide in a function body.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"fold_core": ROOT / "fold_core", "fold_adapters": ROOT / "adapters",
            "fold_consumers": ROOT / "consumers", "fold_agents": ROOT / "agents", "fold_host": ROOT / "host"}
ALLOWED = {
    "fold_core": {"fold_core"},
    "fold_adapters": {"fold_core", "fold_adapters"},
    "fold_consumers": {"fold_core", "fold_consumers"},
    "fold_agents": {"fold_core", "fold_agents"},
    "fold_host": {"fold_core", "fold_adapters", "fold_consumers", "fold_agents", "fold_host"},
}
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 80


def modules():
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            yield package, path


def imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the module, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def dynamic_names(source: str) -> list[str]:
    """Module names of our packages written as strings (``import_module("fold_host…")``)."""
    return re.findall(r"""["'](fold_(?:core|adapters|consumers|agents|host)(?:\.\w+)*)["']""", source)


def test_every_import_points_down_or_sideways_within_its_package():
    wrong = []
    for package, path in modules():
        source = path.read_text(encoding="utf-8")
        for line, name in imported_names(ast.parse(source)):
            top = name.split(".")[0]
            if top in PACKAGES and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
        if package != "fold_host":
            wrong += [f"{path.relative_to(ROOT)} names {name} as a string" for name in dynamic_names(source)
                      if name.split(".")[0] not in ALLOWED[package]]
    assert wrong == []


def test_the_scan_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    from fold_host.cycle.pipeline import tick\n")
    assert imported_names(tree) == [(2, "fold_host.cycle.pipeline")]


def test_modules_and_functions_stay_small():
    large = []
    for _, path in modules():
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            large.append(f"{path.relative_to(ROOT)}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    large.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}(): {length} lines")
    assert large == []


SQL = re.compile(r"""\.(execute|executemany|executescript)\(|["']\s*(SELECT\b.*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|"""
                 r"""UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)|ALTER\s+TABLE|PRAGMA\s+\w)""")


def test_no_host_db_sql_outside_hostdb():
    found = []
    for package, path in modules():
        relative = path.relative_to(ROOT)
        if package == "fold_core" and relative.parts[1] == "store" or relative.parts[:2] == ("host", "hostdb"):
            continue  # the store's own recorders; host.db's one owner
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SQL.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []


EXTERNAL = re.compile(r"\.\./shared|shared/design|shared/seeds|DEVELOPERS\.md|CONTRACT\.md")
CITATION = re.compile(r"\bseeds?\s+0\d\d\b|\bseed\s+00\d|\bissue\s+#?\d+\b|\(issue \d+|[Aa]rrives? in (a )?later issue",
                      re.IGNORECASE)


def repository_texts():
    for pattern in ("*.py", "*.md", "*.toml", "*.sh", "*.j2", "*.service", "*.json"):
        for path in ROOT.rglob(pattern):
            parts = path.relative_to(ROOT).parts
            if parts[0].startswith(".") or parts[0] in ("build", "out") or "egg-info" in parts[0]:
                continue
            yield path


@pytest.mark.parametrize("rule", ["outside", "citation"])
def test_nothing_points_outside_the_repository(rule):
    """The spec is docs/contract.md; no file names one outside the repository, no comment cites a seed or an issue."""
    found = []
    for path in repository_texts():
        relative = path.relative_to(ROOT)
        if path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if rule == "outside":
            found += [f"{relative}: {m.group(0)}" for m in EXTERNAL.finditer(text)]
        elif path.suffix == ".py":
            found += [f"{relative}: {m.group(0)}" for m in CITATION.finditer(text)]
    assert found == []


def test_every_module_with_a_hook_is_a_registered_built_in_and_the_core_names_none():
    """A plugin module in the tree is registered by the host (fold_host.plugins); the core knows none by name."""
    from fold_host.plugins import BUILTIN_PLUGINS

    with_hooks = set()
    for package, path in modules():
        if package != "fold_core" and "@hookimpl" in path.read_text(encoding="utf-8"):
            relative = path.relative_to(PACKAGES[package]).with_suffix("")
            with_hooks.add(".".join((package, *relative.parts)))
    assert with_hooks == set(BUILTIN_PLUGINS)
    core = "\n".join(path.read_text(encoding="utf-8") for package, path in modules() if package == "fold_core")
    assert not [name for name in BUILTIN_PLUGINS if name in core]
