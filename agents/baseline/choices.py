"""A message that asks the user to choose, or to reply by a date, read as a decision frame (contract §3.6).

Mail mostly, and an agent's work-log line that asks for a decision in words
("需要你决定：先临时缓解，还是本周迁移？") rather than as a question line.

``mail_frame(title, sender, text, anchor, lang)`` gives the frame a message's
own words support, or None when they ask for no choice:

* **its own options** — when a sentence asks the user to choose ("选哪个",
  "请选择", "which one", "please choose") and the message lists the choices
  (numbered or lettered lines, or one sentence of alternatives joined by
  "或" / "还是" / "or"), each choice is an option, its label the message's
  words (an id from a code in it, "lh729", else ``option-1`` …); when that
  sentence is itself the question ("…，还是…？") it is the frame's question;
* **reply or let it pass** — when a sentence asks for a reply before a date
  ("reply before 12 October", "10月12日前回复"), the options are ``reply``
  (its consequence the reply sentence itself) and ``let-pass``;
* ``decide_by`` is the date the message sets for the answer;
* the **fallback** is only what the message says happens without an answer:
  the clause after "否则" / "otherwise" / "if we hear nothing", or its "no action is needed …"
  sentence; in a reply-or-let-pass frame that is the fallback's option, ``let-pass`` (not replying is
  letting it pass). Nothing is invented: when
  the message says nothing of it there is no fallback, the evidence is
  ``partial`` and the gap says what is unclear.

Pure: text in, a frame (checked by the kernel's ``check_decision``) out.
"""

from __future__ import annotations

import re
from datetime import datetime

from fold_core.kernel.decision import check_decision
from fold_agents.baseline.dates import Mention, find_dates
from fold_agents.baseline.rules import line

__all__ = ["mail_frame"]

_CHOOSE = re.compile(r"选哪|选择哪|哪一个|哪个|哪一班|哪种|二选一|请选择|请选|选一个|选定|需要(?:你|您)决定|请(?:你|您)?决定"
                     r"|which (?:one|option|of)|which flight|\bchoose\b|\bselect\b|\bpick\b|your choice|\bprefer\b"
                     r"|your decision|(?:you|please)\b[^.\n]{0,20}\bdecide\b|\bdecide (?:between|which|whether)",
                     re.IGNORECASE)
_REPLY = re.compile(r"回复|答复|回信|回邮件|\breply\b|\brespond\b|let (?:me|us) know|get back to", re.IGNORECASE)
_LISTED = re.compile(r"^\s*(?:(?:option|方案|选项)\s*)?([1-5A-Ea-e一二三四五])\s*[.)）、:：]\s*(.+)$", re.IGNORECASE)
_ALTERNATIVES = re.compile(r"\s*[，,；;]?\s*(?:或者|或是|还是|或)\s*|\s*,?\s+or\s+", re.IGNORECASE)
_LEAD = re.compile(r"^[^：:]{0,16}[：:]\s*")  # "两个航班：" / "Two options:" before the first choice
_CODE = re.compile(r"\b([A-Za-z]{1,3}\s?\d{2,5})\b")
_OTHERWISE = re.compile(r"(?:否则|不然的话|不然|逾期未回复|如未回复|若未回复|未回复的?话?|不回复的话|如不回复|若不回复"
                        r"|\botherwise\b|\bif (?:we|you) (?:do not|don't) (?:hear|reply|respond)[^,，]*[,，]?"
                        r"|\bif no (?:reply|answer|response)[^,，]*[,，]?|\bwithout (?:a |an |any )?(?:reply|answer|response)[,，]?"
                        r"|\bif (?:we|you) hear nothing[^,，]*[,，]?|\bif (?:we|you) (?:do not|don't|did not|didn't) hear"
                        r" (?:from you|back)[^,，]*[,，]?|\bif there is no (?:reply|answer|response)[^,，]*[,，]?"
                        r"|如(?:果)?(?:没有|未)收到(?:你的|您的)?(?:回复|答复)[，,]?|如无(?:回复|答复)[，,]?)\s*[，,:：]?\s*",
                        re.IGNORECASE)
_NO_ACTION = re.compile(r"无需(?:任何)?操作|无需处理|无需回复|不需要(?:任何)?操作|不用回复|不必回复|不回复即视为|no action is (?:needed|required)"
                        r"|no action needed|no need to (?:reply|do anything)|you don't need to do anything", re.IGNORECASE)

_WORDS = {
    "zh": {"question_choose": "{subject}：选哪一个？", "question_reply": "{by}前是否回复{sender}？",
           "reply": "回复对方", "let-pass": "不回复，随它去",
           "fallback": "截止前不回复：{clause}",
           "gap_fallback": "来源没有说不答复会怎样"},
    "en": {"question_choose": "{subject}: which one?", "question_reply": "Reply to {sender} by {by}?",
           "reply": "Reply", "let-pass": "Let it pass",
           "fallback": "No reply in time: {clause}",
           "gap_fallback": "The source does not say what happens without an answer"},
}


def _sentences(text: str) -> list[tuple[int, str]]:
    """(start, sentence) of the text, split at sentence ends ("。", ". ", "；") and line breaks."""
    found = []
    for match in re.finditer(r"(?:[^。！？!?；;\n.]|\.(?!\s|$))+(?:[。！？!?；;]|\.(?=\s|$))?", text):
        if match.group(0).strip():
            found.append((match.start(), match.group(0)))
    return found


def _options_listed(text: str) -> list[str]:
    """Choices written one per line ("1. …", "A) …", "方案一：…")."""
    labels = [m.group(2) for m in (_LISTED.match(row) for row in text.split("\n")) if m]
    return labels if 2 <= len(labels) <= 5 else []


def _asked(sentence: str) -> str:
    """The sentence from where its choices begin: after its last "：" / ": " ("需要你决定：A，还是 B？")."""
    parts = re.split(r"：|:\s", sentence.strip())
    return _LEAD.sub("", parts[-1].strip(), count=1) if len(parts) == 1 else parts[-1].strip()


def _options_joined(sentence: str) -> list[str]:
    """Choices in one sentence joined by "或" / "还是" / "or"."""
    body = _asked(sentence).rstrip("。.？?！!")
    parts = [p.strip(" ，,;；") for p in _ALTERNATIVES.split(body)]
    parts = [p for p in parts if p]
    if not 2 <= len(parts) <= 5 or any(len(p) > 60 or _CHOOSE.search(p) for p in parts):
        return []
    return parts


def _option_ids(labels: list[str]) -> list[str]:
    """An id from a code in each label ("LH729" → "lh729"), else ``option-N``; unique in the frame."""
    ids: list[str] = []
    for number, label in enumerate(labels, 1):
        code = _CODE.search(label)
        wanted = re.sub(r"[^a-z0-9]+", "", code.group(1).lower())[:24] if code else ""
        ids.append(wanted if wanted and wanted not in ids else f"option-{number}")
    return ids


def _fallback(text: str) -> tuple[str | None, bool]:
    """(what the message says happens without an answer, whether that is "no action needed")."""
    for _, sentence in _sentences(text):
        said = _OTHERWISE.search(sentence)
        if said and sentence[said.end():].strip(" 。.!！"):
            return sentence[said.end():].strip(" 。.!！；;"), False
        if _NO_ACTION.search(sentence):
            return sentence.strip(" ；;"), True
    return None, False


def _reply_by(text: str, dates: list[Mention]) -> Mention | None:
    """The firm date of a sentence that asks for a reply (or a choice)."""
    for start, sentence in _sentences(text):
        if not (_REPLY.search(sentence) or _CHOOSE.search(sentence)):
            continue
        inside = [m for m in dates if start <= m.start < start + len(sentence) and m.firm]
        if inside:
            return min(inside, key=lambda m: m.at)
    return None


def _when(moment: datetime, lang: str) -> str:
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    if lang == "zh":
        return f"{moment.month}月{moment.day}日"
    return f"{moment.day} {months[moment.month - 1]}"


def _sender_name(sender: str) -> str:
    name = sender.split("<", 1)[0].strip().strip('"') if "<" in sender else sender.strip()
    name = line(name, 40) or line(sender, 40)
    return f" {name} " if name.isascii() else name  # spaced inside a Chinese sentence, trimmed in English


def mail_frame(title: str, sender: str, text: str, anchor: datetime | None, lang: str = "zh") -> dict | None:
    """The decision frame of a message that asks the user to choose or to reply by a date; else None."""
    if anchor is None or not text.strip():
        return None
    words = _WORDS["zh" if lang == "zh" else "en"]
    dates = find_dates(text, anchor)
    asks_choice = any(_CHOOSE.search(s) for _, s in _sentences(text))
    labels: list[str] = []
    asked: str | None = None  # the source's own question, when it asks one ("A，还是 B？")
    if asks_choice:
        labels = _options_listed(text)
        if not labels:
            for _, sentence in _sentences(text):
                labels = _options_joined(sentence)
                if labels:
                    asked = _asked(sentence) if sentence.rstrip().endswith(("？", "?")) else None
                    break
    by = _reply_by(text, dates)
    clause, benign = _fallback(text)
    frame: dict
    if labels:
        options = [{"id": i, "label": line(label, 40)} for i, label in zip(_option_ids(labels), labels)]
        subject = line(title, 60) or _sender_name(sender)
        question = asked if asked and len(line(asked, 161)) <= 160 else words["question_choose"].format(subject=subject)
        frame = {"question": line(question, 160), "options": options}
        if clause is not None and not benign:
            frame["fallback"] = {"summary": line(words["fallback"].format(clause=clause), 160)}
        gap = "gap_fallback" if "fallback" not in frame else None
    elif by is not None and any(_REPLY.search(s) for _, s in _sentences(text)):
        reply = next(s for _, s in _sentences(text) if _REPLY.search(s))
        options = [{"id": "reply", "label": words["reply"], "consequence": line(reply.strip(" ;；,，"), 160)},
                   {"id": "let-pass", "label": words["let-pass"]}]
        if clause is not None:  # what happens without a reply is what letting it pass means
            options[1]["consequence"] = line(clause, 160)
            said = clause if benign else words["fallback"].format(clause=clause)
            frame = {"fallback": {"option": "let-pass", "summary": line(said, 160)}}
        else:
            frame = {}
        question = words["question_reply"].format(by=_when(by.at, lang), sender=_sender_name(sender))
        frame = {"question": line(question.replace(" ？", "？"), 160), "options": options, **frame}
        gap = "gap_fallback" if "fallback" not in frame else None
    else:
        return None
    if by is not None:
        frame["decide_by"] = by.at.isoformat()
    frame["evidence"] = "complete" if gap is None else "partial"
    if gap is not None:
        frame["gap"] = words[gap]
    checked, problems = check_decision(frame, "decision")
    return checked if not problems else None
