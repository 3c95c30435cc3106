"""When the configured editor cannot be reached: the count, and the fallback editor (contract §9, §11.1).

Every window that ends because the editor could not be reached
(``agent_unavailable``) adds one to ``host_meta.agent_unreachable``
(``{"windows", "since", "error"}``); a window in which it answered clears it.
With ``[agent] fallback = "baseline"``, the window in which the count
reaches ``fallback_after`` — and every later one while it stays there — goes
to the baseline editor after the configured one was tried first: the
configured editor takes over again as soon as it answers. ``editor_status``
is what the briefing and ``doctor`` say about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fold_core.config import Config
from fold_host.hostdb import HostDB

__all__ = ["Editor", "UNREACHABLE_KEY", "editor_status", "fallback_editor", "note_reached", "note_unreachable"]

UNREACHABLE_KEY = "agent_unreachable"


@dataclass(frozen=True)
class Editor:
    """The backend that answers a window, the actor its commits carry, and whether it stands in."""

    backend: Any
    type_name: str
    actor: str
    fallback: bool = False


def note_unreachable(db: HostDB, now: str, error: dict | None) -> int:
    """One more window in a row without the editor; the count."""
    known = db.meta(UNREACHABLE_KEY) or {}
    count = int(known.get("windows", 0)) + 1
    db.set_meta(UNREACHABLE_KEY, {"windows": count, "since": known.get("since") or now,
                                  "error": (error or {}).get("message")})
    return count


def note_reached(db: HostDB) -> None:
    """The editor answered: the count starts again."""
    if db.meta(UNREACHABLE_KEY) is not None:
        db.drop_meta(UNREACHABLE_KEY)


def fallback_editor(config: Config) -> Editor | None:
    """The baseline editor when ``[agent] fallback`` asks for it (and the configured one is another)."""
    agent = config.agent
    if agent is None or getattr(agent.settings, "fallback", None) != "baseline" or agent.type_name == "baseline":
        return None
    entry = config.registry.get("agent", "baseline") if config.registry is not None else None
    if entry is None:
        return None
    return Editor(entry.cls(entry.settings_model()), "baseline", "agent:baseline", fallback=True)


def editor_status(db: HostDB, config: Config) -> dict | None:
    """None while the editor answers; else ``{"type", "windows", "since", "error", "fallback"}``.

    ``fallback`` is ``"baseline"`` when the baseline editor is standing in.
    """
    known = db.meta(UNREACHABLE_KEY)
    if not known or config.agent is None:
        return None
    settings = config.agent.settings
    standing_in = (getattr(settings, "fallback", None) == "baseline" and config.agent.type_name != "baseline"
                   and known.get("windows", 0) >= getattr(settings, "fallback_after", 3))
    return {"type": config.agent.type_name, "windows": known.get("windows", 0), "since": known.get("since"),
            "error": known.get("error"), "fallback": "baseline" if standing_in else None}
