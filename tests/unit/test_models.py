"""The typed wire shapes (fold_core.models) accept what contract §1–§4 allows and refuse the rest."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from fold_core.models import (
    ERROR_CODES,
    Annotation,
    Batch,
    Declaration,
    ErrorRecord,
    ItemRecord,
    Receipt,
    Rejection,
    Relation,
    Source,
    UnsupportedRelation,
    batch_schema,
    parse_relation,
    receipt_schema,
)

CJK_TITLE = "签证材料缺银行流水，12日截止"

RECEIPT = {  # contract §4.1, verbatim
    "ok": True, "type": "commit", "batch_id": "b-2", "event_seq": 9,
    "revision": 5, "previous_revision": 4, "at": "2026-10-09T08:00:00+08:00",
    "actor": "agent",
    "changes": [{"item": "visa", "op": "created", "layer": None, "share": 24},
                {"item": "reading", "op": "withdrawn", "layer": None, "share": 6}],
    "acknowledged": ["ann-1"], "already_acknowledged": [],
    "layers": [{"layer": None, "budget": 64, "used": 58}],
    "replayed": False,
}

REJECTION = {  # contract §4.2, with the elided items written out
    "ok": False, "batch_id": "b-3", "revision": 5,
    "errors": [{"code": "layer_budget", "message": "layer root: budget 64, declared 88, over by 24",
                "layer": None, "budget": 64, "declared": 88, "over": 24,
                "items": [{"id": "visa", "weight": "critical", "share": 24},
                          {"id": "rent", "weight": "critical", "share": 24},
                          {"id": "tax", "weight": "critical", "share": 24},
                          {"id": "pr-review", "weight": "high", "share": 12},
                          {"id": "flight", "weight": "trace", "share": 4}]}],
}


def new(**fields):
    """A valid `new` declaration, with overrides."""
    return {"id": "visa", "title": "Visa papers", "weight": "high", "kind": "needs-you", **fields}


def errors_of(call):
    with pytest.raises(ValidationError) as caught:
        call()
    return caught.value.errors()


# --- unknown keys --------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "document", "key"),
    [
        (Batch, {"batch_id": "b-1", "declarations": [], "actor": "agent"}, "actor"),
        (Declaration, new(detail="x"), "detail"),
        (Source, {"channel": "email", "ref": "event:e-1", "url": "x"}, "url"),
        (Receipt, {**RECEIPT, "warnings": []}, "warnings"),
        (ErrorRecord, {"code": "item_not_found", "message": "m", "item": "x", "hint": "y"}, "hint"),
    ],
)
def test_unknown_key_is_rejected_and_named(model, document, key):
    errors = errors_of(lambda: model.model_validate(document))
    assert [(e["type"], e["loc"]) for e in errors] == [("extra_forbidden", (key,))]


def test_unknown_key_in_a_nested_child_is_located():
    batch = {"batch_id": "b-1", "declarations": [
        new(summary="Two things missing", children=[new(id="bank", title="Bank statement", colour="red")]),
    ]}
    errors = errors_of(lambda: Batch.model_validate(batch))
    assert errors[0]["type"] == "extra_forbidden"
    assert errors[0]["loc"] == ("declarations", 0, "children", 0, "colour")


# --- text rules (§1) ------------------------------------------------------------


def test_cjk_title_counts_code_points_not_bytes():
    assert len(CJK_TITLE) == 15 and len(CJK_TITLE.encode()) > 24
    assert Declaration.model_validate(new(title=CJK_TITLE)).title == CJK_TITLE
    assert Declaration.model_validate(new(title="签" * 24)).title == "签" * 24


def test_title_of_25_code_points_is_rejected():
    errors = errors_of(lambda: Declaration.model_validate(new(title="签" * 25)))
    assert errors[0]["loc"] == ("title",)
    assert "1–24 code points, got 25" in errors[0]["msg"]


@pytest.mark.parametrize("title", ["", "   ", "line\nbreak", "tab\there", "para\u2029graph", "bell\x07"])
def test_title_character_rule(title):
    errors = errors_of(lambda: Declaration.model_validate(new(title=title)))
    assert errors[0]["loc"] == ("title",)


def test_empty_summary_means_null_and_still_counts_as_given():
    declaration = Declaration.model_validate(new(relation="supersedes:visa", summary=""))
    assert declaration.summary is None
    assert "summary" in declaration.model_fields_set  # given: it clears, not keeps


def test_summary_longer_than_60_is_rejected():
    errors = errors_of(lambda: Declaration.model_validate(new(summary="x" * 61)))
    assert errors[0]["loc"] == ("summary",)


@pytest.mark.parametrize("share", [True, 0, 4097, 1.5, "6"])
def test_share_must_be_an_integer_from_1_to_4096(share):
    errors = errors_of(lambda: Declaration.model_validate(new(share=share)))
    assert errors[0]["loc"][0] == "share"


def test_share_null_cancels_the_override():
    declaration = Declaration.model_validate(new(relation="supersedes:visa", share=None, reason="back to normal"))
    assert declaration.share is None and "share" in declaration.model_fields_set


def test_unknown_weight_and_kind_are_rejected():
    errors = errors_of(lambda: Declaration.model_validate(new(weight="urgent", kind="todo")))
    assert [e["loc"] for e in errors] == [("weight",), ("kind",)]


# --- times ----------------------------------------------------------------------


def test_naive_time_is_rejected():
    errors = errors_of(lambda: Declaration.model_validate(new(due_at="2026-10-12T18:00:00")))
    assert errors[0]["loc"] == ("due_at",)
    assert "offset" in errors[0]["msg"]


@pytest.mark.parametrize("instant", ["2026-10-12T18:00:00+08:00", "2026-10-12T10:00:00Z"])
def test_instant_with_offset_is_kept_as_written(instant):
    assert Declaration.model_validate(new(due_at=instant)).due_at == instant


def test_naive_observed_at_in_a_source_is_rejected():
    errors = errors_of(lambda: Source.model_validate({"channel": "email", "ref": "e-1",
                                                      "observed_at": "2026-10-09 08:00"}))
    assert errors[0]["loc"] == ("observed_at",)


# --- relations (§3.2) -----------------------------------------------------------


@pytest.mark.parametrize("text", ['merges:[a, b]', 'merges:["a","b"]', 'merges: [ "a" , b ]', "merges:[a,b]"])
def test_merge_lists_are_read_tolerantly(text):
    assert parse_relation(text) == Relation(word="merges", sources=("a", "b"))


@pytest.mark.parametrize(
    "text",
    ["merges:[a]", "merges:[]", "merges:[a, a]", "merges:a, b", "merges:[a b]", 'merges:["a, b]',
     "merges:[a, b,]", "merges:[A, b]", "supersedes:", "supersedes:Bad Id", "supersedes", "new:x", "withdraw:x"],
)
def test_malformed_relations_are_value_errors_not_unsupported(text):
    with pytest.raises(ValueError) as caught:
        parse_relation(text)
    assert not isinstance(caught.value, UnsupportedRelation)


@pytest.mark.parametrize("text", ["detail-of:visa", "detail-of", "replaces:x", "New", ""])
def test_unknown_relation_word_is_unsupported(text):
    with pytest.raises(UnsupportedRelation):
        parse_relation(text)


def test_simple_relations_parse():
    assert parse_relation("new") == Relation(word="new")
    assert parse_relation("withdraw") == Relation(word="withdraw")
    assert parse_relation("supersedes:visa") == Relation(word="supersedes", target="visa")


def test_declaration_reports_unsupported_relation_as_its_own_error_type():
    errors = errors_of(lambda: Declaration.model_validate(new(relation="detail-of:bank")))
    assert [(e["type"], e["loc"]) for e in errors] == [("unsupported_relation", ("relation",))]


def test_relation_defaults_to_new_and_merges_are_exposed_parsed():
    assert Declaration.model_validate(new()).parsed_relation == Relation(word="new")
    merge = Declaration.model_validate(new(id="papers", relation='merges: ["visa", bank]'))
    assert merge.parsed_relation.sources == ("visa", "bank")


def test_supersedes_must_name_its_own_id():
    errors = errors_of(lambda: Declaration.model_validate(new(relation="supersedes:bank")))
    assert "own id 'visa'" in errors[0]["msg"]


def test_withdraw_needs_a_reason_and_holds_nothing_else():
    ok = Declaration.model_validate({"id": "visa", "relation": "withdraw", "reason": "trip cancelled"})
    assert ok.parsed_relation.word == "withdraw"
    assert "needs a reason" in errors_of(
        lambda: Declaration.model_validate({"id": "visa", "relation": "withdraw"}))[0]["msg"]
    assert "got title" in errors_of(lambda: Declaration.model_validate(
        {"id": "visa", "relation": "withdraw", "reason": "done", "title": "Visa"}))[0]["msg"]


def test_required_and_never_null_fields():
    missing = errors_of(lambda: Declaration.model_validate({"id": "visa", "title": "Visa"}))
    assert "needs weight, kind" in missing[0]["msg"]
    patch = Declaration.model_validate({"id": "visa", "relation": "supersedes:visa", "weight": "low",
                                        "kind": "fyi", "reason": "paid"})
    assert patch.title is None and "title" not in patch.model_fields_set  # omitted = keep
    null_title = errors_of(lambda: Declaration.model_validate(new(title=None)))
    assert null_title[0]["loc"] == ("title",) and null_title[0]["type"] == "string_type"


def test_merge_may_not_carry_children():
    errors = errors_of(lambda: Declaration.model_validate(new(relation="merges:[a, b]", children=[])))
    assert "unsupported_merge_structure" in errors[0]["msg"]


# --- sources --------------------------------------------------------------------


def test_sources_drop_duplicates_first_kept_and_null_optionals_are_absent():
    declaration = Declaration.model_validate(new(sources=[
        {"channel": "email", "ref": "event:e-17", "quote": "first\nquote", "observed_at": None},
        {"channel": "email", "ref": "event:e-17", "quote": "second"},
        {"channel": "chat", "ref": "event:e-17"},
    ]))
    assert [(s.channel, s.quote) for s in declaration.sources] == [("email", "first\nquote"), ("chat", None)]


def test_more_than_32_distinct_sources_are_rejected():
    sources = [{"channel": "email", "ref": f"event:e-{n}"} for n in range(33)]
    errors = errors_of(lambda: Declaration.model_validate(new(sources=sources)))
    assert "at most 32" in errors[0]["msg"]


def test_ref_with_a_line_break_is_rejected():
    errors = errors_of(lambda: Source.model_validate({"channel": "email", "ref": "a\nb"}))
    assert errors[0]["loc"] == ("ref",)


# --- batches --------------------------------------------------------------------


def test_seed_example_batch_validates_and_dumps_back_unchanged():
    document = {
        "batch_id": "tick-20261009T0800-1", "base_revision": 7, "acknowledges": ["ann-3"],
        "declarations": [{
            "id": "visa-materials", "relation": "supersedes:visa-materials", "title": CJK_TITLE,
            "summary": "代理确认还缺近 6 个月纸质流水，12 日 18 点前送到。",
            "weight": "critical", "kind": "needs-you", "due_at": "2026-10-12T18:00:00+08:00",
            "reason": "缺材料需要用户参与，影响 20 日出差。",
            "sources": [{"channel": "email", "ref": "event:e-17",
                         "quote": "还缺纸质银行流水，请在10月12日18点前送到。"}],
        }],
    }
    batch = Batch.model_validate(document)
    assert batch.declarations[0].parsed_relation.target == "visa-materials"
    assert batch.model_dump(mode="json", exclude_unset=True) == document  # omitted keys stay omitted


def test_empty_batch_is_a_valid_check():
    assert Batch.model_validate({"declarations": [], "acknowledges": []}).batch_id is None


@pytest.mark.parametrize(("key", "value"), [("batch_id", "has space"), ("batch_id", "x" * 129),
                                            ("base_revision", -1), ("base_revision", True)])
def test_batch_level_values(key, value):
    errors = errors_of(lambda: Batch.model_validate({key: value}))
    assert errors[0]["loc"][0] == key


# --- answers (§4, §5) -----------------------------------------------------------


def test_contract_receipt_validates_and_round_trips():
    receipt = Receipt.model_validate(RECEIPT)
    assert receipt.model_dump(mode="json") == RECEIPT
    assert Receipt.model_validate_json(json.dumps(RECEIPT, ensure_ascii=False)) == receipt


def test_receipt_type_must_follow_the_revision_table():
    checked = {**RECEIPT, "type": "checked", "changes": [], "acknowledged": [], "layers": [],
               "revision": 4, "previous_revision": 4}
    assert Receipt.model_validate(checked).type == "checked"
    assert Receipt.model_validate({**checked, "already_acknowledged": ["ann-1"]}).type == "checked"
    acknowledge = {**checked, "type": "acknowledge", "acknowledged": ["ann-2"], "revision": 5}
    assert Receipt.model_validate(acknowledge).type == "acknowledge"
    assert "type must be 'commit'" in errors_of(
        lambda: Receipt.model_validate({**RECEIPT, "type": "checked"}))[0]["msg"]
    assert "moves the revision by 0" in errors_of(
        lambda: Receipt.model_validate({**checked, "revision": 5}))[0]["msg"]


def test_receipt_rejects_an_unknown_change_op_and_a_naive_at():
    bad_op = {**RECEIPT, "changes": [{"item": "visa", "op": "demoted", "layer": None, "share": 6}]}
    assert errors_of(lambda: Receipt.model_validate(bad_op))[0]["loc"] == ("changes", 0, "op")
    assert errors_of(lambda: Receipt.model_validate({**RECEIPT, "at": "2026-10-09T08:00:00"}))[0]["loc"] == ("at",)


def test_contract_rejection_validates_and_keeps_null_locators():
    rejection = Rejection.model_validate(REJECTION)
    assert rejection.errors[0].items[0].share == 24
    assert rejection.model_dump(mode="json", exclude_unset=True) == REJECTION


def test_rejection_error_codes_are_the_contract_table():
    assert len(ERROR_CODES) == 21
    unknown = {**REJECTION, "errors": [{"code": "oops", "message": "m"}]}
    assert errors_of(lambda: Rejection.model_validate(unknown))[0]["loc"] == ("errors", 0, "code")
    assert errors_of(lambda: Rejection.model_validate({**REJECTION, "errors": []}))[0]["loc"] == ("errors",)
    merge = {"code": "merge_layer_mismatch", "message": "m", "item": "papers",
             "sources": ["visa", "bank"], "layers": [None, "trip"]}
    assert ErrorRecord.model_validate(merge).layers == [None, "trip"]


# --- stored records -------------------------------------------------------------


def item_record(**fields):
    return {
        "id": "visa", "parent": None, "status": "active", "title": CJK_TITLE, "summary": None,
        "weight": "critical", "kind": "needs-you", "explicit_share": None, "share": 24,
        "reason": "deadline", "due_at": "2026-10-12T18:00:00+08:00", "stale_after": None,
        "sources": [{"channel": "email", "ref": "event:e-17"}],
        "created_at": "2026-10-09T08:00:00+08:00", "updated_at": "2026-10-09T08:00:00+08:00",
        "status_at": "2026-10-09T08:00:00+08:00", "merged_into": None, "withdrawn_with": None,
        "ever_had_children": False, **fields,
    }


def test_item_record_has_exactly_the_contract_fields():
    assert list(ItemRecord.model_fields) == [*item_record(), "decision"]  # decision: only when the item has a frame
    assert ItemRecord.model_validate(item_record()).model_dump(mode="json", exclude_none=True)["id"] == "visa"
    missing = {k: v for k, v in item_record().items() if k != "withdrawn_with"}
    assert errors_of(lambda: ItemRecord.model_validate(missing))[0]["loc"] == ("withdrawn_with",)


def test_merged_item_needs_merged_into():
    assert ItemRecord.model_validate(item_record(status="merged", merged_into="papers")).merged_into == "papers"
    errors_of(lambda: ItemRecord.model_validate(item_record(status="merged")))


def test_annotation_acknowledgement_fields_go_together():
    saved = {"id": "ann-1", "item": "visa", "text": "已经寄出\n明天到", "author": "me",
             "created_at": "2026-10-09T09:00:00+08:00", "status": "saved"}
    assert Annotation.model_validate(saved).acknowledged_by is None
    acked = {**saved, "status": "acknowledged", "acknowledged_revision": 6,
             "acknowledged_at": "2026-10-09T10:00:00+08:00", "acknowledged_by": "agent"}
    assert Annotation.model_validate(acked).acknowledged_revision == 6
    errors_of(lambda: Annotation.model_validate({**saved, "status": "acknowledged"}))
    assert errors_of(lambda: Annotation.model_validate({**saved, "id": "note-1"}))[0]["loc"] == ("id",)


# --- JSON Schema ----------------------------------------------------------------


def test_batch_schema_is_json_and_forbids_unknown_keys():
    schema = json.loads(json.dumps(batch_schema()))
    assert schema["additionalProperties"] is False
    declaration = schema["$defs"]["Declaration"]
    assert declaration["additionalProperties"] is False
    assert declaration["required"] == ["id"]
    assert declaration["properties"]["title"]["maxLength"] == 24
    assert declaration["properties"]["weight"]["enum"] == ["critical", "high", "normal", "low", "trace"]
    assert declaration["properties"]["id"]["pattern"] == "^[a-z0-9-]{1,64}$"


def test_receipt_schema_requires_every_receipt_key():
    schema = json.loads(json.dumps(receipt_schema()))
    assert set(schema["required"]) == set(RECEIPT)
    assert schema["properties"]["at"]["format"] == "date-time"


FRAME = {"question": "先临时缓解，还是本周迁移？",
         "options": [{"id": "mitigate", "label": "先临时缓解"}, {"id": "migrate", "label": "本周迁移"}],
         "recommended": "mitigate", "evidence": "partial", "gap": "移动端未验证"}


def test_a_decision_frame_on_a_declaration_and_a_stored_item():
    stored = ItemRecord.model_validate(item_record(decision=FRAME))
    assert stored.model_dump(mode="json", exclude_none=True)["decision"] == FRAME
    declared = {"id": "auth", "title": "登录故障", "weight": "high", "kind": "needs-you", "decision": FRAME}
    assert Declaration.model_validate(declared).decision is not None
    wrong = {**FRAME, "recommended": "wait"}
    assert "wait" in errors_of(lambda: Declaration.model_validate({**declared, "decision": wrong}))[0]["msg"]
    assert "decision_not_allowed" in errors_of(lambda: Declaration.model_validate({**declared, "kind": "fyi"}))[0]["msg"]
