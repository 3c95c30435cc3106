"""The worklog adapter on real files."""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime, timezone

import pytest

from conformance.adapter_suite import AdapterConformance
from fold_adapters.worklog.adapter import WorklogAdapter, WorklogSettings
from fold_core.plugins import load_types
from fold_host.plugins import plugin_manager as get_plugin_manager

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)


def record(text: str, **fields) -> str:
    return json.dumps({"at": "2026-10-09T08:00:00+08:00", "agent": "coder", "text": text, **fields},
                      ensure_ascii=False) + "\n"


def append(path, data: str | bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


class Log:
    """An adapter on ``directory`` and the cursor between polls, like the host keeps it."""

    def __init__(self, directory, **settings) -> None:
        self.adapter = WorklogAdapter("agent-log", WorklogSettings(path=directory, **settings))
        self.cursor = None

    def poll(self, now: datetime = NOW):
        result = self.adapter.poll(json.loads(json.dumps(self.cursor)), now=now)
        assert result.health.error_class != "adapter", result.health.message
        self.cursor = result.cursor
        return result

    def texts(self) -> list[str]:
        return [o.text for o in self.poll().observations]


def test_jsonl_records_become_observations(tmp_path):
    append(tmp_path / "coder.jsonl", record("修复了登录超时", task="login-timeout", status="done",
                                            ref="https://git.example.org/pr/42"))
    append(tmp_path / "coder.jsonl", record("ran the tests", ref="commit 1a2b3c"))
    first, second = Log(tmp_path).poll().observations
    assert first.id == "agent-log:coder.jsonl#1" and second.id == "agent-log:coder.jsonl#2"
    assert first.channel == "worklog" and first.sender == "coder" and first.at == "2026-10-09T08:00:00+08:00"
    assert first.title == "login-timeout" and first.thread == "login-timeout" and first.text == "修复了登录超时"
    assert first.url == "https://git.example.org/pr/42" and first.meta["status"] == "done"
    assert second.url is None and second.meta["ref"] == "commit 1a2b3c" and second.title == "ran the tests"


def test_bad_lines_are_reported_and_do_not_block(tmp_path):
    path = tmp_path / "a.jsonl"
    append(path, record("one") + "{not json\n" + "[1, 2]\n" + '{"agent": "x"}\n' + "\n" + record("two"))
    append(path, '{"text": "no time, no agent"}\n')
    result = Log(tmp_path).poll()
    assert [o.text for o in result.observations] == ["one", "two", "no time, no agent"]
    notes = " | ".join(result.health.notes)
    assert "a.jsonl line 2: not JSON" in notes and "line 3: expected a JSON object" in notes
    assert 'line 4: no "text"' in notes and result.health.status == "ok"
    last = result.observations[-1]
    assert last.at is None and last.meta["at_unknown"] and last.meta["agent_unknown"] and last.sender == "a"


def test_a_partial_last_line_waits_until_it_ends(tmp_path):
    path = tmp_path / "a.jsonl"
    log = Log(tmp_path)
    line = record("written in two parts")
    append(path, record("before") + line[:20])
    assert log.texts() == ["before"]
    assert log.texts() == []
    append(path, line[20:])
    assert log.texts() == ["written in two parts"]
    assert log.texts() == []


def test_append_while_reading(tmp_path):
    """A writer appends (in pieces, so polls see partial lines) while the adapter polls: each record once."""
    path = tmp_path / "busy.jsonl"
    path.touch()
    total = 400
    done = threading.Event()

    def writer():
        with open(path, "ab", buffering=0) as handle:
            for n in range(total):
                line = record(f"step {n} ✓").encode()
                handle.write(line[:17])
                handle.write(line[17:])
        done.set()

    log, seen = Log(tmp_path, max_per_hour=total), []  # one agent's 400 lines in an hour: allowed here
    thread = threading.Thread(target=writer)
    thread.start()
    while not done.is_set():
        seen += log.texts()
    thread.join()
    seen += log.texts()
    assert seen == [f"step {n} ✓" for n in range(total)]


def test_rotation_reads_the_rest_of_the_old_file_then_the_new_one(tmp_path):
    path = tmp_path / "agent.jsonl"
    log = Log(tmp_path)
    append(path, record("old 1"))
    assert log.texts() == ["old 1"]
    append(path, record("old 2"))  # written after the last poll, before the rotation
    os.rename(path, tmp_path / "agent.jsonl.1")
    append(path, record("new 1"))
    result = log.poll()
    assert [o.text for o in result.observations] == ["old 2", "new 1"]
    assert [o.id for o in result.observations] == ["agent-log:agent.jsonl#2", "agent-log:agent.jsonl~1#1"]
    assert any("rotated" in note for note in result.health.notes)
    append(path, record("new 2"))
    assert log.texts() == ["new 2"]


def test_rotation_with_the_old_file_deleted(tmp_path):
    path = tmp_path / "agent.jsonl"
    log = Log(tmp_path)
    append(path, record("old 1") + record("old 2"))
    assert len(log.texts()) == 2
    path.unlink()
    append(path, record("fresh"))
    result = log.poll()
    assert [o.id for o in result.observations] == ["agent-log:agent.jsonl~1#1"]


def test_a_log_renamed_to_another_read_name_continues(tmp_path):
    log = Log(tmp_path)
    append(tmp_path / "today.jsonl", record("a") + record("b"))
    assert log.texts() == ["a", "b"]
    append(tmp_path / "today.jsonl", record("c"))
    os.rename(tmp_path / "today.jsonl", tmp_path / "2026-10-09.jsonl")
    result = log.poll()
    assert [o.text for o in result.observations] == ["c"] and result.observations[0].id == "agent-log:today.jsonl#3"
    assert log.texts() == []


def test_truncation_starts_again(tmp_path):
    path = tmp_path / "agent.jsonl"
    log = Log(tmp_path)
    append(path, record("one") + record("two") + record("three"))
    assert len(log.texts()) == 3
    path.write_text(record("after truncation"), encoding="utf-8")
    result = log.poll()
    assert [o.id for o in result.observations] == ["agent-log:agent.jsonl~1#1"]
    assert any("truncated" in note for note in result.health.notes)


def test_copy_truncate_that_grew_past_the_old_offset_is_detected(tmp_path):
    path = tmp_path / "agent.jsonl"
    log = Log(tmp_path)
    append(path, record("one"))
    assert log.texts() == ["one"]
    with open(path, "r+b") as handle:  # same inode, rewritten and longer than before
        handle.truncate(0)
        handle.write(record("rewritten first line, longer than the old one").encode() + record("second").encode())
    result = log.poll()
    assert [o.text for o in result.observations] == ["rewritten first line, longer than the old one", "second"]
    assert result.observations[0].id == "agent-log:agent.jsonl~1#1"


def test_unicode_and_broken_bytes(tmp_path):
    path = tmp_path / "u.jsonl"
    append(path, record("emoji 🚀, RTL עברית, combining é, CJK 漢字"))
    append(path, b'{"at": "2026-10-09T08:00:00Z", "agent": "x", "text": "bad \xff\xfe bytes"}\n')
    append(path, record("nul \u0000 and bell \u0007 inside"))
    append(path, b"\xef\xbb\xbf" + record("after a BOM-like prefix").encode())
    append(path, record("crlf line").rstrip("\n").encode() + b"\r\n")
    result = Log(tmp_path).poll()
    texts = [o.text for o in result.observations]
    assert texts[0] == "emoji 🚀, RTL עברית, combining é, CJK 漢字"
    assert texts[1] == "bad \ufffd\ufffd bytes" and result.observations[1].meta["invalid_utf8"]
    assert texts[2] == "nul  and bell  inside"
    assert "crlf line" in texts


def test_a_line_longer_than_max_read_is_skipped(tmp_path):
    path = tmp_path / "big.jsonl"
    append(path, record("x" * 20_000) + record("after the long one"))
    result = Log(tmp_path, max_read=4096).poll()
    log_texts = [o.text for o in result.observations]
    assert log_texts == []
    log = Log(tmp_path, max_read=4096)
    seen = []
    for _ in range(10):
        seen += log.texts()
    assert seen == ["after the long one"]


def test_one_megabyte_single_line_record(tmp_path):
    append(tmp_path / "a.jsonl", record("<script>alert(1)</script>" + "界" * 1_000_000, task="t" * 100_000))
    (only,) = Log(tmp_path).poll().observations
    assert len(only.text) < 4100 and "truncated" in only.text and len(only.title) <= 300


def test_missing_directory_is_a_failed_health(tmp_path):
    result = Log(tmp_path / "nope").poll()
    assert result.health.status == "failed" and result.health.error_class == "unavailable"
    assert "nope" in result.health.message


def test_worklog_is_a_builtin_type():
    entry = load_types(get_plugin_manager(entry_points=False)).get("adapter", "worklog")
    assert entry is not None and entry.cls is WorklogAdapter


# -- Markdown ------------------------------------------------------------------------------


def test_markdown_heading_entries(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Agent log\n\nintro text, not an entry\n\n"
                    "## 2026-10-09T09:15+08:00 Fixed the login timeout\n"
                    "Changed the retry loop.\n\n- verified on web\n- not verified on mobile\n\n"
                    "```\n## not a heading inside a fence\n```\n"
                    "## Next\nlook at mobile\n", encoding="utf-8")
    log = Log(tmp_path)
    first, second = log.poll().observations
    assert first.id == "agent-log:notes.md#5" and first.at == "2026-10-09T09:15:00+08:00"
    assert first.title == "Fixed the login timeout"  # the time is in ``at``
    assert "not verified on mobile" in first.text and "not a heading inside a fence" in first.text
    assert second.id == "agent-log:notes.md#14" and second.text == "look at mobile" and second.sender == "notes"
    assert log.texts() == []
    append(path, "and the tablet\n")  # the last entry grows: a new version of it
    (grown,) = log.poll().observations
    assert grown.id == "agent-log:notes.md#14.v2" and grown.text == "look at mobile\nand the tablet"
    append(path, "\n## Third\ndone\n")
    assert log.texts() == ["done"]  # the second entry is closed unchanged: not observed again
    assert log.texts() == []


def test_markdown_list_entries(tmp_path):
    path = tmp_path / "done.md"
    path.write_text("# Done today\n- 2026-10-09 fixed build\n  with a continuation line\n* second item\n"
                    "1. numbered item\n", encoding="utf-8")
    result = Log(tmp_path).poll()
    titles = [o.title for o in result.observations]
    assert titles == ["fixed build", "second item", "numbered item"]  # the date is in meta.time
    first = result.observations[0]
    assert first.text == "2026-10-09 fixed build\n  with a continuation line"
    assert first.at is None and first.meta["time"] == "2026-10-09"


def test_markdown_partial_line_waits(tmp_path):
    path = tmp_path / "n.md"
    log = Log(tmp_path)
    path.write_text("## One\nbody", encoding="utf-8")
    assert log.texts() == ["One"]  # the heading line is complete; its body line is not yet
    append(path, " continues\n")
    assert log.texts() == ["body continues"]


# -- conformance -------------------------------------------------------------------------


class TestWorklogConformance(AdapterConformance):
    @pytest.fixture
    def make_adapter(self, tmp_path):
        append(tmp_path / "coder.jsonl", record("existing record"))
        (tmp_path / "notes.md").write_text("## Existing\nentry\n", encoding="utf-8")
        return lambda: WorklogAdapter("agent-log", WorklogSettings(path=tmp_path))

    @pytest.fixture
    def add_new_data(self, tmp_path):
        count = iter(range(10**6))

        def add():
            n = next(count)
            append(tmp_path / "coder.jsonl", record(f"record {n}"))
            return 1

        return add

    @pytest.fixture
    def make_failing_adapter(self, tmp_path):
        return lambda: WorklogAdapter("agent-log", WorklogSettings(path=tmp_path / "missing"))


def test_plugin_modules_are_light_to_import():
    """Registering the built-ins must not pay for httpx, feedparser or lxml (foldctl state stays fast)."""
    import subprocess
    import sys

    code = ("import sys, fold_adapters.feeds.rss, fold_adapters.worklog.adapter, fold_adapters.feeds.entries;"
            "print(sorted(m for m in ('httpx', 'feedparser', 'lxml', 'charset_normalizer') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("cursor", ["junk", {"v": 1, "files": {"a.jsonl": {"offset": "x"}}, "retired": []},
                                    {"v": 1, "files": [], "retired": {}}])
def test_an_unreadable_cursor_reads_again_instead_of_failing(tmp_path, cursor):
    append(tmp_path / "a.jsonl", record("one"))
    result = WorklogAdapter("agent-log", WorklogSettings(path=tmp_path)).poll(cursor, now=NOW)
    assert result.health.status == "ok" and [o.text for o in result.observations] == ["one"]


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_time_whose_utc_instant_python_cannot_hold_is_refused_with_a_why(tmp_path, at):
    append(tmp_path / "a.jsonl", record("edge", at=at) + record("after"))
    first, second = Log(tmp_path).poll().observations
    assert first.at is None and first.meta["at_unknown"] and first.meta["time"] == at and first.text == "edge"
    assert second.at == "2026-10-09T08:00:00+08:00"
    first.to_event()  # what a window sends reads without an OverflowError


def test_one_agent_writing_in_a_loop_is_bounded_per_hour_and_the_others_are_not(tmp_path):
    """[hardening-2] 2: at most max_per_hour lines per agent and clock hour are observed; the rest are read past
    (never observed later), the health says how many; another agent and the next hour are not affected."""
    log = Log(tmp_path, max_per_hour=5)
    append(tmp_path / "loop.jsonl", "".join(record(f"step {n}", agent="looper") for n in range(8)))
    append(tmp_path / "coder.jsonl", "".join(record(f"fix {n}") for n in range(2)))
    first = log.poll()
    assert sorted(o.text for o in first.observations) == ["fix 0", "fix 1"] + [f"step {n}" for n in range(5)]
    assert "3 line(s) from 'looper' skipped: more than max_per_hour (5) this hour" in first.health.notes
    append(tmp_path / "loop.jsonl", record("step 8", agent="looper"))
    assert log.texts() == []  # still the same hour: the bound holds across polls
    append(tmp_path / "loop.jsonl", record("step 9", agent="looper"))
    later = log.poll(datetime(2026, 10, 9, 9, 0, tzinfo=timezone.utc))
    assert [o.text for o in later.observations] == ["step 9"]  # a new hour


def test_the_documented_work_log_line_reads_as_documented(tmp_path):
    """docs/configuration.md's work-log example, appended to a file, becomes the observation its table says."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = doc.split("### The work-log line", 1)[1]
    line = re.search(r"```json\n(.+?)\n```", section, re.S).group(1)
    fields = json.loads(line)
    assert set(fields) == {"at", "agent", "task", "status", "text", "ref"}
    table = section.split("Other keys are ignored")[0]
    assert all(f"| `{name}` |" in table for name in fields)  # every field of the example has its row
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "agent.jsonl").write_text(line + "\n" + '{"agent": "x"}\n' + json.dumps({"text": "no time"}) + "\n",
                                      encoding="utf-8")
    poll = WorklogAdapter("agents", WorklogSettings(path=logs)).poll(None, now=datetime(2026, 10, 9,
                                                                                         tzinfo=timezone.utc))
    first, second = poll.observations
    assert first.id == "agents:agent.jsonl#1" and first.channel == "worklog"
    assert (first.at, first.sender, first.title, first.thread) == (fields["at"], fields["agent"], fields["task"],
                                                                  fields["task"])
    assert first.text == fields["text"] and first.url == fields["ref"]
    assert first.meta["status"] == "done" and first.meta["ref"] == fields["ref"]
    assert second.id == "agents:agent.jsonl#3" and second.at is None and second.meta["at_unknown"] is True
    assert second.sender == "agent" and second.meta["agent_unknown"] is True and second.title == "no time"
    assert any("2" in note and "text" in note for note in poll.health.notes), poll.health.notes
