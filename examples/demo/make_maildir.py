"""Writes the demo's sample mail: ``maildir/`` (what is there at the start) and ``maildir-later/``.

Zhang Wei (张伟), a software engineer in Shanghai applying for a visa, in the
week of US-03: the visa centre wants six months of bank
statements by 12 October, the weekly report is due, a PR waits for review, a
flight changed, a bill and two newsletters came in, and a little noise.
``maildir-later/`` holds the mail that arrives between the demo's cycles.

Files are Maildir messages named by their arrival time
(``<unix time>.M<n>P1.fold-demo``); later mail has later names, so copying a
file from ``maildir-later/new/`` into ``maildir/new/`` delivers it. Read mail
sits in ``cur/`` with the ``S`` flag. Run ``python examples/demo/make_maildir.py``
to rewrite them byte for byte.
"""

from __future__ import annotations

import base64
import quopri
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
CST = timezone(timedelta(hours=8))
ME = "张伟 <zhang.wei@example.com>"


def word(text: str, charset: str = "utf-8") -> str:
    """An RFC 2047 encoded word (only when the text is not plain ASCII)."""
    if text.isascii():
        return text
    return f"=?{charset}?B?{base64.b64encode(text.encode(charset)).decode('ascii')}?="


def address(name: str, mail: str, charset: str = "utf-8") -> str:
    return f"{word(name, charset)} <{mail}>"


@dataclass
class Mail:
    when: datetime
    sender: str
    subject: str
    body: str
    message_id: str
    to: str = "zhang.wei@example.com"
    charset: str = "utf-8"
    html: str | None = None  # with body: multipart/alternative; body "" : HTML only
    reply_to_id: str | None = None
    references: tuple[str, ...] = ()
    extra_headers: tuple[str, ...] = ()
    attachment: tuple[str, str, bytes] | None = None  # (file name, content type, bytes)
    read: bool = False

    def render(self) -> bytes:
        headers = [
            f"Return-Path: <{self.sender.rsplit('<', 1)[-1].rstrip('>')}>",
            f"Received: from mx.example.com by mail.example.com with LMTP; {self._date()}",
            f"Date: {self._date()}",
            f"From: {self.sender}",
            f"To: {self.to}",
            f"Subject: {word(self.subject, self.charset)}",
            f"Message-ID: <{self.message_id}>",
        ]
        if self.reply_to_id:
            headers.append(f"In-Reply-To: <{self.reply_to_id}>")
        if self.references:
            headers.append("References: " + " ".join(f"<{r}>" for r in self.references))
        headers += list(self.extra_headers) + ["MIME-Version: 1.0"]
        body = self._body()
        return ("\n".join(headers) + "\n" + body).encode("ascii")

    def _date(self) -> str:
        return self.when.strftime("%a, %d %b %Y %H:%M:%S %z")

    def _text_part(self, text: str, subtype: str = "plain") -> str:
        if self.charset == "utf-8" and subtype == "html":
            encoded = quopri.encodestring(text.encode("utf-8")).decode("ascii")
            return (f"Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
                    f"{encoded}\n")
        data = base64.b64encode(text.encode(self.charset)).decode("ascii")
        lines = "\n".join(data[i:i + 76] for i in range(0, len(data), 76))
        return (f"Content-Type: text/{subtype}; charset={self.charset.upper()}\n"
                f"Content-Transfer-Encoding: base64\n\n{lines}\n")

    def _body(self) -> str:
        if self.html is not None and not self.body:
            return self._text_part(self.html, "html")
        if self.html is not None:
            boundary = f"alt-{self.message_id.split('@')[0]}"
            return (f"Content-Type: multipart/alternative; boundary=\"{boundary}\"\n\n"
                    f"--{boundary}\n{self._text_part(self.body)}--{boundary}\n{self._text_part(self.html, 'html')}"
                    f"--{boundary}--\n")
        if self.attachment is not None:
            boundary = f"mixed-{self.message_id.split('@')[0]}"
            name, content_type, data = self.attachment
            encoded = base64.b64encode(data).decode("ascii")
            lines = "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76))
            quoted = "".join(f"%{b:02X}" for b in name.encode("utf-8"))
            return (f"Content-Type: multipart/mixed; boundary=\"{boundary}\"\n\n"
                    f"--{boundary}\n{self._text_part(self.body)}--{boundary}\n"
                    f"Content-Type: {content_type}\nContent-Disposition: attachment; filename*=UTF-8''{quoted}\n"
                    f"Content-Transfer-Encoding: base64\n\n{lines}\n--{boundary}--\n")
        return self._text_part(self.body)


def at(day: int, hour: int, minute: int) -> datetime:
    return datetime(2026, 10, day, hour, minute, tzinfo=CST)


_PDF = b"%PDF-1.4\n% demo reading material\n" + b"0" * 2048 + b"\n%%EOF\n"

FIRST: list[Mail] = [
    Mail(at(8, 9, 2), address("签证申请服务中心", "noreply@visa-center.example"),
         "签证材料补交通知：请于10月12日前提交近六个月银行流水",
         "张伟先生/女士您好：\n\n您的签证申请（编号 VS2026-104417）材料审核中发现缺少以下材料：\n\n"
         "  1. 近六个月的银行流水（需银行盖章）\n\n请于 2026年10月12日 17:00 前通过线上系统上传或到签证中心补交。"
         "逾期未补交的，申请将按材料不全处理，需重新预约。\n\n签证申请服务中心\n（此邮件由系统自动发送，请勿直接回复）",
         "vs2026-104417-missing@visa-center.example", charset="gb18030"),
    Mail(at(8, 10, 15), address("李娜", "li.na@example.com"), "本周周报请周五前提交",
         "各位：\n\n本周周报请在周五（10月9日）18:00 前提交，重点写清楚数据迁移的进度和风险。"
         "下周一例会会过一遍。\n\n李娜", "weekly-41-reminder@example.com",
         to="storage-team@example.com", read=True),
    Mail(at(8, 11, 40), address("王芳", "wang.fang@example.com"), "Re: 本周周报请周五前提交",
         "收到。我这边迁移脚本已经跑完第一批，周报里会附上校验结果。\n\n"
         "> 本周周报请在周五（10月9日）18:00 前提交，重点写清楚数据迁移的进度和风险。\n\n王芳",
         "re-weekly-41-wangfang@example.com", to="storage-team@example.com",
         reply_to_id="weekly-41-reminder@example.com", references=("weekly-41-reminder@example.com",), read=True),
    Mail(at(8, 13, 20), address("王芳", "wang.fang@example.com"), "Weekly report W41 — storage team",
         "", "weekly-report-w41-storage@example.com", to="li.na@example.com",
         html="<html><body><p>Hi Na,</p><p>Storage team, week 41 (5–9 Oct):</p><table border=\"1\">"
              "<tr><th>Work</th><th>Status</th><th>Next</th></tr>"
              "<tr><td>Data migration, batch 1 (2.1 TB)</td><td>done, checksums verified</td>"
              "<td>batch 2 on 13 Oct</td></tr>"
              "<tr><td>Interface integration with billing</td><td>80%</td><td>finish by 12 Oct</td></tr>"
              "<tr><td>Load test plan</td><td>draft</td><td>review on 15 Oct</td></tr></table>"
              "<p>Risk: batch 2 needs a 2-hour write freeze; rollback plan still to be written.</p>"
              "<p>Fang</p></body></html>",
         extra_headers=("Cc: " + ME.replace("张伟", word("张伟")),), read=True),
    Mail(at(8, 14, 5), "Git Notifications <notifications@git.example>",
         "[fold] Review requested: kernel budget check for children layers (#128)",
         "Chen Jie requested your review on #128.\n\nkernel: check each children layer against its own budget\n"
         "3 files changed, +142 -18.\n\nView it: https://git.example/fold/fold/pull/128\n",
         "pr-128-review-request@git.example",
         html="<p><b>Chen Jie</b> requested your review on <a href=\"https://git.example/fold/fold/pull/128\">#128"
              "</a>.</p><p>kernel: check each children layer against its own budget</p>"
              "<p>3 files changed, +142 −18.</p>",
         extra_headers=("List-Id: fold/fold <fold.fold.git.example>", "X-Git-Reason: review_requested")),
    Mail(at(8, 16, 30), "China Eastern <service@ceair.example>", "Flight change: MU5101 on 14 October",
         "Dear Mr ZHANG WEI,\n\nYour flight MU5101 Shanghai (PVG) - Beijing (PEK) on 14 October 2026 has been "
         "rescheduled:\n\n  Old departure: 08:00\n  New departure: 10:30\n\nNo action is needed if the new time "
         "suits you. To change or refund free of charge, reply before 12 October.\n\nChina Eastern Airlines",
         "mu5101-change-8812@ceair.example"),
    Mail(at(8, 19, 12), address("国家电网上海电力", "95598@sgcc.example"), "您的2026年9月电费账单",
         "", "bill-202609-3310048812@sgcc.example",
         html="<html><head><style>td{padding:4px 12px}</style></head><body><h3>尊敬的客户：</h3>"
              "<p>您户号 3310048812 的 2026年9月 电费账单如下：</p><table border=\"1\">"
              "<tr><th>项目</th><th>用量</th><th>金额</th></tr>"
              "<tr><td>峰时电量</td><td>142 度</td><td>87.61 元</td></tr>"
              "<tr><td>谷时电量</td><td>98 度</td><td>30.33 元</td></tr>"
              "<tr><td><b>合计</b></td><td>240 度</td><td><b>117.94 元</b></td></tr></table>"
              "<p>请于 2026年10月25日 前缴费，逾期将产生违约金。</p>"
              "<img src=\"https://sgcc.example/open.gif?u=3310048812\" width=\"1\" height=\"1\"></body></html>"),
    Mail(at(8, 21, 0), "The Weekly Byte <news@weeklybyte.example>",
         "The Weekly Byte #42: SQLite 4, Rust in the kernel, cron drift",
         "View this email in your browser.", "wb-2026-42@weeklybyte.example",
         html="<html><body><h1>The Weekly Byte #42</h1><ul><li><b>SQLite 4</b> ships a new storage engine</li>"
              "<li>Rust drivers merged in the kernel</li><li>Why your cron jobs drift (and how to stop it)</li>"
              "</ul><p><a href=\"https://weeklybyte.example/unsubscribe\">Unsubscribe</a></p></body></html>",
         extra_headers=("List-Id: <weekly.weeklybyte.example>",
                        "List-Unsubscribe: <https://weeklybyte.example/unsubscribe>", "Precedence: bulk")),
    Mail(at(8, 22, 40), address("陈杰", "chen.jie@example.com"), "明天会议的阅读材料",
         "张伟，\n\n明天上午评审会要讨论的设计文档在附件里，大概 20 页，会前最好看一下第 3、4 节（预算和撤回规则）。\n\n陈杰",
         "reading-for-review-1009@example.com",
         attachment=("Fold 设计评审 v3.pdf", "application/pdf", _PDF)),
    Mail(at(9, 7, 45), address("李娜", "li.na@example.com"), "例会改到周四下午三点",
         "各位：\n\n下周例会改到周四（10月15日）15:00，会议室 4B。议程不变。\n\n李娜",
         "standup-moved-1015@example.com", to="storage-team@example.com"),
    Mail(at(9, 8, 20), address("健康体检中心", "promo@tijian.example"), "恭喜您获得免费体检名额，仅限今日领取！",
         "", "promo-88231@tijian.example",
         html="<html><body><h2>限时福利</h2><p>点击领取价值 1288 元的免费体检套餐！"
              "<a href=\"https://tijian.example/claim?id=88231\">立即领取</a></p></body></html>",
         extra_headers=("Precedence: bulk",)),
    Mail(at(9, 8, 50), address("妈妈", "mama.zhang@example.cn"), "周末回家吃饭吗",
         "伟伟，周六中午回来吃饭吧，你爸买了鱼。签证的事办得怎么样了？", "mama-weekend-1010@example.cn",
         charset="gb18030"),
    Mail(at(9, 9, 30), "Chen Jie <chen.jie@example.com>", "Re: [fold] kernel budget check (#128)",
         "Zhang Wei,\n\nI pushed the fix for the grandchildren case you flagged. Could you take another look "
         "today? The release branch is cut on Monday.\n\nThanks,\nJie",
         "re-pr-128-chenjie@example.com", reply_to_id="pr-128-review-request@git.example",
         references=("pr-128-review-request@git.example",)),
]

LATER: list[Mail] = [
    Mail(at(9, 14, 10), address("招商银行", "service@cmbchina.example", "gb18030"),
         "您申请的近六个月账户流水已生成",
         "尊敬的张伟先生：\n\n您于 2026年10月9日 申请的账户流水（2026年4月-2026年9月）已生成，"
         "可在手机银行“我的-账户流水”中下载电子版（带电子印章），或携带身份证到任一网点打印纸质版。\n\n招商银行",
         "statement-ready-20261009@cmbchina.example", charset="gb18030"),
    Mail(at(9, 16, 45), address("签证申请服务中心", "noreply@visa-center.example"),
         "提醒：补交材料截止时间为10月12日17:00",
         "张伟先生/女士您好：\n\n提醒您，签证申请（编号 VS2026-104417）的补交材料截止时间为 2026年10月12日 17:00。"
         "如已上传，请忽略本提醒。\n\n签证申请服务中心", "vs2026-104417-reminder@visa-center.example",
         charset="gb18030", reply_to_id="vs2026-104417-missing@visa-center.example",
         references=("vs2026-104417-missing@visa-center.example",)),
    Mail(at(9, 18, 20), address("李娜", "li.na@example.com"), "Re: 本周周报请周五前提交",
         "张伟，周报收到了。数据迁移的风险部分请补一下回滚方案，周一例会前发我即可。\n\n李娜",
         "re-weekly-41-lina@example.com", reply_to_id="weekly-41-reminder@example.com",
         references=("weekly-41-reminder@example.com",)),
    Mail(at(10, 9, 5), "Git Notifications <notifications@git.example>",
         "[fold] Merged: kernel budget check for children layers (#128)",
         "Chen Jie merged #128 into main.\n\nkernel: check each children layer against its own budget\n",
         "pr-128-merged@git.example", reply_to_id="pr-128-review-request@git.example",
         references=("pr-128-review-request@git.example",),
         extra_headers=("List-Id: fold/fold <fold.fold.git.example>",)),
]


def write(folder: Path, mails: list[Mail], first_number: int) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    for sub in ("cur", "new", "tmp"):
        (folder / sub).mkdir(parents=True)
    (folder / "tmp" / ".gitkeep").write_bytes(b"")
    for number, mail in enumerate(mails, start=first_number):
        key = f"{int(mail.when.timestamp())}.M{number}P1.fold-demo"
        name = f"cur/{key}:2,S" if mail.read else f"new/{key}"
        (folder / name).write_bytes(mail.render())


def main() -> None:
    write(HERE / "maildir", FIRST, 1)
    write(HERE / "maildir-later", LATER, len(FIRST) + 1)
    print(f"wrote {len(FIRST)} + {len(LATER)} messages under {HERE}")


if __name__ == "__main__":
    main()
