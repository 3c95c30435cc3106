"""The Chinese words of the host's text views (``foldctl tick``, ``inbox``, ``feedback``, ``doctor``, ``backup``).

Added to the core's catalog (``fold_core.words``) by ``words()``; a template
without an entry stays English (a test holds that the views' templates have
one). A ``Sentence`` is English text that keeps its template and values:
JSON (doctor's ``detail``) carries the English, and a text view says it in
``[host] language`` with ``say``.
"""

from __future__ import annotations

from fold_core.words import Words, view_words

__all__ = ["CATALOG", "Sentence", "say", "words"]

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
    " (read {given!r} as {instant}, {zone})": "（“{given}”读作 {instant}，{zone}）",
    # foldctl decide, decisions
    "answered {item}: {option} (frame {digest})": "已回答 {item}：{option}（决策版本 {digest}）",
    "open": "待决定", "answered": "已回答", "closed": "已关闭", "decide by {at}": "请在 {at} 前决定",
    "fallback: {summary}": "无答复时：{summary}", "answer: {option} at {at}": "答复：{option}（{at}）",
    "(no decisions)": "（没有待决定的事）",
    "fell_back": "已按默认处理", "fell back to {option} at {at}": "逾期未答，按默认：{option}（{at}）",
    "asked by {source}: {question_id}": "提问方 {source}：{question_id}",
    # foldctl doctor
    "warn": "警告", "fail": "失败",
    "config": "配置", "config permissions": "配置文件权限", "store": "存储", "host database": "主机数据库",
    "daemon": "守护进程", "agent": "编辑器", "prompt cache": "提示缓存",
    "source {name}": "信息源 {name}", "consumer {name}": "消费者 {name}",
    "probe source {name}": "探测信息源 {name}", "probe editor": "探测编辑器",
    "{failed} check(s) failed": "{failed} 项检查失败", ", {warned} warning(s)": "，{warned} 项警告",
    "ok ({warned} warning(s))": "正常（{warned} 项警告）",
    # foldctl doctor: the details
    "no plugins.toml found: the embedded defaults": "没有找到 plugins.toml：使用内置的默认配置",
    "{where}: {sources} source(s), {consumers} consumer(s)": "{where}：{sources} 个信息源，{consumers} 个消费者",
    "no file": "没有配置文件",
    "{path} is writable by every user (mode {mode}): anyone could make Fold run their program; chmod o-w":
        "{path} 所有用户都可写（权限 {mode}）：任何人都能让 Fold 运行他们的程序；请执行 chmod o-w",
    "{path} is writable by its group (mode {mode})": "{path} 同组用户可写（权限 {mode}）",
    "mode {mode}": "权限 {mode}",
    "no store at {store} yet: the first `foldctl tick` creates it": "{store} 还没有存储：第一次 `foldctl tick` 会创建它",
    "{store}: revision {revision}, event {event_seq}, root {used}/{budget} used by {count} item(s)":
        "{store}：修订 {revision}，事件 {event_seq}，根层已用 {used}/{budget}，共 {count} 个条目",
    "no host.db in {store} yet: the first cycle creates it": "{store} 里还没有 host.db：第一次运行周期会创建它",
    "no host tables in the database yet: the first cycle creates them": "数据库里还没有主机的表：第一次运行周期会创建它们",
    "{path}: SQLite's integrity check failed ({found}); {hint}": "{path}：SQLite 完整性检查失败（{found}）；{hint}",
    "schema {schema}; inbox: {pending} pending, {processed} processed, {deferred} deferred":
        "结构版本 {schema}；收件箱：{pending} 条待处理，{processed} 条已处理，{deferred} 条已推迟",
    "{stopped} ({detail})": "{stopped}（{detail}）",
    "; retention at {at}: {dropped} old text(s) dropped, {kept} kept because live items cite them":
        "；保留期清理（{at}）：删去 {dropped} 条旧正文，{kept} 条因仍被有效条目引用而保留",
    "type {type}: not polled yet": "类型 {type}：还没有拉取过",
    "; last error at {at} ({error_class}): {error}": "；上次出错于 {at}（{error_class}）：{error}",
    "disabled: the source said it is gone{last_error}; change its settings in plugins.toml to try again":
        "已停用：信息源表示它已不存在{last_error}；在 plugins.toml 中修改它的设置即可重试",
    "{failures} failed poll(s) in a row": "连续 {failures} 次拉取失败", "{reason}: {count}": "{reason}：{count}",
    "has never succeeded": "从未成功过", "the server refused the credentials": "服务器拒绝了凭据",
    "polled": "已拉取", "not polled yet": "还没有拉取过",
    "{reason}, next try at {next}{last_ok}{last_error}": "{reason}，下次尝试于 {next}{last_ok}{last_error}",
    "; last ok at {at}": "；上次成功于 {at}",
    "{name}: {detail}": "{name}：{detail}",
    "last ok at {last_ok}, next poll at {next}": "上次成功于 {last_ok}，下次拉取于 {next}",
    "last ok at {last_ok}": "上次成功于 {last_ok}", "{reason}{last_ok}{last_error}": "{reason}{last_ok}{last_error}",
    "not running: {detail}": "未运行：{detail}",
    "{detail}; {part}": "{detail}；{part}",
    "the daemon runs but does not poll it": "守护进程在运行，却没有拉取它",
    "no daemon runs: start `foldctl run`, or check the cron job that runs `foldctl tick`":
        "没有守护进程在运行：请启动 `foldctl run`，或检查运行 `foldctl tick` 的 cron 任务",
    "not polling: the next poll was due at {due}, more than two intervals ({span}) ago — {why}; {detail}":
        "没有在拉取：下次拉取本应在 {due}，已过去两个间隔（{span}）以上——{why}；{detail}",
    "no [agent] configured and no baseline editor installed": "没有配置 [agent]，也没有安装基线编辑器",
    "type {type} cannot be set up: {error}": "类型 {type} 无法设置：{error}",
    " — the default: no [agent] in plugins.toml": "——默认值：plugins.toml 中没有 [agent]",
    "{described}; the last window failed at {at} after {attempts} attempt(s): {reasons}; "
    "{pending} observation(s) wait, none lost{held}":
        "{described}；上一个窗口于 {at} 尝试 {attempts} 次后失败：{reasons}；{pending} 条观察在等待，没有丢失{held}",
    "; last call at {at}: {outcome}": "；上次调用于 {at}：{outcome}",
    "rejected": "被拒绝", "invalid": "无效", "unavailable": "无法连接", "store_unavailable": "存储不可用",
    "; it could not be reached in {windows} window(s) in a row since {since} ({error}): "
    "the baseline editor stands in until it answers":
        "；自 {since} 起连续 {windows} 个窗口无法连接（{error}）：在它恢复应答之前由基线编辑器代为处理",
    "; {count} observation(s) the editor could not settle wait apart and are retried ever more rarely "
    "(most failures: {id}, {failures} window(s), last at {at}); see `foldctl inbox --status pending`":
        "；{count} 条编辑器未能处理的观察被单独搁置，重试间隔越来越长（失败最多的：{id}，{failures} 个窗口，"
        "最近一次于 {at}）；见 `foldctl inbox --status pending`",
    "type {type}: nothing delivered yet": "类型 {type}：还没有投递过",
    "{failures} failed deliveries, next try at {next}; last error at {at}: {error}":
        "{failures} 次投递失败，下次尝试于 {next}；上次出错于 {at}：{error}",
    "delivered up to event {event_seq}": "已投递到事件 {event_seq}",
    "no daemon has run on this store; now held by {holder}": "这个存储上从未运行过守护进程；现在由 {holder} 持有",
    "no daemon has run on this store (ticked by hand or by cron)": "这个存储上从未运行过守护进程（由手动或 cron 执行 tick）",
    "the daemon (pid {pid}) stopped cleanly at {at}": "守护进程（pid {pid}）已于 {at} 正常停止",
    "; {holder} holds the store now": "；现在由 {holder} 持有存储",
    "the daemon (pid {pid}) died without a clean stop; its last heartbeat was at {at}{now_held}: start it again "
    "(`foldctl run`, or `systemctl --user restart fold`)":
        "守护进程（pid {pid}）没有正常停止就退出了；最后一次心跳在 {at}{now_held}：请重新启动（`foldctl run`，"
        "或 `systemctl --user restart fold`）",
    "the daemon (pid {pid}) holds the store but its last heartbeat is {age}s old (at {at}): it is stuck":
        "守护进程（pid {pid}）持有存储，但最后一次心跳已是 {age} 秒前（{at}）：它卡住了",
    "running (pid {pid}) since {since}; last heartbeat {age}s ago": "运行中（pid {pid}），始于 {since}；最后一次心跳在 {age} 秒前",
    "no answer within {seconds}s": "{seconds} 秒内没有应答", "reachable": "可以连接",
    # foldctl calls, calls show, inbox show
    " (fallback)": "（替补）", "#{id}  {at}  {backend}{model}{fallback}  skill {skill}":
        "#{id}  {at}  {backend}{model}{fallback}  技能 {skill}",
    "window {window} · attempt {attempt}": "窗口 {window} · 第 {attempt} 次尝试",
    "{tokens_in} → {tokens_out} tokens": "{tokens_in} → {tokens_out} 个 token", " · tools: {tools}": " · 工具：{tools}",
    "the last {calls} calls of {type}, each with a prompt over {tokens} tokens, read no token from a prompt "
    "cache: caching is expected but not happening (see `foldctl calls --summary`)":
        "{type} 最近 {calls} 次调用的提示都超过 {tokens} 个 token，却没有一个 token 来自提示缓存："
        "本应有缓存却没有生效（见 `foldctl calls --summary`）",
    # foldctl stats
    "from {since} to {until}": "{since} 至 {until}",
    "notifications sent: {total} (by kind: {kinds}; by mode: {modes})": "已发通知：{total}（按类别：{kinds}；按方式：{modes}）",
    "false interrupts: {count}": "误打扰：{count}", "missed escalations: {count}": "漏掉的升级：{count}",
    "decisions: {early} answered before the deadline, {late} late, {fell_back} fallen back, {open} open":
        "决定：期限前回答 {early} 个，迟答 {late} 个，按默认处理 {fell_back} 个，未决 {open} 个",
    "median time to answer: {hours} h": "回答用时中位数：{hours} 小时",
    "(no calls)": "（没有调用）", "no model": "未用模型", " ({cached} cached)": "（其中 {cached} 个来自缓存）",
    " · cost {cost}": " · 费用 {cost}",
    "day         calls  attempts  tokens in  cached  out  cost  cached share":
        "日期        调用  尝试  输入 token  缓存  输出  费用  缓存占比", "(no such call)": "（没有这个调用）", "tool": "工具",
    " → error {error}": " → 错误 {error}", " → {bytes} bytes": " → {bytes} 字节",
    "request:": "请求：", "response:": "回应：", "stderr:": "标准错误输出：", "(none)": "（无）",
    "(not kept: only the most recent calls keep their request)": "（未保留：只有最近的调用保留请求）",
    "(no such observation)": "（没有这个观察）", "{id}  ({channel} from {source})": "{id}（{channel}，来自 {source}）",
    "from: {sender}": "发件人：{sender}", "at: {at} · observed {observed}": "时间：{at} · 观察于 {observed}",
    "title: {title}": "标题：{title}", "url: {url}": "链接：{url}", "thread: {thread}": "会话：{thread}",
    "(no text)": "（没有正文）", "status: {status}": "状态：{status}",
    " (first deferred {at}, {times} time(s))": "（首次推迟于 {at}，共 {times} 次）",
    # foldctl sources
    " (found on {page})": "（发现于 {page}）", "(no sources configured)": "（没有配置信息源）",
    "last ok {last_ok} · last poll {last_poll} · next poll {next} · failures {failures}":
        "上次成功 {last_ok} · 上次拉取 {last_poll} · 下次拉取 {next} · 连续失败 {failures}",
    "observations: {today} today, {all} in all": "观察：今天 {today} 条，共 {all} 条",
    "last error {at} ({error_class}): {message}": "上次错误 {at}（{error_class}）：{message}",
    "no daemon": "守护进程未运行", "with the source": "随信息源",
    "(no daemon runs: no next poll is scheduled; start `foldctl run`, or run `foldctl tick`)":
        "（守护进程未运行：没有安排下次拉取；请启动 `foldctl run`，或运行 `foldctl tick`）",
    "{url} is a feed ({type}): {title}, {entries} entries": "{url} 是一个订阅源（{type}）：{title}，{entries} 条",
    "untitled": "无标题", "{url} names no feed": "{url} 没有指向任何订阅源",
    "appended [[adapters]] {name} ({feeds} feeds) to {into}": "已把 [[adapters]] {name}（{feeds} 个订阅源）追加到 {into}",
    "wrote {feeds} feed(s) to {out}": "已把 {feeds} 个订阅源写入 {out}",
    # doctor, several hosts on PostgreSQL
    "running: {count} host(s)": "运行中：{count} 个主机", "not running": "未运行",
    "{command} on {hostname}, pid {pid}, since {since}": "{command}，位于 {hostname}，pid {pid}，始于 {since}",
    "{where}; last heartbeat {age}s ago ({at}); {windows} window(s)":
        "{where}；最后一次心跳在 {age} 秒前（{at}）；{windows} 个窗口",
    "{where}; stopped at {at}": "{where}；已于 {at} 停止",
    "{where}; silent since {at} (stopped without saying so); {windows} window(s) still held until their lease "
    "expires, then another host takes them over":
        "{where}；自 {at} 起没有心跳（未声明就停止了）；它持有的 {windows} 个窗口在租约到期后由其他主机接手",
    # foldctl backup / restore
    "backup of event {event_seq} (revision {revision}) in {out}: {count} files":
        "已备份事件 {event_seq}（修订 {revision}）到 {out}：{count} 个文件",
    "restored event {event_seq} (revision {revision}, backed up at {at}) into {store}; verify: ok":
        "已把事件 {event_seq}（修订 {revision}，备份于 {at}）恢复到 {store}；校验：正常",
}}


class Sentence(str):
    """``template.format(**values)`` in English, remembering both so that ``say`` can translate it.

    Values may be Sentences themselves (said in turn) or anything else (kept as
    given: paths, numbers, a server's own words).
    """

    template: str
    values: dict[str, object]

    def __new__(cls, template: str, **values: object) -> "Sentence":
        self = super().__new__(cls, template.format(**values) if values else template)
        self.template, self.values = template, values
        return self

    @classmethod
    def joined(cls, *parts: object) -> "Sentence":
        """Parts said one after the other (a sentence and the clauses added to it)."""
        return cls("".join(f"{{p{index}}}" for index in range(len(parts))),
                   **{f"p{index}": part for index, part in enumerate(parts)})


def say(w: Words, text: object) -> str:
    """``text`` in ``w``'s language: a Sentence through the catalog, anything else as it is."""
    if isinstance(text, Sentence):
        return w(text.template, **{name: say(w, value) for name, value in text.values.items()})
    return "" if text is None else str(text)


def words() -> Words:
    """The command line's view words with the host's templates."""
    return view_words().extend(CATALOG)
