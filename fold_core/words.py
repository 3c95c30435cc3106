"""The words of the views a person reads, in ``[host] language``, and times in ``[host] timezone``.

``Words(language, zone)`` translates an English template (the message id,
as gettext does) and formats it: ``words("used {used} of {budget}", used=3,
budget=64)``. English is the template itself; Chinese comes from the
catalogs (``CATALOG`` here for the core's views; the host and the Pinboard
add theirs with ``Words.extend``). A template without a translation stays
English — a test holds that every template the views use has one.
``words.when(instant)`` shows a stored instant in the zone (``2026-10-09
08:00``); without a zone it is shown as stored. JSON never goes through
here: it keeps ISO 8601 with offsets.

The command line renders with the process's ``view_words()``, set once from
the plugins.toml in use (``configfile.view_settings``) before the text view
is printed; the Pinboard keeps its own ``Words``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

__all__ = ["CATALOG", "LANGUAGES", "Words", "use_view_words", "view_words"]

LANGUAGES = ("en", "zh")

CATALOG: dict[str, dict[str, str]] = {"zh": {
    # the vocabulary of the state
    "critical": "紧急", "high": "高", "normal": "普通", "low": "低", "trace": "痕迹",
    "needs-you": "待你处理", "in-progress": "进行中", "done": "已完成", "fyi": "知悉",
    "active": "在板上", "withdrawn": "已撤下", "merged": "已合并",
    "created": "新建", "updated": "更新", "restored": "恢复",
    "commit": "提交", "acknowledge": "确认", "checked": "检查", "annotation": "批注",
    "saved": "已保存", "acknowledged": "已确认",
    # foldctl state
    "Fold state at {now} · revision {revision} · event {event_seq} · budget {budget}":
        "Fold 状态 · {now} · 修订 {revision} · 事件 {event_seq} · 预算 {budget}",
    "last checked (no change) at {at}": "上次检查（无变化）于 {at}",
    "Pending annotations ({count}):": "等待编辑处理的批注（{count}）：",
    "{id} on {target} by {author} at {at}: {text}": "{id} · {target} · {author} · {at}：{text}",
    "the {shown} most recent of {total}": "最近的 {shown} 个（共 {total} 个）",
    "Not active ({shown}):": "不在板上（{shown}）：",
    "(with {parent})": "（随 {parent}）",
    "root": "根层", "children of {id}": "{id} 的子层",
    "{name}: used {used} of {budget}, free {free}": "{name}：已用 {used}/{budget}，空余 {free}",
    ", {count} items (not expanded)": "，{count} 个条目（未展开）",
    " (empty)": "（空）",
    "age {age}": "已存在 {age}", "updated {since} ago": "{since} 前更新", "overdue {d}": "已逾期 {d}",
    "due in {d}": "{d} 后截止", "stale since {d}": "已过时 {d}", "stale in {d}": "{d} 后过时",
    "reason: {reason}": "理由：{reason}", "source: {channel} {ref}": "来源：{channel} {ref}",
    "{id} ({status}, {author}): {text}": "{id}（{status}，{author}）：{text}",
    # foldctl history
    "not found: no accepted batch has this batch_id": "未找到：没有已接受的批次使用这个 batch_id",
    "({count} records shown; the store is at event {event_seq})": "（显示 {count} 条记录；存储现在在事件 {event_seq}）",
    "#{event_seq} {type} {batch_id} by {actor} at {at} · revision {revision}":
        "#{event_seq} {type} {batch_id} · {actor} · {at} · 修订 {revision}",
    " (under {layer})": "（在 {layer} 之下）", "share {share}": "份额 {share}",
    "acknowledged {note}": "已确认 {note}", "no change (checked)": "没有变化（检查）",
    # answers
    "rejected:": "被拒绝：", "error:": "错误：",
    "{type} {batch_id}: event {event_seq}, revision {revision}{replayed}":
        "{type} {batch_id}：事件 {event_seq}，修订 {revision}{replayed}",
    " (replayed: this batch was already accepted)": "（重放：这个批次之前已被接受）",
    "{op} {item} share {share}": "{op} {item} 份额 {share}", "{name}: used {used} of {budget}": "{name}：已用 {used}/{budget}",
    "saved {annotation} (event {event_seq})": "已保存 {annotation}（事件 {event_seq}）",
    "created store {store} (budget {budget})": "已创建存储 {store}（预算 {budget}）",
    "the store {store} already exists (budget {budget})": "存储 {store} 已存在（预算 {budget}）",
    "ok: {records} records, revision {revision}, {cache}{torn}": "正常：{records} 条记录，修订 {revision}，{cache}{torn}",
    "no snapshot": "没有快照", "snapshot at event {event_seq} consistent": "事件 {event_seq} 的快照一致",
    "; torn tail of {size} bytes (repaired by the next write)": "；末尾有 {size} 字节的残缺写入（下次写入时修复）",
}}


class Words:
    """Templates in one language, instants in one zone."""

    def __init__(self, language: str = "en", zone: str | None = None) -> None:
        self.language = language if language in LANGUAGES else "en"
        self.zone_name = zone
        self.zone = _zone(zone)
        self._table: dict[str, str] = dict(CATALOG.get(self.language, {}))

    def extend(self, catalog: Mapping[str, Mapping[str, str]]) -> "Words":
        """Add a catalog (``{language: {template: translation}}``); returns self."""
        self._table.update(catalog.get(self.language, {}))
        return self

    def __call__(self, template: str, **values: object) -> str:
        text = self._table.get(template, template)
        return text.format(**values) if values else text

    def has(self, template: str) -> bool:
        return self.language == "en" or template in self._table

    def when(self, instant: object) -> str:
        """A stored instant shown in the zone (``YYYY-MM-DD HH:MM``), or as stored without a zone."""
        if not isinstance(instant, str) or self.zone is None:
            return "" if instant is None else str(instant)
        try:
            moment = datetime.fromisoformat(instant)
        except ValueError:
            return instant
        if moment.tzinfo is None:
            return instant
        local = moment.astimezone(self.zone)
        return local.strftime("%Y-%m-%d %H:%M" if local.second == 0 else "%Y-%m-%d %H:%M:%S")


def _zone(name: str | None) -> ZoneInfo | None:
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


_current = Words()


def view_words() -> Words:
    """The words the command line's text views use now."""
    return _current


def use_view_words(words: Words) -> None:
    global _current
    _current = words
