"""The profile page in headless Chromium: flame graph, search, zoom, sample types, URL state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests

from share.pprof._proto import profile_pb2

from conftest import ARTIFACTS, CORPUS, StringTable

pytestmark = pytest.mark.browser

ROW = 18  # px per flame graph row, as in static/viewer.js

# Each payload sets window.__pwned if the page ever runs it as markup or script.
HOSTILE = [
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=window.__pwned=2>",
    '"><svg onload=window.__pwned=3>',
]

# Share of canvas pixels that are painted, and number of distinct colours among them.
CANVAS_STATS = """() => {
  const c = document.getElementById("fg-canvas");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  const colours = new Set();
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3]) { painted++; colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]); }
  }
  return {painted: painted / (d.length / 4), colours: colours.size};
}"""

# A digest of the canvas pixels, to tell whether two drawings are the same.
CANVAS_DIGEST = """() => {
  const c = document.getElementById("fg-canvas");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let h = 0x811c9dc5;
  for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 0x01000193);
  return [c.width, c.height, h >>> 0];
}"""


def upload(base: str, path: Path, **form: str) -> str:
    """Uploads a profile file and returns its link."""
    return upload_bytes(base, path.read_bytes(), **form)


def upload_bytes(base: str, data: bytes, **form: str) -> str:
    """Uploads profile bytes (multipart when a title is given) and returns the link."""
    if form:
        reply = requests.post(base + "/", files={"file": ("p.pb.gz", data)}, data=form, timeout=60)
    else:
        reply = requests.post(base + "/", data=data, timeout=60)
    assert reply.status_code in (200, 201), reply.text
    return reply.text.strip()


def open_profile(page, url: str) -> None:
    """Opens a profile page and waits until the viewer has drawn (or failed)."""
    page.goto(url)
    page.wait_for_selector("#viewer[data-state]", timeout=60_000)
    assert page.get_attribute("#viewer", "data-state") == "ready", page.text_content("#status")


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"viewer-{name}.png"), full_page=True)


def frame_point(page, row: int, fraction: float) -> tuple[float, float]:
    """Page coordinates of a point on flame graph row `row`, `fraction` of the way across."""
    box = page.locator("#fg-canvas").bounding_box()
    return box["x"] + box["width"] * fraction, box["y"] + row * ROW + ROW / 2


def second_page(page):
    """Another tab in the same browser, collecting its console errors like the `page` fixture."""
    other = page.context.new_page()
    other.console_errors = []
    other.on("console", lambda m: m.type == "error" and other.console_errors.append(m.text))
    other.on("pageerror", lambda e: other.console_errors.append(str(e)))
    return other


def top_rows(page) -> list[list[str]]:
    return [
        [cell.strip() for cell in row.split("\t")]
        for row in page.locator("#top-table tbody tr").all_inner_texts()
    ]


def hostile_profile() -> bytes:
    """A small CPU profile whose names, files, comments, mappings and types are markup."""
    prof = profile_pb2.Profile()
    s = StringTable()

    prof.sample_type.add(type=s("samples"), unit=s("count"))
    prof.sample_type.add(type=s("<b>cpu</b>"), unit=s("nanoseconds"))
    prof.period_type.type = s("cpu")
    prof.period_type.unit = s("nanoseconds")
    prof.period = 10_000_000
    prof.comment.append(s("<script>window.__pwned=4</script>"))
    prof.mapping.add(id=1, memory_start=0x1000, memory_limit=0x9000, filename=s(HOSTILE[1]))
    names = [*HOSTILE, "main.main"]
    for i, name in enumerate(names, start=1):
        # A system name of its own keeps pprof's demangling from rewriting the name.
        prof.function.add(id=i, name=s(name), system_name=s(f"f{i}"), filename=s(HOSTILE[i % 3]))
        loc = prof.location.add(id=i, mapping_id=1, address=0x1000 + i * 16)
        loc.line.add(function_id=i, line=i)
    # Stacks are leaf first: main.main calls each hostile function.
    for leaf, count in ((1, 5), (2, 3), (3, 2)):
        prof.sample.add(location_id=[leaf, 4], value=[count, count * 10_000_000])
    prof.string_table.extend(s.strings)
    return prof.SerializeToString()


@pytest.fixture
def cpu_small(live_server) -> str:
    return upload(live_server, CORPUS / "go-runtime" / "cpu-small.pb.gz")


def test_flame_graph_is_drawn_with_metadata_and_ways_out(page, live_server, cpu_small):
    open_profile(page, cpu_small)
    stats = page.evaluate(CANVAS_STATS)
    # The root and the main frames span the whole width: a good part of the canvas is paint.
    assert stats["painted"] > 0.2, stats
    assert stats["colours"] > 5, stats  # several packages, several colours (plus text)
    assert page.is_hidden("#no-samples")
    meta = page.inner_text("#meta-list")
    assert "cpu/nanoseconds" in meta and "10ms" in meta
    # The server's default expiry is 30 days: the time left comes first, then the date.
    assert re.search(r"Expires\s+in 30 days \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\)", meta), meta
    # The marks bench/paint.py reads: drawn, then on screen, once, after navigation start.
    drawn, painted = page.evaluate(
        """() => ["flame-drawn", "flame-painted"].map(
             (n) => performance.getEntriesByName(n).map((e) => e.startTime))"""
    )
    assert len(drawn) == 1 and len(painted) == 1 and 0 < drawn[0] <= painted[0]
    at = float(page.get_attribute("#viewer", "data-flame-painted-at"))
    assert at == pytest.approx(painted[0], abs=0.1)
    assert page.input_value("#pprof-cmd") == f"go tool pprof -http=: {cpu_small}/raw"
    assert page.get_attribute("#raw-link", "href").endswith("/raw")
    speedscope = page.get_attribute("#speedscope-link", "href")
    assert speedscope == "https://www.speedscope.app/#profileURL=" + requests.utils.quote(
        cpu_small + "/raw", safe=""
    )
    raw = requests.get(cpu_small + "/raw", timeout=30)
    assert raw.status_code == 200 and raw.content[:2] == b"\x1f\x8b"
    shot(page, "cpu-small")
    assert page.console_errors == []


def test_first_paint_loads_only_what_the_head_preloads(page, live_server, cpu_small):
    # Every module the flame graph's first paint runs was asked for by the head (none waits for
    # its importer to arrive first), and the views the head preloads are fetched once: the
    # viewer's fetch takes the preloaded reply (its mode and credentials match the link's).
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    open_profile(page, cpu_small)
    got = page.evaluate(
        """() => {
          const painted = performance.getEntriesByName("flame-painted")[0].startTime;
          const links = document.querySelectorAll('link[rel="modulepreload"], link[rel="preload"]');
          const classic = document.querySelectorAll("script[src]:not([type=module])");
          return {
            preloaded: [...links].map((l) => l.href),
            classic: [...classic].map((s) => s.src),
            before: performance.getEntriesByType("resource")
              .filter((e) => e.startTime < painted).map((e) => e.name),
          };
        }"""
    )
    scripts = [u for u in got["before"] if u.endswith(".js")]
    assert any(u.endswith("/static/viewer.js") for u in scripts), scripts
    late = [u for u in scripts if u not in got["preloaded"] + got["classic"]]
    assert late == [], late
    api = cpu_small.replace(live_server, live_server + "/api/v1/profiles")
    for view in (api + "/flamegraph", api + "/top"):
        assert view in got["preloaded"]
        assert fetched.count(view) == 1, [u for u in fetched if "/api/" in u]
    assert page.console_errors == []


def test_embed_loads_only_what_its_head_preloads(page, live_server, cpu_small):
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.goto(cpu_small + "/embed")
    page.wait_for_selector("#embed[data-state=ready]", timeout=60_000)
    got = page.evaluate(
        """() => ({
          preloaded: [...document.querySelectorAll("link[rel$=preload]")].map((l) => l.href),
          scripts: performance.getEntriesByType("resource").map((e) => e.name)
            .filter((u) => u.endsWith(".js") && !u.endsWith("/theme.js")),
        })"""
    )
    assert got["scripts"] and set(got["scripts"]) <= set(got["preloaded"]), got
    view = cpu_small.replace(live_server, live_server + "/api/v1/profiles") + "/flamegraph"
    assert view in got["preloaded"] and fetched.count(view) == 1, fetched
    assert page.console_errors == []


def test_values_are_formatted_like_pprof(page, cpu_small):
    open_profile(page, cpu_small)
    got = page.evaluate(
        """async (cases) => {
          const f = await import("/static/viewer.format.js");
          return cases.map(([v, u]) => f.formatValue(v, u));
        }""",
        [
            [1_200_000_000, "nanoseconds"],
            [350_000_000, "nanoseconds"],
            [1_572_864, "bytes"],
            [524_288, "bytes"],
            [42, "count"],
            [0, "nanoseconds"],
            [-1500, "nanoseconds"],
            [7200 * 10**9, "nanoseconds"],
        ],
    )
    # What google/pprof's measurement.ScaledLabel prints for the same values.
    assert got == ["1.20s", "350ms", "1.50MB", "512kB", "42", "0", "-1.50us", "2hrs"]
    pcts = page.evaluate(
        """async () => {
          const f = await import("/static/viewer.format.js");
          return [f.formatPct(1, 3), f.formatPct(5, 1000), f.formatPct(0, 0), f.formatPct(3, 3)];
        }"""
    )
    assert pcts == ["33.33%", "0.5%", "0%", "100%"]
    now = 1_700_000_000
    left = page.evaluate(
        """async ([now, cases]) => {
          const f = await import("/static/viewer.format.js");
          return cases.map((t) => f.formatRemaining(t, now * 1000));
        }""",
        [
            now,
            [
                now + 30 * 86400 - 5,
                now + 29 * 86400 + 3600,
                now + 3 * 3600 + 60,
                now + 36 * 3600,
                now + 3600 - 2,
                now + 90,
                now + 20,
                now - 1,
                now + 3 * 365 * 86400,
                "2023-11-15T22:13:20Z",  # now + 1 day, as the record API writes it
                "not a time",
            ],
        ],
    )
    assert left == [
        "in 30 days",
        "in 29 days",
        "in 3 hours",
        "in 36 hours",
        "in 1 hour",
        "in 2 minutes",
        "in under a minute",
        "expired",
        "in 3 years",
        "in 24 hours",
        None,
    ]


def test_tooltip_names_the_frame_under_the_mouse(page, cpu_small):
    open_profile(page, cpu_small)
    page.mouse.move(*frame_point(page, 0, 0.5))
    assert page.is_visible("#tooltip")
    tip = page.inner_text("#tooltip")
    assert tip.startswith("all") and "100% of total" in tip
    page.mouse.move(*frame_point(page, 1, 0.3))
    assert "runtime.main" in page.inner_text("#tooltip")
    assert page.console_errors == []


def test_search_highlights_and_reports_the_share_of_total(page, cpu_small):
    open_profile(page, cpu_small)
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "search"
    page.keyboard.type("sha256")
    page.wait_for_selector("#search-share:not([data-share=''])")
    share = float(page.get_attribute("#search-share", "data-share"))
    assert 0 < share < 1
    # Matching one function exactly must give its cum% from the top table: a function counted
    # once per stack. Clicking a top row searches for exactly that function.
    row = page.locator("#top-table tbody tr", has_text="crypto/sha256.block").first
    cum_pct = float(row.locator("td").nth(4).inner_text().rstrip("%"))
    row.click()
    assert page.input_value("#search") == r"^crypto/sha256\.block$"
    assert "selected" in row.get_attribute("class")
    share = float(page.get_attribute("#search-share", "data-share"))
    assert share * 100 == pytest.approx(cum_pct, abs=0.01)
    stats = page.evaluate(CANVAS_STATS)
    shot(page, "search")
    assert stats["painted"] > 0.2
    assert page.console_errors == []


def test_switching_sample_type_changes_the_totals(page, cpu_small):
    open_profile(page, cpu_small)
    assert page.get_attribute("#viewer", "data-sample-type") == "cpu"
    options = page.locator("#sample-type option").all_inner_texts()
    assert len(options) == 2 and "default" in options[1]
    cpu_total = page.inner_text("#total")
    cpu_first = top_rows(page)[0]
    assert re.fullmatch(r"[\d.]+m?s cpu", cpu_total), cpu_total
    page.select_option("#sample-type", "0")
    page.wait_for_selector("#viewer[data-sample-type=samples]")
    samples_total = page.inner_text("#total")
    assert re.fullmatch(r"\d+ samples", samples_total), samples_total
    assert top_rows(page)[0] != cpu_first
    assert "si=samples" in page.url
    assert page.console_errors == []


def test_click_zooms_and_the_url_restores_the_view(page, cpu_small):
    open_profile(page, cpu_small)
    assert page.get_attribute("#breadcrumb", "data-depth") == "0"
    before = page.evaluate(CANVAS_STATS)
    # Row 8 of cpu-small is main.sortInts / main.hashLoop / ...: click the leftmost one.
    page.mouse.click(*frame_point(page, 8, 0.05))
    depth = int(page.get_attribute("#breadcrumb", "data-depth"))
    assert depth == 8
    crumbs = page.locator("#breadcrumb .crumb").all_inner_texts()
    assert crumbs[0] == "all" and len(crumbs) == 9
    zoomed_name = crumbs[-1]
    assert page.evaluate(CANVAS_STATS) != before
    page.fill("#search", "runtime")
    page.wait_for_selector("#search-share:not([data-share=''])")
    page.wait_for_url(re.compile(r"q=runtime"))
    url = page.url
    assert "si=cpu" in url and "zoom=" in url and zoomed_name in url
    shot(page, "zoomed")

    # A fresh page on the same link shows the same view.
    other = second_page(page)
    open_profile(other, url)
    assert other.locator("#breadcrumb .crumb").all_inner_texts() == crumbs
    assert other.input_value("#search") == "runtime"
    assert other.get_attribute("#search-share", "data-share") == page.get_attribute(
        "#search-share", "data-share"
    )
    # Esc resets zoom and search, and the URL forgets them.
    other.keyboard.press("Escape")
    assert other.get_attribute("#breadcrumb", "data-depth") == "0"
    assert "zoom=" not in other.url and "q=" not in other.url
    # A breadcrumb click zooms back out to that frame.
    page.locator("#breadcrumb .crumb").nth(2).click()
    assert page.get_attribute("#breadcrumb", "data-depth") == "2"
    assert page.console_errors == [] and other.console_errors == []


def test_top_table_sorts_and_filters(page, cpu_small):
    open_profile(page, cpu_small)
    flat = [r[0] for r in top_rows(page)]
    page.click("#top-table th[data-key=cum] button")
    rows = top_rows(page)
    cum_pcts = [float(r[4].rstrip("%")) for r in rows]
    assert cum_pcts == sorted(cum_pcts, reverse=True) and [r[0] for r in rows] != flat
    page.click("#top-table th[data-key=cum] button")
    cum_pcts = [float(r[4].rstrip("%")) for r in top_rows(page)]
    assert cum_pcts == sorted(cum_pcts)
    page.fill("#top-filter", "sort.")
    names = [r[5] for r in top_rows(page)]
    assert names and all("sort." in n for n in names)
    assert page.console_errors == []


def test_profile_without_samples_says_so(page, live_server):
    url = upload(live_server, CORPUS / "go-runtime" / "cpu-empty.pb.gz", expires="never")
    open_profile(page, url)
    assert re.search(r"Expires\s+never", page.inner_text("#meta-list"))
    assert page.is_visible("#no-samples")
    assert page.is_hidden("#flame") and page.is_hidden("#top")
    assert "No samples" in page.inner_text("#no-samples")
    shot(page, "no-samples")
    assert page.console_errors == []


def test_hostile_names_are_only_text(page, live_server):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = upload_bytes(live_server, hostile_profile(), title=HOSTILE[2])
    open_profile(page, url)
    names = [r[5] for r in top_rows(page)]
    for name in HOSTILE:
        assert name in names
    assert page.inner_text(".vw-title") == HOSTILE[2]
    # The metadata panel is drawn from the record, fetched beside the views: it may come last.
    page.wait_for_function("() => document.getElementById('meta-list').innerText.length > 0")
    meta = page.inner_text("#meta-list")
    assert HOSTILE[1] in meta and "<script>window.__pwned=4</script>" in meta
    assert page.locator("#sample-type option").first.inner_text().startswith("samples")
    assert "<b>cpu</b>" in page.locator("#sample-type option").nth(1).inner_text()
    # Hover every row of the flame graph so the tooltip shows each name too.
    for x in (0.1, 0.6, 0.9):
        page.mouse.move(*frame_point(page, 2, x))
        assert any(n in page.inner_text("#tooltip") for n in HOSTILE)
    row = page.locator("#top-table tbody tr", has_text=HOSTILE[0]).first
    row.click()
    assert float(page.get_attribute("#search-share", "data-share")) == pytest.approx(0.5)
    # Nothing ran, and no element came from the data.
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("#viewer script, #viewer img, #viewer svg").count() == 0
    assert dialogs == []
    shot(page, "hostile")
    assert page.console_errors == []


def test_large_profile_paints(page, live_server):
    url = upload(live_server, CORPUS / "go-runtime" / "cpu-xl.pb.gz")
    open_profile(page, url)
    assert page.evaluate(CANVAS_STATS)["painted"] > 0.05
    page.keyboard.press("/")
    page.keyboard.type("deepWork")
    page.wait_for_selector("#search-share:not([data-share=''])")
    assert float(page.get_attribute("#search-share", "data-share")) > 0.5
    shot(page, "cpu-xl")
    # Most of this profile's weight is in frames under the server's trim: ask for all of them.
    page.keyboard.press("Escape")
    trimmed = page.locator("#trimmed")
    note = trimmed.inner_text()
    # The budget's note: how many frames are shown, what is hidden and why it hardly shows.
    fg = requests.get(
        url.replace(live_server, live_server + "/api/v1/profiles") + "/flamegraph", timeout=60
    )
    shown = len(fg.json()["nodes"]["name"]) - 1  # the root is no frame
    assert 49_000 < shown <= 50_000
    assert trimmed.is_visible() and f"Showing the {shown:,} heaviest frames;" in note, note
    assert "under a pixel wide unzoomed" in note
    before = page.evaluate(CANVAS_DIGEST)
    page.click("#detail")
    page.wait_for_selector("#trimmed-text:has-text('Every frame shown')", timeout=60_000)
    assert "all=1" in page.url
    # What the budget hid is under a pixel wide: every frame draws the very same picture.
    assert page.evaluate(CANVAS_DIGEST) == before
    shown = re.search(r"\(([\d,]+)\)", page.inner_text("#trimmed-text"))
    assert shown and int(shown.group(1).replace(",", "")) > 1_000_000
    shot(page, "cpu-xl-all")
    assert page.console_errors == []


def test_no_trim_note_when_only_zero_valued_frames_are_left_out(page, live_server):
    # heap-large's inuse_space: the budget leaves out only frames worth 0 (they draw nothing).
    url = upload(live_server, CORPUS / "go-runtime" / "heap-large.pb.gz")
    api = url.replace(live_server, live_server + "/api/v1/profiles") + "/flamegraph"
    trimmed = requests.get(api, params={"si": "inuse_space"}, timeout=60).json()["trimmed"]
    assert trimmed["nodes"] > 0 and trimmed["value"] == 0 and trimmed["max"] == 0
    open_profile(page, url + "#si=inuse_space")
    assert page.locator("#trimmed").is_hidden()
    page.select_option("#sample-type", index=1)  # alloc_space: real weight is left out
    page.wait_for_selector("#trimmed-text:has-text('heaviest frames')", timeout=60_000)
    assert page.console_errors == []
