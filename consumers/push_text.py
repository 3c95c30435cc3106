"""The words of a push notification, in the item's language (contract §12; docs/consumers.md).

``single(entry, …)`` is one notification: the title says what changed and
names the item (its id stays in the body); the body gives the summary, each
changed fact before → after, the decision (question, options with their
consequences, recommendation, fallback, ``decide_by``) when the item has a
frame, one short line of the decision-relevant facts that did **not**
change, the link to the item page when ``[pinboard] public_url`` is set, and
the id line. ``digest(entries, …)`` is many entries in one notification.
Times are local (``[host] timezone``). Item text is untrusted: it is only
ever placed in plain text here, never interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

__all__ = ["TEXT", "digest", "local_time", "single"]

TEXT: dict[str, dict[str, str]] = {
    "en": {"created": "New", "restored": "Back", "kind": "Needs you", "raised": "Raised to {weight}",
           "due": "Due {due}", "due_cleared": "Due date removed", "decision": "Decision",
           "decision_changed": "Decision changed", "facts": "Changed", "deadline_due": "Due soon ({when})",
           "deadline_decide": "Decide by {when}", "source_failing": "Source failing: {source}",
           "source_recovered": "Source back: {source}", "sep": ": ",
           "weight": "weight", "kind_f": "kind", "due_at": "due", "question": "question", "options": "options",
           "decide_by": "decide by", "title": "title", "summary": "summary", "none": "none",
           "unchanged": "Unchanged: {facts}", "now": "Now: {facts}", "open": "decision open", "q": "Question: {text}",
           "opts": "Options: {text}", "rec": "Recommended: {text}", "fallback": "If nobody answers: {text}",
           "by": "Decide by: {when}", "link": "Open: {url}",
           "id": "id: {item} (event {event_seq}, revision {revision})",
           "source_failing_body": "No successful poll since {since}: {error}",
           "source_failing_never": "Failing since {since}: {error}",
           "source_recovered_body": "Polled again successfully at {when} (failing since {since}).",
           "digest": "Fold: {n} notification(s) held during quiet hours",
           "digest_at": "Fold digest: {n} change(s)"},
    "zh": {"created": "新事项", "restored": "恢复", "kind": "需要你处理", "raised": "升为 {weight}",
           "due": "截止改为 {due}", "due_cleared": "截止时间已取消", "decision": "待决定",
           "decision_changed": "决定有变", "facts": "内容更新", "deadline_due": "即将截止（{when}）",
           "deadline_decide": "请在 {when} 前决定", "source_failing": "来源故障：{source}",
           "source_recovered": "来源恢复：{source}", "sep": "：",
           "weight": "权重", "kind_f": "类型", "due_at": "截止", "question": "问题", "options": "选项",
           "decide_by": "决定期限", "title": "标题", "summary": "摘要", "none": "无",
           "unchanged": "未变：{facts}", "now": "现为：{facts}", "open": "决定待答", "q": "问题：{text}", "opts": "选项：{text}",
           "rec": "建议：{text}", "fallback": "无人答复时：{text}", "by": "决定期限：{when}", "link": "查看：{url}",
           "id": "编号：{item}（事件 {event_seq}，修订 {revision}）",
           "source_failing_body": "自 {since} 起没有成功拉取：{error}",
           "source_failing_never": "自 {since} 起失败：{error}",
           "source_recovered_body": "{when} 已恢复拉取（自 {since} 起失败）。",
           "digest": "Fold：免打扰期间的 {n} 条通知",
           "digest_at": "Fold 摘要：{n} 项变化"},
}


def local_time(value: str | None, timezone: str) -> str:
    """``2026-10-12 18:00`` in ``timezone``; the text as given when it is not an instant."""
    if not value:
        return ""
    try:
        return datetime.fromisoformat(value).astimezone(ZoneInfo(timezone)).strftime("%Y-%m-%d %H:%M")
    except (ValueError, TypeError):
        return str(value)


def _value(field: str, value: Any, text: Mapping[str, str], timezone: str) -> str:
    if value is None or value == []:
        return text["none"]
    if field in ("due_at", "decide_by"):
        return local_time(value, timezone)
    if isinstance(value, list):
        return " / ".join(str(part) for part in value)
    return str(value)


def _label(rule: str, entry: Mapping[str, Any], text: Mapping[str, str], timezone: str) -> str:
    if rule == "due":
        return text["due"].format(due=local_time(entry["due_at"], timezone)) if entry.get("due_at") \
            else text["due_cleared"]
    if rule == "decision":
        changed = any(change["field"] in ("question", "options", "decide_by") and change["before"] is not None
                      for change in entry.get("changes") or ())
        return text["decision_changed"] if changed else text["decision"]
    if rule == "deadline":
        deadline = entry.get("deadline") or {}
        name = "deadline_decide" if deadline.get("field") == "decide_by" else "deadline_due"
        return text[name].format(when=local_time(deadline.get("at"), timezone))
    if rule in ("source_failing", "source_recovered"):
        return text[rule].format(source=entry.get("source"))
    return text[rule].format(weight=entry.get("weight"))


def single(entry: Mapping[str, Any], timezone: str, public_url: str | None = None) -> tuple[str, str]:
    """``(title, body)`` of one notification."""
    text = TEXT.get(entry.get("language") or "en", TEXT["en"])
    rules = list(entry["rules"])
    if "deadline" in rules and (entry.get("deadline") or {}).get("field") == "due_at" and "due" in rules:
        rules.remove("due")  # "Due soon (…)" says it; the before → after line stays in the body
    labels = " · ".join(_label(rule, entry, text, timezone) for rule in rules)
    if entry.get("source") is not None:
        return labels, _source_body(entry, text, timezone)
    title = labels + text["sep"] + (entry.get("title") or entry["item"])
    lines = [entry["summary"]] if entry.get("summary") else []
    field_names = {"kind": text["kind_f"]}
    for change in entry.get("changes") or ():
        name = field_names.get(change["field"], text.get(change["field"], change["field"]))
        lines.append(f"{name}{text['sep']}{_value(change['field'], change['before'], text, timezone)} → "
                     f"{_value(change['field'], change['after'], text, timezone)}")
    frame = entry.get("decision")
    if frame:
        lines.extend(_frame_lines(frame, text, timezone))
    kept = entry.get("unchanged") or {}
    facts = []
    if "weight" in kept:
        facts.append(f"{text['weight']} {kept['weight']}")
    if "kind" in kept:
        facts.append(f"{text['kind_f']} {kept['kind']}")
    if "due_at" in kept:
        facts.append(f"{text['due_at']} {local_time(kept['due_at'], timezone)}")
    if "decision" in kept:
        facts.append(text["open"])
    if facts:  # a new item has no "before": its facts are what it is now
        lines.append(text["now" if "created" in entry.get("rules", ()) else "unchanged"].format(facts=" · ".join(facts)))
    if public_url:
        lines.append(text["link"].format(url=f"{public_url.rstrip('/')}/item/{entry['item']}"))
    lines.append(text["id"].format(item=entry["item"], event_seq=entry.get("event_seq"),
                                   revision=entry.get("revision")))
    return title, "\n".join(lines)


def _frame_lines(frame: Mapping[str, Any], text: Mapping[str, str], timezone: str) -> list[str]:
    lines = [text["q"].format(text=frame.get("question"))]
    options = []
    labels = {}
    for option in frame.get("options") or ():
        labels[option.get("id")] = option.get("label")
        consequence = option.get("consequence")
        options.append(f"{option.get('label')} — {consequence}" if consequence else str(option.get("label")))
    lines.append(text["opts"].format(text="; ".join(options)))
    if frame.get("recommended"):
        recommended = str(labels.get(frame["recommended"], frame["recommended"]))
        if frame.get("basis"):
            recommended += f" ({frame['basis']})" if text is TEXT["en"] else f"（{frame['basis']}）"
        lines.append(text["rec"].format(text=recommended))
    if frame.get("fallback"):
        lines.append(text["fallback"].format(text=frame["fallback"]))
    if frame.get("decide_by"):
        lines.append(text["by"].format(when=local_time(frame["decide_by"], timezone)))
    return lines


def _source_body(entry: Mapping[str, Any], text: Mapping[str, str], timezone: str) -> str:
    since = local_time(entry.get("since"), timezone)
    if entry["rules"] == ["source_recovered"]:
        return text["source_recovered_body"].format(when=local_time(entry.get("at"), timezone), since=since)
    return text["source_failing_body"].format(since=since, error=entry.get("error") or "?")


def digest(entries: Sequence[Mapping[str, Any]], language: str, timezone: str, *, held: bool) -> tuple[str, str]:
    """``(title, body)`` of many entries in one notification: one line each, with the item's id."""
    text = TEXT.get(language, TEXT["en"])
    lines = []
    for entry in entries:
        title, _ = single(entry, timezone)
        lines.append(f"- {title} [{entry.get('item') or entry.get('source')}]")
    name = "digest" if held else "digest_at"
    return text[name].format(n=len(entries)), "\n".join(lines)
