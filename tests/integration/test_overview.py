"""The visual overview through a real Chromium (contract §13).

Every test here renders a real PNG. Geometry is checked from the page's DOM,
measured by this test in its own page (not only from the tool's own
render.json), against shares taken from the state document; the PNG is
decoded and sampled. One browser serves the whole module; the CLI tests run
``foldctl overview`` as a user would (its own Chromium).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from conftest import missing_component, require_component
from fold_host.overview import layout
from fold_host.overview.render import render_overview
from fold_core.store.file import file_store
from tests.support.states import views_and_members

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-11T08:00:00+08:00"
TOLERANCE = 0.02
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"
CJK_TITLE = "签证材料缺银行流水与在职证明请于本周五前补交完毕"  # 24 code points, the maximum
CJK_SUMMARY = ("代理确认还缺近六个月的纸质银行流水和公司开具的在职证明原件，两份材料都需要加盖公章，"
               "周五十八点前送到代理处否则顺延")  # 60 code points, the maximum

# This test's own measurement: every layer section's frame, boxes and gone boxes.
MEASURE = """() => [...document.querySelectorAll('section.layer')].map(section => {
  const box = el => { const r = el.getBoundingClientRect();
    return {role: el.dataset.role, id: el.dataset.id || null,
            x: r.x + scrollX, y: r.y + scrollY, w: r.width, h: r.height}; };
  return {key: section.id,
          frame: box(section.querySelector('svg.budget [data-role=layer]')),
          boxes: [...section.querySelectorAll('svg.budget [data-role]')]
                   .filter(e => e.dataset.role !== 'layer').map(box),
          gone: [...section.querySelectorAll('svg.gone-strip [data-role=gone]')].map(box)};
})"""
CUT = """() => [...document.querySelectorAll('[data-text]')]
  .filter(el => el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1)
  .map(el => el.dataset.id || el.dataset.text)"""


def item(item_id, weight, kind="fyi", title=None, **extra):
    return {"id": item_id, "title": title or f"{item_id} 标题", "weight": weight, "kind": kind, **extra}


NESTED = [
    item("visa", "critical", "needs-you", title="签证材料缺银行流水", summary="12日截止",
         due_at="2026-10-10T00:00:00+08:00"),
    item("trip", "high", "in-progress", title="出差安排", summary="三个子项", children=[
        item("hotel", "critical", "needs-you", title="订酒店", summary="两步", children=[
            item("booking", "normal", "needs-you"), item("receipt", "trace", "done"),
            item("pay", "low", "in-progress")]),
        item("train", "high", "done"),
        item("photo", "normal", "in-progress"),
        item("note", "low", "fyi"),
        item("tiny", "trace", "fyi"),
    ]),
    item("weekly", "normal", "needs-you", title="Weekly report"),
    item("reading", "normal", "fyi"),
    item("standup", "low", "fyi"),
    item("t1", "trace", "done"),
    item("t2", "trace", "fyi"),
]


def make_store(path: Path, *batches) -> Path:
    store = file_store(path, budget=64)
    for number, declarations in enumerate(batches, 1):
        answer = store.commit({"batch_id": f"b{number}", "declarations": declarations}, actor="agent", now=NOW)
        assert answer.exit_code == 0, answer.document
    return path


def shares_of(path: Path) -> tuple[dict, dict]:
    """From the state document (not from the layout): share and kind of every active item, members per layer."""
    return views_and_members(file_store(path).state_document(now=LATER).document)


@pytest.fixture(scope="module")
def browser():
    from fold_host.overview.browser import Browser

    require_component(CHROMIUM, "chromium")
    fonts = subprocess.run(["fc-list", ":family=Noto Sans CJK SC"], capture_output=True, text=True).stdout
    if not fonts.strip():
        missing_component("the Noto Sans CJK font", "fonts-noto-cjk")
    with Browser(CHROMIUM) as shared:
        yield shared


def render(browser, path: Path, out: Path, query=layout.Query(), baseline_seq=None) -> tuple[dict, Path]:
    state = file_store(path).state()
    baseline = None
    if baseline_seq is not None:
        from fold_core.state import replay

        records = [record for record in file_store(path).history().document["records"]
                   if record["event_seq"] <= baseline_seq]
        baseline = replay(records, budget=state.budget)
    overview = layout.layout(layout.capture(state, now=LATER, baseline=baseline), query)
    answer = render_overview(overview, out, browser=browser, html=True)
    run = Path(answer["dir"])
    return json.loads((run / "render.json").read_text()), run


def measure_page(browser, run: Path, render_doc: dict, *, javascript=False) -> tuple[list, list, list]:
    """Open the written HTML in this test's own page: (layers, text boxes that overflow, requests)."""
    with browser.page(render_doc["page"]["width"], javascript=javascript) as page:
        page.page.set_content((run / "overview.html").read_text())
        page.page.evaluate("document.fonts.ready.then(() => true)")
        return page.page.evaluate(MEASURE), page.page.evaluate(CUT), page.requests


def check_areas(layer: dict, shares: dict, members: dict, parent, omitted: set[str]) -> None:
    frame = layer["frame"]
    area = frame["w"] * frame["h"]
    assert area > 0
    seen = Counter(box["role"] for box in layer["boxes"])
    shown = [item_id for item_id in members[parent] if item_id not in omitted]
    assert sorted(box["id"] for box in layer["boxes"] if box["role"] == "card") == sorted(shown)
    for box in layer["boxes"]:
        measured = box["w"] * box["h"] / area
        if box["role"] == "card":
            expected = shares[box["id"]]["share"] / 64
        elif box["role"] == "omitted":
            expected = sum(shares[i]["share"] for i in members[parent] if i in omitted) / 64
        else:
            continue  # free space: checked as a whole below (one box, or two around a corner)
        assert abs(measured - expected) <= TOLERANCE * expected, (layer["key"], box, measured, expected)
    free = sum(box["w"] * box["h"] for box in layer["boxes"] if box["role"] == "free") / area
    expected = (64 - sum(shares[i]["share"] for i in members[parent])) / 64
    assert abs(free - expected) <= TOLERANCE * expected, (layer["key"], free, expected)
    assert seen["free"] in (1, 2) and seen["omitted"] == (1 if set(members[parent]) & omitted else 0)


def colour(image: Image.Image, x: float, y: float) -> tuple:
    """The most common colour of the 7×7 pixels around (x, y): glyph strokes do not count."""
    pixels = [image.getpixel((int(x) + dx, int(y) + dy)) for dx in range(-3, 4) for dy in range(-3, 4)]
    return Counter(pixels).most_common(1)[0][0]


def hex_rgb(text: str) -> tuple:
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


def close(a: tuple, b: tuple, slack: int = 3) -> bool:
    return all(abs(p - q) <= slack for p, q in zip(a, b))


@pytest.mark.parametrize("kinds", [None, ("needs-you", "in-progress", "fyi")], ids=["all", "filtered"])
def test_nested_state_areas_from_the_dom_and_colours_from_the_png(browser, tmp_path, kinds):
    path = make_store(tmp_path / "store", NESTED)
    shares, members = shares_of(path)
    render_doc, run = render(browser, path, tmp_path / "out", layout.Query(kinds=kinds))
    assert render_doc["fonts"] and all(face["status"] == "loaded" for face in render_doc["fonts"])
    assert render_doc["requests"] == [] and render_doc["areas"]["ok"]
    omitted = {entry["id"] for entry in render_doc["omitted"]}
    assert omitted == ({"t1", "train", "receipt"} if kinds else set())
    layers, _, requests = measure_page(browser, run, render_doc)
    assert requests == []
    assert [layer["key"] for layer in layers] == ["layer-root", "layer-item-trip", "layer-item-hotel"]
    for layer, parent in zip(layers, (None, "trip", "hotel")):
        check_areas(layer, shares, members, parent, omitted)
    # Each children layer is its own rectangle (checked above at its own scale), outside its parent's.
    for upper, lower in zip(layers, layers[1:]):
        assert lower["frame"]["y"] >= upper["frame"]["y"] + upper["frame"]["h"]

    image = Image.open(run / "overview.png").convert("RGB")
    assert image.size == (render_doc["page"]["width"], render_doc["page"]["height"])
    for layer in layers:
        for box in layer["boxes"]:
            centre = (box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
            if box["role"] == "card":
                expected = hex_rgb(layout.KIND_COLOURS[shares[box["id"]]["kind"]])
                assert close(colour(image, *centre), expected), (box, colour(image, *centre), expected)
            elif box["role"] == "free":
                # Blank: every sampled pixel inside the free area (away from its edges) is the page's white.
                for fx in (0.2, 0.5, 0.8):
                    for fy in (0.2, 0.5, 0.8):
                        pixel = image.getpixel((int(box["x"] + box["w"] * fx), int(box["y"] + box["h"] * fy)))
                        assert pixel == (255, 255, 255), (layer["key"], fx, fy, pixel)
            else:
                assert not close(colour(image, *centre), (255, 255, 255))  # the hatched "not shown" area


def test_diff_with_withdraw_merge_and_a_reranked_item_through_the_cli(browser, tmp_path):
    first = [item("a", "normal", "fyi"), item("b", "low", "fyi"), item("c", "low", "fyi"),
             item("d", "normal", "needs-you"), item("e", "normal", "in-progress")]
    second = [{"id": "a", "relation": "withdraw", "reason": "done"},
              {"id": "m", "relation": "merges:[b, c]", "title": "合并后的条目", "weight": "low", "kind": "fyi"},
              {"id": "d", "relation": "supersedes:d", "title": "d 标题", "weight": "high", "kind": "needs-you"}]
    path = make_store(tmp_path / "store", first, second)
    out = tmp_path / "out"
    code, answer, err = foldctl("--store", str(path), "overview", "--out", str(out), "--now", LATER,
                                "--diff-from", "1", "--html")
    assert code == 0, err
    run = Path(answer["dir"])
    render_doc = json.loads((run / "render.json").read_text())
    assert (render_doc["source_event_seq"], render_doc["revision"], render_doc["baseline_event_seq"]) == (2, 2, 1)
    ops = {change["id"]: change["op"] for change in render_doc["changes"]}
    assert ops == {"a": "withdrawn", "b": "merged", "c": "merged", "m": "new", "d": "changed"}
    layers, _, requests = measure_page(browser, run, render_doc)
    html = (run / "overview.html").read_text()
    assert requests == []
    (root,) = layers
    frame = root["frame"]
    area = frame["w"] * frame["h"]
    gone = {box["id"]: box for box in root["gone"]}
    assert set(gone) == {"a", "b", "c"}
    for item_id, share in (("a", 6), ("b", 3), ("c", 3)):
        box = gone[item_id]
        assert abs(box["w"] * box["h"] / area - share / 64) <= TOLERANCE * share / 64
        # Outside the current budget rectangle.
        assert box["y"] >= frame["y"] + frame["h"] or box["x"] >= frame["x"] + frame["w"]
    cards = {box["id"]: box for box in root["boxes"] if box["role"] == "card"}
    assert set(cards) == {"d", "e", "m"}
    # e was re-ranked (a left, d moved ahead) but did not change: no mark, no badge.
    e_group = html.split('data-id="e"')[0].rsplit("<g ", 1)[1]
    assert "diff-" not in e_group
    assert 'class="box card kind-needs-you weight-high diff-changed"' in html
    assert 'class="box card kind-fyi weight-low diff-new"' in html
    assert "merged into m" in html and "WITHDRAWN" in html


def test_untrusted_titles_render_as_text_and_nothing_is_requested(browser, tmp_path):
    script_title = "<script>pwn()</script>"
    img_title = "<img src=x onerror=p()>"
    path = make_store(tmp_path / "store", [
        item("xss-script", "critical", "needs-you", title=script_title, summary="</foreignObject><b>bold</b>"),
        item("xss-img", "high", "fyi", title=img_title, summary='"><svg onload=pwn()>',
             sources=[{"channel": "web", "ref": "http://127.0.0.1:9/never-fetched"}]),
    ])
    render_doc, run = render(browser, path, tmp_path / "out")
    assert render_doc["requests"] == []
    # This test's own page, with JavaScript *on*: nothing from the items runs or loads.
    with browser.page(render_doc["page"]["width"], javascript=True) as page:
        page.page.set_content((run / "overview.html").read_text())
        page.page.evaluate("document.fonts.ready.then(() => true)")
        found = page.page.evaluate("""() => ({
            elements: document.querySelectorAll('script, img, b, [onerror], [onload]').length,
            text: [...document.querySelectorAll('[data-text]')].map(el => el.textContent).join('\\n'),
            pwned: [typeof window.pwn, typeof window.p]})""")
        requests = page.requests
    assert requests == []
    assert found["elements"] == 0
    for text in (script_title, img_title, "</foreignObject><b>bold</b>", '"><svg onload=pwn()>'):
        assert text in found["text"]
    assert found["pwned"] == ["undefined", "undefined"]


def test_maximum_cjk_text_fits_or_is_reported_and_linked(browser, tmp_path):
    path = make_store(tmp_path / "store", [
        item("big", "critical", "needs-you", title=CJK_TITLE, summary=CJK_SUMMARY),
        item("mid", "normal", "in-progress", title=CJK_TITLE, summary=CJK_SUMMARY),
        item("small", "trace", "fyi", title=CJK_TITLE, summary=CJK_SUMMARY),
    ])
    render_doc, run = render(browser, path, tmp_path / "out")
    layers, cut, _ = measure_page(browser, run, render_doc)
    reported = {entry["id"]: entry for entry in render_doc["overflow"]}
    # What this test sees overflowing is exactly what render.json reports.
    assert set(cut) == set(reported)
    assert "big" not in reported  # a 24/64 card holds the longest title and summary
    assert "small" in reported  # a 1/64 card cannot: reported, and linked by id
    html = (run / "overview.html").read_text()
    for item_id, entry in reported.items():
        assert entry["detail"] == f"detail-{item_id}" and entry["fields_cut"]
        detail = html.split(f'id="detail-{item_id}"', 1)[1].split("<dt", 1)[0]
        assert CJK_TITLE in detail and CJK_SUMMARY in detail
    # The text did not enlarge the card.
    shares, members = shares_of(path)
    check_areas(layers[0], shares, members, None, set())


def test_each_run_writes_new_files(browser, tmp_path):
    path = make_store(tmp_path / "store", [item("one", "high", "done")])
    first, first_run = render(browser, path, tmp_path / "out")
    second, second_run = render(browser, path, tmp_path / "out")
    assert first_run != second_run
    assert (first_run / "overview.png").is_file() and (second_run / "overview.png").is_file()


def foldctl(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
    environment.update(env or {})
    done = subprocess.run([sys.executable, "-m", "fold_host", *args], capture_output=True, env=environment,
                          timeout=120)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in err, err
    return done.returncode, json.loads(out) if out.strip() else None, err


@pytest.mark.parametrize("chromium", ["/nonexistent/chromium", "/bin/false"], ids=["missing", "does-not-start"])
def test_no_chromium_is_exit_3_with_an_explanation_and_no_png(tmp_path, chromium):
    path = make_store(tmp_path / "store", [item("one", "high", "done")])
    out = tmp_path / "out"
    code, answer, err = foldctl("--store", str(path), "overview", "--out", str(out), "--now", LATER,
                                env={"FOLD_CHROMIUM": chromium})
    assert code == 3
    assert answer["errors"][0]["code"] == "renderer_unavailable"
    assert "chromium" in err.lower() and chromium in err
    assert list(out.rglob("*.png")) == []
    (explanation,) = out.rglob("error.txt")
    assert chromium in explanation.read_text()
    assert json.loads((explanation.parent / "error.json").read_text())["ok"] is False


def test_bad_requests_are_refused_before_any_browser(tmp_path):
    path = make_store(tmp_path / "store", [item("one", "high", "done")])
    base = ("--store", str(path), "overview", "--now", LATER)
    env = {"FOLD_CHROMIUM": "/nonexistent"}  # none of these may get as far as the browser
    code, _, err = foldctl(*base, "--out", str(tmp_path / "o"), "--diff-from", "9", env=env)
    assert code == 2 and "--diff-from 9" in err
    code, _, err = foldctl(*base, "--out", str(tmp_path / "o"), "--kinds", "todo", env=env)
    assert code == 2 and "todo" in err
    code, _, err = foldctl(*base, "--out", str(path / "images"), env=env)
    assert code == 2 and "inside the store" in err
    assert not (tmp_path / "o").exists()  # a command line that is not understood writes nothing


@pytest.mark.parametrize("case", ["inactive item", "no store"])
def test_a_failure_before_rendering_leaves_an_explanation_and_no_png(tmp_path, case):
    path = make_store(tmp_path / "store", [item("one", "high", "done")])
    out = tmp_path / "out"
    store = str(path) if case == "inactive item" else str(tmp_path / "missing")
    args = ("--item", "nope") if case == "inactive item" else ()
    code, answer, err = foldctl("--store", store, "overview", "--out", str(out), "--now", LATER, *args,
                                env={"FOLD_CHROMIUM": "/nonexistent"})
    expected = ("item_not_found", 1) if case == "inactive item" else ("store_unavailable", 3)
    assert (answer["errors"][0]["code"], code) == expected
    (explanation,) = out.glob("overview-failed-*/error.txt")
    assert "no image was written" in explanation.read_text() and str(explanation) in err
    assert list(out.rglob("*.png")) == []


def test_labels_speak_the_host_language_and_a_done_item_counts_down_to_nothing(browser, tmp_path):
    """`[host] language = "zh"` gives the overview Chinese labels and its time in words;
    a done item past its due time shows no countdown and no OVERDUE mark (a needs-you one still does)."""
    path = make_store(tmp_path / "store", [
        item("paid", "high", "done", title="电费已交", summary="已自动扣款", due_at="2026-10-10T00:00:00+08:00"),
        item("late", "high", "needs-you", title="签证材料", summary="缺流水", due_at="2026-10-10T00:00:00+08:00")])
    config = tmp_path / "plugins.toml"
    config.write_text('[host]\nlanguage = "zh"\ntimezone = "Asia/Shanghai"\n')
    out = tmp_path / "out"
    code, answer, err = foldctl("--config", str(config), "--store", str(path), "overview", "--out", str(out),
                                "--now", LATER, "--html")
    assert code == 0, err
    html = (Path(answer["dir"]) / "overview.html").read_text()
    text = re.sub(r"<[^>]+>", " ", html.split("<body>", 1)[1])
    for label in ("Fold 总览", "根层", "现在 2026年10月11日 周日 08:00", "空余预算", "卡片面积"):
        assert label in text, label
    for english in ("Root layer", "free budget", "Card area", "budget rectangle", "not shown (filtered)"):
        assert english not in text, english
    paid = html.split('data-id="paid"', 1)[1].split("</g>", 1)[0]  # the card's group: its rect, text, badges
    assert "电费已交" in paid and "逾期" not in paid and "截止" not in paid and "badge-overdue" not in paid
    late = html.split('data-id="late"', 1)[1].split("</g>", 1)[0]
    assert "已逾期" in late
