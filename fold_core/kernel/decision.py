"""The decision frame of a ``needs-you`` item (contract §3.2, §8).

``check_decision`` reads a declared frame and answers the normalised frame
(keys that are absent or null left out, so that equal frames are equal
dicts) or the problems found, each located by its full path
(``declarations[0].decision.options[1].id``). ``frame_digest`` is the frame's
identity that an answer binds to: the first 16 hex characters of SHA-256
over its canonical JSON. Pure: no clock, no state.
"""

from __future__ import annotations

import hashlib
import json
import re

from fold_core.text import check_line_text, preview, type_name
from fold_core.timefmt import parse_instant

__all__ = ["DecisionProblem", "EVIDENCE", "check_decision", "frame_digest", "frame_view", "same_frame"]

FRAME_KEYS = ("question", "options", "recommended", "basis", "fallback", "decide_by", "evidence", "gap")
OPTION_KEYS = ("id", "label", "consequence")
FALLBACK_KEYS = ("option", "summary")
EVIDENCE = ("complete", "partial", "missing", "conflicting")
OPTION_ID = re.compile(r"[a-z0-9-]{1,24}")

# (code, field, message, extra): code is invalid_field or unknown_option.
DecisionProblem = tuple[str, str, str, dict]


def _text(value: object, low: int, high: int, field: str) -> str | None:
    """The problem of a one-line text of ``low``–``high`` code points (``""`` allowed when ``low`` is 0)."""
    if low == 0 and value == "":
        return None
    problem = check_line_text(value, max(low, 1), high, field)
    return problem.replace(f"must be 1–{high}", f"must be 0–{high}") if problem and low == 0 else problem


class _Reader:
    def __init__(self, where: str) -> None:
        self.where = where
        self.problems: list[DecisionProblem] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append(("invalid_field", path, message, {}))

    def unknown_keys(self, raw: dict, known: tuple[str, ...], path: str) -> None:
        for key in raw:
            if key not in known:
                self.bad(f"{path}.{key if len(key) <= 64 else key[:64] + '…'}", f"unknown key {preview(key)}")

    def line(self, raw: dict, key: str, low: int, high: int, path: str, *, required: bool) -> str | None:
        value = raw.get(key)
        if value is None:
            if required:
                self.bad(f"{path}.{key}", f"{path}.{key} is required")
            return None
        problem = _text(value, low, high, f"{path}.{key}")
        if problem is not None:
            self.bad(f"{path}.{key}", problem)
            return None
        return value if isinstance(value, str) else None

    def options(self, raw: object, path: str) -> list[dict]:
        if not isinstance(raw, list):
            self.bad(path, f"{path} must be an array of 2–5 options, got {type_name(raw)}")
            return []
        if not 2 <= len(raw) <= 5:
            self.bad(path, f"{path} must hold 2–5 options, got {len(raw)}")
        kept: list[dict] = []
        seen: set[str] = set()
        for index, option in enumerate(raw):
            where = f"{path}[{index}]"
            if not isinstance(option, dict):
                self.bad(where, f"{where} must be an object, got {type_name(option)}")
                continue
            self.unknown_keys(option, OPTION_KEYS, where)
            option_id = option.get("id")
            if not isinstance(option_id, str) or OPTION_ID.fullmatch(option_id) is None:
                self.bad(f"{where}.id", f"{where}.id must match [a-z0-9-]{{1,24}}, got {preview(option_id)}")
            elif option_id in seen:
                self.bad(f"{where}.id", f"{where}.id {option_id} is already used in this frame")
            else:
                seen.add(option_id)
            label = self.line(option, "label", 1, 40, where, required=True)
            consequence = self.line(option, "consequence", 0, 160, where, required=False)
            entry: dict = {"id": option_id, "label": label}
            if consequence is not None:
                entry["consequence"] = consequence
            kept.append(entry)
        return kept

    def option_ref(self, value: object, path: str, ids: set[str]) -> str | None:
        if not isinstance(value, str):
            self.bad(path, f"{path} must be an option id, got {type_name(value)}")
            return None
        if value not in ids:
            shown = value if len(value) <= 64 else value[:64] + "…"
            self.problems.append(("unknown_option", path, f"{path} names {preview(value)}, which is not an "
                                  f"option of this frame ({', '.join(sorted(ids))})", {"option": shown}))
            return None
        return value

    def fallback(self, raw: object, path: str, ids: set[str]) -> dict | None:
        if not isinstance(raw, dict):
            self.bad(path, f"{path} must be an object {{summary, option?}}, got {type_name(raw)}")
            return None
        self.unknown_keys(raw, FALLBACK_KEYS, path)
        summary = self.line(raw, "summary", 1, 160, path, required=True)
        fallback: dict = {"summary": summary}
        if raw.get("option") is not None:
            option = self.option_ref(raw["option"], f"{path}.option", ids)
            if option is not None:
                fallback["option"] = option
        return fallback

    def frame(self, raw: dict) -> dict:
        path = self.where
        self.unknown_keys(raw, FRAME_KEYS, path)
        frame: dict = {"question": self.line(raw, "question", 1, 160, path, required=True)}
        if "options" not in raw:
            self.bad(f"{path}.options", f"{path}.options is required")
            options: list[dict] = []
        else:
            options = self.options(raw["options"], f"{path}.options")
        frame["options"] = options
        ids = {option["id"] for option in options if isinstance(option["id"], str)}
        if raw.get("recommended") is not None:
            recommended = self.option_ref(raw["recommended"], f"{path}.recommended", ids)
            if recommended is not None:
                frame["recommended"] = recommended
        basis = self.line(raw, "basis", 0, 200, path, required=False)
        if basis is not None:
            frame["basis"] = basis
        if raw.get("fallback") is not None:
            frame["fallback"] = self.fallback(raw["fallback"], f"{path}.fallback", ids)
        decide_by = raw.get("decide_by")
        if decide_by is not None:
            if not isinstance(decide_by, str) or parse_instant(decide_by) is None:
                self.bad(f"{path}.decide_by", f"{path}.decide_by must be an ISO 8601 time with an offset, "
                                              f"got {preview(decide_by)}")
            else:
                frame["decide_by"] = decide_by
        evidence = raw.get("evidence")
        if evidence not in EVIDENCE:
            self.bad(f"{path}.evidence", f"{path}.evidence must be one of {', '.join(EVIDENCE)}; "
                                         f"got {preview(evidence)}")
        else:
            frame["evidence"] = evidence
        gap = self.line(raw, "gap", 1, 160, path, required=evidence in EVIDENCE and evidence != "complete")
        if gap is not None:
            frame["gap"] = gap
        return frame


def check_decision(value: object, where: str) -> tuple[dict | None, list[DecisionProblem]]:
    """The normalised frame (None for ``null``: clear) and the problems, located under ``where``."""
    if value is None:
        return None, []
    reader = _Reader(where)
    if not isinstance(value, dict):
        reader.bad(where, f"{where} must be an object or null, got {type_name(value)}")
        return None, reader.problems
    frame = reader.frame(value)
    return (None, reader.problems) if reader.problems else (frame, [])


def _canonical(value: object) -> object:
    if isinstance(value, dict):
        return {key: _canonical(item) for key, item in value.items() if item is not None and key != "digest"}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def frame_digest(frame: dict) -> str:
    """First 16 hex characters of SHA-256 over the canonical JSON (sorted keys, no nulls, UTF-8 unescaped)."""
    text = json.dumps(_canonical(frame), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def frame_view(frame: dict | None) -> dict | None:
    """The frame as the state document shows it: with its ``digest``."""
    if frame is None:
        return None
    return {**frame, "digest": frame_digest(frame)}


def same_frame(a: dict | None, b: dict | None) -> bool:
    """Equal frames, ``decide_by`` compared as an instant (another spelling of it is not a change)."""
    if a is None or b is None:
        return a is b
    if {**a, "decide_by": None} != {**b, "decide_by": None}:
        return False
    x, y = a.get("decide_by"), b.get("decide_by")
    if x is None or y is None:
        return x is y
    return x == y or parse_instant(x) == parse_instant(y)
