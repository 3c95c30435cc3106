"""A worked example of a third-party Fold plugin: one adapter, one consumer, one agent backend.

It is tested as written (tests/integration/test_docs_example_plugin.py). Use it
from plugins.toml with::

    [[plugins]]
    module = "fold_notes_plugin"      # importable: on sys.path, or installed

    [[adapters]]
    name = "notes"
    type = "notes"
    path = "~/notes"                  # every *.txt file is one observation

    [[consumers]]
    name = "tally"
    type = "tally"
    path = "tally.json"

or ship it as a distribution with an entry point in the group ``fold``::

    [project.entry-points.fold]
    notes = "fold_notes_plugin"
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path

from fold_core import hookimpl
from fold_core.observation import Health, Observation, Poll, bound_text
from fold_core.plugin_api import Adapter, AgentBackend, AgentRequest, Consumer, ConsumerContext, Reply
from fold_core.settings import AdapterSettings, ConfigPath, ConsumerSettings


class NotesAdapter(Adapter):
    """Every ``*.txt`` file in a directory is one observation; an edited file is a new one."""

    type_name = "notes"
    channel = "notes"

    class Settings(AdapterSettings):
        path: ConfigPath

    def poll(self, cursor, *, now: datetime) -> Poll:
        seen: dict[str, str] = dict(cursor or {})
        if not Path(self.settings.path).is_dir():
            return Poll(cursor=cursor, health=Health.failed("io", f"{self.settings.path}: not a directory"))
        try:
            files = sorted(Path(self.settings.path).glob("*.txt"))
            observations = []
            for file in files:
                text = file.read_text(encoding="utf-8", errors="replace")
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
                if seen.get(file.name) == digest:
                    continue
                seen[file.name] = digest
                observations.append(Observation(
                    id=f"{self.name}:{file.name}:{digest}", source=self.name, channel=self.channel,
                    at=datetime.fromtimestamp(file.stat().st_mtime).astimezone().isoformat(),
                    observed_at=now.isoformat(), title=file.stem, text=bound_text(text)))
        except OSError as error:  # a source failure is a value, never an exception
            return Poll(cursor=cursor, health=Health.failed("io", f"{self.settings.path}: {error}"))
        return Poll(observations=observations, cursor=seen)


class TallyConsumer(Consumer):
    """Counts accepted records by type into a JSON file (rewritten atomically)."""

    type_name = "tally"

    class Settings(ConsumerSettings):
        path: ConfigPath

    def deliver(self, records, context: ConsumerContext) -> None:
        counts = dict(context.memory.get("counts", {}))
        for record in records:
            counts[record["type"]] = counts.get(record["type"], 0) + 1
        context.memory["counts"] = counts
        target = Path(self.settings.path)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps({"counts": counts, "event_seq": context.state.event_seq}))
        os.replace(temporary, target)


class DeferAllAgent(AgentBackend):
    """An editor that defers every event and changes nothing (the kernel records ``checked``)."""

    type_name = "defer-all"
    uses_llm = False

    def propose(self, request: AgentRequest) -> Reply:
        events = request.input.get("events", [])
        output = {"dispositions": [{"event": e["id"], "disposition": "deferred", "why": "example backend"}
                                   for e in events],
                  "batch": {"declarations": [], "acknowledges": []}}
        return Reply(output=output, raw=json.dumps(output))


@hookimpl
def fold_adapter_types():
    return [NotesAdapter]


@hookimpl
def fold_consumer_types():
    return [TallyConsumer]


@hookimpl
def fold_agent_types():
    return [DeferAllAgent]
