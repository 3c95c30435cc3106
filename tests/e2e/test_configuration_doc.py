"""docs/configuration.md lists every section and built-in type's settings exactly as the models define them.

The tables' key, type and default columns are compared with
``scripts/config_tables.py`` (generated from the pydantic models), so a new
setting, a changed default or a new built-in type fails here until the
reference says so.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tables():
    spec = importlib.util.spec_from_file_location("config_tables", ROOT / "scripts" / "config_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_reference_matches_the_settings_models():
    problems = _tables().check(ROOT / "docs" / "configuration.md")
    assert not problems, "docs/configuration.md differs from the settings models:\n" + "\n".join(problems)


def test_the_check_fails_on_a_drifted_table(tmp_path: Path):
    tables = _tables()
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    drifted = text.replace('| `review_every` | duration | `"6h"` |', '| `review_every` | duration | `"1h"` |', 1)
    drifted = drifted.replace("<!-- settings: adapter mbox -->", "<!-- settings: adapter mbx -->", 1)
    assert drifted.count("<!--") == text.count("<!--") and drifted != text
    (tmp_path / "configuration.md").write_text(drifted, encoding="utf-8")
    problems = "\n".join(tables.check(tmp_path / "configuration.md"))
    assert "`review_every` is shown as type 'duration', default '`\"1h\"`'" in problems
    assert "(adapter mbx): no such section or built-in type" in problems
    assert "no table for adapter 'mbox'" in problems
