"""The plugin foundation: types through the plugin manager, plugins.toml, host.db."""

from __future__ import annotations

import sys
import textwrap
from datetime import datetime, timezone

import pytest

from fold_core import hookimpl
from fold_host.plugins import load_config
from fold_core.errors import ConfigError
from fold_core.observation import Health, Observation, Poll
from fold_core.plugin_api import Adapter, extract_json
from fold_core.plugins import get_plugin_manager, load_types
from fold_core.settings import AdapterSettings
from fold_host.hostdb import MIGRATIONS, open_host_db

NOW = "2026-10-09T08:00:00+08:00"


class Clock(Adapter):
    type_name = "clock-test"
    channel = "clock"

    def poll(self, cursor, *, now: datetime) -> Poll:
        n = (cursor or 0) + 1
        obs = Observation(id=f"{self.name}:{n}", source=self.name, channel="clock", at=now.isoformat(),
                          observed_at=now.isoformat(), title=f"tick {n}", text="")
        return Poll(observations=[obs], cursor=n)


class ClockPlugin:
    @hookimpl
    def fold_adapter_types(self):
        return [Clock]


@pytest.fixture
def clock_module(tmp_path, monkeypatch):
    module = tmp_path / "clock_plugin_mod.py"
    module.write_text(textwrap.dedent("""
        from fold_core import hookimpl
        from tests.integration.test_host_foundation import Clock

        @hookimpl
        def fold_adapter_types():
            return [Clock]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "clock_plugin_mod"
    sys.modules.pop("clock_plugin_mod", None)


def test_a_module_plugin_registers_a_type_and_a_duplicate_names_both(clock_module, tmp_path):
    pm = get_plugin_manager([clock_module], entry_points=False)
    registry = load_types(pm)
    entry = registry.get("adapter", "clock-test")
    assert entry.origin == "module" and entry.plugin == clock_module
    pm.register(ClockPlugin(), name="second-clock")
    with pytest.raises(ConfigError) as caught:
        load_types(pm)
    assert "clock_plugin_mod" in str(caught.value) and "second-clock" in str(caught.value)


def test_plugins_toml_instances_and_errors(clock_module, tmp_path, monkeypatch):
    config = tmp_path / "plugins.toml"
    config.write_text(textwrap.dedent(f"""
        [[plugins]]
        module = "{clock_module}"
        [[adapters]]
        name = "tick"
        type = "clock-test"
        every = "90s"
    """))
    loaded = load_config(str(config), entry_points=False, builtins=())
    assert loaded.adapters[0].name == "tick"
    assert loaded.adapters[0].settings.every.total_seconds() == 90
    config.write_text(config.read_text().replace('every = "90s"', 'every = "soon"'))
    with pytest.raises(ConfigError) as caught:
        load_config(str(config), entry_points=False, builtins=())
    message = str(caught.value)
    assert str(config) in message and "'tick'" in message and "'every'" in message and "'soon'" in message
    config.write_text(config.read_text().replace('every = "soon"', 'password = "hunter2"'))
    with pytest.raises(ConfigError) as caught:
        load_config(str(config), entry_points=False, builtins=())
    assert "password" in str(caught.value) and "hunter2" not in str(caught.value)


def test_a_poll_and_its_cursor_are_kept_together_and_deduplicated(tmp_path):
    db = open_host_db(tmp_path)
    adapter = Clock("tick", AdapterSettings())
    now = datetime(2026, 10, 9, tzinfo=timezone.utc)
    poll = adapter.poll(db.cursor("tick"), now=now)
    assert db.record_poll("tick", poll, now=NOW) == 1
    assert db.record_poll("tick", poll, now=NOW) == 0  # the same observation again: deduplicated
    assert db.cursor("tick") == 1
    failed = Poll(health=Health.failed("network", "down"))
    db.record_poll("tick", failed, now=NOW)
    assert db.cursor("tick") == 1
    assert [o.id for o in db.pending()] == ["tick:1"]
    db.mark([{"event": "tick:1", "disposition": "noise", "why": "a test tick"}], batch_id=None, now=NOW)
    assert db.pending_count() == 0
    assert db.observations()[0]["disposition"] == "noise"
    db.close()
    assert open_host_db(tmp_path).schema_version == len(MIGRATIONS)


def test_extract_json_reads_fences_and_prose():
    assert extract_json('Sure! ```json\n{"a": 1}\n```')[0] == {"a": 1}
    assert extract_json('Here it is: {"a": {"b": 2}} hope it helps')[0] == {"a": {"b": 2}}
    assert extract_json("no json")[0] is None
