"""One message → observations (fold_adapters.mail.mime) on the real-world-shaped messages of tests/fixtures/mail."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from fold_adapters.mail.mime import mail_observations, read_mail
from fold_core.observation import TEXT_LIMIT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)


def raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def observe(name: str, **extra):
    return mail_observations(read_mail(raw(name)), source="mail", native_id=name, observed_at=NOW, **extra)


def test_at_least_twelve_fixture_messages():
    assert len(list(FIXTURES.glob("*.eml"))) >= 12


def test_gbk_subject_sender_and_body():
    [obs] = observe("01-gbk-subject.eml")
    assert obs.title == "您的10月信用卡电子账单已出，还款日10月26日"
    assert obs.sender == "招商银行信用卡中心 <service@cmbchina.example>"
    assert "本期应还金额：人民币 3,482.60 元" in obs.text
    assert obs.at == "2026-10-08T09:12:01+08:00"
    assert obs.meta["date_source"] == "header"
    assert obs.id == "mail:01-gbk-subject.eml"


def test_multipart_alternative_prefers_plain_and_decodes_recipients():
    [obs] = observe("02-multipart-alternative.eml")
    assert obs.meta["text_from"] == "plain"
    assert "moves to Thursday 15:00 (room 4B). Please read the RFC before then;" in obs.text  # soft break joined
    assert "<b>" not in obs.text
    assert obs.meta["cc"] == ["Bob Lee <bob@example.org>", "Zoë Schmidt <zoe@example.org>"]
    assert obs.thread == "CAH7x=review-moved@mail.gmail.example"


def test_html_only_bill_keeps_the_table_readable_and_drops_scripts_and_styles():
    [obs] = observe("03-html-only-tables.eml")
    assert obs.meta["text_from"] == "html"
    lines = obs.text.splitlines()
    assert "Item | Usage | Amount" in lines  # one table row per line, cells in order
    assert "Electricity | 312 kWh | € 84.20" in lines
    assert "Water | 9 m³ | € 21.75" in lines
    for hidden in ("document.location", "document.cookie", "td {", "javascript:", "tracker.example",
                   "Your October statement is ready", "alert("):
        assert hidden not in obs.text
    assert "Pay by direct debit" in obs.text


def test_attachments_are_metadata_with_non_ascii_names():
    [obs] = observe("04-attachments-nonascii.eml")
    attachments = {a["name"]: a for a in obs.meta["attachments"]}
    assert set(attachments) == {"logo.png", "签证材料清单.pdf", "Übersicht Kosten.xlsx"}
    pdf = attachments["签证材料清单.pdf"]
    assert pdf["type"] == "application/pdf"
    assert pdf["size"] == len(b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")  # counted, not declared
    assert attachments["logo.png"]["inline"] is True
    assert obs.title == "签证材料清单和预约确认（请在12日前补交银行流水）"
    assert "还缺近六个月的银行流水，请在 10月12日前补交。" in obs.text  # format=flowed joined
    assert "%PDF" not in obs.text


def test_forwarded_message_becomes_its_own_observation_in_the_same_thread():
    outer, inner = observe("05-forwarded-thread.eml")
    assert outer.thread == inner.thread == "appt-5521@consulate.example"  # the References root
    assert "> Thanks. Is a printout from online banking enough?" in outer.text
    assert "[forwarded message: Appointment confirmed: 15 October 2026, 09:30 — from Visa Section" in outer.text
    assert inner.id == outer.id + "#fwd-1"
    assert inner.sender == "Visa Section <visa@consulate.example>"
    assert inner.at == "2026-10-07T16:20:00+08:00"
    assert "bank statements for the last 6 months" in inner.text
    assert inner.meta["forwarded_in"] == outer.id


def test_reply_shares_the_thread_key_of_its_root():
    [root] = observe("02-multipart-alternative.eml")
    [reply] = observe("06-reply-in-thread.eml")
    assert reply.thread == root.thread == root.meta["message_id"]


def test_very_large_body_is_bounded_with_a_mark():
    [obs] = observe("07-large-body.eml")
    assert obs.text.startswith("Nightly build #4411 FAILED at step 15999 (linker).")
    assert len(obs.text) < TEXT_LIMIT + 60
    assert "[truncated:" in obs.text
    assert any("was cut to" in note for note in obs.meta["notes"])
    assert obs.meta["size"] == len(raw("07-large-body.eml"))


def test_malformed_mime_is_read_as_far_as_it_goes_and_says_so():
    [obs] = observe("08-malformed-mime.eml")
    assert obs.title == "Scanned document"
    assert "this line is not a header" in obs.text
    assert any(note.startswith("malformed MIME:") and "CloseBoundaryNotFoundDefect" in note
               for note in obs.meta["notes"])
    assert obs.meta["attachments"][0]["name"] == "scan0031.pdf"


def test_missing_date_falls_back_and_says_so():
    internal = datetime(2026, 10, 10, 3, 4, 5, tzinfo=timezone.utc)
    [obs] = observe("09-missing-date.eml", fallback_at=internal, fallback="internaldate")
    assert obs.at == internal.isoformat()
    assert obs.meta["date_source"] == "internaldate"
    assert "no Date header" in obs.meta["notes"]
    [bare] = observe("09-missing-date.eml")
    assert bare.at is None and bare.meta["date_source"] is None


def test_duplicate_message_id_copies_share_a_fingerprint_and_differ_from_other_mail():
    direct, listed = read_mail(raw("10-duplicate-message-id-direct.eml")), read_mail(raw("11-duplicate-message-id-list.eml"))
    assert direct.fingerprint == listed.fingerprint
    assert listed.list_id == "reading-group.lists.example.net"
    others = {read_mail(p.read_bytes()).fingerprint for p in FIXTURES.glob("*.eml") if "duplicate" not in p.name}
    assert direct.fingerprint not in others and len(others) == len(list(FIXTURES.glob("*.eml"))) - 2


def test_header_fingerprint_equals_whole_message_fingerprint():
    data = raw("04-attachments-nonascii.eml")
    header = data[:data.index(b"\r\n\r\n") + 4]
    assert read_mail(header).fingerprint == read_mail(data).fingerprint


def test_eight_bit_body_without_charset_uses_the_messages_own_hint():
    [obs] = observe("12-8bit-no-charset.eml")
    assert obs.title == "周报：本周完成数据迁移"
    assert obs.text == "本周完成：数据迁移、接口联调。\n下周计划：压力测试，周五前提交报告。"
    assert any("no charset declared" in note for note in obs.meta["notes"])


def test_big5_and_iso_2022_jp():
    [big5] = observe("13-big5.eml")
    assert big5.title == "會議紀錄：第四季預算審查" and big5.sender == "台北辦公室 <taipei@example.tw>"
    assert "請於週五前確認" in big5.text
    [jp] = observe("14-iso-2022-jp.eml")
    assert jp.title == "打ち合わせの件" and jp.sender == "山田太郎 <yamada@example.jp>"
    assert "来週の打ち合わせは水曜日の午後二時からです。" in jp.text
    assert jp.at == "2026-10-14T11:11:11+09:00"


def test_stub_plain_alternative_gives_way_to_the_html():
    [obs] = observe("15-newsletter-stub-plain.eml")
    assert obs.meta["text_from"] == "html"
    assert "SQLite 4 ships a new storage engine" in obs.text
    assert obs.meta["list_id"] == "weekly.weeklybyte.example"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.eml")), ids=lambda p: p.name)
def test_every_fixture_gives_valid_json_observations(path):
    for obs in mail_observations(read_mail(path.read_bytes()), source="mail", native_id=path.name, observed_at=NOW):
        again = type(obs).from_json(obs.to_json())
        assert again == obs
        assert obs.at is None or "+" in obs.at or obs.at.endswith("Z")


def test_undeclared_legacy_encodings_are_detected_as_a_last_resort():
    from fold_adapters.text.clean import decode_bytes

    text = "各位好，本周五下午三点在三楼会议室讨论明年的预算安排，请准时参加。"
    decoded, note = decode_bytes(text.encode("gb18030"))
    assert decoded == text and "detected" in note
    decoded, note = decode_bytes("Grüße aus München, bis Freitag!".encode("utf-8"))
    assert decoded == "Grüße aus München, bis Freitag!" and note == "no charset declared; read as utf-8"
    decoded, note = decode_bytes(b"\xff\xfe\xfa garbage \x80\x81", "x-no-such-charset")
    assert isinstance(decoded, str) and "unknown" in note


def test_rfc2047_words_split_inside_a_character_are_joined():
    from fold_adapters.text.clean import header_text

    data = "签证材料".encode("utf-8")
    import base64

    first, second = base64.b64encode(data[:4]).decode(), base64.b64encode(data[4:]).decode()
    assert header_text(f"=?UTF-8?B?{first}?= =?UTF-8?B?{second}?=")[0] == "签证材料"
    assert header_text("=?gb2312?B?x+vIt8jP?= done")[0] == "请确认 done"
    assert header_text("=?utf-8?q?broken?=?= =?utf-8?b?@@@?=")[0]  # malformed words never raise


def test_html_to_text_reads_like_the_rendered_mail():
    from fold_adapters.text.html import html_to_text

    html = """<html><head><title>T</title><style>p{color:red}</style></head><body>
    <div style="DISPLAY: none">preview padding</div><span style="mso-hide: all">outlook only</span>
    <p>Line   one
       continues here.<br>Line two</p>
    <pre>  keep   this
  spacing</pre>
    <ol><li>first</li><li>second</li></ol><ul><li>dot</li></ul>
    <table><tr><td><table><tr><td><p>Layout paragraph.</p></td></tr></table></td></tr></table>
    <p>a&nbsp;&amp;&nbsp;b &lt;tag&gt;</p></body></html>"""
    text, note = html_to_text(html)
    assert note is None
    lines = text.splitlines()
    assert "Line one continues here." in lines and "Line two" in lines
    assert "  keep   this" in lines and "  spacing" in lines
    assert "1. first" in lines and "2. second" in lines and "* dot" in lines
    assert "Layout paragraph." in lines and "a & b <tag>" in lines
    for hidden in ("preview padding", "outlook only", "color:red", "T\n"):
        assert hidden not in text
    assert html_to_text("")[0] == "" and html_to_text("   ")[0] == ""
    assert html_to_text('<?xml version="1.0" encoding="utf-8"?><p>x</p>')[0] == "x"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.eml")), ids=lambda p: p.name)
def test_the_parsing_policy_reads_headers_and_parameters_as_the_standard_library_does(path):
    """``mailpolicy`` indexes header fields and remembers parameters: what it answers must not change."""
    import email
    from email.message import EmailMessage

    from fold_adapters.mail.policy import parser_policy

    ours = email.message_from_bytes(path.read_bytes(), policy=parser_policy())
    for part in ours.walk():
        for name in {n for n, _ in part.raw_items()} | {"X-Absent", "content-TYPE"}:
            assert part.get(name) == EmailMessage.get(part, name)
            assert part.get_params(header=name) == EmailMessage.get_params(part, header=name)
        assert part.get_params(unquote=False) == EmailMessage.get_params(part, unquote=False)
    part = next(p for p in ours.walk() if p.get_content_maintype() == "text")
    part.replace_header("Content-Type", "text/x-changed; charset=koi8-r")  # changed in place: seen at once
    assert part.get_content_type() == "text/x-changed" and part.get_content_charset() == "koi8-r"
    assert part.get("content-type") == EmailMessage.get(part, "content-type")
    part.set_param("charset", "utf-8")
    part["X-Added"] = "yes"
    assert part.get_content_charset() == "utf-8" and part.get("x-added") == "yes"
    del part["x-added"]
    assert part.get("x-added") is None
