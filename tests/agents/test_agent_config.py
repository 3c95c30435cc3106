"""The built-in agent types through plugins.toml (contract §11.1): settings, secrets, the default."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fold_host.plugins import load_config
from fold_core.errors import ConfigError


def config(tmp_path, text: str):
    path = tmp_path / "plugins.toml"
    path.write_text(text)
    return load_config(path=path, entry_points=False)


def test_the_five_types_are_builtin_and_baseline_is_the_default(tmp_path):
    loaded = config(tmp_path, "")
    assert sorted(e.type_name for e in loaded.registry.all() if e.kind == "agent") == [
        "anthropic", "baseline", "command", "llm", "openai"]
    assert {e.plugin for e in loaded.registry.all() if e.kind == "agent"} == {"fold_agents.plugin"}
    backend = loaded.agent.build()
    assert backend.type_name == "baseline" and backend.uses_llm is False and not loaded.agent_configured


@pytest.mark.parametrize("table, check", [
    ('type = "openai"\nbase_url = "http://127.0.0.1:11434/v1"\nmodel = "qwen2.5:14b"\napi_key_env = "FOLD_K"\n'
     'timeout = "90s"', lambda s: (s.model, s.timeout, s.api_key_env, s.json_mode) == (
         "qwen2.5:14b", timedelta(seconds=90), "FOLD_K", True)),
    ('type = "anthropic"\nmodel = "claude-x"\nmax_tokens = 2000', lambda s: (s.model, s.max_tokens) == ("claude-x", 2000)),
    ('type = "command"\ncommand = ["my-editor", "--json"]\ntimeout = "5m"',
     lambda s: (s.command, s.timeout) == (["my-editor", "--json"], timedelta(minutes=5))),
])
def test_settings_are_validated_into_the_types_models(tmp_path, monkeypatch, table, check):
    monkeypatch.setenv("FOLD_K", "secret")
    loaded = config(tmp_path, f"[agent]\n{table}\n")
    assert loaded.agent_configured and check(loaded.agent.settings)
    assert "secret" not in loaded.agent.build().describe()


@pytest.mark.parametrize("table, field", [
    ('type = "openai"\nmodel = "m"\napi_key = "sk-plain"', "api_key"),
    ('type = "openai"\nmodel = "m"\nmodle = "typo"', "modle"),
    ('type = "openai"', "model"),
    ('type = "openai"\nmodel = "m"\nbase_url = "ftp://x"', "base_url"),
    ('type = "openai"\nmodel = "m"\napi_key_env = "FOLD_MISSING_KEY"', "api_key_env"),
    ('type = "command"\ncommand = []', "command"),
    ('type = "anthropic"\nmodel = "m"\ntimeout = "soon"', "timeout"),
])
def test_bad_agent_settings_name_the_field(tmp_path, monkeypatch, table, field):
    monkeypatch.delenv("FOLD_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError) as caught:
        config(tmp_path, f"[agent]\n{table}\n")
    assert field in str(caught.value) and "[agent]" in str(caught.value)
    assert "sk-plain" not in str(caught.value)
