"""The profile page's refine features in headless Chromium: context menu and chips, labels,
call graph, peek and sandwich, zoom detail, the empty-default hint, the URL, hostile names."""

from __future__ import annotations

import gzip
import os
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from test_web_viewer_browser import (
    CANVAS_STATS,
    CORPUS,
    HOSTILE,
    frame_point,
    hostile_profile,
    open_profile,
    second_page,
    shot,
    top_rows,
    upload,
    upload_bytes,
)

from share.pprof._proto import profile_pb2

from conftest import BIN, StringTable, start_server, stop

pytestmark = pytest.mark.browser

# Whether the page has drawn the flame graph, top table and the shown view for its query string.
SETTLED = """(view) => {
  const d = document.getElementById("viewer").dataset;
  return d.loaded === location.search && d.viewLoaded === view + location.search;
}"""


def settled(page, view: str = "flame") -> None:
    page.wait_for_function(SETTLED, arg=view, timeout=60_000)


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def chips(page) -> list[tuple[str, str]]:
    return [
        (c.get_attribute("data-param"), c.get_attribute("data-value"))
        for c in page.locator("#chips .chip").all()
    ]


def top_names(page) -> list[str]:
    return [r[5] for r in top_rows(page)]


@pytest.fixture
def labelled(live_server) -> str:
    return upload(live_server, CORPUS / "go-runtime" / "cpu-labels.pb.gz")


def test_context_menu_filters_and_chips_remove_them(page, labelled):
    open_profile(page, labelled)
    assert "crypto/sha256.block" in top_names(page)
    # Row 4 of cpu-labels is main.sortInts on the left, main.hashLoop on the right.
    page.mouse.click(*frame_point(page, 4, 0.2), button="right")
    menu = page.locator("#ctx-menu")
    assert menu.is_visible() and menu.locator(".ctx-title").inner_text() == "main.sortInts"
    shot(page, "refine-menu")
    # The keyboard reaches it: the first item has the focus, arrows move, Esc closes.
    assert page.evaluate("() => document.activeElement.dataset.action") == "focus"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.action") == "ignore"
    page.keyboard.press("Escape")
    assert menu.is_hidden() and query(page) == {}
    assert page.is_hidden("#kept")
    cells = page.locator("#top-table tbody tr[data-name='main.sortInts'] td")
    cum, cum_pct = cells.nth(3).inner_text(), cells.nth(4).inner_text()
    page.mouse.click(*frame_point(page, 4, 0.2), button="right")
    menu.locator("button[data-action=focus]").click()
    settled(page)
    assert query(page) == {"focus": [r"^main\.sortInts$"]}
    # The total stays pprof's (before the filters); beside it, what the focus keeps: the cum.
    assert page.inner_text("#kept") == f"· the filters keep {cum} ({cum_pct})"
    assert chips(page) == [("focus", r"^main\.sortInts$")]
    assert page.inner_text("#chips .chip-value") == "main.sortInts"
    names = top_names(page)
    assert "sort.partition" in names and "crypto/sha256.block" not in names
    # A filter is a history step: Back goes to the whole profile, Forward to the filter again.
    page.go_back()
    settled(page)
    assert chips(page) == [] and "crypto/sha256.block" in top_names(page)
    page.go_forward()
    settled(page)
    assert chips(page) == [("focus", r"^main\.sortInts$")]
    # The chip's x takes the filter off again.
    page.click("#chips .chip-remove")
    settled(page)
    assert query(page) == {} and chips(page) == [] and page.is_hidden("#kept")
    assert "crypto/sha256.block" in top_names(page)
    # A top row selects its function; keys filter on it: i ignores, h hides.
    page.locator("#top-table tbody tr", has_text="crypto/sha256.block").first.click()
    page.keyboard.press("i")
    settled(page)
    assert chips(page) == [("ignore", r"^crypto/sha256\.block$")]
    assert "crypto/sha256.block" not in top_names(page)
    # The context menu of a top row; a second ignore adds an alternative, one chip each.
    row = page.locator("#top-table tbody tr", has_text="sort.insertionSort").first
    row.click(button="right")
    page.click("#ctx-menu button[data-action=ignore]")
    settled(page)
    assert query(page)["ignore"] == [r"^crypto/sha256\.block$|^sort\.insertionSort$"]
    assert len(chips(page)) == 2
    page.locator("#chips .chip", has_text="crypto/sha256.block").locator(".chip-remove").click()
    settled(page)
    assert chips(page) == [("ignore", r"^sort\.insertionSort$")]
    # A filter that matches nothing says so, as pprof does.
    page.goto(labelled + "?focus=nothing_matches_this")
    settled(page)
    assert "Focus expression matched no samples" in page.inner_text("#refine-notes")
    # A regex pprof refuses: its message, and the chip to take it off.
    page.goto(labelled + "?focus=%5B")
    page.wait_for_selector("#viewer[data-state=error]")
    assert "missing closing ]" in page.inner_text("#status") and page.is_hidden("#flame")
    page.click("#chips .chip-remove")
    settled(page)
    page.wait_for_selector("#status", state="hidden")  # cleared once the view is drawn
    assert page.is_visible("#flame")
    # The same refusal after a change of filters.
    page.goto(labelled + "#view=top")
    settled(page, "top")
    page.locator("#top-table tbody tr").first.click(button="right")
    page.click("#ctx-menu button[data-action=focus]")
    settled(page, "top")
    page.evaluate("""() => {
      history.pushState(null, "", location.pathname + "?show=(" + location.hash);
      dispatchEvent(new PopStateEvent("popstate"));
    }""")
    page.wait_for_selector("#status:has-text('missing closing )')")
    assert page.is_hidden("#top")
    page.go_back()
    settled(page, "top")
    page.wait_for_selector("#status", state="hidden")
    assert page.is_visible("#top")
    assert [e for e in page.console_errors if "status of 400" not in e] == []


def test_labels_filter_by_value_and_group_by_key(page, labelled):
    open_profile(page, labelled + "#view=labels")
    settled(page, "labels")
    keys = page.locator(".lb-key").evaluate_all("(els) => els.map((e) => e.dataset.key)")
    assert keys == ["endpoint", "worker"]
    values = page.locator(".lb-key[data-key=endpoint] .lb-name").all_inner_texts()
    assert values == ["/api/users", "/api/orders", "/healthz"]
    shot(page, "refine-labels")
    page.click(".lb-key[data-key=endpoint] .lb-value[data-value='/api/users']")
    settled(page, "labels")
    assert query(page) == {"tagfocus": ["endpoint=^/api/users$"]}
    assert page.locator(".lb-key[data-key=endpoint] .lb-name").all_inner_texts() == ["/api/users"]
    # Shift+click drops a value's samples instead.
    page.click(".lb-key[data-key=worker] .lb-value[data-value='0']", modifiers=["Shift"])
    settled(page, "labels")
    assert query(page)["tagignore"] == ["worker=^0$"]
    assert page.locator(".lb-key[data-key=worker] .lb-name").all_inner_texts() == ["1"]
    assert {p for p, _ in chips(page)} == {"tagfocus", "tagignore"}
    assert page.locator("#chips .chip-value").all_inner_texts() == [
        "endpoint=/api/users",
        "worker=0",
    ]
    for x in page.locator("#chips .chip-remove").all()[::-1]:
        x.click()
        page.wait_for_timeout(50)
    settled(page, "labels")
    # Group by: a frame per endpoint above each stack in the flame graph.
    page.click(".lb-key[data-key=endpoint] button[data-group]")
    settled(page, "labels")
    assert query(page) == {"tagroot": ["endpoint"]}
    page.click("#views button[data-view=flame]")
    settled(page)
    seen = set()
    for x in (0.1, 0.5, 0.9):
        page.mouse.move(*frame_point(page, 1, x))
        seen.add(page.inner_text("#tooltip [data-field=name]"))
    assert seen == {"/api/users", "/api/orders", "/healthz"}
    shot(page, "refine-grouped")
    # A label's frame filters by its label, not by a function name.
    page.mouse.click(*frame_point(page, 1, 0.9), button="right")
    assert page.inner_text("#ctx-menu .ctx-title") == "endpoint=/healthz"
    page.click("#ctx-menu button[data-action=tagignore]")
    settled(page)
    assert query(page) == {"tagroot": ["endpoint"], "tagignore": ["endpoint=^/healthz$"]}
    assert page.console_errors == []


def test_graph_view_shows_pans_and_focuses(page, labelled):
    open_profile(page, labelled + "#view=graph")
    settled(page, "graph")
    box = page.locator("#graph-box")
    names = box.locator("g.node[data-name]").evaluate_all("(els) => els.map((e) => e.dataset.name)")
    assert "sort.partition" in names and "crypto/sha256.block" in names
    assert box.locator("svg").count() == 1 and box.locator("script, foreignObject, a").count() == 0
    assert box.locator("[id]").count() == 0  # the page's ids stay the page's
    # The node's text is the name Graphviz drew, broken at its dots.
    node = box.locator("g.node[data-name='sort.partition']")
    assert "partition" in node.text_content()
    shot(page, "refine-graph")
    before = box.get_attribute("data-view-box")
    b = box.bounding_box()
    page.mouse.move(b["x"] + 200, b["y"] + 200)
    page.mouse.down()
    page.mouse.move(b["x"] + 320, b["y"] + 260, steps=5)
    page.mouse.up()
    panned = box.get_attribute("data-view-box")
    assert panned != before
    assert panned.split()[2:] == before.split()[2:]  # a pan keeps the size
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
    page.mouse.wheel(0, -300)
    zoomed = box.get_attribute("data-view-box")
    assert float(zoomed.split()[2]) < float(panned.split()[2])
    page.click("#graph-fit")
    assert box.get_attribute("data-view-box") == before
    node.click()
    settled(page, "graph")
    assert query(page) == {"focus": [r"^sort\.partition$"]}
    names = box.locator("g.node[data-name]").evaluate_all("(els) => els.map((e) => e.dataset.name)")
    assert "sort.partition" in names and "crypto/sha256.block" not in names
    assert page.console_errors == []


def test_graph_view_without_graphviz_says_so(page, tmp_path):
    # A server whose PATH has no `dot`: graph.svg is a 501, which the page puts in words.
    env = dict(
        os.environ,
        PATH=str(BIN),
        SHARE_BLOBS=f"file:{tmp_path}/blobs",
        SHARE_META=f"sqlite:{tmp_path}/meta.sqlite3",
        SHARE_PUBLIC_URL="",
    )
    base, proc = start_server(env, tmp_path / "server.log", workers=1)
    try:
        url = upload(base, CORPUS / "go-runtime" / "cpu-small.pb.gz")
        open_profile(page, url + "#view=graph")
        settled(page, "graph")
        assert "needs Graphviz" in page.inner_text("#graph-box")
        assert page.locator("#graph-box svg").count() == 0
    finally:
        stop(proc)
    assert [e for e in page.console_errors if "status of 501" not in e] == []


def test_peek_shows_callers_callees_and_a_sandwich(page, labelled):
    open_profile(page, labelled)
    page.locator("#top-table tbody tr", has_text="sort.insertionSort").first.click()
    page.keyboard.press("p")
    settled(page, "peek")
    assert page.inner_text("#peek-title") == "sort.insertionSort"
    table = page.locator(".peek-table").first
    callers = table.locator("tr.peek-caller td.name").all_inner_texts()
    callees = table.locator("tr.peek-callee td.name").all_inner_texts()
    assert callers == ["sort.pdqsort"]
    assert callees == ["sort.IntSlice.Swap", "sort.IntSlice.Less"]
    weights = table.locator("tr.peek-callee td:nth-child(2)").all_inner_texts()
    assert weights == ["70ms", "60ms"]
    assert table.locator("tr.peek-self td.name").inner_text() == "sort.insertionSort"
    # The sandwich: callers above (the function at the bottom), callees below.
    assert page.is_visible("#sandwich")
    for part in ("callers", "callees"):
        stats = page.evaluate(CANVAS_STATS.replace("fg-canvas", f"sw-{part}-canvas"))
        assert stats["painted"] > 0.1, (part, stats)
    canvas = page.locator("#sw-callers-canvas").bounding_box()
    page.mouse.move(canvas["x"] + 30, canvas["y"] + canvas["height"] - 18 - 9)
    assert page.inner_text("#tooltip [data-field=name]") == "sort.insertionSort"
    shot(page, "refine-peek")
    # A callee's row puts it in the middle.
    table.locator("tr.peek-callee", has_text="sort.IntSlice.Swap").click()
    page.wait_for_function(
        "() => document.getElementById('peek-title').textContent === 'sort.IntSlice.Swap'"
    )
    assert "fn=sort.IntSlice.Swap" in page.url
    assert page.console_errors == []


def test_zoom_into_a_trimmed_subtree_fetches_its_depth(page, live_server):
    url = upload(live_server, CORPUS / "go-runtime" / "cpu-xl.pb.gz")
    api = url.replace(live_server, live_server + "/api/v1/profiles") + "/flamegraph"
    base = requests.get(api, timeout=120).json()
    nodes, names = base["nodes"], base["names"]
    # main.c159 under main.deepWork.func1: how deep the budgeted tree goes under it.
    depth = nodes["depth"]
    at = next(i for i, n in enumerate(nodes["name"]) if names[n] == "main.c159" and depth[i] == 2)
    end = next(j for j in range(at + 1, len(nodes["depth"])) if nodes["depth"][j] <= 2)
    base_rows = max(nodes["depth"][at:end]) + 1
    open_profile(page, url)
    assert page.get_attribute("#viewer", "data-detail") == ""
    # Click the function under all: its subtree lost frames to the budget, so it is fetched.
    page.mouse.click(*frame_point(page, 1, 0.5))
    page.wait_for_selector("#viewer[data-detail=zoom]", timeout=60_000)
    assert "Zoomed in with a budget of its own" in page.inner_text("#trimmed-text")
    # main.c159 is the second child (after math/rand's 382 ms), 136 ms of 58.978 s wide.
    box = page.locator("#fg-canvas").bounding_box()
    x = box["x"] + box["width"] * (382 + 68) / 58978
    page.mouse.click(x, box["y"] + 2 * 18 + 9)
    page.wait_for_function(
        "() => document.querySelector('#breadcrumb [aria-current]').textContent === 'main.c159'"
    )
    page.wait_for_selector("#viewer[data-detail=zoom]", timeout=60_000)
    rows = int(page.get_attribute("#viewer", "data-flame-rows"))
    assert rows > base_rows + 10, (rows, base_rows)
    assert "all=1" not in page.url and "zoom=main.deepWork.func1;main.c159" in page.url
    shot(page, "refine-zoom-detail")
    # The link reopens the same depth; the breadcrumb goes back to the whole tree.
    other = second_page(page)
    open_profile(other, page.url)
    other.wait_for_selector("#viewer[data-detail=zoom]", timeout=60_000)
    assert int(other.get_attribute("#viewer", "data-flame-rows")) == rows
    other.locator("#breadcrumb .crumb").first.click()
    assert other.get_attribute("#viewer", "data-detail") == ""
    assert other.get_attribute("#breadcrumb", "data-depth") == "0"
    assert page.console_errors == [] and other.console_errors == []


def test_the_search_share_counts_the_frames_too_small_to_draw(page, live_server):
    """cpu-xl's flame graph leaves most of its weight in trees under a pixel: the share the
    search reports is the server's count of every matching stack, not the drawn frames' sum."""
    url = upload(live_server, CORPUS / "go-runtime" / "cpu-xl.pb.gz")
    api = url.replace(live_server, live_server + "/api/v1/profiles")
    exact = requests.get(f"{api}/search", params={"q": "runtime"}, timeout=120).json()
    open_profile(page, url)
    page.fill("#search", "runtime")
    page.wait_for_selector("#search-share[data-exact='1']", timeout=60_000)
    share = float(page.get_attribute("#search-share", "data-share"))
    assert share == pytest.approx(exact["value"] / exact["total"], rel=1e-9)
    assert page.inner_text("#search-share").startswith("matched 374ms · 0.63% of total")
    assert page.console_errors == []


def short_heap_profile() -> bytes:
    """A heap profile as a short program leaves it: 512 kB in use, 120 MB allocated."""
    prof = profile_pb2.Profile()
    s = StringTable()

    for t, u in (("alloc_objects", "count"), ("alloc_space", "bytes")) + (
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ):
        prof.sample_type.add(type=s(t), unit=s(u))
    prof.period_type.type = s("space")
    prof.period_type.unit = s("bytes")
    for i, name in enumerate(("main.main", "runtime.malg", "main.load"), start=1):
        prof.function.add(id=i, name=s(name), system_name=s(name), filename=s("main.go"))
        prof.location.add(id=i, address=0x1000 + i).line.add(function_id=i, line=i)
    prof.sample.add(location_id=[2, 1], value=[1, 512 * 1024, 1, 512 * 1024])
    prof.sample.add(location_id=[3, 1], value=[1000, 120 * 2**20, 0, 0])
    prof.string_table.extend(s.strings)
    return gzip.compress(prof.SerializeToString())


def test_empty_default_type_is_said_with_a_switch(page, live_server):
    url = upload_bytes(live_server, short_heap_profile())
    open_profile(page, url)
    assert page.get_attribute("#viewer", "data-sample-type") == "inuse_space"  # pprof's default
    hint = page.locator("#type-hint")
    hint.wait_for(state="visible")
    text = hint.inner_text()
    assert "inuse_space" in text and "512kB" in text and "alloc_space (120.50MB)" in text, text
    shot(page, "refine-type-hint")
    page.click("#type-hint-switch")
    page.wait_for_selector("#viewer[data-sample-type=alloc_space]")
    assert "si=alloc_space" in page.url and page.is_hidden("#type-hint")
    # A CPU profile's types are in different units: no hint.
    cpu = upload(live_server, CORPUS / "go-runtime" / "cpu-small.pb.gz")
    open_profile(page, cpu)
    page.wait_for_timeout(300)
    assert page.is_hidden("#type-hint")
    assert page.console_errors == []


def test_the_copied_url_restores_the_view(page, labelled):
    open_profile(page, labelled)
    page.select_option("#granularity", "filefunctions")
    settled(page)
    page.click("#views button[data-view=labels]")
    settled(page, "labels")
    page.click(".lb-key[data-key=worker] .lb-value[data-value='1']")
    settled(page, "labels")
    page.click("#views button[data-view=flame]")
    settled(page)
    page.click("#top-table th[data-key=cum] button")
    page.fill("#top-filter", "sort")
    page.locator("#top-table tbody tr").nth(1).click()
    page.mouse.click(*frame_point(page, 4, 0.1))
    page.fill("#search", "pdqsort")
    page.wait_for_url(re.compile(r"q=pdqsort"))
    url = page.url
    q = query(page)
    assert q == {"granularity": ["filefunctions"], "tagfocus": ["worker=^1$"]}, q
    frag = urlsplit(url).fragment
    for part in ("si=cpu", "q=pdqsort", "zoom=", "fn=", "sort=cum", "filter=sort"):
        assert part in frag, frag

    def view_of(p):
        return {
            "chips": chips(p),
            "granularity": p.input_value("#granularity"),
            "view": p.get_attribute("#views [aria-pressed=true]", "data-view"),
            "crumbs": p.locator("#breadcrumb .crumb").all_inner_texts(),
            "search": p.input_value("#search"),
            "share": p.get_attribute("#search-share", "data-share"),
            "sort": p.get_attribute("#top-table th[aria-sort]", "data-key"),
            "dir": p.get_attribute("#top-table th[aria-sort]", "aria-sort"),
            "filter": p.input_value("#top-filter"),
            "rows": top_rows(p),
            "selected": p.locator("#top-table tr.selected").all_inner_texts(),
            "total": p.inner_text("#total"),
        }

    shown = view_of(page)
    assert len(shown["crumbs"]) == 5 and shown["selected"] and shown["sort"] == "cum"
    # sum% runs down the rows in the order shown (by cum here).
    flat = [float(r[1].rstrip("%")) for r in shown["rows"]]
    sums = [float(r[2].rstrip("%")) for r in shown["rows"]]
    running = [sum(flat[: i + 1]) for i in range(len(flat))]
    assert sums == pytest.approx(running, abs=0.02 * len(flat))
    other = second_page(page)
    open_profile(other, url)
    settled(other)
    assert view_of(other) == shown
    # The peek view with its function comes back too.
    page.click("#views button[data-view=peek]")
    settled(page, "peek")
    title = page.inner_text("#peek-title")
    again = second_page(page)
    open_profile(again, page.url)
    settled(again, "peek")
    assert again.inner_text("#peek-title") == title and again.is_visible("#sandwich")
    assert again.is_hidden("#flame")
    # The call graph's pan and zoom too.
    page.click("#views button[data-view=graph]")
    settled(page, "graph")
    page.click("#graph-in")
    page.click("#graph-in")
    page.wait_for_url(re.compile(r"gv="))
    view_box = page.get_attribute("#graph-box", "data-view-box")
    graph = second_page(page)
    open_profile(graph, page.url)
    settled(graph, "graph")
    restored = [float(n) for n in graph.get_attribute("#graph-box", "data-view-box").split()]
    assert restored == pytest.approx([float(n) for n in view_box.split()], abs=1)
    for p in (page, other, again, graph):
        assert p.console_errors == []


def labelled_hostile_profile() -> bytes:
    """hostile_profile() with markup for label keys and values too."""
    prof = profile_pb2.Profile.FromString(hostile_profile())
    s = StringTable(prof.string_table)
    key = s(HOSTILE[2])
    for i, sample in enumerate(prof.sample):
        sample.label.add(key=key, str=s(HOSTILE[i % 3]))
    del prof.string_table[:]
    prof.string_table.extend(s.strings)
    return prof.SerializeToString()


def test_hostile_names_stay_text_in_the_new_views(page, live_server):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = upload_bytes(live_server, labelled_hostile_profile())
    open_profile(page, url)
    page.locator("#top-table tbody tr", has_text=HOSTILE[1]).first.click(button="right")
    assert page.inner_text("#ctx-menu .ctx-title") == HOSTILE[1]
    page.click("#ctx-menu button[data-action=hide]")
    settled(page)
    assert page.inner_text("#chips .chip-value") == HOSTILE[1]
    page.click("#chips .chip-remove")
    settled(page)
    page.locator("#top-table tbody tr", has_text=HOSTILE[0]).first.click()
    page.click("#views button[data-view=peek]")
    settled(page, "peek")
    assert page.inner_text("#peek-title") == HOSTILE[0]
    assert "main.main" in page.locator(".peek-table tr.peek-caller td.name").all_inner_texts()
    page.click("#views button[data-view=labels]")
    settled(page, "labels")
    assert page.inner_text(".lb-key h3") == HOSTILE[2]
    assert sorted(page.locator(".lb-name").all_inner_texts()) == sorted(HOSTILE)
    # pprof's -dot writes a label value's quote unescaped, which Graphviz cannot read; the
    # call graph escapes it, so the hostile values are laid out as text in their nodelets.
    page.click("#views button[data-view=graph]")
    settled(page, "graph")
    nodelets = page.locator("#graph-box g.node text").all_text_contents()
    assert {f"{HOSTILE[2]}:{value}" for value in HOSTILE} <= set(nodelets), nodelets
    # Without labels, the graph lays out: the names are attribute values and text.
    page.goto(upload_bytes(live_server, hostile_profile(), title=HOSTILE[2]) + "#view=graph")
    settled(page, "graph")
    names = page.locator("#graph-box g.node[data-name]").evaluate_all(
        "(els) => els.map((e) => e.dataset.name)"
    )
    assert set(HOSTILE) <= set(names), names
    shot(page, "refine-hostile")
    # Nothing ran; no element and no handler came from the data.
    assert page.evaluate("() => window.__pwned") is None and dialogs == []
    assert page.locator("#viewer script, #viewer img, #viewer foreignObject").count() == 0
    assert page.locator("#viewer svg").count() == 1  # the call graph itself
    handlers = page.evaluate(
        """() => [...document.querySelectorAll("#viewer *")].flatMap((e) =>
             [...e.attributes].filter((a) => /^on/i.test(a.name) || /javascript:/i.test(a.value))
               .map((a) => a.name))"""
    )
    assert handlers == []
    assert page.console_errors == []


def test_filter_values_are_exact_and_in_pprof_syntax(page, labelled):
    open_profile(page, labelled)
    got = page.evaluate(
        r"""async () => {
          const s = await import("/static/viewer.state.js");
          const r = await import("/static/viewer.refine.js");
          const l = await import("/static/viewer.labels.js");
          return {
            exact: s.exactRegex("(*T).Get[x]"),
            lines: s.frameRegex("sort.Sort sort/sort.go:48", "sort/sort.go", "lines"),
            addresses: s.frameRegex("00000000004933 main.f a.go:3", "a.go", "addresses"),
            filefunctions: s.frameRegex("main.f main.go", "main.go", "filefunctions"),
            files: s.frameRegex("sort/sort.go", "sort/sort.go", "files"),
            unexact: [s.unexact("^a\\.b$"), s.unexact("^a.b$"), s.unexact("a")],
            alts: r.alternatives("^a$|(b|c)|[|]|\\||d"),
            ignore: r.addedValue("ignore", "^a$", "^b$"),
            focus: r.addedValue("focus", "^a$", "^b$"),
            tags: [
              l.tagFilter("endpoint", "/a,b", false),
              l.tagFilter("bytes", "16kB", true),
              l.tagFilter("bytes", "13.25kB", true),
              l.tagFilter("wait", "1.50ms", true),
            ],
          };
        }"""
    )
    assert got == {
        "exact": r"^\(\*T\)\.Get\[x\]$",
        "lines": r"^sort\.Sort$",
        "addresses": r"^main\.f$",
        "filefunctions": r"^main\.f$",
        "files": r"^sort/sort\.go$",
        "unexact": ["a.b", None, None],
        "alts": ["^a$", "(b|c)", "[|]", r"\|", "d"],
        "ignore": "^a$|^b$",
        "focus": "^b$",
        "tags": [
            r"endpoint=^/a\x2cb$",
            "bytes=16kB",
            "bytes=13563b:13573b",
            "wait=1495000ns:1505000ns",
        ],
    }
    assert page.console_errors == []


def pprof_top(url: str, **params: str) -> list[tuple[str, float]]:
    """(name, sum%) of each row of the server's `go tool pprof -top` text."""
    text = requests.get(url + "/top", params=params, timeout=120).text
    rows = []
    for line in text.splitlines()[6:]:
        fields = line.split(maxsplit=5)
        name = re.sub(r" \((partial-)?inline\)$", "", fields[5])
        rows.append((name, float(fields[2].rstrip("%"))))
    return rows


def test_top_table_orders_like_pprof_and_reaches_every_row(page, live_server):
    url = upload(live_server, CORPUS / "go-runtime" / "cpu-xl.pb.gz")
    open_profile(page, url + "#view=top")
    assert page.is_hidden("#flame") and page.is_visible("#top")
    assert page.inner_text("#top-count") == "first 500 of 670 functions"
    page.click("#top-more")
    assert page.inner_text("#top-count") == "670 functions" and page.is_hidden("#top-more")
    rows = top_rows(page)
    assert len(rows) == 670 and rows[-1][5] == pprof_top(url)[-1][0]
    # Sorted by cum: pprof's -top -cum order, and sum% runs down it as pprof prints it.
    page.click("#top-table th[data-key=cum] button")
    page.wait_for_url(re.compile(r"sort=cum"))
    rows = top_rows(page)
    want = pprof_top(url, cum="t")
    assert [r[5] for r in rows[:500]] == [n for n, _ in want[:500]]
    sums = [float(r[2].rstrip("%")) for r in rows[:500]]
    assert sums == pytest.approx([s for _, s in want[:500]], abs=0.006)
    # The filter lives in the URL too, and the running sum follows the rows shown.
    page.fill("#top-filter", "main.c1")
    page.wait_for_url(re.compile(r"filter=main\.c1"))
    shown = top_rows(page)
    assert shown and all("main.c1" in r[5] for r in shown)
    flat = [float(r[1].rstrip("%")) for r in shown[:5]]
    assert float(shown[1][2].rstrip("%")) == pytest.approx(flat[0] + flat[1], abs=0.02)
    assert page.console_errors == []
