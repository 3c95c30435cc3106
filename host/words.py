"""The Chinese words of the host's text views (``foldctl tick``, ``inbox``, ``feedback``, ``doctor``, ``backup``).

Added to the core's catalog (``fold_core.words``) by ``words()``; a template
without an entry stays English (a test holds that the views' templates have
one).
"""

from __future__ import annotations

from fold_core.words import Words, view_words

__all__ = ["CATALOG", "words"]

CATALOG = {"zh": {
    # foldctl tick
    "polled {source}: {status}, {count} new": "已拉取 {source}：{status}，新增 {count}",
    "signal {type}: {reason}": "信号 {type}：{reason}",
    "outcome: {outcome} after {attempts} attempt(s){event}": "结果：{outcome}，尝试 {attempts} 次{event}",
    " (event {event_seq})": "（事件 {event_seq}）",
    "ok": "正常", "failed": "失败", "committed": "已提交", "nothing": "无事可做",
    # foldctl inbox
    "(no observations)": "（没有观察）", "pending": "待处理", "processed": "已处理", "deferred": "已推迟",
    "expired": "已过期",
    "used": "采用", "duplicate": "重复", "noise": "噪音",
    "{disposition}: {why}": "{disposition}：{why}",
    # foldctl feedback
    "saved {id}": "已保存 {id}", "; reminder at {at}": "；提醒于 {at}",
    # foldctl doctor
    "warn": "警告", "fail": "失败",
    "config": "配置", "config permissions": "配置文件权限", "store": "存储", "host database": "主机数据库",
    "daemon": "守护进程", "agent": "编辑器", "source {name}": "信息源 {name}", "consumer {name}": "消费者 {name}",
    "probe source {name}": "探测信息源 {name}", "probe editor": "探测编辑器",
    "{failed} check(s) failed": "{failed} 项检查失败", ", {warned} warning(s)": "，{warned} 项警告",
    "ok ({warned} warning(s))": "正常（{warned} 项警告）",
    # foldctl backup / restore
    "backup of event {event_seq} (revision {revision}) in {out}: {count} files":
        "已备份事件 {event_seq}（修订 {revision}）到 {out}：{count} 个文件",
    "restored event {event_seq} (revision {revision}, backed up at {at}) into {store}; verify: ok":
        "已把事件 {event_seq}（修订 {revision}，备份于 {at}）恢复到 {store}；校验：正常",
}}


def words() -> Words:
    """The command line's view words with the host's templates."""
    return view_words().extend(CATALOG)
