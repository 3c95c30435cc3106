"""Small real plugins for the host tests, loaded through ``[[plugins]] module = "tests.support.host_plugins"``.

* adapter type ``fixture-feed`` — reads a JSON-lines file that the test
  appends to (one observation per line: ``{"native", "title", "text",
  "thread"?, "at"?}``); the cursor is the number of lines consumed. A sibling
  file ``<path>.fail`` makes the poll fail (its text is the message),
  ``<path>.gone`` makes the source say it is gone for good (``disabled``), and
  ``<path>.hang`` makes it hang for that many seconds.
* agent type ``scripted`` — answers from a JSON file holding a list of replies,
  one per call, in order (the position is kept in ``<script>.pos``). A reply is
  ``{"raw": "text"}`` (sent as the model's text), ``{"output": {...}}``,
  ``{"unavailable": "http", "message": "..."}`` (raises AgentUnavailable),
  ``"noise"`` (every event noise, empty batch), ``"track"`` (one new item per
  event, every event used), ``"frames"`` (an agent's question becomes a
  needs-you item with its frame verbatim, answers and fallbacks are used, the
  rest noise) or ``{"defer": [ids]}`` (those deferred, the rest
  tracked). Each request is appended to
  ``<script>.requests.jsonl`` (input, attempt, corrections) for the test to read.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime

from fold_core import hookimpl
from fold_core.observation import Health, Observation, Poll
from fold_core.plugin_api import Adapter, AgentBackend, AgentRequest, AgentUnavailable, Reply
from fold_core.settings import AdapterSettings, AgentSettings, ConfigPath, EnvName


class FeedSettings(AdapterSettings):
    path: ConfigPath
    channel: str = "email"
    token_env: EnvName | None = None  # unused: lets the configuration tests name a missing variable


class FixtureFeed(Adapter):
    type_name = "fixture-feed"
    channel = "email"
    Settings = FeedSettings

    def poll(self, cursor, *, now: datetime) -> Poll:
        path = str(self.settings.path)
        if os.path.exists(path + ".gone"):
            return Poll(cursor=None, health=Health.failed("gone", "HTTP 410: the feed is gone", disabled=True))
        if os.path.exists(path + ".fail"):
            with open(path + ".fail", encoding="utf-8") as file:
                return Poll(cursor=None, health=Health.failed("network", file.read().strip() or "down"))
        if os.path.exists(path + ".hang"):
            with open(path + ".hang", encoding="utf-8") as file:
                time.sleep(float(file.read().strip() or 60))
        consumed = cursor or 0
        try:
            with open(path, encoding="utf-8") as file:
                lines = [line for line in file.read().splitlines() if line.strip()]
        except FileNotFoundError:
            return Poll(cursor=consumed, health=Health.ok("no file yet"))
        observed = now.isoformat(timespec="seconds")
        found = []
        for line in lines[consumed:]:
            entry = json.loads(line)
            found.append(Observation(id=f"{self.name}:{entry['native']}", source=self.name,
                                     channel=self.settings.channel, sender=entry.get("from", "someone"),
                                     at=entry.get("at", observed), observed_at=observed, title=entry.get("title"),
                                     text=entry.get("text", ""), thread=entry.get("thread")))
        return Poll(observations=found, cursor=len(lines))


class ScriptSettings(AgentSettings):
    script: ConfigPath


class Scripted(AgentBackend):
    type_name = "scripted"
    uses_llm = False
    Settings = ScriptSettings

    def describe(self) -> str:
        return f"scripted ({self.settings.script.name})"

    def propose(self, request: AgentRequest) -> Reply:
        script = str(self.settings.script)
        with open(script + ".requests.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps({"input": request.input, "attempt": request.attempt,
                                  "corrections": [c.receipt for c in request.corrections]},
                                 ensure_ascii=False) + "\n")
        with open(script, encoding="utf-8") as file:
            replies = json.load(file)
        position = int(open(script + ".pos").read()) if os.path.exists(script + ".pos") else 0
        reply = replies[min(position, len(replies) - 1)]
        with open(script + ".pos", "w") as file:
            file.write(str(position + 1))
        if reply == "noise":
            return _reply(_noise(request.input))
        if reply == "track":
            return _reply(_track(request.input))
        if reply == "frames":
            return _reply(_frames(request.input))
        if "defer" in reply:
            return _reply(_track(request.input, defer=set(reply["defer"])))
        if "unavailable" in reply:
            raise AgentUnavailable(reply["unavailable"], reply.get("message", "scripted failure"))
        if "raw" in reply:
            from fold_core.plugin_api import extract_json

            output, error = extract_json(reply["raw"])
            return Reply(output=output, raw=reply["raw"], error=error, input_tokens=10, output_tokens=5)
        return _reply(reply["output"])


def _reply(output: dict) -> Reply:
    return Reply(output=output, raw=json.dumps(output, ensure_ascii=False), input_tokens=100, output_tokens=20)


def _noise(document: dict) -> dict:
    return {"dispositions": [{"event": e["id"], "disposition": "noise", "why": "scripted: noise", "related": []}
                             for e in document["events"]], "batch": {"declarations": [], "acknowledges": []}}


def _frames(document: dict) -> dict:
    """An agent's question → a needs-you item carrying its frame verbatim; answers and fallbacks used; the rest
    noise."""
    dispositions, declarations = [], []
    items = {item["id"] for item in document["state"]["root"]["items"]}
    for event in document["events"]:
        meta = event.get("meta") or {}
        feedback = event.get("feedback") or {}
        if meta.get("type") == "question":
            item = "q-" + "".join(ch if ch.isalnum() else "-" for ch in meta["question_id"].lower())[:40].strip("-")
            dispositions.append({"event": event["id"], "disposition": "used", "why": "scripted: a question",
                                 "related": [item]})
            declarations.append({"id": item, "relation": f"supersedes:{item}" if item in items else "new",
                                 "title": event["title"][:24], "weight": "high", "kind": "needs-you",
                                 "decision": meta["decision"],
                                 "sources": [{"channel": event["channel"], "ref": f"event:{event['id']}"}]})
        elif feedback.get("meaning") in ("decide", "fallback"):
            dispositions.append({"event": event["id"], "disposition": "used", "why": "scripted: an answer",
                                 "related": [feedback["target"]]})
        else:
            dispositions.append({"event": event["id"], "disposition": "noise", "why": "scripted: noise",
                                 "related": []})
    return {"dispositions": dispositions, "batch": {"declarations": declarations, "acknowledges": []}}


def _track(document: dict, defer: set[str] = frozenset()) -> dict:
    dispositions, declarations = [], []
    for event in document["events"]:
        if event["id"] in defer:
            dispositions.append({"event": event["id"], "disposition": "deferred", "why": "scripted: later",
                                 "related": []})
            continue
        item = "t-" + "".join(ch if ch.isalnum() else "-" for ch in event["id"].lower())[-40:].strip("-")
        dispositions.append({"event": event["id"], "disposition": "used", "why": "scripted: tracked",
                             "related": [item]})
        declarations.append({"id": item, "title": (event["title"] or event["id"])[:24], "weight": "trace",
                             "kind": "fyi", "sources": [{"channel": event["channel"], "ref": f"event:{event['id']}"}]})
    return {"dispositions": dispositions, "batch": {"declarations": declarations, "acknowledges": []}}


@hookimpl
def fold_adapter_types():
    return [FixtureFeed]


@hookimpl
def fold_agent_types():
    return [Scripted]
