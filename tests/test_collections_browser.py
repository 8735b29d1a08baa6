"""The collection page in headless Chromium: the timeline (one line per series, hover, click),
a dragged range and a base range, the label chips, Back and Forward, hostile label values, the
member's page and the index page's "New collection"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from test_web_compare_browser import BASE, NEW, ROW_HUES, cpu_profile
from test_web_viewer_browser import CORPUS, HOSTILE, shot

from conftest import local_server

pytestmark = pytest.mark.browser

T0 = 1_764_590_400  # 2025-12-01T12:00:00Z
GO = CORPUS / "go-runtime"


def create(server: str, title: str) -> dict[str, str]:
    reply = requests.post(
        server + "/api/v1/collections", json={"title": title},
        headers={"Accept": "application/json"}, timeout=30,
    )  # fmt: skip
    assert reply.status_code == 201, reply.text
    return reply.json()


def add(server: str, c: dict[str, str], data: bytes, at: int, **labels: str) -> str:
    reply = requests.post(
        f"{server}/c/{c['id']}",
        files={"file": ("p.pb.gz", data)},
        data={"label": [f"{k}={v}" for k, v in labels.items()], "time": str(at)},
        headers={"X-Collection-Token": c["token"]},
        timeout=60,
    )
    assert reply.status_code in (200, 201), reply.text
    return reply.text.strip()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of this module's own: members are stored profiles, titled by their collection,
    and the corpus files they are made of must not take those titles into the other modules'
    uploads (the same bytes are one profile)."""
    yield from local_server(tmp_path_factory, "collections")


@pytest.fixture(scope="module")
def fleet(live_server) -> dict[str, str]:
    """Corpus CPU profiles of two pods, a minute apart, three minutes; two members carry a
    hostile `team` label."""
    c = create(live_server, "api fleet")
    small, labels, merged = (
        (GO / name).read_bytes()
        for name in ("cpu-small.pb.gz", "cpu-labels.pb.gz", "pprof-tool-merged-cpu.pb.gz")
    )
    add(live_server, c, small, T0, pod="api-1", team=HOSTILE[1])
    add(live_server, c, labels, T0, pod="api-2", team=HOSTILE[2])
    add(live_server, c, merged, T0 + 60, pod="api-1")
    add(live_server, c, small, T0 + 60, pod="api-2")
    add(live_server, c, labels, T0 + 120, pod="api-1")
    add(live_server, c, merged, T0 + 120, pod="api-2")
    return c


@pytest.fixture(scope="module")
def release(live_server) -> dict[str, str]:
    """Before (T0) and after (T0 + 60) a change, for two pods: the diff grew and shrank."""
    c = create(live_server, "release")
    for pod in ("api-1", "api-2"):
        add(live_server, c, cpu_profile(BASE), T0, pod=pod)
        add(live_server, c, cpu_profile(NEW), T0 + 60, pod=pod)
    return c


def open_collection(page, url: str) -> None:
    """Opens a collection page; waits for the timeline and the viewer to have drawn."""
    page.goto(url)
    page.wait_for_selector("#tl-chart[data-drawn]", timeout=60_000)
    settled(page)


def settled(page) -> None:
    """Waits until the viewer has drawn the URL's selection."""
    page.wait_for_function(
        "() => { const v = document.getElementById('viewer');"
        " return v.dataset.state === 'error' || v.dataset.loaded === location.search; }",
        timeout=60_000,
    )
    assert page.get_attribute("#viewer", "data-state") == "ready", page.text_content("#status")


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query, keep_blank_values=True).items()}


def point(page, t: float, value: float | None = None) -> tuple[float, float]:
    """Page coordinates of time t (and value, else the plot's middle) on the timeline."""
    return page.evaluate(
        """([t, v]) => {
          const u = document.getElementById("tl-chart").plot;
          const r = u.over.getBoundingClientRect();
          const y = v == null ? r.height / 2 : u.valToPos(v, "y");
          return [r.left + u.valToPos(t, "x"), r.top + y];
        }""",
        [t, value],
    )


def drag(page, t0: float, t1: float, shift: bool = False) -> None:
    (x0, y), (x1, _) = point(page, t0), point(page, t1)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, y, steps=4)
    page.mouse.move(x1, y, steps=4)
    page.mouse.up()
    if shift:
        page.keyboard.up("Shift")


def api_total(server: str, c: dict[str, str], **params: str) -> int:
    url = f"{server}/api/v1/collections/{c['id']}/flamegraph"
    reply = requests.get(url, params=params, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["total"]


def timeline(server: str, c: dict[str, str], **params: str) -> dict:
    url = f"{server}/api/v1/collections/{c['id']}/timeline"
    return requests.get(url, params=params, timeout=30).json()


def total(page) -> int:
    return int(page.get_attribute("#total", "data-total"))


def lonely_point(doc: dict) -> tuple[dict, int]:
    """The series and index of the point farthest from the other series' at its time (so the
    one under the mouse is that one)."""
    a, b = doc["series"]
    gap = [abs(x - y) for x, y in zip(a["values"], b["values"], strict=True)]
    i = gap.index(max(gap))
    return (a if a["values"][i] > b["values"][i] else b), i


def legend(page) -> list[str]:
    return page.locator("#tl-chart .u-legend .u-series .u-label").all_text_contents()


def test_timeline_draws_one_line_per_series_with_hover(page, live_server, fleet):
    open_collection(page, fleet["url"])
    # No group_by yet: the first label key that tells profiles apart, pod.
    assert page.input_value("#group-by") == "pod"
    assert page.get_attribute("#tl-chart", "data-series") == "2"
    assert sorted(legend(page)[1:]) == ["api-1", "api-2"]
    assert page.inner_text("#tl-unit").startswith("cpu · cpu in cores")
    # Hover a point: its series, time and value.
    doc = timeline(live_server, fleet, group_by="pod")
    s, i = lonely_point(doc)
    page.mouse.move(*point(page, s["times"][i], s["values"][i]))
    page.wait_for_selector("#tl-tip:not([hidden])")
    tip = page.inner_text("#tl-tip").splitlines()
    when = page.evaluate("(t) => new Date(t * 1000).toISOString()", s["times"][i])
    assert tip[0] == s["name"] and tip[1].startswith(when.replace("T", " ").replace(".000", ""))
    assert tip[2] == f"{s['values'][i]:.2f} cores · 1 profile"
    shot(page, "collection-timeline")
    # The viewer's sample type is the timeline's too.
    page.select_option("#sample-type", "0")
    page.wait_for_function("() => document.getElementById('tl-unit').innerText.includes('samples')")
    assert page.inner_text("#tl-unit").startswith("cpu · samples in count/s")
    # One line: group by nothing, in the URL.
    page.select_option("#group-by", "")
    page.wait_for_function("() => document.getElementById('tl-chart').dataset.series === '1'")
    assert query(page)["group_by"] == ""
    page.go_back()
    page.wait_for_function("() => document.getElementById('tl-chart').dataset.series === '2'")
    assert page.console_errors == []


def test_drag_selects_a_range_and_back_restores(page, live_server, fleet):
    open_collection(page, fleet["url"] + "?group_by=pod")
    everything = total(page)
    assert everything == api_total(live_server, fleet)
    # From the first minute's points to past the second's: four members.
    drag(page, T0 - 0.3, T0 + 75)
    page.wait_for_function("() => location.search.includes('from=')")
    settled(page)
    q = query(page)
    step = timeline(live_server, fleet)["step"]
    start, end = q["from"], q["to"]
    assert re.fullmatch(r"2025-12-01T12:0\d:\d\dZ", start), start
    chosen = total(page)
    assert chosen == api_total(live_server, fleet, **{"from": start, "to": end}) < everything
    secs = page.evaluate("(q) => q.map((t) => Date.parse(t) / 1000)", [start, end])
    assert secs[0] % step == 0 and secs[1] % step == 0  # snapped to the timeline's step
    assert secs[0] <= T0 and T0 + 60 < secs[1] <= T0 + 120
    assert "4 profiles merged" in page.inner_text("#sel-main")
    assert page.input_value("#pprof-cmd").endswith(f"'{fleet['url']}?from={start}&to={end}'")
    assert page.is_visible("#clear-range")
    shot(page, "collection-range")
    # Back: the whole collection again, Forward: the range.
    page.go_back()
    page.wait_for_function("() => !location.search.includes('from=')")
    settled(page)
    assert total(page) == everything
    assert page.is_hidden("#clear-range")
    page.go_forward()
    page.wait_for_function("() => location.search.includes('from=')")
    settled(page)
    assert total(page) == chosen
    # A fresh page on the URL is the same selection.
    open_collection(page, page.url)
    assert total(page) == chosen
    assert page.console_errors == []


def test_base_range_gives_the_diff_colours(page, live_server, release):
    open_collection(page, release["url"])
    assert page.get_attribute("#viewer", "data-diff") == ""
    drag(page, T0 + 50, T0 + 70)  # after the change
    page.wait_for_function("() => location.search.includes('from=')")
    settled(page)
    drag(page, T0 - 0.3, T0 + 10, shift=True)  # before it: the base
    page.wait_for_function("() => location.search.includes('base_from=')")
    settled(page)
    assert page.get_attribute("#viewer", "data-diff") == "diff_base"
    hues = page.evaluate(ROW_HUES, 2)
    shot(page, "collection-diff")
    assert hues["red"] > 50 and hues["green"] > 50, hues
    assert page.is_visible("#diff-legend")
    assert page.inner_text("#total") == "1.70s → 1.80s cpu (+100ms, +5.9%)"
    assert "-diff_base=" in page.input_value("#pprof-cmd")
    assert "2 profiles merged" in page.inner_text("#sel-base")
    # "No base" takes it off; the toggle makes the next plain drag the base again.
    page.click("#clear-base")
    page.wait_for_function("() => !location.search.includes('base_')")
    settled(page)
    assert page.get_attribute("#viewer", "data-diff") == ""
    page.click("#compare-toggle")
    assert page.get_attribute("#compare-toggle", "aria-pressed") == "true"
    drag(page, T0 - 0.3, T0 + 10)
    page.wait_for_function("() => location.search.includes('base_from=')")
    settled(page)
    assert page.get_attribute("#viewer", "data-diff") == "diff_base"
    assert page.get_attribute("#compare-toggle", "aria-pressed") == "false"
    # Back walks the base off again.
    page.go_back()
    page.wait_for_function("() => !location.search.includes('base_')")
    settled(page)
    assert page.get_attribute("#viewer", "data-diff") == ""
    assert page.console_errors == []


def test_label_chips_narrow_the_match(page, live_server, fleet):
    open_collection(page, fleet["url"] + "?group_by=pod")
    page.click("#label-values button[data-key=pod][data-value=api-1]")
    page.wait_for_function("() => location.search.includes('match=')")
    settled(page)
    assert query(page)["match"] == 'pod="api-1"'
    page.wait_for_function("() => document.getElementById('tl-chart').dataset.series === '1'")
    assert total(page) == api_total(live_server, fleet, match='pod="api-1"')
    assert page.inner_text("#match-chips").startswith('pod="api-1"')
    # Alt+click: every pod but that one; × takes the chip off.
    page.click("#label-values button[data-key=pod][data-value=api-1]", modifiers=["Alt"])
    page.wait_for_function("() => location.search.includes('match=pod%21%3D')")
    settled(page)
    assert total(page) == api_total(live_server, fleet, match='pod!="api-1"')
    page.click("#match-chips .chip-remove")
    page.wait_for_function("() => !new URLSearchParams(location.search).get('match')")
    settled(page)
    # A selector typed by hand.
    page.fill("#match-input", 'pod=~"api-.*"')
    page.press("#match-input", "Enter")
    page.wait_for_function("() => location.search.includes('match=')")
    settled(page)
    assert page.get_attribute("#tl-chart", "data-series") == "2"
    assert page.console_errors == []


def test_hostile_label_values_stay_text(page, fleet):
    open_collection(page, fleet["url"] + "?group_by=team")
    names = legend(page)[1:]
    assert set(names) == {HOSTILE[1], HOSTILE[2], "(no team)"}, names
    values = page.locator("#label-values button[data-key=team]").all_inner_texts()
    assert {v.rsplit(" ", 1)[0] for v in values} == {HOSTILE[1], HOSTILE[2]}
    page.locator("#label-values button[data-key=team]").first.click()
    page.wait_for_function("() => location.search.includes('match=')")
    settled(page)
    chip = page.inner_text("#match-chips")
    assert HOSTILE[1] in chip or HOSTILE[2].replace('"', '\\"') in chip, chip
    assert "1 profile merged" in page.inner_text("#sel-main")
    shot(page, "collection-hostile")
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("#viewer img, #viewer svg[onload], #viewer script").count() == 0
    assert page.console_errors == []


def test_a_click_on_a_point_opens_the_member_page_naming_the_collection(page, live_server, fleet):
    open_collection(page, fleet["url"] + "?group_by=pod")
    doc = timeline(live_server, fleet, group_by="pod")
    s, i = lonely_point(doc)
    page.mouse.move(*point(page, s["times"][i], s["values"][i]))
    page.wait_for_selector("#tl-tip:not([hidden])")
    page.mouse.down()
    page.mouse.up()
    page.wait_for_url(re.compile(re.escape(s["ids"][i]) + "$"))
    page.wait_for_selector("#viewer[data-state=ready]", timeout=60_000)
    link = page.locator("#member-of a")
    assert link.get_attribute("href") == fleet["url"] and link.inner_text() == "api fleet"
    assert page.console_errors == []


def test_index_makes_a_collection_and_shows_its_curl_lines(page, live_server):
    page.goto(live_server + "/")
    page.fill("#collection-title", "from the index")
    page.click("#new-collection")
    page.wait_for_selector("#collection-made:not([hidden])")
    cid = page.get_attribute("#collections", "data-id")
    url = f"{live_server}/c/{cid}"
    add_line = page.inner_text("#collection-add")
    token = re.search(r"X-Collection-Token: ([\w-]+)", add_line).group(1)
    head = f"curl -H 'X-Collection-Token: {token}' "
    assert add_line == head + f"-F file=@cpu.pb.gz -F label=pod=api-1 {url}"
    assert page.get_attribute("#collection-link", "href") == url
    create_line = page.inner_text("#collection-create")
    assert create_line == f"curl -i -d 'title=api fleet' {live_server}/api/v1/collections"
    # The token works: an add with it lands, and the page shows the profile.
    c = {"id": cid, "token": token}
    add(live_server, c, (GO / "cpu-small.pb.gz").read_bytes(), T0, pod="api-1")
    open_collection(page, url)
    assert page.inner_text("h1") == "from the index"
    assert page.console_errors == []


VIEW_DRAWN = """(view) => {
  const d = document.getElementById("viewer").dataset;
  return d.loaded === location.search && d.viewLoaded === view + location.search;
}"""


def test_every_view_of_the_viewer_shows_the_selection(page, live_server, fleet):
    selection = 'from=2025-12-01T12:01:00Z&match=pod="api-1"&focus=main'
    open_collection(page, f"{fleet['url']}?{selection}")
    wanted = {"from": "2025-12-01T12:01:00Z", "match": 'pod="api-1"', "focus": "main"}
    assert total(page) == api_total(live_server, fleet, **wanted)
    # The refine bar shows the filter, the command carries it and the selection.
    assert page.get_attribute("#chips .chip", "data-param") == "focus"
    cmd = page.input_value("#pprof-cmd")
    assert cmd.startswith("go tool pprof -http=: -focus=main '")
    assert cmd.endswith("?from=2025-12-01T12:01:00Z&match=pod%3D%22api-1%22'"), cmd
    assert "2 profiles merged" in page.inner_text("#sel-main")
    for view in ("top", "graph", "labels"):
        page.click(f"#views button[data-view={view}]")
        page.wait_for_function(VIEW_DRAWN, arg=view, timeout=60_000)
    page.click("#views button[data-view=graph]")
    page.wait_for_selector("#graph-box svg", timeout=60_000)
    # Peek at the heaviest function of the top table.
    page.click("#views button[data-view=flame]")
    page.locator("#top-table tbody tr").first.click()
    page.click("#views button[data-view=peek]")
    page.wait_for_function(VIEW_DRAWN, arg="peek", timeout=60_000)
    assert page.locator("#peek-tables tr").count() > 1
    # The snapshot is the merged profile's page, with the same view: its link, or the
    # collection's snapshot link that merges the selection and leads there (when the page
    # found it summed, not merged).
    snapshot = merged_link(live_server, page.get_attribute("#snapshot-link", "href"))
    assert re.fullmatch(r"/[\w-]{16}\?focus=main(#.*)?", snapshot), snapshot
    embed = merged_link(live_server, page.get_attribute("#embed-link-sel", "href"))
    assert re.fullmatch(r"/[\w-]{16}/embed\?focus=main", embed), embed
    assert page.console_errors == []


def merged_link(server: str, href: str) -> str:
    """A snapshot link as the merged profile's path: a collection's /snapshot link followed."""
    if "/snapshot" not in href:
        return href
    r = requests.get(server + href.split("#")[0], allow_redirects=False, timeout=60)
    assert r.status_code == 303, r.text
    return r.headers["Location"].removeprefix(server)


def test_another_kind_is_a_page_of_its_own(page, live_server):
    c = create(live_server, "two kinds")
    add(live_server, c, (GO / "cpu-small.pb.gz").read_bytes(), T0, pod="api-1")
    add(live_server, c, (GO / "cpu-labels.pb.gz").read_bytes(), T0 + 60, pod="api-1")
    add(live_server, c, (GO / "heap.pb.gz").read_bytes(), T0 + 30, pod="api-1")
    open_collection(page, c["url"] + "#si=cpu")
    assert page.input_value("#kind") == "cpu"  # the kind with the most profiles
    assert page.is_visible("#kind-box")
    page.select_option("#kind", "heap")
    page.wait_for_url(re.compile(r"\?kind=heap$"))  # a new page, without the cpu's fragment
    page.wait_for_selector("#tl-chart[data-drawn]", timeout=60_000)
    settled(page)
    assert page.inner_text("#tl-unit").startswith("heap · inuse_space in bytes")
    assert page.inner_text("#total").endswith("inuse_space")
    assert "-sample_index" not in page.input_value("#pprof-cmd")
    assert page.input_value("#pprof-cmd").endswith(f"'{c['url']}?kind=heap'")
    page.go_back()
    page.wait_for_selector("#tl-chart[data-drawn]", timeout=60_000)
    settled(page)
    assert page.input_value("#kind") == "cpu"
    assert page.console_errors == []


def test_a_stored_diff_s_banner_follows_the_selection(live_server, page) -> None:  # type: ignore[no-untyped-def]
    """A collection holding a stored diff (a pprof::base profile): its banner is there while
    the selection has it, with the selection's totals, and goes when it has not."""
    c = create(live_server, "with a stored diff")
    add(live_server, c, (GO / "pprof-tool-diffbase-cpu.pb.gz").read_bytes(), T0, pod="a")
    add(live_server, c, (GO / "cpu-small.pb.gz").read_bytes(), T0 + 60, pod="a")
    add(live_server, c, (GO / "cpu-labels.pb.gz").read_bytes(), T0 + 120, pod="a")
    link = f"{live_server}/c/{c['id']}"
    open_collection(page, link)
    whole = page.text_content("#diff-head .cmp-totals")
    assert whole and whole == page.text_content("#total")
    page.evaluate(
        "u => { history.pushState(null, '', u); dispatchEvent(new PopStateEvent('popstate')); }",
        f"{link}?from={T0 + 60}",
    )
    settled(page)
    assert page.locator("#diff-head").count() == 0, "the banner stayed for a selection without it"
    page.go_back()
    settled(page)
    assert page.text_content("#diff-head .cmp-totals") == whole


def test_a_relative_range_is_shown_as_the_time_it_starts(page, fleet):
    """from=now-1000w reads as the moment it names (rounded down to 10 s, as the server
    rounds it), not as all time."""
    open_collection(page, fleet["url"] + "?from=now-1000w")
    text = page.inner_text("#sel-main")
    assert "6 profiles merged" in text and "all time" not in text, text
    shown = re.search(r"from (\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ)", text)
    assert shown is not None and shown.group(1).endswith("0Z"), text
    assert page.console_errors == []
