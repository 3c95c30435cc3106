"""The default editor learns from the user's feedback: a sender put off goes lower, one acted on goes higher.

Through the real host: mail arrives through a source, ``foldctl tick`` runs the
baseline editor, the user gives feedback with ``foldctl feedback``; host.db
counts it per sender and thread and hands the counts to the editor
(``user.learned``); ``--meaning input`` starts that sender afresh.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

START = datetime.fromisoformat("2026-10-09T08:00:00+08:00")
LI = "Li Na <li.na@work.example>"
WANG = "王芳 <wang.fang@work.example>"


class Mailbox:
    """A workspace whose single mail source the test writes to, one tick at a time."""

    def __init__(self, tmp_path) -> None:
        self.ws = Workspace(tmp_path, agent="", host='review_every = "30d"\n')
        self.clock, self.count = START, 0

    def now(self) -> str:
        self.clock += timedelta(minutes=10)
        return self.clock.isoformat()

    def mail(self, sender: str, title: str, text: str) -> str:
        """Deliver one mail (its own thread), tick, and return the item it was filed under."""
        self.count += 1
        native = f"m{self.count}"
        self.ws.feed("mail", {"native": native, "from": sender, "thread": f"<{native}@work.example>",
                              "at": self.clock.isoformat(), "title": title, "text": text})
        report = self.ws.tick(self.now())
        assert report["outcome"] == "committed", report
        with open_host_db(self.ws.store) as db:
            (entry,) = db.observations(ids=[f"mail:{native}"])
        assert entry["disposition"] == "used", entry
        return entry["related"][0]

    def feedback(self, item: str, meaning: str, **extra: str) -> None:
        args = ["feedback", "--item", item, "--meaning", meaning, "--now", self.now()]
        if meaning == "snooze":
            args += ["--until", (self.clock + timedelta(days=3)).isoformat()]
        for key, value in extra.items():
            args += [f"--{key}", value]
        code, document, _ = self.ws.run(*args)
        assert code == 0 and document["ok"], document
        assert self.ws.tick(self.now())["outcome"] in ("committed", "checked")

    def item(self, item_id: str) -> dict:
        code, document, _ = self.ws.run("state", "--item", item_id, "--now", self.clock.isoformat())
        assert code == 0, document
        return document["item"]


TOPICS = ("数据迁移", "机房搬迁", "招聘计划", "预算复盘", "接口改版", "监控告警", "文档整理", "安全培训")


def _note(mailbox: Mailbox, sender: str, n: int) -> dict:
    topic = TOPICS[n % len(TOPICS)]
    return mailbox.item(mailbox.mail(sender, f"{topic}讨论纪要", f"{topic}那次讨论的纪要放在共享盘了，供参考。"))


def test_a_sender_put_off_goes_lower_one_acted_on_goes_higher_and_input_resets(tmp_path):
    box = Mailbox(tmp_path)
    first = [_note(box, LI, n) for n in range(1, 4)]
    assert [i["weight"] for i in first] == ["normal"] * 3  # a colleague's note: normal, nothing learned yet

    for item, meaning in zip(first, ("snooze", "ack", "snooze")):
        box.feedback(item["id"], meaning)
    lowered, other = _note(box, LI, 4), _note(box, WANG, 5)
    assert lowered["weight"] == "low" and "3 次" in lowered["reason"], lowered
    assert other["weight"] == "normal" and "习惯" not in other["reason"]  # only that sender moves

    for item in first:  # the user did what those mails were about after all
        box.feedback(item["id"], "act", value="已处理")
    raised = _note(box, LI, 6)
    assert raised["weight"] == "high" and "3 次" in raised["reason"] and "升一档" in raised["reason"], raised

    box.feedback(raised["id"], "input", value="李娜的纪要按内容判断")
    fresh = _note(box, LI, 7)
    assert fresh["weight"] == "normal" and "习惯" not in fresh["reason"], fresh
    with open_host_db(box.ws.store) as db:
        assert [e for e in db.learned("2000-01-01T00:00:00Z", 50) if e.get("sender") == "li.na@work.example"] == []


def test_the_editor_is_handed_the_counts_and_a_thread_counts_on_its_own(tmp_path):
    box = Mailbox(tmp_path)
    item = _note(box, LI, 1)
    for _ in range(3):
        box.feedback(item["id"], "snooze")
    with open_host_db(box.ws.store) as db:
        learned = db.learned("2000-01-01T00:00:00Z", 50)
    by_key = {(("sender", e["sender"]) if "sender" in e else ("thread", e["thread"])): e for e in learned}
    assert by_key[("sender", "li.na@work.example")]["snoozed"] == 3
    assert by_key[("thread", "<m1@work.example>")]["snoozed"] == 3
    code, calls, _ = box.ws.run("calls", "--limit", "1")
    code, shown, _ = box.ws.run("calls", "show", str(calls["calls"][0]["id"]))
    learned = shown["call"]["request"]["input"]["user"]["learned"]
    assert {"sender": "li.na@work.example", "snoozed": 3, "acknowledged": 0, "acted": 0}.items() <= \
        next(e for e in learned if e.get("sender")).items()


def test_feedback_older_than_ninety_days_no_longer_counts(tmp_path):
    box = Mailbox(tmp_path)
    item = _note(box, LI, 1)
    for _ in range(3):
        box.feedback(item["id"], "snooze")
    box.clock += timedelta(days=91)
    assert _note(box, LI, 2)["weight"] == "normal"  # the old habit is forgotten
    box.feedback(item["id"], "ack")  # noting new feedback drops the old rows
    with open_host_db(box.ws.store) as db:
        learned = db.learned("2000-01-01T00:00:00Z", 50)
    assert [(e.get("sender"), e["snoozed"], e["acknowledged"]) for e in learned if "sender" in e] == [
        ("li.na@work.example", 0, 1)]
