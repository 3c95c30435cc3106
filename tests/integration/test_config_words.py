"""A configuration mistake reads as plain words; secrets may live in files; views speak [host] language.

The messages are what a person sees at ``foldctl doctor`` after a typo: what
was expected, an example, what was found — never a raw regular expression or
pydantic's own phrasing. ``*_file`` secrets are read from real files with real
modes. The language checks scan every template the views use.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fold_core.errors import ConfigError
from fold_core.settings import env_value
from fold_host.plugins import load_config

ROOT = Path(__file__).resolve().parents[2]

MISTAKES = {
    'type = "rss"\nurl = "ftp://example.org/feed"': ("url", 'expected an http:// or https:// address, for example '
                                                            '"https://example.org/feed.xml"; found \'ftp://example.org/feed\''),
    'type = "rss"\nurl = "https://example.org/feed"\nevery = "soon"': ("every", 'expected a duration like "90s"'),
    'type = "rss"\nurl = "https://example.org/feed"\nmax_bytes = "big"': ("max_bytes", "expected a whole number, "
                                                                                       "for example 3; found 'big'"),
    'type = "email"\nhost = "h"\nusername = "u"\npassword_env = "HOME"\nsecurity = "tls"':
        ("security", "expected one of 'ssl', 'starttls', 'none'; found 'tls'"),
    'type = "email"\nhost = "h"\nusername = "u"\npassword_env = "HOME"\nport = 0': ("port", "expected a number ≥ 1"),
    'type = "email"\nhost = "h"\nusername = "u"\npassword_env = "HOME"\nfolders = "INBOX"':
        ("folders", 'expected a list in square brackets, for example ["INBOX"]'),
    'type = "maildir"\npath = "m"\nfrom = "yesterday"': ("from", None),
}


@pytest.mark.parametrize("body", MISTAKES)
def test_a_mistake_says_what_was_expected_in_words(tmp_path, body):
    field, words = MISTAKES[body]
    config = tmp_path / "plugins.toml"
    config.write_text(f'[[adapters]]\nname = "one"\n{body}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(str(config))
    message = str(raised.value)
    assert f"field {field!r}" in message and "should match pattern" not in message and "Input should" not in message
    assert not re.search(r"\^\[|\\S|\$'", message), message  # no regular expression
    if words is not None:
        assert words in message, message


def test_consumer_from_names_its_values(tmp_path):
    config = tmp_path / "plugins.toml"
    config.write_text('[[consumers]]\nname = "log"\ntype = "log"\npath = "x.md"\nfrom = "yesterday"\n')
    with pytest.raises(ConfigError, match='expected "now" or "start", for example "start"; found \'yesterday\''):
        load_config(str(config))


def email(secret: str) -> str:
    return f'[[adapters]]\nname = "mail"\ntype = "email"\nhost = "imap.example.org"\nusername = "me"\n{secret}\n'


def test_a_secret_may_be_a_file_only_its_owner_can_read(tmp_path):
    secret = tmp_path / "imap-password"
    secret.write_text("app-password\n")
    secret.chmod(0o600)
    config = tmp_path / "plugins.toml"
    config.write_text(email('password_file = "imap-password"') + '[pinboard]\ntoken_file = "imap-password"\n')
    loaded = load_config(str(config))
    reference = loaded.adapters[0].settings.password_env
    assert env_value(reference) == "app-password"  # read when needed, without its line break
    secret.write_text("rotated\n")
    assert env_value(reference) == "rotated"  # a rotated secret counts at once
    assert env_value(loaded.pinboard.token_env) == "rotated"
    assert "rotated" not in repr(loaded)  # the configuration holds the path, never the secret

    secret.chmod(0o644)
    with pytest.raises(ConfigError, match=r"readable by every user \(mode 0644\).*chmod o-r"):
        load_config(str(config))
    secret.chmod(0o640)  # a group may read it (systemd credentials, a service group)
    load_config(str(config))
    config.write_text(email('password_file = "missing"'))
    with pytest.raises(ConfigError, match="cannot read the secret file .*missing"):
        load_config(str(config))
    config.write_text(email('password_file = "imap-password"\npassword_env = "HOME"'))
    with pytest.raises(ConfigError, match="give password_env or password_file, not both"):
        load_config(str(config))


def test_the_pinboard_takes_its_token_from_a_file(tmp_path):
    from fold_host.web.server import resolve_bind

    token = tmp_path / "token"
    token.write_text("a-long-random-token-for-tests\n")
    token.chmod(0o400)
    config = tmp_path / "plugins.toml"
    config.write_text('[pinboard]\nhost = "0.0.0.0"\ntoken_file = "token"\n')
    section = load_config(str(config)).pinboard
    assert resolve_bind(section.host, 0, section.token_env).token == "a-long-random-token-for-tests"


# -- the views' words ----------------------------------------------------------------------------------------

CALL = re.compile(r"""\b(?:w|t|words\(\)|self\.t)\(\s*(["'])((?:(?!\1).)+)\1""")
TEMPLATE_CALL = re.compile(r"""\bt\("((?:[^"\\]|\\.)+)"[,)]""")


def view_templates() -> set[str]:
    found = set()
    for path in [ROOT / "fold_core/cli/textview.py", *sorted((ROOT / "host/cli").glob("*.py"))]:
        found |= {match.group(2) for match in CALL.finditer(path.read_text(encoding="utf-8"))}
    return found


def sentence_templates() -> set[str]:
    """The literal templates of ``Sentence(...)`` (doctor's details), implicit concatenation joined."""
    import ast

    found = set()
    for path in sorted((ROOT / "host").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Sentence"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                found.add(node.args[0].value)
    return found


def page_templates() -> set[str]:
    found = set()
    for path in [*sorted((ROOT / "host/pinboard/templates").glob("*.j2")),
                 ROOT / "host/overview/templates/boxes.html.j2"]:
        found |= set(TEMPLATE_CALL.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_word_of_the_views_and_pages_has_its_chinese():
    from fold_core.words import Words
    from fold_host.overview.words import CATALOG as OVERVIEW
    from fold_host.pinboard.decisions import frame_changes
    from fold_host.pinboard.routes import ACTOR_WORDS, OP_WORDS
    from fold_host.pinboard.words import CATALOG as PAGES
    from fold_host.words import CATALOG as HOST

    words = Words("zh").extend(HOST).extend(PAGES)
    overview = Words("zh").extend(OVERVIEW)
    overview_templates = set(TEMPLATE_CALL.findall((ROOT / "host/overview/templates/overview.html.j2")
                                                   .read_text(encoding="utf-8")))
    assert sorted(t for t in overview_templates if not overview.has(t)) == []
    # the words the pages compute: what happened in the changes page, what changed in a frame
    frame = {"question": "q", "options": [{"id": "a", "label": "A", "consequence": "x"}, {"id": "b", "label": "B"}],
             "recommended": "a", "fallback": {"summary": "s"}, "decide_by": "2026-10-10T10:00:00Z",
             "evidence": "partial", "gap": "g"}
    other = {"question": "q2", "options": [{"id": "a", "label": "A2"}, {"id": "c", "label": "C"}],
             "evidence": "complete"}
    computed = {template for template, _ in frame_changes(frame, other) + frame_changes(None, other)
                + frame_changes(frame, frame)}
    computed |= set(OP_WORDS.values()) | {f"{word}: {{count}}" for word in OP_WORDS.values()}
    computed |= set(ACTOR_WORDS.values()) | {f"evidence: {e}" for e in ("complete", "partial", "missing",
                                                                          "conflicting")}
    assert sorted(t for t in computed if not words.has(t)) == []
    sentences = sentence_templates()
    assert len(sentences) > 40
    templates = view_templates() | page_templates() | sentences
    assert len(templates) > 190
    vocabulary = ["critical", "high", "normal", "low", "trace", "needs-you", "in-progress", "done", "fyi",
                  "commit", "acknowledge", "checked", "annotation", "created", "updated", "restored", "withdrawn",
                  "merged", "pending", "processed", "deferred", "used", "noise", "duplicate", "ok", "warn", "fail",
                  "in 1 hour", "in 3 hours", "this evening 18:00", "tomorrow 09:00", "in a week, 09:00",
                  # the source verdicts and editor outcomes doctor's details name
                  "has never succeeded", "the server refused the credentials", "polled", "not polled yet",
                  "committed", "checked", "acknowledged", "rejected", "invalid", "unavailable", "store_unavailable"]
    missing = sorted(t for t in templates | set(vocabulary) if not words.has(t))
    assert missing == []


def test_text_views_speak_the_configured_language_and_zone(tmp_path):
    from tests.support.host_workspace import Workspace

    ws = Workspace(tmp_path, script=["track"], host='language = "zh"\ntimezone = "Asia/Shanghai"\n')
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": "补交"})
    ws.tick("2026-10-09T00:00:00Z")
    code, out, _ = ws.call("--store", str(ws.store), "state", "--now", "2026-10-09T01:00:00Z", "--format", "text")
    assert code == 0 and out.startswith("Fold 状态 · 2026-10-09 09:00 (Asia/Shanghai) · 修订 1")
    assert "根层：已用" in out and "痕迹" in out and "知悉" in out and "trace" not in out
    code, out, _ = ws.call("inbox", "--format", "text")
    assert out.startswith("2026-10-09 08:00  mail:1  签证材料") and "采用：scripted: tracked" in out
    code, out, _ = ws.call("inbox", "show", "mail:1", "--format", "text")
    assert out.splitlines()[:4] == ["mail:1（email，来自 mail）", "发件人：someone",
                                    "时间：2026-10-09 08:00 · 观察于 2026-10-09 08:00", "标题：签证材料"]
    assert "状态：已处理" in out and "  2026-10-09 08:00  采用：scripted: tracked → t-mail-1" in out
    code, out, _ = ws.call("calls", "--format", "text")
    assert out.startswith("#1  2026-10-09 08:00  scripted  技能 ") and "第 1 次尝试" in out and "已提交 · " in out
    code, out, _ = ws.call("--store", str(ws.store), "history", "--format", "text")
    assert "2026-10-09 08:00 · 修订 0→1" in out and "新建 t-mail-1 份额" in out
    code, json_out, _ = ws.call("--store", str(ws.store), "history", "--format", "json")
    assert '"at": "2026-10-09T00:00:00Z"' in json_out  # JSON keeps the instant as stored, with its offset
    code, out, _ = ws.call("sources", "list", "--format", "text", "--now", "2026-10-09T09:00:00+08:00")
    assert out == ("mail (fixture-feed): 正常\n"
                   "    上次成功 2026-10-09 08:00 · 上次拉取 2026-10-09 08:00 · 下次拉取 守护进程未运行 · 连续失败 0\n"
                   "    观察：今天 1 条，共 1 条\n"
                   "（守护进程未运行：没有安排下次拉取；请启动 `foldctl run`，或运行 `foldctl tick`）\n")
    code, out, _ = ws.call("feedback", "--item", "t-mail-1", "--meaning", "snooze", "--until", "明天 9:00",
                           "--now", "2026-10-09T09:00:00+08:00", "--format", "text")
    assert code == 0 and out.startswith("已保存 feedback:") and out.endswith(
        "；提醒于 2026-10-10 09:00（“明天 9:00”读作 2026-10-10T09:00:00+08:00，Asia/Shanghai）\n")
    code, out, _ = ws.call("sources", "export-opml", "--out", str(tmp_path / "feeds.opml"), "--format", "text")
    assert code == 0 and out == f"已把 0 个订阅源写入 {tmp_path / 'feeds.opml'}\n"
    english = Workspace(tmp_path / "en", script=["track"])
    code, out, _ = english.call("--store", str(ws.store), "state", "--now", "2026-10-09T01:00:00Z",
                                "--format", "text")
    assert out.startswith("Fold state at 2026-10-09 01:00 (UTC) · revision 1")  # nothing set: English and UTC


def test_the_pinboard_speaks_chinese_throughout(tmp_path):
    from starlette.testclient import TestClient

    from fold_core.store.file import file_store
    from fold_host.pinboard.app import create_app

    store = tmp_path / "store"
    frame = {"question": "今天交还是明天交？", "options": [{"id": "today", "label": "今天交", "consequence": "要请假"},
                                                     {"id": "later", "label": "明天交"}],
             "recommended": "today", "basis": "代理说越早越好", "fallback": {"summary": "不回答就明天交", "option": "later"},
             "decide_by": "2026-10-10T08:00:00Z", "evidence": "partial", "gap": "代理周末是否上班不清楚"}
    file_store(store).commit({"declarations": [{"id": "visa", "title": "签证材料", "weight": "critical",
                                                "kind": "needs-you", "due_at": "2026-10-10T10:00:00Z",
                                                "decision": frame}]},
                             actor="agent", now="2026-10-09T00:00:00Z", batch_id="b1")
    app = create_app(str(store), timezone="Asia/Shanghai", language="zh")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for path in ("/", "/item/visa", "/changes", "/item/no-such", "/decisions"):
            page = client.get(path).text
            assert '<html lang="zh">' in page
            visible = re.sub(r"<[^>]+>", " ", page.split("<main>", 1)[1])
            english = [word for word in re.findall(r"\b[A-Za-z]{4,}\b", visible)
                       if word not in {"Fold", "visa", "foldctl", "history", "item", "stale_after", "token_env",
                                       "token_file", "HttpOnly", "cookie", "saved", "Asia", "Shanghai",
                                       "agent", "such"}]  # data: ids, the zone, the actor, commands
            assert english == [], (path, english)
        item = client.get("/item/visa").text
        assert "10月10日 周六 18:00" in item and "紧急" in item and "待你处理" in item
        missing = client.get("/observation/mail:1").text
        assert "没有这个观察" in missing and "This host" not in missing


def test_one_language_and_zone_for_every_view_a_person_reads(tmp_path):
    """Text views, the briefing and the Pinboard: [host] language else English, [host] timezone else UTC."""
    from starlette.testclient import TestClient

    from fold_host.pinboard.app import from_config
    from fold_host.plugins import load_config
    from tests.support.host_workspace import Workspace

    for name, host, language, title, clock in (
            ("unset", "", "en", "Fold briefing", "2026-10-09 00:30 (UTC)"),
            ("zh", 'language = "zh"\ntimezone = "Asia/Shanghai"\n', "zh", "Fold 简报", "2026-10-09 08:30 (Asia/Shanghai)")):
        ws = Workspace(tmp_path / name, script=["track"], host=host)
        ws.feed("mail", {"native": "1", "title": "签证材料", "text": "补交"})
        ws.tick("2026-10-09T00:00:00Z")
        now = "2026-10-09T08:30:00+08:00"
        code, out, _ = ws.call("--store", str(ws.store), "state", "--now", now, "--format", "text")
        assert code == 0 and clock in out.splitlines()[0], (name, out)
        code, brief, _ = ws.run("brief", "--now", now)
        assert code == 0 and (brief["language"], brief["timezone"]) == (language, clock.split("(")[1][:-1])
        assert brief["now"] == now  # JSON: the instant as given, with its offset
        code, text, _ = ws.call("brief", "--now", now, "--format", "text")
        assert code == 0 and title in text, (name, text)
        app, _ = from_config(load_config(str(ws.config)), str(ws.store))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            assert f'<html lang="{language}">' in client.get("/").text
    code, skill, _ = Workspace(tmp_path / "unset").call("skill")  # the editor's instructions: zh by default
    assert code == 0 and re.search(r"[\u4e00-\u9fff]", skill[:400])


def test_instants_inside_reasons_are_shown_in_the_configured_zone(tmp_path):
    """An editor's reason that carries an instant reads in local time in the text views and the briefing."""
    from fold_core.store.file import file_store
    from tests.support.host_workspace import Workspace

    ws = Workspace(tmp_path, script=["track"], host='language = "en"\ntimezone = "Asia/Shanghai"\n')
    ws.feed("mail", {"native": "1", "title": "Visa papers", "text": "hand in"})
    ws.tick("2026-10-09T00:00:00Z")
    store = file_store(ws.store)
    done = store.commit({"declarations": [{"id": "t-mail-1", "relation": "supersedes:t-mail-1",
                                           "weight": "low", "kind": "fyi", "reason": "The user asked to be reminded later (2026-10-09T01:00:00Z)"}]},
                        actor="agent", now="2026-10-09T00:10:00Z", batch_id="b-snooze")
    assert done.exit_code == 0, done.document
    code, out, _ = ws.call("--store", str(ws.store), "state", "--now", "2026-10-09T00:20:00Z", "--format", "text")
    assert code == 0 and "reason: The user asked to be reminded later (2026-10-09 09:00)" in out, out
    done = store.commit({"declarations": [{"id": "t-mail-1", "relation": "withdraw",
                                           "reason": "Handed in at 2026-10-09T02:00:00+00:00"}]},
                        actor="agent", now="2026-10-09T02:10:00Z", batch_id="b-done")
    assert done.exit_code == 0, done.document
    code, text, _ = ws.call("--store", str(ws.store), "brief", "--since", "2", "--now", "2026-10-09T02:30:00Z",
                            "--format", "text")
    assert code == 0 and "Handed in at 2026-10-09 10:00" in text and "2026-10-09T02:00" not in text, text
    code, out, _ = ws.call("--store", str(ws.store), "history", "--format", "json")
    assert "Handed in at 2026-10-09T02:00:00+00:00" in out  # JSON keeps what the editor wrote
