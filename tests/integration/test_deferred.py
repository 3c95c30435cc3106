"""Deferred observations come back, marked, until the editor decides or they expire (contract §9, §11.2).

Through ``foldctl tick`` with the scripted editor; ``foldctl inbox`` and
``foldctl inbox show`` read what happened.
"""

from __future__ import annotations

from tests.support.host_workspace import Workspace

T1 = "2026-10-09T08:00:00+08:00"
T2 = "2026-10-09T09:00:00+08:00"


def mail(n: int, **extra) -> dict:
    return {"native": str(n), "title": f"mail {n}", "text": f"body of mail {n}", **extra}


def events_of(request: dict) -> dict[str, dict]:
    return {event["id"]: event for event in request["input"]["events"]}


def show(ws: Workspace, observation: str) -> dict:
    code, document, _ = ws.run("inbox", "show", observation)
    assert code == 0
    return document


def test_a_deferred_observation_rides_along_marked_and_is_then_used(tmp_path):
    ws = Workspace(tmp_path, script=[{"defer": ["mail:1"]}, "track"])
    ws.feed("mail", mail(1), mail(2))
    assert ws.tick(T1)["outcome"] == "committed"
    assert show(ws, "mail:1")["status"] == "deferred"
    ws.feed("mail", mail(3))
    report = ws.tick(T2)
    assert report["outcome"] == "committed"
    assert report["signal"]["received"] == 1 and "1 deferred observation(s) offered again" in report["signal"]["reason"]
    offered = events_of(ws.requests()[1])
    assert set(offered) == {"mail:1", "mail:3"}
    assert offered["mail:1"]["deferred"] == {"at": T1, "times": 1} and "deferred" not in offered["mail:3"]
    detail = show(ws, "mail:1")
    assert detail["found"] is True and detail["status"] == "processed"
    assert [(d["disposition"], d["at"]) for d in detail["dispositions"]] == [("deferred", T1), ("used", T2)]
    assert detail["dispositions"][1]["related"] == ["t-mail-1"]
    assert detail["observation"]["text"] == "body of mail 1" and detail["observation"]["observed_at"] == T1
    # Settled: it never comes back.
    ws.feed("mail", mail(4))
    ws.tick("2026-10-09T10:00:00+08:00")
    assert set(events_of(ws.requests()[2])) == {"mail:4"}


def test_deferred_again_counts_times_and_expires_after_defer_for(tmp_path):
    ws = Workspace(tmp_path, script=[{"defer": ["mail:1"]}], host='review_every = "1d"\ndefer_for = "2d"\n')
    ws.feed("mail", mail(1))
    ws.tick(T1)
    # A day later the review opens a window: the deferred observation rides along and is deferred again.
    review = ws.tick("2026-10-10T08:00:00+08:00")
    assert review["signal"]["type"] == "review" and review["signal"]["received"] == 0
    assert events_of(ws.requests()[1])["mail:1"]["deferred"] == {"at": T1, "times": 1}
    assert show(ws, "mail:1")["deferred"] == {"at": T1, "times": 2}
    # Two days after the first deferral it expires, before the next window is opened.
    ws.tick("2026-10-11T08:00:00+08:00")
    assert len(ws.requests()) == 3 and events_of(ws.requests()[2]) == {}  # the review came without it
    code, listed, _ = ws.run("inbox", "--status", "expired")
    assert code == 0 and [o["id"] for o in listed["observations"]] == ["mail:1"]
    why = listed["observations"][0]["why"]
    assert "deferred 2 time(s) since " + T1 in why and "2d" in why
    detail = show(ws, "mail:1")
    assert detail["status"] == "expired"
    assert [d["disposition"] for d in detail["dispositions"]] == ["deferred", "deferred", "expired"]
    assert detail["dispositions"][-1]["batch_id"] is None


def test_at_most_max_deferred_ride_along_inside_max_events_in_turns(tmp_path):
    ws = Workspace(tmp_path, script=[{"defer": [f"mail:{n}" for n in range(1, 6)]}],
                   host="max_events = 3\nmax_deferred = 2\n")
    ws.feed("mail", *(mail(n) for n in range(1, 4)))
    ws.tick("2026-10-09T08:00:00+08:00")  # mail 1-3, deferred
    ws.feed("mail", mail(4))
    ws.tick("2026-10-09T08:01:00+08:00")  # mail 4 and two deferred ones (1, 2), deferred again
    assert sorted(events_of(ws.requests()[1])) == ["mail:1", "mail:2", "mail:4"]
    ws.feed("mail", mail(5))
    report = ws.tick("2026-10-09T08:02:00+08:00")  # mail 5 and the two not seen for the longest (3, then 1)
    offered = events_of(ws.requests()[2])
    assert len(offered) == 3 and report["signal"]["received"] == 1 and "mail:5" in offered
    assert sorted(i for i, e in offered.items() if "deferred" in e) == ["mail:1", "mail:3"]
    assert offered["mail:1"]["deferred"]["times"] == 2 and offered["mail:3"]["deferred"]["times"] == 1


def test_inbox_show_of_an_unknown_id_is_found_false(tmp_path):
    ws = Workspace(tmp_path)
    ws.feed("mail", mail(1))
    ws.tick(T1)
    assert show(ws, "mail:404") == {"found": False, "observation": None}
    code, text, _ = ws.call("inbox", "show", "mail:1", "--format", "text")
    assert code == 0 and "body of mail 1" in text and "used: scripted: tracked" in text


def test_inbox_search_finds_words_in_titles_and_texts_in_any_language(tmp_path):
    ws = Workspace(tmp_path, script=[{"defer": ["mail:2"]}])
    ws.feed("mail", mail(1, title="签证材料", text="代理确认还缺近 6 个月银行流水。"),
            mail(2, title="Flight moved", text="Your flight to Berlin now leaves at 10:40."),
            mail(3, title="周报", text="本周完成了银行对账。"))
    ws.tick(T1)
    found = lambda *args: [o["id"] for o in ws.run("inbox", "--search", *args)[1]["observations"]]  # noqa: E731
    assert found("银行流水") == ["mail:1"]  # three characters or more: the index
    assert sorted(found("银行")) == ["mail:1", "mail:3"]  # two: a substring scan
    assert found("berlin LEAVES") == ["mail:2"]  # every word, any case
    assert found("银行", "--status", "deferred") == [] and found("flight", "--status", "deferred") == ["mail:2"]
    code, listed, _ = ws.run("inbox", "--search", "对账")
    assert code == 0 and "银行对账" in listed["observations"][0]["snippet"]
    assert found('"OR NEAR(') == []  # a query is never FTS syntax
