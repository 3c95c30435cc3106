"""The demo's channels read at the real clock, as a new user's first run meets them, with a push consumer.

The demo itself runs at fixed instants; a user who points Fold at the same
mail today reads it weeks later. Whatever the day: no promotion or bulk mail
above low, the visa deadline at high or above as a needs-you item with its
due date, and no push that a person would call spam.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fold_host.demo import SAMPLES, FeedServer, _plugins_toml
from tests.integration.consumer_support import Receiver

WEIGHTS = ("trace", "low", "normal", "high", "critical")
SPAM = r"体检|免费|Weekly Byte|优惠|领取"


def _items(layer):
    for item in (layer or {}).get("items", []):
        yield item
        yield from _items(item.get("children"))


def test_the_demo_channels_at_the_real_clock_surface_the_visa_and_push_no_spam(tmp_path):
    import re

    receiver = Receiver()
    try:
        channels = tmp_path / "channels"
        shutil.copytree(SAMPLES / "maildir", channels / "maildir")
        shutil.copytree(SAMPLES / "worklog", channels / "worklog")
        for message in sorted((SAMPLES / "maildir-later" / "new").glob("*")):  # all the demo's mail at once
            shutil.copyfile(message, channels / "maildir" / "new" / message.name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
        env["FOLD_PUSH_URLS"] = receiver.url
        with FeedServer(SAMPLES) as feed:
            config = tmp_path / "plugins.toml"
            config.write_text(_plugins_toml(feed.url("feed.xml")) + '\n[[consumers]]\nname = "phone"\ntype = "push"\n'
                              'urls_env = "FOLD_PUSH_URLS"\n', encoding="utf-8")
            for _ in range(2):  # no --now: the clock of [host] timezone, today
                done = subprocess.run([sys.executable, "-m", "fold_host", "--config", str(config), "tick"],
                                      capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
                assert done.returncode == 0, done.stderr
        state = json.loads(subprocess.run([sys.executable, "-m", "fold_core", "--config", str(config), "state"],
                                          capture_output=True, text=True, cwd=tmp_path, env=env).stdout)
    finally:
        receiver.stop()
    items = list(_items(state["root"]))
    loud = [(i["title"], i["weight"]) for i in items
            if re.search(SPAM, f"{i['title']} {i['summary'] or ''}") and WEIGHTS.index(i["weight"]) > 1]
    assert loud == []
    visa = [i for i in items if "签证" in i["title"] and i["kind"] == "needs-you"]
    assert visa and WEIGHTS.index(visa[0]["weight"]) >= WEIGHTS.index("high"), visa
    assert visa[0]["due_at"].startswith("2026-10-12T17:00")
    pushed = [f"{b['title']} {b['message']}" for b in receiver.bodies]
    assert any("签证" in text for text in pushed), pushed
    assert not [text for text in pushed if re.search(SPAM, text)], pushed
