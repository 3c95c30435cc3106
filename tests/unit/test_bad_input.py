"""Bad input is answered with a rejection, never a traceback (contract §3.1,
§3.2, §5, §7 "A traceback is never the answer to bad input").

Everything goes through ``memory_store()`` (the kernel mode of the store) or
the kernel's ``save_annotation``: non-object batches, wrong types for every
field, huge strings, deep nesting, unknown relations, lone surrogates, huge
integers and NaN. Each must come back as exit code 1 with structured errors
(``code`` and a short ``message``), as one strict JSON document, with the
store unchanged.
"""

from __future__ import annotations

import copy
import json

import pytest

from fold_core.kernel import Rejected, save_annotation
from fold_core.store.memory import memory_store

NOW = "2026-10-09T08:00:00+08:00"
CODES = {
    "invalid_json", "invalid_field", "unsupported_relation", "duplicate_declaration", "item_exists",
    "item_not_found", "item_merged", "item_inactive", "inactive_parent", "unsupported_move",
    "explicit_withdraw_required", "unsupported_merge_structure", "merge_layer_mismatch", "layer_budget",
    "annotation_not_found", "stale_revision", "batch_conflict",
}
MAX_MESSAGE = 500
TEN_MB = "x" * 10_000_000
HUGE_INT = 10**5000  # more digits than str(int) converts by default (Python ≥ 3.11)


def nested_dict(levels: int) -> dict:
    """``{"a": {"a": ... {}}}`` built iteratively (a recursive builder would overflow)."""
    root: dict = {}
    current = root
    for _ in range(levels):
        current["a"] = {}
        current = current["a"]
    return root


def nested_list(levels: int) -> list:
    root: list = []
    current = root
    for _ in range(levels):
        inner: list = []
        current.append(inner)
        current = inner
    return root


def nested_children(levels: int, prefix: str = "d") -> dict:
    """A chain of new declarations ``d1 > d2 > … > d<levels>``, built iteratively."""
    root = {"id": f"{prefix}1", "title": "level 1", "summary": "nested", "weight": "trace", "kind": "fyi"}
    current = root
    for level in range(2, levels + 1):
        child = {"id": f"{prefix}{level}", "title": f"level {level}", "summary": "nested",
                 "weight": "trace", "kind": "fyi"}
        current["children"] = [child]
        current = child
    return root


DEEP_DICT = nested_dict(10_000)
DEEP_LIST = nested_list(10_000)

def seeded_store():
    """A store holding active, parent/child, withdrawn and merged items and one annotation."""
    store = memory_store(64)
    seed = {"batch_id": "seed-1", "declarations": [
        {"id": "visa", "title": "签证材料缺银行流水，12日截止", "weight": "critical", "kind": "needs-you"},
        {"id": "home", "title": "Home", "summary": "rent and bills", "weight": "normal", "kind": "fyi",
         "children": [{"id": "rent", "title": "Rent", "weight": "high", "kind": "needs-you"},
                      {"id": "bills", "title": "Bills", "weight": "low", "kind": "fyi"}]},
        {"id": "old", "title": "Old thing", "weight": "low", "kind": "fyi"},
        {"id": "a", "title": "A", "weight": "trace", "kind": "fyi"},
        {"id": "b", "title": "B", "weight": "trace", "kind": "fyi"},
    ]}
    assert store.commit(seed, actor="agent", now=NOW).exit_code == 0
    later = {"batch_id": "seed-2", "declarations": [
        {"id": "old", "relation": "withdraw", "reason": "done"},
        {"id": "ab", "relation": "merges:[a, b]", "title": "A and B", "weight": "trace", "kind": "fyi"},
    ]}
    assert store.commit(later, actor="agent", now=NOW).exit_code == 0
    assert store.annotate(item="visa", text="bank statement sent", author="user", now=NOW).exit_code == 0
    return store


def check_rejection(document: dict, *, code: str | None = None, field: str | None = None,
                    item: str | None = None) -> list[dict]:
    """The §4.2 shape: ok false, ≥ 1 error each with a known code and a short message."""
    assert document["ok"] is False, document
    # one strict JSON document for stdout: no NaN, no unprintable huge integers
    text = json.dumps(document, allow_nan=False)
    assert json.loads(text) == json.loads(json.dumps(document)), "the document does not round-trip"
    assert len(text) < 50_000, f"the rejection is {len(text)} characters long"
    errors = document["errors"]
    assert isinstance(errors, list) and errors, document
    for entry in errors:
        assert entry["code"] in CODES, entry
        assert isinstance(entry["message"], str) and entry["message"], entry
        assert len(entry["message"]) < MAX_MESSAGE, f"message of {len(entry['message'])} characters"
    if code is not None:
        wanted = [entry for entry in errors if entry["code"] == code
                  and (field is None or entry.get("field") == field)
                  and (item is None or entry.get("item") == item)]
        assert wanted, f"expected {code} (field={field}, item={item}), got {[_brief(e) for e in errors]}"
    return errors


def _brief(entry: dict) -> dict:
    return {key: entry[key] for key in ("code", "field", "item") if key in entry}


class Harness:
    """A seeded store plus what it held before the bad request."""

    def __init__(self) -> None:
        self.store = seeded_store()
        self.before = copy.deepcopy(self.store.state())
        self.log_length = len(self.store.recorder.log)

    def commit(self, batch: object, *, actor: object = "agent", now: object = NOW,
               batch_id: object = None) -> dict:
        answer = self.store.commit(batch, actor=actor, now=now, batch_id=batch_id)
        assert answer.exit_code == 1, f"expected a rejection (exit 1), got exit {answer.exit_code}"
        self.unchanged()
        return answer.document

    def annotate(self, **arguments: object) -> dict:
        values = {"item": "visa", "text": "a note", "author": "user", "now": NOW, **arguments}
        answer = self.store.annotate(**values)
        assert answer.exit_code == 1, f"expected a rejection (exit 1), got exit {answer.exit_code}"
        self.unchanged()
        return answer.document

    def unchanged(self) -> None:
        assert len(self.store.recorder.log) == self.log_length, "a rejected request wrote a record"
        assert self.store.state() == self.before, "a rejected request changed the state"


@pytest.fixture
def harness() -> Harness:
    return Harness()


def new_declaration(**fields: object) -> dict:
    decl = {"id": "fresh", "title": "Fresh", "weight": "normal", "kind": "fyi"}
    decl.update(fields)
    return decl


def one(declaration: object) -> dict:
    return {"batch_id": "bad-1", "declarations": [declaration]}


# -- 1. not an object --------------------------------------------------------

NON_OBJECTS = [[], [new_declaration()], "x", "", '{"batch_id": "b"}', 3, 0, -1, 2.5, None, True, False]


@pytest.mark.parametrize("batch", NON_OBJECTS, ids=[repr(value)[:30] for value in NON_OBJECTS])
@pytest.mark.parametrize("batch_id", [None, "b-1"])
def test_a_batch_that_is_not_an_object_is_invalid_json(harness, batch, batch_id):
    document = harness.commit(batch, batch_id=batch_id)
    errors = check_rejection(document, code="invalid_json")
    assert len(errors) == 1
    assert document["revision"] == harness.before.revision


# -- 2. wrong types for every batch field --------------------------------------

BATCH_FIELD_CASES = [
    ("batch_id", value) for value in (5, 2.5, True, [], {}, "", "has space", "x" * 129, "ü")
] + [
    ("base_revision", value) for value in ("1", 1.5, -1, True, [], {})
] + [
    ("declarations", value) for value in ({}, "x", 5, True, 2.5)
] + [
    ("acknowledges", value) for value in ("ann-1", 5, {}, True, [5], [None], [[]], [{}])
]


@pytest.mark.parametrize(("key", "value"), BATCH_FIELD_CASES,
                         ids=[f"{key}={value!r}"[:40] for key, value in BATCH_FIELD_CASES])
def test_a_wrong_batch_field_is_invalid_field(harness, key, value):
    batch = {"batch_id": "bad-1", key: value}
    document = harness.commit(batch)
    check_rejection(document, code="invalid_field", field=key)


def test_an_unknown_batch_key_is_named(harness):
    document = harness.commit({"batch_id": "bad-1", "colour": "red"})
    check_rejection(document, code="invalid_field", field="colour")


def test_a_missing_batch_id_is_invalid_field(harness):
    check_rejection(harness.commit({"declarations": []}), code="invalid_field", field="batch_id")


def test_a_batch_id_mismatch_is_invalid_field(harness):
    check_rejection(harness.commit({"batch_id": "one"}, batch_id="two"), code="invalid_field", field="batch_id")


WRONG_TYPES = (5, 2.5, True, [], {}, [1, 2], {"a": 1})
UNHASHABLE = ([], {}, [1, 2], {"a": 1})

DECLARATION_CASES: list[tuple[str, object, str, str]] = []  # (key, value, code, field)
for _value in WRONG_TYPES + (None, "", "UPPER", "has space", "x" * 65, "a_b"):
    DECLARATION_CASES.append(("id", _value, "invalid_field", "id"))
for _value in WRONG_TYPES + (None, "supersedes:other", "merges:[a]", "new:x", "withdraw:x", "supersedes"):
    DECLARATION_CASES.append(("relation", _value, "invalid_field", "relation"))
for _value in WRONG_TYPES + (None, "", "   ", "x" * 25, "a\nb", "a\u2028b", "a\x00b", "\t"):
    DECLARATION_CASES.append(("title", _value, "invalid_field", "title"))
for _value in WRONG_TYPES + ("x" * 61, "a\nb", "   ", "\u2029"):
    DECLARATION_CASES.append(("summary", _value, "invalid_field", "summary"))
for _value in WRONG_TYPES + (None, "", "urgent", "CRITICAL", " high"):
    DECLARATION_CASES.append(("weight", _value, "invalid_field", "weight"))
for _value in WRONG_TYPES + (None, "", "todo", "FYI"):
    DECLARATION_CASES.append(("kind", _value, "invalid_field", "kind"))
for _value in ("3", 2.5, True, False, [], {}, 0, -1, 65, 3.0):
    DECLARATION_CASES.append(("share", _value, "invalid_field", "share"))
for _key in ("due_at", "stale_after"):
    for _value in WRONG_TYPES + ("", "tomorrow", "2026-10-12T18:00:00", "2026-10-12", "12/10/2026 18:00"):
        DECLARATION_CASES.append((_key, _value, "invalid_field", _key))
for _value in ("x", 5, True, {}, 2.5, [5], [None], [[]], [{}], [{"channel": "c"}], [{"ref": "r"}],
               [{"channel": 5, "ref": "r"}], [{"channel": "c", "ref": 5}], [{"channel": "", "ref": "r"}],
               [{"channel": "c", "ref": "a\nb"}], [{"channel": "c", "ref": "r", "quote": 5}],
               [{"channel": "c", "ref": "r", "quote": "q" * 281}],
               [{"channel": "c", "ref": "r", "observed_at": 5}],
               [{"channel": "c", "ref": "r", "observed_at": "2026-10-09T08:00:00"}],
               [{"channel": "c", "ref": "r", "observed_at": []}],
               [{"channel": "c", "ref": "r", "observed_at": {}}],
               [{"channel": "c", "ref": f"r{index}"} for index in range(33)]):
    DECLARATION_CASES.append(("sources", _value, "invalid_field", "sources"))
for _value in ("x", 5, True, {}, 2.5):
    DECLARATION_CASES.append(("children", _value, "invalid_field", "children"))


def _case_id(key: str, value: object) -> str:
    return f"{key}={value!r}"[:48]


@pytest.mark.parametrize(("key", "value", "code", "field"), [
    pytest.param(*case, id=_case_id(case[0], case[1]))
    for case in DECLARATION_CASES])
def test_a_wrong_declaration_field_is_invalid_field(harness, key, value, code, field):
    document = harness.commit(one(new_declaration(**{key: value})))
    check_rejection(document, code=code, field=field)


REASON_CASES = [5, 2.5, True, [], {}, "", "   ", "x" * 201, "a\nb", "a\x07b"]


@pytest.mark.parametrize("value", REASON_CASES, ids=[repr(value)[:30] for value in REASON_CASES])
def test_a_wrong_withdraw_reason_is_invalid_field(harness, value):
    document = harness.commit(one({"id": "visa", "relation": "withdraw", "reason": value}))
    check_rejection(document, code="invalid_field", field="reason")


def test_a_missing_withdraw_reason_is_invalid_field(harness):
    check_rejection(harness.commit(one({"id": "visa", "relation": "withdraw"})),
                    code="invalid_field", field="reason")


def test_an_unknown_declaration_key_is_named(harness):
    check_rejection(harness.commit(one(new_declaration(colour="red"))), code="invalid_field", field="colour")


def test_an_unknown_source_key_is_named(harness):
    declaration = new_declaration(sources=[{"channel": "email", "ref": "m-1", "colour": "red"}])
    check_rejection(harness.commit(one(declaration)), code="invalid_field", field="colour")


NON_OBJECT_DECLARATIONS = [5, "x", None, True, [], [new_declaration()]]


@pytest.mark.parametrize("declaration", NON_OBJECT_DECLARATIONS,
                         ids=[repr(value)[:30] for value in NON_OBJECT_DECLARATIONS])
def test_a_declaration_that_is_not_an_object_is_rejected(harness, declaration):
    check_rejection(harness.commit(one(declaration)), code="invalid_field")


@pytest.mark.parametrize("child", [5, "x", None, [], True], ids=repr)
def test_a_child_that_is_not_an_object_is_rejected(harness, child):
    parent = new_declaration(summary="has children", children=[child])
    check_rejection(harness.commit(one(parent)), code="invalid_field")


# -- 3. a 10 MB string ------------------------------------------------------

TEN_MB_CASES = [
    ("title", lambda: one(new_declaration(title=TEN_MB)), "title"),
    ("summary", lambda: one(new_declaration(summary=TEN_MB)), "summary"),
    ("id", lambda: one(new_declaration(id=TEN_MB)), "id"),
    ("weight", lambda: one(new_declaration(weight=TEN_MB)), "weight"),
    ("due_at", lambda: one(new_declaration(due_at=TEN_MB)), "due_at"),
    ("reason", lambda: one({"id": "visa", "relation": "withdraw", "reason": TEN_MB}), "reason"),
    ("source ref", lambda: one(new_declaration(sources=[{"channel": "email", "ref": TEN_MB}])), "sources"),
    ("batch_id", lambda: {"batch_id": TEN_MB}, "batch_id"),
    ("acknowledges", lambda: {"batch_id": "bad-1", "acknowledges": [TEN_MB]}, None),
]


@pytest.mark.parametrize(("where", "build", "field"), TEN_MB_CASES, ids=[case[0] for case in TEN_MB_CASES])
def test_a_10_mb_string_gives_a_short_rejection(harness, where, build, field):
    document = harness.commit(build())
    errors = check_rejection(document, code="invalid_field" if field else None, field=field)
    assert len(json.dumps(document)) < 5_000, "a huge value was echoed into the rejection"
    assert all(len(json.dumps(entry)) < 1_000 for entry in errors)


def test_a_10_mb_relation_gives_a_short_rejection(harness):
    document = harness.commit(one(new_declaration(relation="detail-of:" + TEN_MB)))
    check_rejection(document, code="unsupported_relation")
    assert len(json.dumps(document)) < 5_000


def test_a_10_mb_unknown_key_gives_a_short_rejection(harness):
    document = harness.commit(one(new_declaration(**{TEN_MB: 1})))
    check_rejection(document, code="invalid_field")
    assert len(json.dumps(document)) < 5_000
    document = harness.commit({"batch_id": "bad-1", TEN_MB: 1})
    check_rejection(document, code="invalid_field")
    assert len(json.dumps(document)) < 5_000


@pytest.mark.parametrize("argument", ["actor", "now"])
def test_a_10_mb_actor_or_now_gives_a_short_rejection(harness, argument):
    document = harness.commit({"batch_id": "bad-1"}, **{argument: TEN_MB})
    check_rejection(document, code="invalid_field", field=argument)
    assert len(json.dumps(document)) < 5_000


# -- 4. deep nesting --------------------------------------------------------

def test_children_50_levels_deep_are_rejected_at_depth_7(harness):
    document = harness.commit(one(nested_children(50)))
    check_rejection(document, code="invalid_field", field="children", item="d7")


def test_children_10000_levels_deep_are_rejected(harness):
    document = harness.commit(one(nested_children(10_000)))
    check_rejection(document, code="invalid_field", field="children", item="d7")


def test_children_too_deep_under_an_existing_item_are_rejected(harness):
    # home is at depth 1, so a chain of 6 new levels under it reaches depth 7 at e6
    patch = {"id": "home", "relation": "supersedes:home", "weight": "normal", "kind": "fyi",
             "children": [{"id": "rent", "relation": "supersedes:rent", "weight": "high", "kind": "needs-you"},
                          {"id": "bills", "relation": "supersedes:bills", "weight": "low", "kind": "fyi"},
                          nested_children(6, prefix="e")]}
    check_rejection(harness.commit(one(patch)), code="invalid_field", field="children", item="e6")


def _deep_cases(deep: object) -> list[tuple[str, object, str]]:
    """(where, batch, field key) with ``deep`` placed at ``where``."""
    return [
        ("batch", {"batch_id": "bad-1", "a": deep}, "-"),
        ("batch_id", {"batch_id": deep}, "batch_id"),
        ("base_revision", {"batch_id": "bad-1", "base_revision": deep}, "base_revision"),
        ("declarations", {"batch_id": "bad-1", "declarations": deep}, "-"),
        ("declaration", one(deep), "-"),
        ("acknowledges", {"batch_id": "bad-1", "acknowledges": deep}, "-"),
        ("acknowledges[0]", {"batch_id": "bad-1", "acknowledges": [deep]}, "-"),
        ("id", one(new_declaration(id=deep)), "id"),
        ("relation", one(new_declaration(relation=deep)), "relation"),
        ("title", one(new_declaration(title=deep)), "title"),
        ("summary", one(new_declaration(summary=deep)), "summary"),
        ("weight", one(new_declaration(weight=deep)), "weight"),
        ("kind", one(new_declaration(kind=deep)), "kind"),
        ("share", one(new_declaration(share=deep)), "share"),
        ("reason", one({"id": "visa", "relation": "withdraw", "reason": deep}), "reason"),
        ("due_at", one(new_declaration(due_at=deep)), "due_at"),
        ("stale_after", one(new_declaration(stale_after=deep)), "stale_after"),
        ("sources", one(new_declaration(sources=deep)), "-"),
        ("sources[0]", one(new_declaration(sources=[deep])), "-"),
        ("source channel", one(new_declaration(sources=[{"channel": deep, "ref": "r"}])), "-"),
        ("source quote", one(new_declaration(sources=[{"channel": "c", "ref": "r", "quote": deep}])), "-"),
        ("source observed_at",
         one(new_declaration(sources=[{"channel": "c", "ref": "r", "observed_at": deep}])), "observed_at"),
        ("children", one(new_declaration(summary="s", children=deep)), "-"),
        ("children[0]", one(new_declaration(summary="s", children=[deep])), "-"),
        ("unknown key", one(new_declaration(colour=deep)), "-"),
    ]


DEEP_CASES = [
    pytest.param(f"{name} {where}", batch, id=f"{name} {where}")
    for name, deep in (("dict", DEEP_DICT), ("list", DEEP_LIST)) for where, batch, key in _deep_cases(deep)]


@pytest.mark.parametrize(("where", "batch"), DEEP_CASES)
def test_a_value_nested_10000_levels_deep_is_rejected(harness, where, batch):
    check_rejection(harness.commit(batch))


def test_a_batch_nested_10000_levels_deep_is_rejected(harness):
    check_rejection(harness.commit(DEEP_DICT, batch_id="bad-1"), code="invalid_field", field="a")


@pytest.mark.parametrize(("argument", "deep"), [
    pytest.param(argument, deep, id=f"{name}-{argument}")
    for argument in ("actor", "now", "batch_id") for name, deep in (("dict", DEEP_DICT), ("list", DEEP_LIST))])
def test_a_deeply_nested_actor_now_or_batch_id_is_rejected(harness, argument, deep):
    batch = {} if argument == "batch_id" else {"batch_id": "bad-1"}
    check_rejection(harness.commit(batch, **{argument: deep}), code="invalid_field", field=argument)


# -- 5. unknown and malformed relations -------------------------------------

RELATION_CASES = [
    ("detail-of", "unsupported_relation"), ("detail-of:visa", "unsupported_relation"),
    ("DETAIL-OF:visa", "unsupported_relation"), ("Supersedes:visa", "unsupported_relation"),
    ("replaces:visa", "unsupported_relation"), ("merge:[a, b]", "unsupported_relation"),
    ("withdrawn", "unsupported_relation"), (" new", "unsupported_relation"),
    ("supersedes", "invalid_field"), ("supersedes:", "invalid_field"), ("supersedes:other", "invalid_field"),
    ("supersedes:VISA", "invalid_field"), ("merges:", "invalid_field"), ("merges:[a]", "invalid_field"),
    ("merges:[a, a]", "invalid_field"), ("merges:a,b", "invalid_field"), ("merges:[A, b]", "invalid_field"),
    ("merges:[a,, b]", "invalid_field"), ("merges:[a b]", "invalid_field"), ("withdraw:visa", "invalid_field"),
    ("new:x", "invalid_field"),
]


@pytest.mark.parametrize(("relation", "code"), RELATION_CASES, ids=[relation for relation, _ in RELATION_CASES])
def test_an_unknown_or_malformed_relation_is_rejected(harness, relation, code):
    document = harness.commit(one(new_declaration(id="visa", relation=relation)))
    errors = check_rejection(document, code=code, field="relation" if code == "invalid_field" else None)
    if code == "unsupported_relation":
        assert any(entry.get("relation") == relation for entry in errors if entry["code"] == code), errors


# -- 6. lone surrogates -----------------------------------------------------

SURROGATE = "\ud800"
SURROGATE_CASES = [
    ("title", one(new_declaration(title=SURROGATE)), "invalid_field", "title"),
    ("title mixed", one(new_declaration(title="ok" + SURROGATE + "ok")), "invalid_field", "title"),
    ("summary", one(new_declaration(summary="a\udfff")), "invalid_field", "summary"),
    ("id", one(new_declaration(id=SURROGATE)), "invalid_field", "id"),
    ("weight", one(new_declaration(weight=SURROGATE)), "invalid_field", "weight"),
    ("relation", one(new_declaration(relation=SURROGATE)), "unsupported_relation", None),
    ("merge list", one(new_declaration(relation="merges:[a, \udc80]")), "invalid_field", "relation"),
    ("reason", one({"id": "visa", "relation": "withdraw", "reason": SURROGATE}), "invalid_field", "reason"),
    ("due_at", one(new_declaration(due_at="2026-10-12T18:00:00+08:0" + SURROGATE)), "invalid_field", "due_at"),
    ("source ref", one(new_declaration(sources=[{"channel": "c", "ref": SURROGATE}])), "invalid_field", "sources"),
    ("source quote", one(new_declaration(sources=[{"channel": "c", "ref": "r", "quote": SURROGATE}])),
     "invalid_field", "sources"),
    ("declaration key", one(new_declaration(**{SURROGATE: 1})), "invalid_field", None),
    ("batch key", {"batch_id": "bad-1", SURROGATE: 1}, "invalid_field", None),
    ("batch_id", {"batch_id": SURROGATE}, "invalid_field", "batch_id"),
    ("acknowledges", {"batch_id": "bad-1", "acknowledges": [SURROGATE]}, "annotation_not_found", None),
]


@pytest.mark.parametrize(("where", "batch", "code", "field"), SURROGATE_CASES,
                         ids=[case[0] for case in SURROGATE_CASES])
def test_a_lone_surrogate_is_rejected(harness, where, batch, code, field):
    check_rejection(harness.commit(batch), code=code, field=field)


@pytest.mark.parametrize("argument", ["actor", "now", "batch_id"])
def test_a_lone_surrogate_actor_now_or_batch_id_is_rejected(harness, argument):
    batch = {} if argument == "batch_id" else {"batch_id": "bad-1"}
    check_rejection(harness.commit(batch, **{argument: SURROGATE}), code="invalid_field", field=argument)


# -- 7. huge integers and NaN -----------------------------------------------

NUMBER_CASES = [
    ("share 10**30", one(new_declaration(share=10**30, reason="r")), "invalid_field", "share"),
    ("share 2**63", one(new_declaration(share=2**63, reason="r")), "invalid_field", "share"),
    ("share -10**30", one(new_declaration(share=-10**30, reason="r")), "invalid_field", "share"),
    ("share 10**5000", one(new_declaration(share=HUGE_INT, reason="r")), "invalid_field", "share"),
    ("share NaN", one(new_declaration(share=float("nan"), reason="r")), "invalid_field", "share"),
    ("share inf", one(new_declaration(share=float("inf"), reason="r")), "invalid_field", "share"),
    ("share -inf", one(new_declaration(share=float("-inf"), reason="r")), "invalid_field", "share"),
    ("base_revision 2**63-1", {"batch_id": "bad-1", "base_revision": 2**63 - 1}, "stale_revision", None),
    ("base_revision -10**30", {"batch_id": "bad-1", "base_revision": -10**30}, "invalid_field", "base_revision"),
    ("base_revision -10**5000", {"batch_id": "bad-1", "base_revision": -HUGE_INT},
     "invalid_field", "base_revision"),
    ("base_revision NaN", {"batch_id": "bad-1", "base_revision": float("nan")}, "invalid_field", "base_revision"),
    ("base_revision inf", {"batch_id": "bad-1", "base_revision": float("inf")}, "invalid_field", "base_revision"),
    ("title NaN", one(new_declaration(title=float("nan"))), "invalid_field", "title"),
    ("title 10**5000", one(new_declaration(title=HUGE_INT)), "invalid_field", "title"),
    ("id 10**5000", one(new_declaration(id=HUGE_INT)), "invalid_field", "id"),
    ("weight 10**5000", one(new_declaration(weight=HUGE_INT)), "invalid_field", "weight"),
    ("weight NaN", one(new_declaration(weight=float("nan"))), "invalid_field", "weight"),
    ("due_at 10**5000", one(new_declaration(due_at=HUGE_INT)), "invalid_field", "due_at"),
    ("batch_id 10**5000", {"batch_id": HUGE_INT}, "invalid_field", "batch_id"),
    ("acknowledges 10**5000", {"batch_id": "bad-1", "acknowledges": [HUGE_INT]}, "invalid_field", "acknowledges"),
]


@pytest.mark.parametrize(("where", "batch", "code", "field"), [
    pytest.param(*case, id=case[0]) for case in NUMBER_CASES])
def test_a_huge_integer_or_nan_is_rejected(harness, where, batch, code, field):
    check_rejection(harness.commit(batch), code=code, field=field)


@pytest.mark.parametrize("value", [10**30, 2**63, HUGE_INT], ids=["10**30", "2**63", "10**5000"])
def test_a_huge_base_revision_is_stale_or_invalid(harness, value):
    """§3.1 says only "not equal to the current revision → stale_revision"; a store may
    also refuse a number no revision can reach as invalid_field. Either, never a traceback."""
    errors = check_rejection(harness.commit({"batch_id": "bad-1", "base_revision": value}))
    assert any(entry["code"] == "stale_revision"
               or (entry["code"] == "invalid_field" and entry.get("field") == "base_revision")
               for entry in errors), [_brief(entry) for entry in errors]


# -- 8. actor and now of a commit ---------------------------------------------

BAD_ACTORS = ["", "x" * 65, 5, None, "a\nb", "\t", "   ", [], {}, True]
BAD_NOWS = ["2026-10-09T08:00:00", "", "yesterday", "2026-10-09", 5, 2.5, None, [], {}, True]


@pytest.mark.parametrize("actor", BAD_ACTORS, ids=[repr(value)[:30] for value in BAD_ACTORS])
def test_a_bad_actor_is_invalid_field(harness, actor):
    check_rejection(harness.commit({"batch_id": "bad-1"}, actor=actor), code="invalid_field", field="actor")


@pytest.mark.parametrize("now", [
    pytest.param(value, id=repr(value)[:30]) for value in BAD_NOWS])
def test_a_bad_now_is_invalid_field(harness, now):
    check_rejection(harness.commit({"batch_id": "bad-1"}, now=now), code="invalid_field", field="now")


# -- 9. annotate ------------------------------------------------------------

ANNOTATE_CASES = [
    ("text", value, "invalid_field", "text")
    for value in ("", "   ", "\n", "x" * 2001, 5, None, True, [], {}, "a\x00b", SURROGATE, TEN_MB, DEEP_DICT, DEEP_LIST)
] + [
    ("author", value, "invalid_field", "author")
    for value in ("", "x" * 65, 5, None, "a\nb", "   ", SURROGATE, [], {}, TEN_MB, DEEP_DICT)
] + [
    ("now", value, "invalid_field", "now")
    for value in ("2026-10-09T08:00:00", "", "yesterday", 5, None, [], {}, TEN_MB, SURROGATE, DEEP_DICT, DEEP_LIST)
] + [
    ("item", value, "invalid_field", "item")
    for value in ("", "UPPER", "has space", "x" * 65, 5, None, [], {}, TEN_MB, SURROGATE, DEEP_DICT, HUGE_INT)
] + [
    ("item", "nope", "item_not_found", None),
    ("item", "a", "item_merged", None),
]


def _annotate_id(case: tuple) -> str:
    key, value = case[0], case[1]
    if value is DEEP_DICT or value is DEEP_LIST:
        return f"{key}=deep-{type(value).__name__}"
    if value is TEN_MB:
        return f"{key}=10MB"
    if value is HUGE_INT:
        return f"{key}=10**5000"
    return f"{key}={value!r}"[:40]


ANNOTATE_PARAMS = [pytest.param(*case, id=_annotate_id(case))
                   for case in ANNOTATE_CASES]


@pytest.mark.parametrize(("key", "value", "code", "field"), ANNOTATE_PARAMS)
def test_bad_annotate_input_is_rejected_by_the_kernel(key, value, code, field):
    store = seeded_store()
    state = store.state()
    before = copy.deepcopy(state)
    arguments = {"item": "visa", "text": "a note", "author": "user", "now": NOW, key: value}
    outcome = save_annotation(state, **arguments)
    assert isinstance(outcome, Rejected), "bad annotate input was accepted"
    assert "batch_id" not in outcome.document
    check_rejection(outcome.document, code=code, field=field)
    assert state == before


@pytest.mark.parametrize(("key", "value", "code", "field"), ANNOTATE_PARAMS)
def test_bad_annotate_input_is_rejected_by_the_store(harness, key, value, code, field):
    check_rejection(harness.annotate(**{key: value}), code=code, field=field)


def test_annotating_a_withdrawn_item_is_allowed(harness):
    """Contrast case: the harness itself can see an accepted annotation."""
    answer = harness.store.annotate(item="old", text="still relevant?", author="user", now=NOW)
    assert answer.exit_code == 0
    assert answer.document == {"ok": True, "annotation": "ann-2", "event_seq": harness.log_length + 1}
