"""A ``fold.report/1`` document as Markdown, as one self-contained HTML page, or as JSON.

All three say the same things in the same order: the identity header
(period, first and last event_seq, revision, content digest), decisions
(answered, fallen back, still open with their age), items created, done,
withdrawn, changes to critical and high items, each source's health, and
the attention figures. The HTML page has no script, loads nothing (its
Content-Security-Policy forbids it) and escapes every text. Times are local.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from fold_consumers.push_text import local_time

__all__ = ["render"]

WORDS = {
    "en": {"title": "Fold report {name}", "period": "Period", "events": "Events", "revision": "Revision",
           "digest": "Digest", "decisions": "Decisions", "answered": "Answered", "fell_back": "Fallen back",
           "open": "Still open", "items": "Items", "created": "Created", "done": "Done", "withdrawn": "Withdrawn",
           "changes": "Changes to critical and high items", "sources": "Sources", "attention": "Attention",
           "none": "none", "age": "open for {hours} h", "by": "decide by {when}", "polls": "{polls} polls, {failed} failed",
           "sent": "Notifications sent: {total}", "by_kind": "by kind", "by_mode": "by mode",
           "false": "False interrupts: {n}", "missed": "Missed escalations: {n}",
           "dec": "Decisions: {a} answered before the deadline, {l} late, {f} fallen back, {o} open",
           "median": "Median time to answer: {h} h", "adhoc": "{since} – {until}"},
    "zh": {"title": "Fold 报告 {name}", "period": "时段", "events": "事件", "revision": "修订", "digest": "摘要值",
           "decisions": "决定", "answered": "已答复", "fell_back": "按默认处理", "open": "仍待决定", "items": "事项",
           "created": "新建", "done": "完成", "withdrawn": "撤下", "changes": "重要事项的变化", "sources": "来源",
           "attention": "注意力", "none": "无", "age": "已等 {hours} 小时", "by": "决定期限 {when}",
           "polls": "拉取 {polls} 次，失败 {failed} 次", "sent": "发出通知：{total}", "by_kind": "按类别",
           "by_mode": "按方式", "false": "误打扰：{n}", "missed": "漏提醒：{n}",
           "dec": "决定：按时答复 {a}，逾期答复 {l}，按默认处理 {f}，仍待 {o}",
           "median": "答复用时中位数：{h} 小时", "adhoc": "{since} – {until}"},
}


def _sections(report: Mapping[str, Any]) -> tuple[str, list[tuple[str, list[str]]]]:
    """The title and ``[(heading, lines)]`` every format shows."""
    words = WORDS.get(report.get("language") or "en", WORDS["en"])
    identity = report["identity"]
    period = identity["period"]
    zone = period["timezone"]
    name = period["name"] or words["adhoc"].format(since=local_time(period["since"], zone),
                                                    until=local_time(period["until"], zone))
    header = [f"{words['period']}: {local_time(period['since'], zone)} – {local_time(period['until'], zone)} ({zone})",
              f"{words['events']}: {identity['first_event_seq']} – {identity['last_event_seq']}",
              f"{words['revision']}: {identity['revision']}", f"{words['digest']}: {identity['digest']}"]
    decisions = report["decisions"]
    lines = []
    for entry in decisions["answered"]:
        lines.append(f"{words['answered']}: {entry['question']} → {entry['option']} "
                     f"({local_time(entry['at'], zone)}) [{entry['item']}]")
    for entry in decisions["fell_back"]:
        lines.append(f"{words['fell_back']}: {entry['question']} → {entry['option']} "
                     f"({local_time(entry['at'], zone)}) [{entry['item']}]")
    for entry in decisions["open"]:
        extra = f", {words['by'].format(when=local_time(entry['decide_by'], zone))}" if entry["decide_by"] else ""
        lines.append(f"{words['open']}: {entry['question']} ({words['age'].format(hours=entry['age_hours'])}"
                     f"{extra}) [{entry['item']}]")
    items = []
    for key in ("created", "done", "withdrawn"):
        for entry in report["items"][key]:
            items.append(f"{words[key]}: {entry['title']} ({entry['weight']}, {entry['kind']}, "
                         f"{local_time(entry['at'], zone)}) [{entry['item']}]")
    changes = []
    for entry in report["changes"]:
        fields = "; ".join(f"{name}: {_value(values[0], name, zone)} → {_value(values[1], name, zone)}"
                           for name, values in entry["fields"].items())
        changes.append(f"{entry['title']} ({local_time(entry['at'], zone)}): {fields} [{entry['item']}]")
    sources = [f"{entry['source']}: {words['polls'].format(polls=entry['polls'], failed=entry['failed'])}"
               + (f" — {entry['last_error']}" if entry["last_error"] else "") for entry in report["sources"]]
    figures = report["attention"]
    sent = figures["notifications"]
    counts = lambda values: ", ".join(f"{k} {v}" for k, v in values.items()) or words["none"]  # noqa: E731
    dec = figures["decisions"]
    attention = [words["sent"].format(total=sent["total"]) + f" ({words['by_kind']}: {counts(sent['by_kind'])}; "
                 f"{words['by_mode']}: {counts(sent['by_mode'])})",
                 words["false"].format(n=figures["false_interrupts"]),
                 words["missed"].format(n=figures["missed_escalations"]),
                 words["dec"].format(a=dec["answered_before_deadline"], l=dec["answered_late"], f=dec["fell_back"],
                                     o=dec["open"]),
                 words["median"].format(h=dec["median_hours_to_answer"] if dec["median_hours_to_answer"] is not None
                                        else "–")]
    return words["title"].format(name=name), [
        ("", header), (words["decisions"], lines or [words["none"]]), (words["items"], items or [words["none"]]),
        (words["changes"], changes or [words["none"]]), (words["sources"], sources or [words["none"]]),
        (words["attention"], attention)]


def _value(value: Any, name: str, zone: str) -> str:
    if value is None:
        return "–"
    return local_time(value, zone) if name == "due_at" else str(value)


def render(report: Mapping[str, Any], format: str) -> str:
    """``md`` | ``html`` | ``json``."""
    if format == "json":
        return json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    title, sections = _sections(report)
    if format == "md":
        out = [f"# {title}", ""]
        for heading, lines in sections:
            if heading:
                out += [f"## {heading}", ""]
            out += [f"- {line}" for line in lines] + [""]
        return "\n".join(out)
    esc = html.escape
    body = [f"<h1>{esc(title)}</h1>"]
    for heading, lines in sections:
        if heading:
            body.append(f"<h2>{esc(heading)}</h2>")
        body.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>")
    language = esc(str(report.get("language") or "en"))
    return ("<!DOCTYPE html>\n"
            f'<html lang="{language}"><head><meta charset="utf-8">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{esc(title)}</title><style>body{{font-family:sans-serif;max-width:50em;margin:2em auto;"
            "line-height:1.5}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
