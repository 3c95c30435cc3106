"""The plugins docs/plugins.md offers to copy work as written, and every hook is documented and exercised.

docs/plugins.md promises: one heading per ``fold_*`` hookspec with its exact
signature, and complete examples of an adapter, a consumer and an editor that
are tested. This module is that test: it takes each example from the page
(a ``python`` block whose first line is ``# <module>.py``), puts it on
``sys.path`` and runs it in a ``foldctl tick``; the editor also ships as the
page's distribution (its ``pyproject.toml`` block), pip-installed, found
through the entry-point group ``fold``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance.adapter_suite import AdapterConformance
from fold_core import hookspecs
from fold_core.plugin_api import AgentRequest, ConsumerContext, StateView
from fold_host.plugins import load_config
from tests.support.host_workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "plugins.md"
HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("fold_"))
NOW = "2026-10-09T08:00:00+08:00"
ADAPTER, CONSUMER, EDITOR = "fold_notes_adapter", "fold_tally_consumer", "fold_defer_editor"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def examples() -> dict[str, str]:
    """The page's example modules: module name → source."""
    found = {}
    for code in blocks("python"):
        named = re.match(r"# (\w+)\.py\n", code)
        if named:
            found[named.group(1)] = code
    return found


@pytest.fixture
def example_dir(tmp_path, monkeypatch):
    """A directory on ``sys.path`` holding the page's example modules."""
    folder = tmp_path / "examples"
    folder.mkdir()
    for name, code in examples().items():
        (folder / f"{name}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    for name in examples():
        sys.modules.pop(name, None)


def plugins(*modules: str) -> str:
    return "".join(f'[[plugins]]\nmodule = "{module}"\n' for module in modules)


def test_the_page_offers_an_adapter_a_consumer_and_an_editor():
    assert set(examples()) == {ADAPTER, CONSUMER, EDITOR}
    for code in examples().values():
        assert "@hookimpl" in code and "fold_host" not in code


def test_every_hookspec_has_its_exact_signature_in_the_docs():
    text = PAGE.read_text(encoding="utf-8")
    assert HOOKS == ["fold_adapter_types", "fold_agent_types", "fold_consumer_types"]
    for name in HOOKS:
        spec = getattr(hookspecs, name)
        signature = str(inspect.signature(spec)).replace("'", "")
        assert f"### {name}\n" in text, name
        assert f"def {name}{signature}" in text, (name, signature)


def test_plugins_toml_loads_every_example_type_through_its_hook(example_dir, tmp_path):
    (tmp_path / "notes").mkdir()
    config = tmp_path / "plugins.toml"
    config.write_text(plugins(ADAPTER, CONSUMER, EDITOR) + textwrap.dedent("""
        [agent]
        type = "defer-all"
        [[adapters]]
        name = "notes"
        type = "notes"
        path = "notes"
        [[consumers]]
        name = "tally"
        type = "tally"
        path = "tally.json"
    """))
    loaded = load_config(str(config), entry_points=False)
    origins = {(e.kind, e.type_name): e.origin for e in loaded.registry.all()}
    assert origins[("adapter", "notes")] == origins[("consumer", "tally")] == origins[("agent", "defer-all")] == "module"
    adapter = loaded.adapters[0].build()
    assert adapter.settings.path == tmp_path / "notes"  # relative to plugins.toml
    reply = loaded.agent.build().propose(AgentRequest(input={"events": [{"id": "notes:a"}]}, skill=""))
    assert reply.output["dispositions"][0]["disposition"] == "deferred"
    consumer = loaded.consumers[0].build()
    memory: dict = {}
    view = StateView({"schema": "fold.state/1", "now": NOW, "revision": 1, "event_seq": 2,
                      "budget": 64, "root": {"budget": 64, "used": 0, "free": 64, "items": []}})
    consumer.deliver([{"type": "commit"}, {"type": "annotation"}],
                     ConsumerContext(state=view, now=NOW, memory=memory))
    assert json.loads((tmp_path / "tally.json").read_text()) == {"counts": {"commit": 1, "annotation": 1},
                                                                  "event_seq": 2}


# -- each example in a tick ----------------------------------------------------------------


def test_the_example_adapter_feeds_a_tick(example_dir, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "visa.txt").write_text("Visa: bank statement missing\nThe agency needs it by the 12th.\n")
    ws = Workspace(tmp_path, sources=(), extra=plugins(ADAPTER) + '[[adapters]]\nname = "notes"\ntype = "notes"\n'
                                                                  'path = "notes"\n')
    report = ws.tick(NOW)
    assert report["polled"] == [{"source": "notes", "status": "ok", "observations": 1}]
    assert report["outcome"] == "committed"
    code, state, _ = ws.run("state", "--now", NOW)
    [item] = state["root"]["items"]
    assert code == 0 and item["sources"][0]["ref"].startswith("event:notes:visa.txt:")


def test_the_example_consumer_is_delivered_a_ticks_record(example_dir, tmp_path):
    ws = Workspace(tmp_path, extra=plugins(CONSUMER) + '[[consumers]]\nname = "tally"\ntype = "tally"\n'
                                                       'path = "tally.json"\n')
    ws.feed("mail", {"native": "m1", "title": "Visa: bank statement missing", "text": "By the 12th."})
    assert ws.tick(NOW)["outcome"] == "committed"
    assert json.loads((tmp_path / "tally.json").read_text()) == {"counts": {"commit": 1}, "event_seq": 1}


def test_the_example_editor_answers_a_tick(example_dir, tmp_path):
    ws = Workspace(tmp_path, agent='type = "defer-all"\n', extra=plugins(EDITOR))
    ws.feed("mail", {"native": "m1", "title": "Visa: bank statement missing", "text": "By the 12th."})
    report = ws.tick(NOW)
    assert report["outcome"] == "checked" and report["attempts"] == 1
    assert report["receipt"]["ok"] is True and report["receipt"]["actor"] == "agent:defer-all"


def test_the_example_editor_ships_as_a_distribution_found_through_the_entry_point(tmp_path):
    """The page's pyproject.toml around the page's editor, pip-installed: ``[agent] type`` finds it."""
    [project] = [code for code in blocks("toml") if "[project.entry-points.fold]" in code]
    source, site = tmp_path / "source", tmp_path / "site"
    source.mkdir()
    (source / "pyproject.toml").write_text(project, encoding="utf-8")
    (source / f"{EDITOR}.py").write_text(examples()[EDITOR], encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
                    "--no-deps", "--no-build-isolation", "--target", str(site), str(source)],
                   check=True, capture_output=True, timeout=300)
    ws = Workspace(tmp_path / "host", agent='type = "defer-all"\n')
    ws.feed("mail", {"native": "m1", "title": "Visa: bank statement missing", "text": "By the 12th."})
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    code, out, _ = ws.call("plugins", env=env)
    listed = {t["type"]: t for t in json.loads(out)["types"]}
    assert code == 0 and listed["defer-all"] == {"kind": "agent", "type": "defer-all", "plugin": "defer-editor",
                                                  "origin": "entry-point"}
    code, out, _ = ws.call("tick", "--now", NOW, env=env)
    report = json.loads(out)
    assert code == 0 and report["outcome"] == "checked" and report["receipt"]["actor"] == "agent:defer-all"


class TestNotesAdapterConformance(AdapterConformance):
    @pytest.fixture
    def make_adapter(self, example_dir, tmp_path):
        (tmp_path / "notes").mkdir(exist_ok=True)
        adapter_type = importlib.import_module(ADAPTER).NotesAdapter
        return lambda: adapter_type("notes", adapter_type.Settings(path=tmp_path / "notes"))

    @pytest.fixture
    def add_new_data(self, tmp_path):
        counter = iter(range(10**6))

        def add():
            number = next(counter)
            (tmp_path / "notes" / f"note-{number}.txt").write_text(f"note {number}: 流水明天打印", encoding="utf-8")
            return 1

        return add

    @pytest.fixture
    def make_failing_adapter(self, example_dir, tmp_path):
        adapter_type = importlib.import_module(ADAPTER).NotesAdapter
        return lambda: adapter_type("notes", adapter_type.Settings(path=tmp_path / "missing"))


def test_the_docs_name_only_real_files():
    text = PAGE.read_text(encoding="utf-8")
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / "docs" / link).exists(), link
