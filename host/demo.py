"""Fold's main job on bundled sample channels: the README's one command (issue [e2e]).

``python -m fold_host.demo [--out DIR]`` runs the real pipeline — adapters,
host cycle, editor, kernel, store, consumers — over bundled sample channels:

* a maildir of realistic mail (``examples/demo/maildir``; more mail from
  ``examples/demo/maildir-later`` arrives between cycles),
* an RSS feed served by a local HTTP server on 127.0.0.1,
* an AI agent's work log (``examples/demo/worklog``), in which the agent
  asks the user a question (a ``question`` line: options, recommendation,
  fallback, deadline),
* one user annotation and one snooze (feedback → a reminder that fires in a
  later cycle), and the user's answer to the agent's question
  (``foldctl decide``), after which the editor moves the item on and the
  host routes the answer back to the agent: the work-log instance's
  ``answers`` file gains one JSON line, which the demo prints.

Every step goes through the same ``foldctl`` commands a user would type, so
the demo shows exactly what running Fold looks like. The editor is the
baseline editor unless ``FOLD_DEMO_OPENAI_BASE_URL`` (and optionally
``FOLD_DEMO_OPENAI_MODEL``, ``FOLD_DEMO_OPENAI_API_KEY``) name an
OpenAI-compatible endpoint. It writes ``plugins.toml`` (editable, reusable),
the store, ``briefing.md``, ``changes.md``, and the overview PNG, and ends by
saying where everything is and how to start the daemon on the same
configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "demo"
# The demo's clock: fixed instants, so two runs tell the same story.
CYCLES = (
    ("2026-10-09T08:00:00+08:00", "first look: everything that arrived overnight"),
    ("2026-10-09T12:00:00+08:00", "noon: new mail has arrived; the agent's log moved on"),
    ("2026-10-09T18:00:00+08:00", "evening: the snoozed item's reminder comes due"),
)
SNOOZE_UNTIL = "2026-10-09T17:30:00+08:00"
ANSWER_AT = "2026-10-09T09:40:00+08:00"  # the user answers the agent's question (asked at 09:25)


class Demo:
    def __init__(self, out: Path, *, quiet: bool = False) -> None:
        self.out = out
        self.quiet = quiet
        self.config = out / "plugins.toml"
        self.env = {**os.environ, "FOLD_CONFIG": str(self.config)}
        self.env.pop("FOLD_STORE", None)
        self.answers = out / "channels" / "answers.jsonl"  # [[adapters]] "agent-log"'s answers file

    # -- output --------------------------------------------------------------

    def say(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def step(self, number: int, total: int, message: str) -> None:
        self.say(f"\n[{number}/{total}] {message}")

    # -- foldctl -------------------------------------------------------------

    def foldctl(self, *args: str, check: bool = True) -> dict:
        """The command's answer; stdout is a pipe here, so every command answers in JSON."""
        done = self._foldctl(args, check)
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise DemoFailed(f"`foldctl {' '.join(args)}` printed no JSON:\n{done.stdout[:2000]}\n"
                             f"{done.stderr[:2000]}") from None

    def foldctl_text(self, *args: str) -> str:
        """What the command printed (one that was told to print text)."""
        return self._foldctl(args, True).stdout

    def _foldctl(self, args: tuple[str, ...], check: bool) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "fold_host", "--config", str(self.config), *args]
        done = subprocess.run(command, capture_output=True, text=True, env=self.env, cwd=self.out)
        if check and done.returncode not in (0,):
            raise DemoFailed(f"`foldctl {' '.join(args)}` exited {done.returncode}:\n{done.stderr.strip()}\n"
                             f"{done.stdout.strip()[:2000]}")
        return done

    # -- set-up ----------------------------------------------------------------

    def prepare(self, feed_url: str) -> None:
        if self.out.exists():
            shutil.rmtree(self.out)
        channels = self.out / "channels"
        shutil.copytree(SAMPLES / "maildir", channels / "maildir")
        shutil.copytree(SAMPLES / "worklog", channels / "worklog")
        self.config.write_text(_plugins_toml(feed_url), encoding="utf-8")

    def deliver_later_mail(self) -> int:
        later = SAMPLES / "maildir-later"
        moved = 0
        for sub in ("new", "cur"):
            for message in sorted((later / sub).glob("*")) if (later / sub).is_dir() else ():
                if message.name.startswith("."):
                    continue
                target = self.out / "channels" / "maildir" / "new" / message.name.split(":")[0]
                temporary = self.out / "channels" / "maildir" / "tmp" / target.name
                shutil.copyfile(message, temporary)
                os.replace(temporary, target)  # Maildir delivery: tmp/ then rename into new/
                moved += 1
        return moved

    def append_worklog(self) -> None:
        log = self.out / "channels" / "worklog" / "coding-agent.jsonl"
        line = {"at": "2026-10-09T11:40:00+08:00", "agent": "coding-agent", "task": "pdf-export",
                "status": "in-progress", "text": "macOS 上复现了 PDF 导出崩溃，正在排查；Windows 仍未验证。"}
        with open(log, "a", encoding="utf-8") as file:
            file.write(json.dumps(line, ensure_ascii=False) + "\n")

    # -- the story ---------------------------------------------------------------

    def run(self) -> int:
        total = 8
        with FeedServer(SAMPLES) as server:
            self.step(1, total, f"setting up sample channels in {self.out}")
            self.prepare(server.url("feed.xml"))
            self.say(f"  mail: {self.out / 'channels' / 'maildir'}; feed: {server.url('feed.xml')}; "
                     f"work log: {self.out / 'channels' / 'worklog'}")
            self.say(f"  configuration: {self.config}")
            doctor = self.foldctl("doctor", check=False)
            for check in doctor.get("checks", []):
                if check["name"].startswith("agent") or check["status"] != "ok":
                    self.say(f"  doctor: {check['name']}: {check['status']} — {check['detail']}")

            self.step(2, total, f"cycle 1 at {CYCLES[0][0]} — {CYCLES[0][1]}")
            self.cycle(CYCLES[0][0])

            self.step(3, total, "the user answers: the agent's question, one annotation and one snooze")
            answered = self.answer_question()
            items = [i for i in self.state(CYCLES[0][0])["root"]["items"]
                     if i["id"] != answered and i["kind"] == "needs-you" and not i["id"].startswith("fold-")]
            if len(items) >= 2:
                snoozed, annotated = items[0]["id"], items[1]["id"]
                saved = self.foldctl("annotate", "--item", annotated, "--text", "这件事我今天上午处理，处理完在这里说一声。",
                                     "--now", "2026-10-09T09:00:00+08:00")
                self.say(f"  annotation {saved['annotation']} on {annotated!r} saved")
                self.foldctl("feedback", "--item", snoozed, "--meaning", "snooze", "--until", SNOOZE_UNTIL,
                             "--now", "2026-10-09T09:05:00+08:00")
                self.say(f"  snoozed {snoozed!r} until {SNOOZE_UNTIL}")

            self.step(4, total, "new mail arrives; the agent's work log moves on")
            self.say(f"  {self.deliver_later_mail()} new messages delivered to the maildir")
            self.append_worklog()

            self.step(5, total, f"cycle 2 at {CYCLES[1][0]} — {CYCLES[1][1]}")
            self.cycle(CYCLES[1][0])
            routed = False
            if answered:
                self.show_moved_on(answered, CYCLES[1][0])
                routed = self.show_routed_back()
            self.step(6, total, f"cycle 3 at {CYCLES[2][0]} — {CYCLES[2][1]}")
            self.cycle(CYCLES[2][0])
            if answered and not routed and not self.show_routed_back():
                self.say(f"  (no answer line in {self.answers} yet)")

        self.step(7, total, "the briefing (also written to briefing.md by the briefing consumer)")
        briefing = self.foldctl_text("brief", "--format", "md", "--now", CYCLES[-1][0])
        print(briefing)

        self.step(8, total, "the overview picture and a full check of the store")
        rendered = self.foldctl("overview", "--out", str(self.out / "overview"), "--now", CYCLES[-1][0], check=False)
        self.picture = rendered.get("png") if rendered.get("ok") else None
        if self.picture:
            self.say(f"  overview: {self.picture}")
        else:
            errors = rendered.get("errors") or [{}]
            self.say(f"  the overview could not be rendered: {errors[0].get('message', rendered)}")
        self.foldctl("verify")
        self.say("  foldctl verify: the whole log replays to the snapshot")
        self.finish()
        return 0 if self.picture else 3

    def cycle(self, now: str) -> dict:
        report = self.foldctl("tick", "--now", now)
        for polled in report.get("polled", []):
            self.say(f"  {polled['source']}: {polled['status']}, {polled['observations']} new observations")
        receipt = report.get("receipt") or {}
        changes = receipt.get("changes", [])
        summary = ", ".join(f"{c['op']} {c['item']}" for c in changes[:8]) + (" …" if len(changes) > 8 else "")
        self.say(f"  editor: {report.get('outcome')} after {report.get('attempts')} attempt(s)"
                 + (f"; revision {receipt.get('revision')}: {summary}" if changes else ""))
        state = self.state(now)
        self.say(f"  state: {len(state['root']['items'])} active items, root used "
                 f"{state['root']['used']}/{state['root']['budget']}")
        return report

    def state(self, now: str) -> dict:
        return self.foldctl("state", "--now", now)

    def answer_question(self) -> str | None:
        """Show the agent's question as the editor framed it and answer it with ``foldctl decide``."""
        listed = self.foldctl("decisions", "--status", "open", "--source", "agent-log", "--now", ANSWER_AT)
        if not listed.get("decisions"):
            self.say("  (no open decision from the agent's work log)")
            return None
        asked = listed["decisions"][0]
        self.say(f"  the agent asks (a decision frame on {asked['item']!r}): {asked['question']}")
        for option in asked["options"]:
            consequence = f" — {option['consequence']}" if option.get("consequence") else ""
            mark = " (recommended)" if option["id"] == asked.get("recommended") else ""
            self.say(f"    {option['id']}: {option['label']}{consequence}{mark}")
        if asked.get("fallback"):
            self.say(f"    without an answer: {asked['fallback']['summary']}")
        option = asked.get("recommended") or asked["options"][0]["id"]
        answer = self.foldctl("decide", "--item", asked["item"], "--option", option, "--digest", asked["digest"],
                              "--note", "先止血，下周再排迁移", "--now", ANSWER_AT)
        self.say(f"  answered {answer['option']!r} with `foldctl decide` (bound to frame {answer['digest']}); "
                 "the editor moves the item on at the next cycle")
        return str(asked["item"])

    def show_routed_back(self) -> bool:
        """Print the answer lines the host appended to the work-log instance's ``answers`` file (what the
        agent reads); False while there are none."""
        lines = self.answers.read_text(encoding="utf-8").splitlines() if self.answers.exists() else []
        if not lines:
            return False
        self.say(f"  routed back to the agent: {self.answers.relative_to(self.out)} has")
        for text in lines:
            self.say(f"    {text}")
        return True

    def show_moved_on(self, item: str, now: str) -> None:
        shown = self.foldctl("state", "--item", item, "--now", now, check=False).get("item") or {}
        frame = "the frame is cleared" if not shown.get("decision") else "the frame is still open"
        self.say(f"  the answered question {item!r}: {shown.get('kind')} — {shown.get('summary')} ({frame})")

    def finish(self) -> None:
        self.say("\nDone. Everything the demo wrote:")
        for label, path in (("configuration (edit and reuse it)", self.config), ("store", self.out / "store"),
                            ("briefing", self.out / "briefing.md"), ("change log", self.out / "changes.md"),
                            ("overview picture", Path(self.picture or self.out / "overview")),
                            ("render data", Path(self.picture or self.out / "overview").with_name("render.json"))):
            mark = "" if path.exists() else "  (missing)"
            self.say(f"  {label}: {path}{mark}")
        self.say("\nLook at the state again:   "
                 f".venv/bin/foldctl --config {self.config} state --format text")
        self.say("Open it in a browser (the Pinboard, on 127.0.0.1:8765):   "
                 f".venv/bin/foldctl --config {self.config} serve")
        self.say("Start the daemon on the same configuration:   "
                 f".venv/bin/foldctl --config {self.config} run")
        self.say("  (the demo's feed server has stopped: point [[adapters]] \"demo-feed\" at a real feed first)")


class DemoFailed(Exception):
    pass


class FeedServer:
    """The sample feed on a local HTTP server (127.0.0.1, a free port), stopped on exit."""

    def __init__(self, directory: Path) -> None:
        handler = partial(_QuietHandler, directory=str(directory))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def __enter__(self) -> "FeedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _plugins_toml(feed_url: str) -> str:
    agent = _agent_section()
    return f"""# Written by Fold's demo (python -m fold_host.demo). Edit and reuse it:
#   foldctl --config THIS_FILE tick      one cycle
#   foldctl --config THIS_FILE run       the daemon
# Every key is explained in docs/configuration.md.

[store]
path = "store"                    # relative to this file

[host]
language = "zh"
timezone = "Asia/Shanghai"
review_every = "6h"
max_attempts = 3
max_events = 50

[user]
background = "在上海工作的软件工程师，20 日要去德国出差，签证正在办理。"
purpose = "近期重点：让我每天回来时一眼看到必须处理的事和重要进展。"
feedback_policy = "已阅的事项仍按价值保留；稍后提醒到点时重新判断。"

{agent}
[[adapters]]
name = "demo-mail"
type = "maildir"
every = "5m"
path = "channels/maildir"
first_run = "last:50"

[[adapters]]
name = "demo-feed"
type = "rss"
every = "30m"
url = "{feed_url}"

[[adapters]]
name = "agent-log"
type = "worklog"
every = "1m"
path = "channels/worklog"
answers = "channels/answers.jsonl"  # the user's answers to the agent's questions, one JSON line each

[[consumers]]
name = "briefing"
type = "briefing"
path = "briefing.md"
from = "start"

[[consumers]]
name = "changes"
type = "log"
path = "changes.md"
from = "start"
"""


def _agent_section() -> str:
    base_url = os.environ.get("FOLD_DEMO_OPENAI_BASE_URL")
    if not base_url:
        return "# No [agent]: the baseline editor (deterministic rules, no LLM) edits the state.\n"
    model = os.environ.get("FOLD_DEMO_OPENAI_MODEL", "qwen2.5:14b")
    key = 'api_key_env = "FOLD_DEMO_OPENAI_API_KEY"\n' if os.environ.get("FOLD_DEMO_OPENAI_API_KEY") else ""
    return (f'[agent]\ntype = "openai"\nbase_url = "{base_url}"\nmodel = "{model}"\n{key}timeout = "120s"\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fold_host.demo",
                                     description="Fold's main job on bundled sample channels.")
    parser.add_argument("--out", default=str(ROOT / "out" / "demo"),
                        help="where to write everything (default: out/demo; replaced on each run)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        code = Demo(Path(args.out).resolve()).run()
    except DemoFailed as error:
        print(f"demo failed: {error}", file=sys.stderr)
        return 1
    print(f"(finished in {time.monotonic() - started:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
