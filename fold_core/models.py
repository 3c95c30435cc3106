"""Typed wire shapes of contract §1–§4 and the §5 error record (pydantic models).

Fold's public schema: plugin authors build batches with these models,
``batch_schema()`` / ``receipt_schema()`` export JSON Schema, the host builds
the §9 agent-output schema from ``Declaration`` (``fold_host.skill.output``),
and the kernel property tests check every receipt and rejection the kernel
produces against ``Receipt`` / ``Rejection``. The kernel does
not use them (it validates raw dicts itself, to report all errors in §3.5's
order); this is the only module that imports pydantic.

Invariants: every object rejects unknown keys, naming the key; text, instant,
weight and kind rules are reused from ``fold_core.text`` / ``timefmt`` /
``shares``, never restated, so schema and kernel cannot drift apart; lengths are
code points; integers are strict (``true`` is not a share). Only rules decidable
from the document alone are here: targets, budgets, depth and "a lower weight
needs a reason" need the stored state and belong to the kernel.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt,
                      StrictStr, StringConstraints, model_validator)
from pydantic.json_schema import WithJsonSchema
from pydantic_core import PydanticCustomError

from fold_core.kernel.fields import Relation, RelationError
from fold_core.kernel.fields import parse_relation as _kernel_parse_relation
from fold_core.shares import KINDS, MAX_BUDGET, MIN_BUDGET, WEIGHTS
from fold_core.text import ANNOTATION_ID, BATCH_ID, ITEM_ID, check_line_text, check_multiline_text, check_name, preview
from fold_core.timefmt import parse_instant

__all__ = [
    "ERROR_CODES", "Annotation", "Batch", "BudgetItem", "ChangeEntry", "Declaration", "ErrorRecord",
    "ItemRecord", "LayerUse", "Receipt", "Rejection", "Relation", "Source", "UnsupportedRelation",
    "batch_schema", "parse_relation", "receipt_schema",
]

MAX_SOURCES = 32
ERROR_CODES = (  # the §5 table, in its order
    "invalid_json", "invalid_field", "unsupported_relation", "duplicate_declaration", "item_exists",
    "item_not_found", "item_merged", "item_inactive", "inactive_parent", "unsupported_move",
    "explicit_withdraw_required", "unsupported_merge_structure", "merge_layer_mismatch", "layer_budget",
    "annotation_not_found", "stale_revision", "batch_conflict", "store_unavailable", "store_corrupt",
)


# Relations (§3.2, §3.3): one parser, shared with the kernel.
class UnsupportedRelation(ValueError):
    """A relation word other than new / supersedes / merges / withdraw (``unsupported_relation``)."""


def parse_relation(text: object) -> Relation:
    """Parse a declaration's ``relation`` text.

    Tolerant where the contract is: ``merges:[a, b]``, ``merges:["a","b"]`` and
    ``merges: [ "a" , b ]`` are the same relation. Raises ``UnsupportedRelation``
    for an unknown relation word (``detail-of:x``) and ``ValueError`` for a known
    word written wrongly (malformed list, fewer than 2 ids, a repeated id, a bad id).
    """
    try:
        return _kernel_parse_relation(text, None)
    except RelationError as problem:
        if problem.unsupported:
            raise UnsupportedRelation(str(problem)) from None
        raise ValueError(str(problem)) from None


def _relation_text(value: str) -> str:
    try:
        parse_relation(value)
    except UnsupportedRelation as exc:
        # A distinct error type, so callers can map it to ``unsupported_relation``.
        raise PydanticCustomError("unsupported_relation", "{message}", {"message": str(exc)}) from None
    return value


# Field types: each wraps one check of fold_core.text / timefmt
def _rule(check: Any, *args: Any, **kwargs: Any) -> AfterValidator:
    """Turn a ``check_*`` function (None = fine, else a message) into a validator."""
    def validate(value: Any) -> Any:
        problem = check(value, *args, **kwargs)
        if problem is not None:
            raise ValueError(problem)
        return value
    return AfterValidator(validate)


def _instant(value: str) -> str:
    if parse_instant(value) is None:
        raise ValueError(f"expected an ISO 8601 instant with an offset (Z or ±hh:mm), got {preview(value)}")
    return value  # stored as given: another spelling of the same instant is kept verbatim


def _string(**schema: Any) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", **schema})


# Ids reuse fold_core.text's regexes (anchored: they are used with fullmatch there).
ItemId = Annotated[StrictStr, StringConstraints(pattern=f"^{ITEM_ID.pattern}$")]
BatchId = Annotated[StrictStr, StringConstraints(pattern=f"^{BATCH_ID.pattern}$")]
AnnotationId = Annotated[StrictStr, StringConstraints(pattern=f"^{ANNOTATION_ID.pattern}$")]
Title = Annotated[StrictStr, _rule(check_line_text, 1, 24, "title"), _string(minLength=1, maxLength=24)]
# "" means null (§1); any other summary follows the title's character rule.
Summary = Annotated[
    Annotated[StrictStr, _rule(check_line_text, 0, 60, "summary")] | None,
    BeforeValidator(lambda value: None if value == "" else value),
    WithJsonSchema({"type": ["string", "null"], "maxLength": 60}),
]
Reason = Annotated[StrictStr, _rule(check_line_text, 1, 200, "reason"), _string(minLength=1, maxLength=200)]
Quote = Annotated[StrictStr, _rule(check_multiline_text, 0, 280, "quote", require_visible=False),
                  _string(maxLength=280)]
Instant = Annotated[StrictStr, AfterValidator(_instant), _string(format="date-time")]
Actor = Annotated[StrictStr, _rule(check_name, "actor"), _string(minLength=1, maxLength=64)]
Author = Annotated[StrictStr, _rule(check_name, "author"), _string(minLength=1, maxLength=64)]
Share = Annotated[StrictInt, Field(ge=1, le=MAX_BUDGET)]
Revision = Annotated[StrictInt, Field(ge=0)]
Weight = Literal[WEIGHTS]  # type: ignore[valid-type]
Kind = Literal[KINDS]  # type: ignore[valid-type]


class _Wire(BaseModel):
    """Base of every wire object: unknown keys are an error, never ignored."""
    model_config = ConfigDict(extra="forbid")


# Batches (§1 sources, §3)
class Source(_Wire):
    """Where a piece of an item came from; ``quote``/``observed_at`` given as null count as absent."""
    channel: Annotated[StrictStr, _rule(check_line_text, 1, 64, "channel"), _string(minLength=1, maxLength=64)]
    ref: Annotated[StrictStr, _rule(check_line_text, 1, 512, "ref"), _string(minLength=1, maxLength=512)]
    quote: Quote | None = None
    observed_at: Instant | None = None


def _dedupe_sources(sources: list[Source]) -> list[Source]:
    """Drop later duplicates by (channel, ref), first kept (§1); then at most 32."""
    first: dict[tuple[str, str], Source] = {}
    for source in sources:
        first.setdefault((source.channel, source.ref), source)
    kept = list(first.values())
    if len(kept) > MAX_SOURCES:
        raise ValueError(f"sources must hold at most {MAX_SOURCES} entries after dropping duplicates, got {len(kept)}")
    return kept


Sources = Annotated[list[Source], AfterValidator(_dedupe_sources)]

_WITHDRAW_KEYS = frozenset({"id", "relation", "reason"})  # all a withdraw may hold (§3.2)


class Declaration(_Wire):
    """One declaration (§3.2). Omitted = keep: read ``model_fields_set``, dump with ``exclude_unset``."""
    id: ItemId
    relation: Annotated[StrictStr, AfterValidator(_relation_text)] = "new"
    # These four may be omitted (keep) but never null; a None default is not validated.
    title: Title = None  # type: ignore[assignment]
    summary: Summary = None
    weight: Weight = None
    kind: Kind = None
    share: Share | None = None
    reason: Reason | None = None
    due_at: Instant | None = None
    stale_after: Instant | None = None
    sources: Sources = None  # type: ignore[assignment]
    children: list[Declaration] | None = None

    @property
    def parsed_relation(self) -> Relation:
        """The relation as a ``Relation`` value."""
        return parse_relation(self.relation)

    @model_validator(mode="after")
    def _relation_rules(self) -> Declaration:
        relation = self.parsed_relation
        given = self.model_fields_set
        if relation.word == "supersedes" and relation.target != self.id:
            raise ValueError(f"relation supersedes:{relation.target} must name the declaration's own id {self.id!r}")
        if relation.word == "withdraw":
            extra = sorted(given - _WITHDRAW_KEYS)
            if extra:
                raise ValueError(f"a withdraw declaration may hold only id, relation, reason; got {', '.join(extra)}")
            if self.reason is None:
                raise ValueError("a withdraw declaration needs a reason")
            return self
        required = ("title", "weight", "kind") if relation.word in ("new", "merges") else ("weight", "kind")
        missing = [name for name in required if name not in given]
        if missing:
            raise ValueError(f"a {relation.word} declaration needs {', '.join(missing)}")
        if relation.word == "merges" and "children" in given:
            raise ValueError("a merges declaration may not carry children (unsupported_merge_structure)")
        return self


class Batch(_Wire):
    """A batch object (§3.1). ``actor`` and ``now`` are parameters, never keys."""
    batch_id: BatchId | None = None
    base_revision: Revision | None = None
    declarations: list[Declaration] = Field(default_factory=list)
    acknowledges: list[StrictStr] = Field(default_factory=list)


# Stored records (§2, §4)
class ItemRecord(_Wire):
    """A stored item (the post-image in a record's ``changes``), §2 field list exactly."""
    id: ItemId
    parent: ItemId | None
    status: Literal["active", "withdrawn", "merged"]
    title: Title
    summary: Summary
    weight: Weight
    kind: Kind
    explicit_share: Share | None
    share: Share
    reason: Reason | None
    due_at: Instant | None
    stale_after: Instant | None
    sources: Sources
    created_at: Instant
    updated_at: Instant
    status_at: Instant
    merged_into: ItemId | None
    withdrawn_with: ItemId | None
    ever_had_children: StrictBool

    @model_validator(mode="after")
    def _status_links(self) -> ItemRecord:
        if (self.status == "merged") != (self.merged_into is not None):
            raise ValueError("merged_into is set exactly when status is merged")
        return self


class Annotation(_Wire):
    """A stored annotation; acknowledgement fields are set together, once (§4)."""
    id: AnnotationId
    item: ItemId
    text: Annotated[StrictStr, _rule(check_multiline_text, 1, 2000, "annotation text", require_visible=False),
                    _string(minLength=1, maxLength=2000)]
    author: Author
    created_at: Instant
    status: Literal["saved", "acknowledged"] = "saved"
    acknowledged_revision: Annotated[StrictInt, Field(ge=1)] | None = None
    acknowledged_at: Instant | None = None
    acknowledged_by: Actor | None = None

    @model_validator(mode="after")
    def _ack_fields(self) -> Annotation:
        bound = [self.acknowledged_revision, self.acknowledged_at, self.acknowledged_by]
        if self.status == "acknowledged" and None in bound:
            raise ValueError("an acknowledged annotation needs acknowledged_revision, _at and _by")
        if self.status == "saved" and any(value is not None for value in bound):
            raise ValueError("a saved annotation has no acknowledgement fields")
        return self


# Answers (§4.1, §4.2, §5)
class BudgetItem(_Wire):
    """One active item of an over-budget layer, in rank order (``layer_budget.items``)."""
    id: ItemId
    weight: Weight
    share: Share


class ErrorRecord(_Wire):
    """One error of a rejection (§5): a code, a message, and that code's locators."""
    code: Literal[ERROR_CODES]  # type: ignore[valid-type]
    message: StrictStr
    # Locators are loose strings: an error may point at an id that is itself invalid.
    item: StrictStr | None = None
    field: StrictStr | None = None
    relation: StrictStr | None = None
    merged_into: StrictStr | None = None
    status: StrictStr | None = None
    parent: StrictStr | None = None
    from_parent: StrictStr | None = None
    to_parent: StrictStr | None = None
    omitted_children: list[StrictStr] | None = None
    sources: list[StrictStr] | None = None
    layers: list[StrictStr | None] | None = None
    layer: StrictStr | None = None
    budget: StrictInt | None = None
    declared: StrictInt | None = None
    over: StrictInt | None = None
    items: list[BudgetItem] | None = None
    annotation: StrictStr | None = None
    base_revision: StrictInt | None = None
    revision: StrictInt | None = None
    batch_id: StrictStr | None = None
    event_seq: StrictInt | None = None
    line: StrictInt | None = None


class ChangeEntry(_Wire):
    """One item changed by an accepted batch, with the share it holds (or held)."""
    item: ItemId
    op: Literal["created", "updated", "restored", "withdrawn", "merged"]
    layer: ItemId | None
    share: Share


class LayerUse(_Wire):
    """A layer a change touched: ``layer`` null = root."""
    layer: ItemId | None
    budget: Annotated[StrictInt, Field(ge=MIN_BUDGET, le=MAX_BUDGET)]
    used: Annotated[StrictInt, Field(ge=0)]


class Receipt(_Wire):
    """The answer to an accepted batch (§4.1); ``type`` follows the §4 table."""
    ok: Literal[True]
    type: Literal["commit", "acknowledge", "checked"]
    batch_id: BatchId
    event_seq: Annotated[StrictInt, Field(ge=1)]
    revision: Revision
    previous_revision: Revision
    at: Instant
    actor: Actor
    changes: list[ChangeEntry]
    acknowledged: list[AnnotationId]
    already_acknowledged: list[AnnotationId]
    layers: list[LayerUse]
    replayed: StrictBool

    @model_validator(mode="after")
    def _type_table(self) -> Receipt:
        expected = "commit" if self.changes else "acknowledge" if self.acknowledged else "checked"
        if self.type != expected:
            raise ValueError(f"type must be {expected!r} for these changes and acknowledgements, got {self.type!r}")
        step = 0 if self.type == "checked" else 1
        if self.revision != self.previous_revision + step:
            raise ValueError(f"a {self.type} moves the revision by {step}: "
                             f"previous {self.previous_revision}, got {self.revision}")
        return self


class Rejection(_Wire):
    """The answer to a rejected batch (§4.2): nothing was written."""
    ok: Literal[False]
    batch_id: StrictStr | None = None
    revision: Revision
    errors: Annotated[list[ErrorRecord], Field(min_length=1)]


# JSON Schema export
def batch_schema() -> dict[str, Any]:
    """JSON Schema of a batch object (§3)."""
    return Batch.model_json_schema()


def receipt_schema() -> dict[str, Any]:
    """JSON Schema of a receipt (§4.1)."""
    return Receipt.model_json_schema()

