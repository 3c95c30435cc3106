"""mypy over Fold's five packages, as configured in pyproject.toml ``[tool.mypy]``.

The folders are not named like the packages (``adapters/`` is
``fold_adapters``; README, Layout), and mypy names a module by its folder. So
this lays a tree of symbolic links named for the packages in
``.venv/typecheck/src`` (one per checkout, remade each run), runs mypy there
with its cache beside it, and prints each error with the file's real path.

``python scripts/typecheck.py`` exits with mypy's status (0: no errors); any
further arguments go to mypy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"fold_core": "fold_core", "fold_adapters": "adapters", "fold_consumers": "consumers",
            "fold_agents": "agents", "fold_host": "host"}


def link_tree(base: Path) -> Path:
    source = base / "src"
    source.mkdir(parents=True, exist_ok=True)
    for name, folder in PACKAGES.items():
        link = source / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(ROOT / folder, target_is_directory=True)
    return source


def main(argv: list[str]) -> int:
    base = ROOT / ".venv" / "typecheck"
    source = link_tree(base)
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(base / "cache"), *(arg for name in PACKAGES for arg in ("-p", name)), *argv]
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, env={**os.environ, "MYPY_FORCE_COLOR": "0"})
    real = re.compile(r"^(" + "|".join(PACKAGES) + r")/", re.MULTILINE)
    sys.stdout.write(real.sub(lambda match: PACKAGES[match.group(1)] + "/", done.stdout))
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
