"""docs/install.md names everything the two commands install: each runtime dependency and system package.

The lists are read from pyproject.toml and scripts/system-packages.sh, so a new
dependency fails here until the install page says what it is for.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_install_names_every_runtime_dependency_and_system_package():
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8").lower()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]]
    script = (ROOT / "scripts" / "system-packages.sh").read_text(encoding="utf-8")
    packages = re.search(r"^PACKAGES=\(([^)]*)\)", script, re.MULTILINE).group(1).split()
    missing = [name for name in [*names, *packages] if name.lower() not in text]
    assert names and packages and not missing, (
        f"docs/install.md does not name {', '.join(missing)}: say under 'What they install' what each is for")
