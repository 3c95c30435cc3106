"""The Pinboard's Chinese words (its pages, notices and refusals), beside the core's (``fold_core.words``).

Templates call ``t("English template", name=value)``; the page shows the
translation in ``[host] language``. A test holds that every template the
pages use has an entry here or in the core's catalog.
"""

from __future__ import annotations

__all__ = ["CATALOG"]

CATALOG = {"zh": {
    # the frame and the board
    "Fold Pinboard": "Fold 看板", "Board": "看板", "Changes": "变化",
    "revision {revision} · event {event_seq} · now {now} · budget {budget} per layer":
        "修订 {revision} · 事件 {event_seq} · 现在 {now} · 每层预算 {budget}",
    "Showing the children of": "只显示这个条目的子层：", "the whole board": "整个看板",
    "Since your last visit": "自你上次来过", "What changed recently": "最近的变化",
    "{count} new records since your last visit": "自你上次来过有 {count} 条新记录",
    "1 new record since your last visit": "自你上次来过有 1 条新记录",
    "event {event_seq}": "事件 {event_seq}", "Nothing new since your last visit": "自你上次来过没有新变化",
    "Weight at least": "最低权重", "minimum weight": "最低权重", "any weight": "任意权重", "Kinds": "类型",
    "Filter": "筛选", "show all": "全部显示", "Legend": "图例", "Reading the board": "怎么看这块板",
    "Card area = the layer's area × share / {budget}. Blank = free budget. Grey hatching = items the filters leave "
    "out. Each children layer is its own rectangle at its own scale.":
        "卡片面积 = 这一层的面积 × 份额 / {budget}。空白 = 空余预算。灰色斜线 = 被筛选掉的条目。"
        "每个子层是按自己比例画的一个矩形。",
    "Border": "边框", "past due": "已过截止时间", "past stale_after": "已过 stale_after",
    "a ◢ corner: the card's text continues in the list.": "右下角有 ◢：卡片的文字在列表里接着写。",
    "overdue": "逾期", "stale": "过时",
    "Root layer": "根层", "Children of": "子层：", "used {used}/{budget} · free {free}": "已用 {used}/{budget} · 空余 {free}",
    "not shown {share}": "未显示 {share}", "not shown (filtered):": "未显示（被筛选）：",
    "budget rectangle of {key}": "{key} 的预算矩形", "overdue {d}": "已逾期 {d}", "due in {d}": "{d} 后截止",
    "stale {d} ago": "已过时 {d}", "{count} children": "{count} 个子条目", "(not drawn)": "（未画出）",
    "not shown": "未显示", "{count} items": "{count} 个条目", "1 item": "1 个条目",
    # messages and the login
    "Back to the board": "回到看板", "Token needed": "需要令牌", "This Pinboard needs its token": "这块看板需要令牌",
    "Paste the token from the environment variable named by [pinboard] token_env (or the file named by "
    "token_file). It is kept in an HttpOnly cookie of this browser (a value derived from it, not the token "
    "itself).": "粘贴 [pinboard] token_env 指定的环境变量（或 token_file 指定的文件）里的令牌。"
                "这个浏览器会把它保存在一个 HttpOnly cookie 里（保存的是由它算出的值，不是令牌本身）。",
    "Token": "令牌", "Open the board": "打开看板", "That is not the token.": "令牌不对。",
    "The store could not be read": "无法读取存储",
    "{error} — nothing is known about the last action: reload to see its outcome.":
        "{error} —— 上一个操作的结果未知：刷新页面查看。",
    "Not a filter the board knows": "看板不认识这个筛选条件", "No such active item": "没有这个在板上的条目",
    "{item} is not an active item.": "{item} 不是在板上的条目。", "No such item": "没有这个条目",
    "Item ids are [a-z0-9-], 1–64 characters.": "条目 id 由 [a-z0-9-] 组成，1–64 个字符。",
    "No item was ever called {item}.": "从来没有叫 {item} 的条目。", "Not an event number": "不是事件编号",
    "since must be a whole number ≥ 0.": "since 必须是 ≥ 0 的整数。", "Not allowed": "不允许",
    "This address does not take that method.": "这个地址不接受这种请求方法。", "Not found": "找不到",
    "There is no page at this address.": "这个地址没有页面。", "This form was refused": "这个表单被拒绝了",
    "The form's security token is missing or does not match (a form from another page, or an old one). Reload the "
    "page and send it again; nothing was saved.":
        "表单的安全令牌缺失或不匹配（来自别的页面，或是旧表单）。请刷新页面再提交；什么都没有保存。",
    # the changes page
    "revision {revision} · event {event_seq}": "修订 {revision} · 事件 {event_seq}", "Recent changes": "最近的变化",
    "Records after event {since} up to event {event_seq}": "事件 {since} 之后到事件 {event_seq} 的记录",
    "(first visit: the latest {count})": "（第一次来：最近的 {count} 条）",
    "This page remembers event {event_seq} as your last visit.": "这个页面把事件 {event_seq} 记为你上次来过的位置。",
    "notes saved": "条批注已保存", "checks": "次检查", "Nothing happened since.": "此后什么都没发生。",
    "{type} by {actor}": "{type} · {actor}", "revision {revision}": "修订 {revision}", "under {layer}": "在 {layer} 之下",
    "note {id} on": "批注 {id}，关于", "the editor checked; nothing changed": "编辑检查过；没有变化",
    "The {shown} most recent of {count} records are shown.": "显示了 {count} 条记录中最近的 {shown} 条。",
    "Show these again": "再显示一次这些",
    # the item page
    "revision {revision} · event {event_seq} · now {now}": "修订 {revision} · 事件 {event_seq} · 现在 {now}",
    "This item is": "这个条目", "merged into": "合并进", "with": "随", "It is no longer on the board.": "它已不在看板上。",
    "weight": "权重", "kind": "类型", "share": "份额", "(set explicitly)": "（明确指定）", "rank {rank}": "排名 {rank}",
    "reason": "理由", "due": "截止", "by {d}": "{d}", "in {d}": "还有 {d}", "stale after": "过时时间",
    "for {d}": "{d}", "created": "新建", "{d} ago": "{d} 前", "updated": "更新", "Children": "子层",
    "used {used}/{budget}": "已用 {used}/{budget}", "Open the children on the board": "在看板上打开子层",
    "Sources": "来源", "observed {at}": "观察于 {at}",
    "Links open only when you click them; the Pinboard never fetches a source.": "链接只在你点击时打开；看板从不抓取来源。",
    "None.": "无。", "Annotations": "留言", "acknowledged at revision {revision}": "已在修订 {revision} 确认",
    "saved, waiting for the editor": "已保存，等待编辑处理", "None yet.": "还没有。",
    "Add a note for the editor": "给编辑写一条批注",
    "Saved as saved; the editor acknowledges it in its next cycle. At most 2,000 characters.":
        "保存后状态为 saved；编辑会在下一轮确认。最多 2,000 个字符。",
    "Save the note": "保存留言", "Feedback": "反馈",
    "Feedback goes to the editor's inbox; the editor decides what it means for the item in its next cycle.":
        "反馈进入编辑的收件箱；编辑在下一轮决定它对这个条目意味着什么。",
    "Seen it (ack)": "看到了（ack）", "What I": "我", "decided": "决定了", "did": "做了", "want to add": "想补充",
    "Details": "详情", "Send": "发送", "Snooze: remind me": "稍后提醒我", "Or pick a time ({zone}; a picked time wins)":
        "或者选一个时间（{zone}；选了时间就以它为准）", "Why (optional)": "原因（可选）", "Snooze": "稍后提醒",
    "History": "历史", "{count} records": "{count} 条记录", "1 record": "1 条记录",
    "after event {event_seq}": "事件 {event_seq} 之后", "Records of the last events only.": "只有最近事件的记录。",
    "The whole history": "完整历史", "reads the whole log.": "会读取整个日志。",
    "note {id} saved:": "批注 {id} 已保存：", "The {shown} most recent are shown;": "显示了最近的 {shown} 条；",
    "lists all.": "列出全部。",
    "in 1 hour": "1 小时后", "in 3 hours": "3 小时后", "this evening 18:00": "今晚 18:00", "tomorrow 09:00": "明天 09:00",
    "in a week, 09:00": "一周后 09:00", "at the time below": "下面选的时间",
    # the observation page
    "observation": "观察", "(no title)": "（无标题）", "source": "来源", "from": "发件人", "at": "时间", "open": "打开",
    "thread": "会话", "status": "状态", "(first deferred {at}, {times} times)": "（首次推迟于 {at}，共 {times} 次）",
    "(first deferred {at}, 1 time)": "（推迟于 {at}，1 次）", "Text": "正文", "(no text)": "（无正文）",
    "Source facts": "来源信息", "What the editor did with it": "编辑怎么处理它", "related:": "相关：",
    "Not yet: it waits for the editor's next cycle.": "还没有：它在等编辑的下一轮。",
    "The Pinboard never fetches a source; a link opens only when you click it.": "看板从不抓取来源；链接只在你点击时打开。",
    "No such observation": "没有这个观察",
    "This host's inbox holds no observation with that id.": "这台主机的收件箱里没有这个 id 的观察。",
    "expired": "已过期",
    # notices and refusals of the forms
    "Saved as {note} (status: saved). The editor sees it in its next cycle and acknowledges it in a commit; it then "
    "shows here as acknowledged at that revision. A note never changes the item by itself.":
        "已保存为 {note}（状态：saved）。编辑在下一轮看到它，并在一次提交中确认；之后这里会显示在那个修订确认。"
        "批注本身从不改变条目。",
    "Snoozed until {until}. The reminder is kept by the host: at that time the item goes back to the editor. Nothing "
    "about the item changes before then.": "已推迟到 {until}。提醒由主机保存：到时这个条目会回到编辑手里。在那之前条目不会有任何变化。",
    "{what}. The editor reads it in its next cycle and decides what it means for the item; the Pinboard never "
    "changes the item itself.": "{what}。编辑在下一轮读到它并决定它对这个条目意味着什么；看板从不自己改变条目。",
    "Acknowledged": "已确认", "Decision recorded": "已记录决定", "Action recorded": "已记录行动", "Input recorded": "已记录补充",
    "write something to save": "写点什么再保存", "pick a date and time for the reminder": "为提醒选一个日期和时间",
    "choose when to be reminded": "选择什么时候提醒", "the reminder time is in the past": "提醒时间已经过去了",
    "the form is not UTF-8 text": "表单不是 UTF-8 文本",

    # decision frames
    "Decisions": "待决定", "Waiting for your decision": "等你决定的事", "Nothing waits for your decision.": "没有等你决定的事。",
    "This question changed after you opened the page, so your answer was not saved.":
        "你打开页面之后这个问题变了，所以你的回答没有保存。",
    "What changed:": "变化如下：", "Here is the question as it stands now: choose again.": "下面是现在的问题：请重新选择。",
    "Your answer: {option}": "你的回答：{option}", "recommended": "推荐", "if nobody answers": "无人回答时",
    "Recommended": "推荐", "Without an answer": "没有回答时", "nothing is said to happen": "来源没有说会怎样",
    "decide by {at}": "请在 {at} 前决定", "What is known": "已知情况",
    "evidence: complete": "证据：完整", "evidence: partial": "证据：部分", "evidence: missing": "证据：缺失",
    "evidence: conflicting": "证据：相互矛盾", "recommended: {label}": "推荐：{label}",
    "choose one of the options": "请选择其中一个选项",
    "You chose “{label}”. Your answer is saved for the editor, who moves the item on in its next cycle; whoever "
    "asked hears it too. You can still change your mind here.":
        "你选择了“{label}”。回答已保存给编辑，它会在下一轮据此推进这个条目；提问的一方也会收到。你仍可以在这里改变主意。",
    "The question was replaced since you opened the page.": "你打开页面之后，问题被换掉了。",
    "The question was: {old}": "原来的问题是：{old}", "New option: {label}": "新增选项：{label}",
    "The option {old} is now called {label}": "选项“{old}”现在叫“{label}”",
    "The consequence of {label} changed; it was: {old}": "“{label}”的后果变了；原来是：{old}",
    "The option {label} is gone": "选项“{label}”被去掉了",
    "The recommendation changed; it was: {old}": "推荐变了；原来推荐：{old}",
    "What happens without an answer changed; it was: {old}": "没有回答时会怎样变了；原来是：{old}",
    "The time to decide by changed; it was: {old}": "决定期限变了；原来是：{old}",
    "What is known changed; it was: {old}": "已知情况变了；原来是：{old}",
    "The reasoning behind the question changed.": "问题背后的理由变了。", "(no subject)": "（无主题）",
    # the forms, written for a person
    "Leave a note for the editor": "给编辑留言",
    "The editor reads your note the next time it looks at your sources and marks it as read. Up to 2,000 characters.":
        "编辑下次查看你的信息源时会读到这条留言，并标记为已读。最多 2,000 个字符。",
    "Tell the editor where this stands. It reads your words the next time it looks and updates the item itself.":
        "告诉编辑这件事进展如何。它下次查看时会读到，并自己更新这个条目。",
    "I've seen it": "我看到了", "Tell the editor": "告诉编辑", "I've decided": "我已决定", "I've done it": "我已经做了",
    "Something to add": "我要补充", "In a few words": "简单说明", "Remind me later": "稍后提醒我",
    "Or pick a day and time ({zone}); a time picked here wins": "或者选一个日期和时间（{zone}）；以这里选的为准",
    "Remind me": "提醒我",
    "Your note is saved ({note}). The editor reads it the next time it looks at your sources; it then shows here as "
    "read. A note never changes the item by itself.":
        "留言已保存（{note}）。编辑下次查看你的信息源时会读到它，之后这里会显示为已读。留言本身不会改变条目。",
    "You will be reminded {until}: the item goes back to the editor then. Until then nothing about it changes.":
        "将在 {until} 提醒你：到时这个条目会回到编辑手里。在那之前它不会有任何变化。",
    "{what}. The editor reads it the next time it looks at your sources and updates the item; the Pinboard never "
    "changes the item itself.": "{what}。编辑下次查看你的信息源时会读到，并更新这个条目；看板从不自己改变条目。",
    "Noted: you have seen it": "已记下：你看到了", "Your decision is noted": "已记下你的决定",
    "Noted: you have done it": "已记下：你已经做了", "Your addition is noted": "已记下你的补充",
    # the changes page in words
    "Between {first} and {last}:": "{first} 到 {last} 之间：", "At {at}:": "{at}：",
    "added": "新增了", "changed": "更新了", "brought back": "恢复了", "took down": "撤下了", "merged away": "合并掉了",
    "added: {count}": "新增 {count}", "changed: {count}": "更新 {count}", "brought back: {count}": "恢复 {count}",
    "took down: {count}": "撤下 {count}", "merged away: {count}": "合并 {count}", "notes left: {count}": "留言 {count}",
    "notes read: {count}": "已读留言 {count}",
    "The editor": "编辑", "You": "你", "Fold": "Fold", "{actor}": "{actor}", "left a note on": "留言给",
    "read your notes {notes}": "读了你的留言 {notes}", "looked at the news; nothing needed changing": "看过新消息；无需改动",
    "details": "详情", "notes left": "留言", "notes read": "已读留言",
}}
