"""The compare and merge pages in headless Chromium: "Compare with…", the differential flame
graph (colours, legend, tooltip, palette), swap, the URL, "Merge with…" and a stored diff."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
import requests
from test_web_viewer_browser import (
    CORPUS,
    HOSTILE,
    frame_point,
    open_profile,
    second_page,
    shot,
    top_rows,
    upload,
    upload_bytes,
)

from share.pprof._proto import profile_pb2

from conftest import StringTable

pytestmark = pytest.mark.browser

MS = 10_000_000  # one CPU sample: 10 ms

# Samples per leaf under main.main: the base (A) and the new profile (B). B less A: grow.fn and
# new.fn grew, shrink.fn and gone.fn shrank, same.fn did not change.
BASE = {"grow.fn": 10, "shrink.fn": 40, "same.fn": 20, "gone.fn": 15}
NEW = {"grow.fn": 40, "shrink.fn": 10, "same.fn": 20, "new.fn": 15, HOSTILE[1]: 5}

# Hue classes of the pixels of one flame graph row: how many are strongly of each hue range.
ROW_HUES = """(row) => {
  const c = document.getElementById("fg-canvas");
  const dpr = window.devicePixelRatio || 1;
  const y = Math.round((row * 18 + 4) * dpr);  // above the text's middle line
  const d = c.getContext("2d").getImageData(0, y, c.width, 1).data;
  const out = {red: 0, green: 0, orange: 0, blue: 0, grey: 0};
  for (let i = 0; i < d.length; i += 4) {
    if (!d[i + 3]) continue;
    const [r, g, b] = [d[i] / 255, d[i + 1] / 255, d[i + 2] / 255];
    const max = Math.max(r, g, b), min = Math.min(r, g, b), l = (max + min) / 2;
    const s = max === min ? 0 : (max - min) / (1 - Math.abs(2 * l - 1));
    if (s < 0.12) { out.grey++; continue; }
    if (s < 0.3) continue;
    let h = max === r ? ((g - b) / (max - min)) % 6 : max === g ? (b - r) / (max - min) + 2
      : (r - g) / (max - min) + 4;
    h = (h * 60 + 360) % 360;
    if (h < 12 || h > 348) out.red++;
    else if (h > 20 && h < 45) out.orange++;
    else if (h > 100 && h < 150) out.green++;
    else if (h > 195 && h < 230) out.blue++;
  }
  return out;
}"""


def cpu_profile(leaves: dict[str, int], comment: str = "") -> bytes:
    """A CPU profile of main.main calling each leaf for the given number of 10 ms samples."""
    prof = profile_pb2.Profile()
    s = StringTable()

    prof.sample_type.add(type=s("samples"), unit=s("count"))
    prof.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    prof.period_type.type = s("cpu")
    prof.period_type.unit = s("nanoseconds")
    prof.period = MS
    prof.time_nanos = 1_764_000_000_000_000_000
    prof.duration_nanos = 10_000_000_000
    if comment:
        prof.comment.append(s(comment))
    # Every profile names the same functions in the same order, as one binary's profiles do.
    names = ["main.main", *sorted({*BASE, *NEW})]
    for i, name in enumerate(names, start=1):
        prof.function.add(id=i, name=s(name), system_name=s(f"f{i}"), filename=s("main.go"))
        prof.location.add(id=i, address=0x1000 + i * 16).line.add(function_id=i, line=i)
    for name, count in leaves.items():
        leaf = names.index(name) + 1
        prof.sample.add(location_id=[leaf, 1], value=[count, count * MS])
    prof.string_table.extend(s.strings)
    return prof.SerializeToString()


@pytest.fixture(scope="module")
def pair(live_server) -> tuple[str, str]:
    """(base link, new link): two profiles of one program whose diff grew and shrank."""
    base = upload_bytes(live_server, cpu_profile(BASE), title="before the fix")
    new = upload_bytes(live_server, cpu_profile(NEW), title="after the fix")
    return base, new


def pid(link: str) -> str:
    return urlsplit(link).path.rsplit("/", 1)[-1]


def hover_frame(page, name: str, row: int = 2) -> str:
    """Moves the mouse over the frame called name on a row; returns the tooltip's text."""
    for k in range(1, 100):
        page.mouse.move(*frame_point(page, row, k / 100))
        if page.is_visible("#tooltip") and page.inner_text("#tooltip").startswith(name):
            return page.inner_text("#tooltip")
    raise AssertionError(f"no frame {name!r} on row {row}")


def test_compare_with_lands_on_a_diff_that_grew_and_shrank(page, live_server, pair):
    base, new = pair
    # "Your uploads" is index.js's list in localStorage: the base is offered there.
    page.goto(live_server + "/")
    page.evaluate(
        """(u) => localStorage.setItem("pprof-share:uploads", JSON.stringify([u]))""",
        {"id": pid(base), "url": base, "title": "before the fix", "created_at": 1.7e9},
    )
    open_profile(page, new)
    assert page.get_attribute("#viewer", "data-diff") == ""
    assert page.is_hidden("#diff-legend") if page.locator("#diff-legend").count() else True
    page.click("#compare summary")
    page.select_option("#compare-pick", pid(base))
    assert page.input_value("#compare-ref") == pid(base)
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(re.compile(r"\?diff_base=" + re.escape(pid(base))))
    page.wait_for_selector("#viewer[data-state]")
    assert page.get_attribute("#viewer", "data-diff") == "diff_base"
    hues = page.evaluate(ROW_HUES, 2)
    shot(page, "compare-diff")
    assert hues["red"] > 50 and hues["green"] > 50, hues  # grew and shrank frames
    assert hues["grey"] > 50, hues  # same.fn did not change
    # Both sides are named, with what their records say.
    page.wait_for_selector("#diff-before[data-loaded]")
    assert page.inner_text("#diff-before .cmp-title") == "before the fix"
    page.wait_for_function("() => document.title.includes('−')")
    assert page.title() == "after the fix − before the fix · pprof-share"
    assert "after the fix" in page.inner_text("#diff-after")
    assert re.search(r"cpu.*taken 2025-11-24.*over 10s", page.inner_text("#diff-before"))
    assert page.inner_text("#total") == "850ms → 900ms cpu (+50ms, +5.9%)"
    assert page.is_visible("#diff-legend")
    cmd = page.input_value("#pprof-cmd")
    assert cmd == f"go tool pprof -http=: -diff_base={base}/raw {new}/raw"
    # The root is the whole width and 100% of it; each side's share is of its own total.
    tip = hover_frame(page, "all", row=0)
    assert "before 850ms (100% of before)" in tip and "after 900ms (100% of after)" in tip
    assert "100% of the width" in tip
    tip = hover_frame(page, "grow.fn")
    assert "before 100ms" in tip and "after 400ms" in tip and "delta +300ms (+300%)" in tip
    tip = hover_frame(page, "new.fn")
    assert "before 0" in tip and "delta +150ms (new)" in tip
    tip = hover_frame(page, "gone.fn")
    assert "after 0" in tip and "(gone)" in tip
    shot(page, "compare-tooltip")
    assert page.console_errors == []


def test_diff_top_table_has_both_sides_in_pprofs_order(page, pair):
    base, new = pair
    open_profile(page, f"{new}?diff_base={pid(base)}")
    heads = page.locator("#top-table thead th").all_inner_texts()
    assert [h.strip(" ▾") for h in heads] == [
        "flat before", "flat after", "flat Δ", "flat%",
        "cum before", "cum after", "cum Δ", "cum%", "name",
    ]  # fmt: skip
    rows = top_rows(page)
    by_name = {r[-1]: r for r in rows}
    assert by_name["grow.fn"][:3] == ["100ms", "400ms", "+300ms"]
    assert by_name["shrink.fn"][:3] == ["400ms", "100ms", "-300ms"]
    # pprof's order: |flat| first, so the drops are among the first rows.
    names = [r[-1] for r in rows]
    assert set(names[:2]) == {"grow.fn", "shrink.fn"}, names
    pprof_order = requests.get(
        new.replace(pid(new), "api/v1/profiles/" + pid(new)) + f"/top?diff_base={pid(base)}",
        timeout=30,
    ).json()["rows"]["name"]
    assert names == pprof_order
    # Every row is there, and a sort by a side's column works as any sort.
    page.click("#top-table th[data-key=before_flat] button")
    before = [r[0] for r in top_rows(page)]
    assert before[0] == "400ms"
    # Another sample type is the same diff of that type: the query goes with every request.
    page.select_option("#sample-type", "0")
    page.wait_for_selector("#viewer[data-sample-type=samples]")
    assert page.inner_text("#total") == "85 → 90 samples (+5, +5.9%)"
    assert {r[-1]: r for r in top_rows(page)}["grow.fn"][:3] == ["10", "40", "+30"]
    assert "diff_base=" in page.url and "si=samples" in page.url
    assert page.console_errors == []


def test_swap_reverses_the_signs_and_the_url_restores_the_diff(page, pair):
    base, new = pair
    open_profile(page, f"{new}?diff_base={pid(base)}")
    page.click("#diff-swap")
    page.wait_for_url(re.compile(re.escape(pid(base)) + r"\?diff_base=" + re.escape(pid(new))))
    page.wait_for_selector("#viewer[data-state]")
    tip = hover_frame(page, "grow.fn")
    assert "before 400ms" in tip and "after 100ms" in tip and "delta -300ms (-75%)" in tip
    assert page.inner_text("#total").startswith("900ms → 850ms")
    # Zoom into main.main: a fresh page on the URL shows the same diff, zoomed.
    page.mouse.click(*frame_point(page, 1, 0.5))
    page.wait_for_url(re.compile("zoom=main.main"))
    other = second_page(page)
    open_profile(other, page.url)
    assert other.get_attribute("#viewer", "data-diff") == "diff_base"
    assert other.locator("#breadcrumb .crumb").all_inner_texts() == ["all", "main.main"]
    assert "delta -300ms" in hover_frame(other, "grow.fn")
    hues = other.evaluate(ROW_HUES, 2)
    assert hues["red"] > 50 and hues["green"] > 50, hues
    # The way back: the plain profile, no diff parameters, no diff colours.
    other.click("#diff-plain")
    other.wait_for_url(re.compile(re.escape(pid(base)) + r"(#|$)"))
    other.wait_for_selector("#viewer[data-state=ready]")
    assert other.get_attribute("#viewer", "data-diff") == ""
    assert other.is_hidden("#diff-head") if other.locator("#diff-head").count() else True
    assert page.console_errors == [] and other.console_errors == []


def test_colour_blind_palette_changes_the_colours_and_is_kept(page, pair):
    base, new = pair
    url = f"{new}?diff_base={pid(base)}"
    open_profile(page, url)
    page.select_option("#diff-palette", "blueorange")
    hues = page.evaluate(ROW_HUES, 2)
    shot(page, "compare-blueorange")
    assert hues["orange"] > 50 and hues["blue"] > 50, hues
    assert hues["red"] < 5 and hues["green"] < 5, hues
    open_profile(page, url)  # the choice is the browser's, kept across pages
    assert page.input_value("#diff-palette") == "blueorange"
    assert page.evaluate(ROW_HUES, 2)["blue"] > 50
    assert page.console_errors == []


def test_merge_with_lands_on_the_new_link(page, live_server, pair):
    base, new = pair
    open_profile(page, new)
    page.click("#merge summary")
    # A heap profile does not merge with a CPU profile: pprof's reason, inline.
    heap = upload(live_server, CORPUS / "go-runtime" / "heap.pb.gz")
    page.fill("#merge-refs", heap)
    page.click("#merge-form button[type=submit]")
    page.wait_for_selector("#merge-error:not([hidden])")
    assert "incompatible" in page.inner_text("#merge-error")
    assert page.url.split("#")[0] == new
    page.fill("#merge-refs", base)
    page.click("#merge-form button[type=submit]")
    page.wait_for_url(lambda url: pid(url) not in (pid(new), pid(base)) and "/" in url)
    open_profile(page, page.url)
    assert page.inner_text("#total") == "1.75s cpu"  # 850 ms + 900 ms
    stored = page.evaluate("""() => JSON.parse(localStorage.getItem("pprof-share:uploads"))""")
    assert stored[0]["id"] == pid(page.url)  # "your uploads" knows the merge
    # Chromium logs the refused merge's 400; nothing else went wrong.
    assert [e for e in page.console_errors if "status of 400" not in e] == []


def test_an_uploaded_pprof_diff_shows_as_a_diff(page, live_server):
    # go tool pprof -proto -diff_base=A B writes this: the base's samples labelled pprof::base.
    link = upload(live_server, CORPUS / "go-runtime" / "pprof-tool-diffbase-cpu.pb.gz")
    open_profile(page, link)
    assert page.get_attribute("#viewer", "data-diff") == "labels"
    assert "is itself a diff" in page.inner_text("#diff-head")
    assert page.is_visible("#diff-legend")
    assert re.match(r"3.04s → 2.04s cpu \(-1s, -33%\)", page.inner_text("#total"))
    hues = page.evaluate(ROW_HUES, 1)
    shot(page, "stored-diff")
    assert hues["red"] + hues["green"] > 50, hues
    tip = hover_frame(page, "all", row=0)
    assert "before 3.04s (100% of before)" in tip and "100% of the width" in tip
    heads = page.locator("#top-table thead th").all_inner_texts()
    assert heads[2].startswith("flat Δ")
    assert page.console_errors == []


def test_hostile_names_and_titles_stay_text_in_a_diff(page, live_server):
    base = upload_bytes(live_server, cpu_profile(BASE, "hostile base"), title=HOSTILE[0])
    new = upload_bytes(live_server, cpu_profile(NEW, "hostile new"), title=HOSTILE[2])
    open_profile(page, f"{new}?base={pid(base)}&normalize=1")
    assert page.get_attribute("#viewer", "data-diff") == "base"
    page.wait_for_selector("#diff-before[data-loaded]")
    assert page.inner_text("#diff-before .cmp-title") == HOSTILE[0]
    assert page.inner_text("#diff-after .cmp-title") == HOSTILE[2]
    page.wait_for_function("() => document.title.includes('−')")
    assert page.title() == f"{HOSTILE[2]} − {HOSTILE[0]} · pprof-share"
    assert HOSTILE[1] in [r[-1] for r in top_rows(page)]
    tip = hover_frame(page, HOSTILE[1])
    assert "new" in tip
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("#viewer img, #viewer svg, #viewer script:not([src])").count() == 0
    assert page.console_errors == []


def test_profiles_pprof_would_not_compare_say_why(page, live_server, pair):
    base, new = pair
    heap = upload(live_server, CORPUS / "go-runtime" / "heap.pb.gz")
    page.goto(f"{new}?diff_base={pid(heap)}")
    page.wait_for_selector("#viewer[data-state]", timeout=60_000)
    assert page.get_attribute("#viewer", "data-state") == "error"
    assert "incompatible" in page.inner_text("#status")
    assert page.is_visible("#diff-head")  # what was asked stays named, with the way back
    # A reference that names no profile is refused in the form, before any request.
    page.click("#compare summary")
    page.fill("#compare-ref", "not a link")
    page.click("#compare-form button[type=submit]")
    assert "neither a profile id nor a link" in page.inner_text("#compare-error")
    assert pid(page.url) == pid(new)
    # A link is taken as its id; the mode and normalize go into the query as pprof's flags.
    page.fill("#compare-ref", base + "/raw")
    page.select_option("#compare-mode", "base")
    page.check("#compare-normalize")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(
        re.compile(rf"/{re.escape(pid(new))}\?base={re.escape(pid(base))}&normalize=1")
    )
    page.wait_for_selector("#viewer[data-state=ready]")
    assert page.get_attribute("#viewer", "data-diff") == "base"
    assert "scaled to the base's total" in page.inner_text("#diff-head")
    assert page.inner_text("#total").startswith("850ms → 850ms")  # scaled to the base's


def test_a_filter_on_a_diff_keeps_its_sides_and_colours(page, pair):
    """A refine filter on a diff page (here: ignore the frames that did not change) still draws
    the diff: grew and shrank colours, and each side in the tooltip."""
    base, new = pair
    open_profile(page, f"{new}?diff_base={pid(base)}&ignore=^same\\.fn$")
    assert page.get_attribute("#viewer", "data-diff") == "diff_base"
    assert page.locator("#chips .chip").count() == 1
    hues = page.evaluate(ROW_HUES, 2)
    assert hues["red"] > 50 and hues["green"] > 50, hues
    assert hues["grey"] == 0, hues  # same.fn is gone with the filter
    tip = hover_frame(page, "grow.fn")
    assert "before 100ms" in tip and "after 400ms" in tip and "delta +300ms (+300%)" in tip
    # The top table has both sides' columns too.
    row = page.locator("#top-table tbody tr[data-name='shrink.fn'] td")
    assert [row.nth(i).inner_text() for i in range(3)] == ["400ms", "100ms", "-300ms"]
    shot(page, "compare-filtered")
    assert page.console_errors == []


def test_zoom_into_a_trimmed_diff_fetches_its_subtree_with_both_sides(page, pair):
    """With a budget that cuts frames, a zoom into a diff's frame fetches its subtree with a
    budget of its own (?zoom=): frames that were cut appear, with both sides; a search's share
    is still of the whole diff."""
    base, new = pair
    open_profile(page, f"{new}?diff_base={pid(base)}&budget=3")  # all, main.main, shrink.fn
    assert page.get_attribute("#viewer", "data-detail") == ""
    with pytest.raises(AssertionError, match="no frame 'grow.fn'"):
        hover_frame(page, "grow.fn")
    page.mouse.click(*frame_point(page, 1, 0.5))  # main.main
    page.wait_for_selector("#viewer[data-detail=zoom]", timeout=60_000)
    tip = hover_frame(page, "grow.fn")
    assert "before 100ms" in tip and "after 400ms" in tip and "delta +300ms" in tip, tip
    hues = page.evaluate(ROW_HUES, 2)
    assert hues["red"] > 50 and hues["green"] > 50, hues
    page.fill("#search", "^shrink")
    page.wait_for_selector("#search-share:not([data-share=''])")
    assert page.inner_text("#search-share").startswith("matched 400ms (47.06%) → 100ms (11.11%)")
    assert "zoom=main.main" in page.url
    assert page.console_errors == []
