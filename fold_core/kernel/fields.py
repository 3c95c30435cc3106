"""Field rules of a declaration (contract §1, §3.2).

Each ``check_*`` takes the raw JSON value and returns ``(value, problems)``:
the normalised value when it is acceptable, and a list of ``(field,
message)`` pairs otherwise. The relation parser is tolerant where the contract
says so (``merges:[a, b]`` and ``merges:["a","b"]``) and strict everywhere
else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fold_core.shares import KINDS, MAX_BUDGET, WEIGHTS
from fold_core.text import ITEM_ID, check_line_text, check_multiline_text, preview, type_name
from fold_core.timefmt import parse_instant

__all__ = [
    "DECLARATION_KEYS",
    "MAX_SOURCES",
    "Relation",
    "RelationError",
    "check_instant",
    "check_kind",
    "check_reason",
    "check_share",
    "check_sources",
    "check_summary",
    "check_title",
    "check_weight",
    "merge_sources",
    "parse_relation",
    "same_instant",
    "same_sources",
]

DECLARATION_KEYS = (
    "id", "relation", "title", "summary", "weight", "kind", "share", "reason",
    "due_at", "stale_after", "sources", "children",
)
SOURCE_KEYS = ("channel", "ref", "quote", "observed_at")
MAX_SOURCES = 32
RELATION_WORDS = ("new", "supersedes", "merges", "withdraw")

Problems = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Relation:
    """A parsed relation: ``word`` and, for supersedes/merges, its ids."""

    word: str
    target: str | None = None
    sources: tuple[str, ...] = ()


class RelationError(ValueError):
    """A relation that is malformed (``invalid_field``) or unsupported."""

    def __init__(self, message: str, *, unsupported: bool) -> None:
        super().__init__(message)
        self.unsupported = unsupported


_MERGE_ID = re.compile(r'\s*(?:"([a-z0-9-]{1,64})"|([a-z0-9-]{1,64}))\s*')


def parse_relation(value: object, declared_id: str | None = None) -> Relation:
    """Parse ``new`` / ``supersedes:<id>`` / ``merges:[a, b, …]`` / ``withdraw``.

    With ``declared_id``, a supersedes target must equal it.
    """
    if value is None:
        raise RelationError("relation must be a string, got null (omit it for new)", unsupported=False)
    if not isinstance(value, str):
        raise RelationError(f"relation must be a string, got {type_name(value)}", unsupported=False)
    word, colon, rest = value.partition(":")
    if word not in RELATION_WORDS:
        raise RelationError(f"relation {preview(word)} is not supported "
                            "(use new, supersedes:<id>, merges:[a, b] or withdraw)", unsupported=True)
    if word in ("new", "withdraw"):
        if colon:
            raise RelationError(f"relation {word!r} takes no argument, got {preview(value)}", unsupported=False)
        return Relation(word)
    if not colon:
        raise RelationError(f"relation {word!r} needs an argument, got {preview(value)}", unsupported=False)
    if word == "supersedes":
        target = rest.strip()
        if not ITEM_ID.fullmatch(target):
            raise RelationError(f"supersedes needs an item id, got {preview(rest)}", unsupported=False)
        if declared_id is not None and target != declared_id:
            raise RelationError(f"supersedes:{target} must name the declaration's own id "
                                f"{preview(declared_id)}", unsupported=False)
        return Relation(word, target=target)
    return Relation(word, sources=_merge_list(rest))


def _merge_list(text: str) -> tuple[str, ...]:
    body = text.strip()
    if len(body) < 2 or body[0] != "[" or body[-1] != "]":
        raise RelationError(f"merges needs a list like merges:[a, b], got {preview(text)}", unsupported=False)
    inner = body[1:-1]
    ids: list[str] = []
    for part in inner.split(","):
        match = _MERGE_ID.fullmatch(part)
        if match is None:
            raise RelationError(f"merges list has a malformed id {preview(part.strip())}", unsupported=False)
        ids.append(match.group(1) or match.group(2))
    if len(ids) < 2:
        raise RelationError("merges needs at least 2 ids", unsupported=False)
    repeated = sorted({item for item in ids if ids.count(item) > 1})
    if repeated:
        raise RelationError(f"merges lists {repeated[0]} more than once", unsupported=False)
    return tuple(ids)


def _line(value: object, low: int, high: int, field: str) -> tuple[str | None, Problems]:
    """``value`` when it is one line of ``low``–``high`` code points (``check_line_text``), else the problem."""
    problem = check_line_text(value, low, high, field)
    if problem is None and isinstance(value, str):  # (only a str passes check_line_text)
        return value, []
    return None, [(field, problem or f"{field} must be a string")]


def check_title(value: object) -> tuple[str | None, Problems]:
    if value is None:
        return None, [("title", "title must not be null (omit it to keep the stored title)")]
    return _line(value, 1, 24, "title")


def check_summary(value: object) -> tuple[str | None, Problems]:
    if value is None or value == "":
        return None, []
    return _line(value, 1, 60, "summary")


def check_reason(value: object) -> tuple[str | None, Problems]:
    if value is None:
        return None, []
    return _line(value, 1, 200, "reason")


def _check_choice(value: object, field: str, choices: tuple[str, ...]) -> tuple[str | None, Problems]:
    if isinstance(value, str) and value in choices:
        return value, []
    return None, [(field, f"{field} must be one of {', '.join(choices)}; got {preview(value)}")]


def check_weight(value: object) -> tuple[str | None, Problems]:
    return _check_choice(value, "weight", WEIGHTS)


def check_kind(value: object) -> tuple[str | None, Problems]:
    return _check_choice(value, "kind", KINDS)


def check_share(value: object, budget: int) -> tuple[int | None, Problems]:
    """An override 1…B, or null to cancel."""
    if value is None:
        return None, []
    if isinstance(value, bool) or not isinstance(value, int):
        return None, [("share", f"share must be an integer 1–{budget} or null, got {type_name(value)}")]
    if not 1 <= value <= min(budget, MAX_BUDGET):
        shown = value if abs(value) < 10**12 else "a huge number"
        return None, [("share", f"share must be 1–{budget}, got {shown}")]
    return value, []


def check_instant(value: object, field: str) -> tuple[str | None, Problems]:
    """An ISO 8601 instant with an offset, or null."""
    if value is None:
        return None, []
    if not isinstance(value, str) or parse_instant(value) is None:  # (parse_instant takes only a str)
        return None, [(field, f"{field} must be an ISO 8601 time with an offset "
                              f"(e.g. 2026-10-12T18:00:00+08:00), got {preview(value)}")]
    return value, []


def check_sources(value: object) -> tuple[list[dict] | None, Problems]:
    """A list of ``{channel, ref, quote?, observed_at?}``, deduplicated by (channel, ref)."""
    if not isinstance(value, list):
        return None, [("sources", f"sources must be an array, got {type_name(value)}")]
    problems: Problems = []
    kept: list[dict] = []
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(value):
        where = f"sources[{index}]"
        if not isinstance(raw, dict):
            problems.append(("sources", f"{where} must be an object, got {type_name(raw)}"))
            continue
        before = len(problems)
        problems.extend((key if len(key) <= 64 else key[:64] + "…", f"{where}: unknown key {preview(key)}")
                        for key in raw if key not in SOURCE_KEYS)
        for key, low, high in (("channel", 1, 64), ("ref", 1, 512)):
            if key not in raw:
                problems.append(("sources", f"{where}.{key} is required"))
                continue
            problem = check_line_text(raw[key], low, high, f"{where}.{key}")
            if problem:
                problems.append(("sources", problem))
        quote = raw.get("quote")
        if quote is not None:
            problem = check_multiline_text(quote, 0, 280, f"{where}.quote", require_visible=False)
            if problem:
                problems.append(("sources", problem))
        observed = raw.get("observed_at")
        if observed is not None and parse_instant(observed) is None:
            problems.append(("sources", f"{where}.observed_at must be an ISO 8601 time with an offset, "
                                        f"got {preview(observed)}"))
        if len(problems) > before:
            continue
        identity = (raw["channel"], raw["ref"])
        if identity in seen:
            continue
        seen.add(identity)
        source = {"channel": raw["channel"], "ref": raw["ref"]}
        if quote is not None:
            source["quote"] = quote
        if observed is not None:
            source["observed_at"] = observed
        kept.append(source)
    if not problems and len(kept) > MAX_SOURCES:
        problems.append(("sources", f"at most {MAX_SOURCES} sources per item, got {len(kept)} "
                                    "after dropping duplicates"))
    return (None, problems) if problems else (kept, [])


def same_instant(a: str | None, b: str | None) -> bool:
    """Whether two stored-or-declared times name the same instant (or are both absent)."""
    if a is None or b is None:
        return a is b
    return a == b or parse_instant(a) == parse_instant(b)


def same_sources(a: list[dict], b: list[dict]) -> bool:
    """Source lists equal, comparing ``observed_at`` as instants."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.keys() != y.keys():
            return False
        for key in x:
            if key == "observed_at":
                if not same_instant(x[key], y[key]):
                    return False
            elif x[key] != y[key]:
                return False
    return True


def merge_sources(declared: list[dict], inherited: list[list[dict]]) -> list[dict]:
    """Declared sources, then each merged item's sources in order, deduplicated."""
    seen = {(source["channel"], source["ref"]) for source in declared}
    merged = list(declared)
    for sources in inherited:
        for source in sources:
            key = (source["channel"], source["ref"])
            if key not in seen:
                seen.add(key)
                merged.append(source)
    return merged
