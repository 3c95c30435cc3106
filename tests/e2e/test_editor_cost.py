"""What the editor costs: cached prompts, tokens and cost per call and per day (§11.1, §11.2).

Against the scripted OpenAI and Anthropic servers through the real SDKs over
real HTTP, with the host's real cycle:

* OpenAI-compatible: two windows with different events send the same system
  message and tool list, byte for byte, before what varies; the cached
  tokens the server reports (``prompt_tokens_details.cached_tokens``) reach
  ``foldctl calls``, ``calls --summary`` and ``/metrics``, and the cost under
  ``[agent] prices``.
* Anthropic: the skill block and the last tool carry ``cache_control``; the
  cache reads and writes the server reports are the cached tokens.
* ``doctor`` warns when 20 long prompts read nothing from a cache.
"""

from __future__ import annotations

import json

from tests.e2e.test_operating import metrics, serve
from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, text

PRICES = "prices = { input = 3.0, cached_input = 0.3, output = 15.0 }\n"


def noise(event: str) -> str:
    return json.dumps({"dispositions": [{"event": event, "disposition": "noise", "why": "an ad", "related": []}],
                       "batch": {"declarations": [], "acknowledges": []}})


def prefix(body: dict) -> str:
    """What prompt caching reuses: the system message and the tool list, serialized."""
    system = body.get("system", [m for m in body["messages"] if m.get("role") == "system"])
    return json.dumps([system, body.get("tools")], ensure_ascii=False, sort_keys=False)


def two_windows(ws: Workspace) -> None:
    ws.feed("mail", {"native": "1", "title": "Sale!", "text": "50% off"})
    assert ws.tick("2026-10-09T08:00:00+08:00")["outcome"] == "checked"
    ws.feed("mail", {"native": "2", "title": "Another sale", "text": "70% off, today only"})
    assert ws.tick("2026-10-10T09:00:00+08:00")["outcome"] == "checked"


def test_openai_prefix_is_identical_and_cached_tokens_and_cost_are_counted(tmp_path):
    script = [text(noise("mail:1"), input_tokens=4000, output_tokens=100),
              text(noise("mail:2"), input_tokens=4200, output_tokens=100, cached_tokens=3800)]
    with LLMServer(script) as server:
        ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "gpt-test"\nbase_url = "{server.openai_url}"\n'
                                       + PRICES)
        two_windows(ws)
        first, second = (request.body for request in server.requests)
    assert first["tools"] and first["messages"][0]["role"] == "system"
    assert prefix(first) == prefix(second)  # byte-identical: the prefix a server's cache reuses
    assert first["messages"][1] != second["messages"][1]  # the windows differ after it
    code, listed, _ = ws.run("calls")
    newest, oldest = listed["calls"]
    assert (newest["tokens_in"], newest["tokens_cached"], newest["tokens_out"]) == (4200, 3800, 100)
    assert (oldest["tokens_in"], oldest["tokens_cached"], oldest["tokens_out"]) == (4000, None, 100)
    # (4200 - 3800) × 3.0 + 3800 × 0.3 + 100 × 15.0 per million tokens
    assert newest["cost"] == round((400 * 3.0 + 3800 * 0.3 + 100 * 15.0) / 1e6, 9)
    assert oldest["cost"] == round((4000 * 3.0 + 100 * 15.0) / 1e6, 9)
    code, summary, _ = ws.run("calls", "--summary")
    assert code == 0 and [day["day"] for day in summary["days"]] == ["2026-10-09", "2026-10-10"]
    day = summary["days"][1]
    assert (day["calls"], day["attempts"], day["tokens_in"], day["tokens_cached"], day["tokens_out"]) == \
        (1, 1, 4200, 3800, 100)
    assert day["cost"] == newest["cost"] and day["cached_share"] == round(3800 / 4200, 4)
    code, since, _ = ws.run("calls", "--summary", "--since", "2026-10-10T00:00:00Z")
    assert [d["day"] for d in since["days"]] == ["2026-10-10"]
    code, out, _ = ws.run_text("calls", "--summary", "--format", "text")
    assert "2026-10-10" in out and "90%" in out
    code, out, _ = ws.run_text("calls", "--format", "text")
    assert "4200 → 100 tokens (3800 cached)" in out and "cost 0.003840" in out
    server, url = serve(ws)
    try:
        found = metrics(url)
    finally:
        server.stop()
    assert found[("fold_editor_tokens_total", (("kind", "in"),))] == 8200
    assert found[("fold_editor_tokens_total", (("kind", "cached"),))] == 3800
    assert found[("fold_editor_tokens_total", (("kind", "out"),))] == 200
    assert abs(found[("fold_editor_cost_total", ())] - (newest["cost"] + oldest["cost"])) < 1e-6


def test_anthropic_marks_the_skill_and_tools_for_the_cache_and_counts_cache_reads_and_writes(tmp_path):
    script = [text(noise("mail:1"), input_tokens=50, output_tokens=80, cache_written=3900),
              text(noise("mail:2"), input_tokens=60, output_tokens=90, cached_tokens=3900)]
    with LLMServer(script) as server:
        ws = Workspace(tmp_path, agent=f'type = "anthropic"\nmodel = "claude-test"\n'
                                       f'base_url = "{server.anthropic_url}"\n')
        two_windows(ws)
        first, second = (request.body for request in server.requests)
    for body in (first, second):
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in tool for tool in body["tools"][:-1])
    assert prefix(first) == prefix(second) and first["messages"] != second["messages"]
    newest, oldest = ws.run("calls")[1]["calls"]
    # Anthropic's input_tokens leaves the cache out: the prompt is all three
    assert (oldest["tokens_in"], oldest["tokens_cached"], oldest["tokens_out"]) == (3950, 3900, 80)
    assert (newest["tokens_in"], newest["tokens_cached"], newest["tokens_out"]) == (3960, 3900, 90)
    assert newest["cost"] is None  # no prices configured


def test_doctor_warns_when_long_prompts_are_never_cached(tmp_path):
    with LLMServer() as server:
        ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "gpt-test"\nbase_url = "{server.openai_url}"\n')
        ws.feed("mail", {"native": "1", "title": "Sale!", "text": "50% off"})
        server.script(text(noise("mail:1"), input_tokens=2500))
        ws.tick("2026-10-09T08:00:00+08:00")
        from fold_host.hostdb import open_host_db

        with open_host_db(ws.store) as db:
            for number in range(19):
                db.log_call(batch_id=f"w{number}", attempt=1, backend="openai", at="2026-10-09T09:00:00+08:00",
                            input_tokens=2500, output_tokens=50, outcome="checked")
        warned = [check for check in ws.run("doctor")[1]["checks"] if check["name"] == "prompt cache"]
        assert warned and warned[0]["status"] == "warn" and "20 calls of openai" in warned[0]["detail"]
        with open_host_db(ws.store) as db:
            db.log_call(batch_id="w-cached", attempt=1, backend="openai", at="2026-10-09T10:00:00+08:00",
                        input_tokens=2500, cached_tokens=2000, output_tokens=50, outcome="checked")
        assert not [check for check in ws.run("doctor")[1]["checks"] if check["name"] == "prompt cache"]


def test_the_baseline_says_no_model_in_the_call_log(tmp_path):
    ws = Workspace(tmp_path, agent='type = "baseline"\n')
    ws.feed("mail", {"native": "1", "title": "Sale!", "text": "50% off"})
    ws.tick("2026-10-09T08:00:00+08:00")
    code, out, _ = ws.run_text("calls", "--format", "text")
    assert "no model" in out and "? → ?" not in out
    assert "baseline baseline" not in out and "  baseline  skill " in out.splitlines()[0], out  # named once


def test_the_call_summary_since_reads_a_phrase_looking_back(tmp_path):
    ws = Workspace(tmp_path, agent='type = "baseline"\n', host='timezone = "Asia/Shanghai"\n')
    ws.feed("mail", {"native": "1", "title": "Sale!", "text": "50% off"})
    ws.tick("2026-10-09T08:00:00+08:00")
    code, doc, _ = ws.run("calls", "--summary", "--since", "24h", "--now", "2026-10-09T12:00:00+08:00")
    assert code == 0 and doc["since"] == "2026-10-08T12:00:00+08:00" and doc["since_given"] == "24h"
    assert [day["calls"] for day in doc["days"]] == [1]
    code, doc, _ = ws.run("calls", "--summary", "--since", "2小时前", "--now", "2026-10-09T12:00:00+08:00")
    assert code == 0 and doc["since"] == "2026-10-09T10:00:00+08:00" and doc["days"] == []
    code, doc, _ = ws.run("calls", "--summary", "--since", "2026-10-09T07:00:00+08:00")
    assert code == 0 and doc["since"] == "2026-10-09T07:00:00+08:00" and "since_given" not in doc
    code, _, err = ws.run_text("calls", "--summary", "--since", "lately")
    assert code == 2 and "lately" in err and "ISO 8601" in err
