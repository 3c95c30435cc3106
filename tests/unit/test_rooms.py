"""The rooms inside the floors hold: no import circles, no private names borrowed, imports where a reader sees them.

``test_floors`` holds the arrows between the five packages; these hold the
arrows inside each one (docs/decisions.md, "The rooms"):

* no two modules of one package import each other, directly or round a longer
  circle — imports inside functions count, and a package's ``__init__`` is one
  of its modules;
* no module imports a private name (``_x``) from another module;
* a module of Fold imports Fold's own modules at its top, where every reader
  and tool sees the arrow. Inside a function only in the command packages
  (``cli/``, whose modules load on demand) or to keep a heavy library off a
  light path — then with a comment saying why, and at most ``MAX_DEFERRED``
  of them in all.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.unit.test_floors import PACKAGES, ROOT

MAX_DEFERRED = 40


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # a module of Fold
    name: str | None  # the name taken from it (``from target import name``), None for ``import target``
    line: int
    in_function: bool
    commented: bool  # a comment on the line itself or the line above


def module_files() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = module_files()


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _nodes_in_functions(tree: ast.AST) -> set[int]:
    inside = set()
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(node) for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))}
    return inside


def imports_of(module: str) -> list[Import]:
    source = MODULES[module].read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    inside = _nodes_in_functions(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            targets = [(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base, alias.name)
                       for alias in node.names]
        else:
            continue
        around = " ".join(lines[max(node.lineno - 2, 0):node.lineno])
        for target, name in targets:
            if target.split(".")[0] in PACKAGES:
                found.append(Import(module, target, name, node.lineno, id(node) in inside, "#" in around))
    return found


IMPORTS = [found for module in MODULES for found in imports_of(module)]


def room(module: str) -> str:
    """The package a module sits in (a package's ``__init__`` sits in itself)."""
    return module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]


def circles() -> list[list[str]]:
    """The strongly connected sets of more than one module among the modules of each package (Tarjan)."""
    edges: dict[str, set[str]] = {}
    for found in IMPORTS:
        if found.target in MODULES and found.target != found.importer and room(found.target) == room(found.importer):
            edges.setdefault(found.importer, set()).add(found.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    result = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in sorted(edges.get(node, ())):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                result.append(sorted(group))

    for node in sorted(MODULES):
        if node not in index:
            visit(node)
    return result


def in_command_package(module: str) -> bool:
    return "cli" in module.split(".")


def test_no_circles_between_the_modules_of_a_package():
    assert circles() == []


def test_no_private_name_is_imported_from_another_module():
    borrowed = [f"{found.importer}:{found.line} takes {found.name} from {found.target}" for found in IMPORTS
                if found.name and found.name.startswith("_") and not found.name.startswith("__")]
    assert borrowed == []


def test_imports_inside_functions_are_few_and_say_why():
    deferred = [found for found in IMPORTS if found.in_function and not in_command_package(found.importer)]
    silent = [f"{found.importer}:{found.line} imports {found.target} in a function without saying why"
              for found in deferred if not found.commented]
    assert silent == []
    assert len(deferred) <= MAX_DEFERRED, "\n".join(f"{found.importer}:{found.line} {found.target}"
                                                    for found in deferred)


def test_the_scan_sees_a_circle_a_private_name_and_a_deferred_import(tmp_path, monkeypatch):
    """The rules above can fail: a made-up package with each fault is caught."""
    folder = tmp_path / "fold_core"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "a.py").write_text("from fold_core.b import _secret\n")
    (folder / "b.py").write_text("_secret = 1\ndef f():\n    import fold_core.a\n")
    monkeypatch.setattr(f"{__name__}.MODULES", {"fold_core": folder / "__init__.py", "fold_core.a": folder / "a.py",
                                                 "fold_core.b": folder / "b.py"})
    monkeypatch.setattr(f"{__name__}.IMPORTS", [*imports_of("fold_core.a"), *imports_of("fold_core.b")])
    assert circles() == [["fold_core.a", "fold_core.b"]]
    assert [(found.name, found.in_function, found.commented) for found in IMPORTS] == [
        ("_secret", False, False), (None, True, False)]


def test_the_readme_layout_table_matches_the_tree():
    """Every folder in README's Layout exists, every top-level folder and every package's sub-package is named."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| path (import name) | what |"):readme.index("## Using `foldctl`")]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2:
            rows[cells[0].split("`")[1].rstrip("/")] = cells[1]
    assert [path for path in rows if not (ROOT / path).is_dir()] == []
    top = {path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith(".")
           and path.name not in ("build", "out") and "egg-info" not in path.name}
    assert sorted(top - {path.split("/")[0] for path in rows}) == []
    unnamed = []
    for package, folder in PACKAGES.items():
        what = rows[folder.name]
        for sub in sorted(folder.iterdir()):
            if (sub / "__init__.py").exists() and f"`{sub.name}/`" not in what:
                unnamed.append(f"{folder.name}/{sub.name}/")
    assert unnamed == []
