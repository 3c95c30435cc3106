"""The briefing document laid out as Markdown or plain text (contract §12).

Same facts as ``fold.briefing/1``, nothing decided here: entries in rank
order, children nested, every entry with its id, summaries whole, overdue
and stale marked, coverage said. Item text is untrusted: control characters
and line breaks become spaces, and in Markdown every character that could
make a link, an image, HTML or emphasis is escaped. Times are shown in the
host's time zone. Labels follow the ``[host] language`` (zh | en).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fold_core.cli.textview import width
from fold_core.timefmt import instants_shown
from fold_core.words import Words

__all__ = ["LABELS", "clean", "md_escape", "render"]

LABELS = {
    "en": {"title": "Fold briefing", "head": "revision {revision} · event {event_seq} · root layer: {used} of {budget}"
           " used, {free} free",
           "since": "Since the last briefing (after event {after}, up to event {to})",
           "window": "In the last {span}, since {at} (after event {after}, up to event {to})",
           "first": "Since the last briefing: this is the first briefing (nothing to compare with).",
           "nothing": "Nothing changed.", "created": "Created", "updated": "Updated", "restored": "Restored",
           "withdrawn": "Withdrawn", "merged": "Merged", "acknowledged": "Annotations acknowledged",
           "now": "Now", "empty": "(no active items)", "children": "children ({used} of {budget} used)",
           "trace": "trace ({count})", "due": "due {at} ({left})", "in": "in {d}", "overdue": "OVERDUE {d}",
           "stale": "STALE {d}", "now_weight": "now {weight}", "with": "with {parent}",
           "was_created": "created and withdrawn in this window", "on": "on",
           "pending": "Annotations waiting for the editor", "by": "by",
           "coverage": "Sources", "coverage_unknown": "Source coverage unknown: this briefing holds only what was"
           " committed, not what the sources may hold.",
           "coverage_none": "No sources are configured: this briefing holds only what was committed.",
           "ok": "ok", "failed": "FAILED", "unknown": "not polled yet", "last_ok": "last ok {at}",
           "silence": "silence from {n} failed source(s) does not mean nothing happened there.",
           "editor": "Editor",
           "unreachable": "The configured editor ({type}) could not be reached in {n} window(s) in a row, since {at}.",
           "standing_in": "The baseline editor (rules, no model) edits in its place until it answers again.",
           "waiting": "New observations wait in the inbox until it answers."},
    "zh": {"title": "Fold 简报", "head": "修订 {revision} · 事件 {event_seq} · 根层：已用 {used}/{budget}，空余 {free}",
           "since": "自上次简报以来（事件 {after} 之后，到事件 {to}）",
           "window": "最近 {span}，自 {at} 起（事件 {after} 之后，到事件 {to}）",
           "first": "自上次简报以来：这是第一份简报（没有可比较的上一份）。",
           "nothing": "没有变化。", "created": "新建", "updated": "更新", "restored": "恢复", "withdrawn": "撤下",
           "merged": "合并", "acknowledged": "已确认的批注", "now": "当前", "empty": "（看板上没有条目）",
           "children": "子层（已用 {used}/{budget}）", "trace": "痕迹（{count}）", "due": "截止 {at}（{left}）",
           "in": "还有 {d}", "overdue": "已逾期 {d}", "stale": "已过时 {d}", "now_weight": "现为{weight}",
           "with": "随 {parent}", "was_created": "本期新建又撤下", "on": "于", "pending": "等待整理的批注", "by": "作者",
           "coverage": "信息源", "coverage_unknown": "信息源覆盖情况未知：本简报只反映已提交的状态。",
           "coverage_none": "没有配置信息源：本简报只反映已提交的状态。",
           "ok": "正常", "failed": "失败", "unknown": "尚未拉取", "last_ok": "上次成功 {at}",
           "silence": "{n} 个信息源失败：这些来源没有消息不代表没有发生事情。",
           "editor": "编辑器",
           "unreachable": "配置的编辑器（{type}）自 {at} 起连续 {n} 个窗口无法连接。",
           "standing_in": "基线编辑器（规则，无模型）正在代为整理，直到它重新应答。",
           "waiting": "新的观测在收件箱里等待它重新应答。"},
}

_MD_SPECIAL = frozenset("\\`*_[]<>|~")  # enough that item text never makes a link, HTML or emphasis


def render(brief: Mapping[str, Any], fmt: str) -> str:
    """``md`` | ``text`` | ``json``."""
    if fmt == "json":
        return json.dumps(brief, ensure_ascii=False, indent=1) + "\n"
    return _Renderer(brief, markdown=fmt == "md").render()


# Unicode categories Cc (C0, DEL, C1), Zl and Zp: exactly these code points.
_ONE_LINE = {code: " " for code in [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]}
_MD_TABLE = {**_ONE_LINE, **{ord(c): "\\" + c for c in _MD_SPECIAL}}


def clean(text: object) -> str:
    """One line: control characters and line breaks become spaces."""
    return "" if text is None else str(text).translate(_ONE_LINE)


def md_escape(text: object) -> str:
    """``clean`` text with Markdown's active characters escaped."""
    return "" if text is None else str(text).translate(_MD_TABLE)


class _Renderer:
    def __init__(self, brief: Mapping[str, Any], *, markdown: bool) -> None:
        self.brief, self.md = brief, markdown
        self.labels = LABELS.get(brief.get("language") or "en", LABELS["en"])
        self.words = Words(brief.get("language") or "en")  # weights and kinds in the same language
        self.zone = _zone(brief.get("timezone") or "UTC")
        self.lines: list[str] = []

    # -- pieces ----------------------------------------------------------------

    def t(self, key: str, **values: Any) -> str:
        return self.labels[key].format(**values)

    def text(self, value: object) -> str:
        return md_escape(value) if self.md else clean(value)

    def reason(self, value: object) -> str:
        """An editor's reason, its instants in the briefing's zone like every other time here."""
        return self.text(instants_shown(str(value), self.when))

    def ident(self, item: str | None) -> str:
        if item is None:
            return "?"
        return f"`{item}`" if self.md else f"[{item}]"

    def strong(self, text: str) -> str:
        return f"**{text}**" if self.md else text

    def heading(self, level: int, text: str) -> None:
        if self.lines:
            self.lines.append("")
        if self.md:
            self.lines.append("#" * level + " " + text)
        else:
            self.lines += [text, ("=" if level == 1 else "-") * max(width(text), 4)]

    def when(self, instant: str | None) -> str:
        if not instant:
            return ""
        try:
            moment = datetime.fromisoformat(instant)
        except ValueError:
            return clean(instant)
        return moment.astimezone(self.zone).strftime("%Y-%m-%d %H:%M")

    # -- sections --------------------------------------------------------------

    def render(self) -> str:
        brief, root = self.brief, self.brief["root"]
        self.heading(1, f"{self.t('title')} · {self.when(brief['now'])} ({self.text(brief['timezone'])})")
        self.lines += ["", self.t("head", revision=brief["revision"], event_seq=brief["event_seq"], used=root["used"],
                                  budget=root["budget"], free=root["free"])]
        self.coverage(brief.get("coverage"))
        self.editor(brief.get("editor"))
        self.since(brief.get("since"))
        self.heading(2, self.t("now"))
        self.lines.append("")
        if not root["entries"] and not root["trace"]:
            self.lines.append(self.t("empty"))
        self.layer(root, "")
        self.pending(brief.get("pending_annotations") or [])
        return "\n".join(self.lines).rstrip("\n") + "\n"

    def coverage(self, sources: list | None) -> None:
        self.heading(2, self.t("coverage"))
        self.lines.append("")
        if sources is None:
            self.lines.append(self.t("coverage_unknown"))
            return
        if not sources:
            self.lines.append(self.t("coverage_none"))
            return
        for source in sources:
            status = source["status"]
            parts = [self.strong(self.t("failed")) if status == "failed" else self.t(status)]
            if source.get("last_ok_at"):
                parts.append(self.t("last_ok", at=self.when(source["last_ok_at"])))
            if status == "failed" and source.get("error"):
                parts.append(self.text(source["error"]))
            channel = f" ({self.text(source['channel'])})" if source.get("channel") else ""
            self.lines.append(f"- {self.ident(source['source'])}{channel}: {' · '.join(parts)}")
        failed = sum(1 for source in sources if source["status"] == "failed")
        if failed:
            self.lines += ["", self.t("silence", n=failed)]

    def editor(self, editor: Mapping[str, Any] | None) -> None:
        """Said only when the configured editor could not be reached (and who stands in)."""
        if not editor:
            return
        self.heading(2, self.t("editor"))
        line = self.t("unreachable", type=self.text(str(editor.get("type"))), n=editor.get("windows"),
                      at=self.when(editor.get("since")))
        line += " " + self.t("standing_in" if editor.get("fallback") else "waiting")
        self.lines += ["", self.strong(line) if editor.get("fallback") else line]
        if editor.get("error"):
            self.lines.append(self.text(str(editor["error"])))

    def since(self, window: Mapping[str, Any] | None) -> None:
        if window is None:
            self.heading(2, self.t("first"))
            return
        if window.get("span"):
            self.heading(2, self.t("window", span=window["span"], at=self.when(window.get("from_at")),
                                   after=window["after_event_seq"], to=window["to_event_seq"]))
        else:
            self.heading(2, self.t("since", after=window["after_event_seq"], to=window["to_event_seq"]))
        groups = ("created", "updated", "restored", "withdrawn", "merged", "acknowledged")
        if not any(window[group] for group in groups):
            self.lines += ["", self.t("nothing")]
            return
        for group in groups:
            if not window[group]:
                continue
            self.lines += ["", self.strong(self.t(group))]
            for entry in window[group]:
                self.lines.append("- " + getattr(self, f"_since_{group}", self._since_item)(entry))

    def _since_item(self, entry: Mapping[str, Any]) -> str:
        line = f"{self.ident(entry['id'])} {self.text(entry['title'])}"
        return line + (f" — {self.words(entry['weight'])}, {self.words(entry['kind'])}" if entry.get("weight") else "")

    def _since_updated(self, entry: Mapping[str, Any]) -> str:
        weight = self.words(entry["weight"])
        return f"{self.ident(entry['id'])} {self.text(entry['title'])} — {self.t('now_weight', weight=weight)}"

    def _since_withdrawn(self, entry: Mapping[str, Any]) -> str:
        line = f"{self.ident(entry['id'])} {self.text(entry['title'])}"
        notes = []
        if entry.get("withdrawn_with"):
            notes.append(self.t("with", parent=self.ident(entry["withdrawn_with"])))
        if entry.get("created"):
            notes.append(self.t("was_created"))
        if entry.get("reason"):
            notes.append(self.reason(entry["reason"]))
        return line + (" — " + " · ".join(notes) if notes else "")

    def _since_merged(self, entry: Mapping[str, Any]) -> str:
        sources = ", ".join(f"{self.ident(s['id'])} {self.text(s['title'])}" for s in entry["sources"])
        line = f"{sources} → {self.ident(entry['into'])} {self.text(entry['title'])}"
        return line + (f" — {self.reason(entry['reason'])}" if entry.get("reason") else "")

    def _since_acknowledged(self, entry: Mapping[str, Any]) -> str:
        line = self.ident(entry["annotation"])
        if entry.get("item"):
            line += f" {self.t('on')} {self.ident(entry['item'])}"
        return line + (f": {self.text(entry['text'])}" if entry.get("text") else "")

    def layer(self, layer: Mapping[str, Any], pad: str) -> None:
        for entry in layer["entries"]:
            self.entry(entry, pad)
        trace = layer.get("trace")
        if trace:
            ids = []
            for item in trace["ids"]:
                marks = [self.t("overdue", d="").strip()] if item in trace["overdue"] else []
                marks += [self.t("stale", d="").strip()] if item in trace["stale"] else []
                ids.append(self.ident(item) + (f" ({', '.join(marks)})" if marks else ""))
            self.lines.append(f"{pad}- {self.t('trace', count=trace['count'])}: {', '.join(ids)}")

    def entry(self, entry: Mapping[str, Any], pad: str) -> None:
        weight = entry["weight"]
        full = weight in ("critical", "high")
        title = self.text(entry["title"])
        parts = [f"{pad}{entry['rank']}. {self.strong(title) if full else title} {self.ident(entry['id'])}",
                 self.words(weight)]
        if full:
            parts.append(self.words(entry["kind"]))
            if entry.get("due_at"):
                left = entry.get("until_due") or ""
                left = self.t("overdue", d=left[1:]) if left.startswith("-") else self.t("in", d=left)
                parts.append(self.t("due", at=self.when(entry["due_at"]), left=left))
        elif entry.get("overdue"):
            parts.append(self.strong(self.t("overdue", d=entry["until_due"][1:])))
        if full and entry.get("overdue"):
            parts[-1] = self.strong(parts[-1])
        if entry.get("stale"):
            parts.append(self.strong(self.t("stale", d=entry["until_stale"][1:])))
        line = " · ".join(parts)
        body = pad + " " * (len(str(entry["rank"])) + 2)
        if full:
            self.lines.append(line)
            if entry.get("summary"):
                self.lines.append(body + self.text(entry["summary"]))
        else:
            summary = entry.get("summary")
            self.lines.append(line + (f" — {self.text(summary)}" if summary else ""))
        children = entry.get("children")
        if children:
            self.lines.append(body + self.t("children", used=children["used"], budget=children["budget"]))
            self.layer(children, body)

    def pending(self, notes: list) -> None:
        if not notes:
            return
        self.heading(2, self.t("pending"))
        self.lines.append("")
        for note in notes:
            self.lines.append(f"- {self.ident(note['id'])} {self.t('on')} {self.ident(note['item'])}"
                              f" ({self.t('by')} {self.text(note['author'])}, {self.when(note['created_at'])}):"
                              f" {self.text(note['text'])}")


def _zone(name: str):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        from datetime import timezone

        return timezone.utc
