"""The collection page of a selection answered behind (members pending, as a fleet's recent
times are): it asks once more with wait=1, says how many were merged in, and shows them when
asked, where the reader is; and a first look longer than the server waits, asked again. In
headless Chromium (its members are profiles of their own: the suite's live server will do)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import requests
from test_collections_browser import add, create, settled
from test_web_viewer_browser import shot

from share.collections import windows
from share.collections.behind import BEHIND_FROM

from conftest import local_server, unique_profile

pytestmark = pytest.mark.browser
MATCH_B = 'pod="b"'


def selection(server: str, cid: str, **query: str) -> dict:  # type: ignore[type-arg]
    """What the selection resolves to; asked again while the server says its merge goes on
    (the impatient server waits 0.05 s: a slow or busy machine outlasts that)."""
    for _ in range(60):
        r = requests.get(f"{server}/api/v1/collections/{cid}/selection", params=query, timeout=60)
        if r.status_code != 503 or "still being merged" not in r.text:
            break
        time.sleep(0.5)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def offered(page, shown: int, pending: int) -> int:  # type: ignore[no-untyped-def]
    """The page as first drawn (its total, returned) offers the pending members once its
    catch-up has them, and shows nothing more until asked."""
    settled(page)
    before = int(page.get_attribute("#total", "data-total"))
    page.wait_for_selector("#sel-main .cl-show-merged", timeout=60_000)
    line = page.inner_text("#sel-main")
    assert f"{shown} profiles merged" in line, line
    assert f"{pending} newer ones merged in since" in line, line
    assert page.inner_text("#sel-main .cl-show-merged") == f"Show all {shown + pending}"
    assert int(page.get_attribute("#total", "data-total")) == before  # nothing moved unasked
    return before


def show_all(page, shown: int, pending: int, before: int) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Click "Show all": the flame graph asked then holds every member, and the line and the
    total say so (every member a copy of one profile: the total grows in proportion). The
    headers of that flame graph."""
    with page.expect_response(re.compile(r"/flamegraph\?")) as got:
        page.click("#sel-main .cl-show-merged")
    assert got.value.headers["x-collection-members"] == str(shown + pending)
    page.wait_for_function(
        "(n) => document.getElementById('sel-main').innerText.includes(n + ' profiles merged')",
        arg=shown + pending,
        timeout=60_000,
    )
    page.wait_for_function(
        "(b) => Number(document.getElementById('total').dataset.total) > b", arg=before
    )
    assert int(page.get_attribute("#total", "data-total")) == before * (shown + pending) // shown
    assert page.query_selector("#sel-main .cl-show-merged") is None
    return got.value.headers  # type: ignore[no-any-return]


def test_pending_members_are_merged_in_and_shown_when_asked(page, live_server) -> None:  # type: ignore[no-untyped-def]
    c = create(live_server, "catch-up")
    at = (int(time.time()) // 60 - 1) * 60 + 1  # a settled minute: one 10 s window
    match = 'pod="b"'  # a label selection: the warm-up extends only the default one
    for i in range(2):
        add(live_server, c, unique_profile(f"cu{i}", "go-runtime/cpu-small.pb.gz"), at, pod="b")
    assert selection(live_server, c["id"], match=match)["members"] == 2
    for i in range(BEHIND_FROM):
        data = unique_profile(f"cj{i}", "go-runtime/cpu-small.pb.gz")
        add(live_server, c, data, at + 1, pod="b")

    # With pprof's options (focus=): its views merge, and are answered behind; the plain
    # flame graph and top table sum every member of a settled window, with nothing pending.
    page.goto(f"{c['url']}?match={requests.utils.quote(match)}&focus=main")
    before = offered(page, 2, BEHIND_FROM)
    assert "time window" not in page.inner_text("#sel-main")  # merged, not summed
    shot(page, "collection-catch-up")

    show_all(page, 2, BEHIND_FROM, before)
    assert page.console_errors == []


@pytest.fixture(scope="module")
def impatient_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose collection views wait a twentieth of a second for their merges: ten
    large members merge in about 0.3 s on a fast machine now (a third of a second was not
    always passed, and the first look was then answered at once)."""
    yield from local_server(tmp_path_factory, "impatient", COLLECTION_VIEW_SECONDS="0.05")


def test_a_first_look_longer_than_the_wait_is_asked_again_until_merged(
    page, impatient_server
) -> None:  # type: ignore[no-untyped-def]
    """Ten large members of a label selection take seconds to merge: the views answer 503
    (Retry-After) meanwhile, the page says so and asks again, then shows the merge. (With
    pprof's options, focus=: the plain flame graph and top table sum the members instead,
    without a merge to wait for.)"""
    c = create(impatient_server, "first look")
    at = (int(time.time()) // 60 - 1) * 60 + 1
    for i in range(10):
        data = unique_profile(f"big{i}", "go-runtime/cpu-large.pb.gz")
        add(impatient_server, c, data, at + i * 0.01, pod="b")
    query = f"match={requests.utils.quote(MATCH_B)}&to={at + 5}&focus=main"

    page.goto(f"{c['url']}?{query}")  # the first to ask: its views start the merge
    said = page.wait_for_function(
        "() => { const t = document.getElementById('status').textContent;"
        " return t.includes('asks again') && t; }",
        timeout=30_000,
    ).json_value()
    assert "still being merged" in said and "every 5 s" in said, said
    shot(page, "collection-first-look-asks-again")
    settled(page)
    assert "10 profiles merged" in page.inner_text("#sel-main")
    assert page.is_hidden("#status")
    # Chromium logs each 503 it was answered; nothing else went wrong.
    assert page.console_errors, "no view was answered 503: the wait was not passed"
    assert all("status of 503" in e for e in page.console_errors), page.console_errors


def test_a_catch_up_that_outlasts_the_wait_is_asked_again_quietly(page, impatient_server) -> None:  # type: ignore[no-untyped-def]
    """The page's wait=1 for members pending is asked again while it merges past the server's
    wait, without a word in the status line (the views on show are fine), then offers them."""
    c = create(impatient_server, "quiet catch-up")
    at = (int(time.time()) // 60 - 1) * 60 + 1
    for i in range(2):
        add(impatient_server, c, unique_profile(f"q{i}", "go-runtime/cpu-small.pb.gz"), at, pod="b")
    assert selection(impatient_server, c["id"], match=MATCH_B)["members"] == 2
    for i in range(BEHIND_FROM):  # large ones: merging them in takes seconds
        data = unique_profile(f"qj{i}", "go-runtime/cpu-large.pb.gz")
        add(impatient_server, c, data, at + 1, pod="b")

    page.goto(f"{c['url']}?match={requests.utils.quote(MATCH_B)}&focus=main")  # merged
    settled(page)
    assert "being merged in" in page.inner_text("#sel-main")
    page.wait_for_selector("#sel-main .cl-show-merged", timeout=60_000)
    assert page.is_hidden("#status"), page.text_content("#status")
    assert page.inner_text("#sel-main .cl-show-merged") == f"Show all {2 + BEHIND_FROM}"


def test_a_summed_selection_s_pending_members_are_shown_when_asked(page, live_server) -> None:  # type: ignore[no-untyped-def]
    """The plain page sums (no merge to wait for): members of a 10 s window that has not
    ended (here one ten minutes ahead, so the test does not race the clock) are left pending;
    the page asks with wait=1, offers them, and shows them when asked, its views then asking
    with wait=1 too (a sum leaves nothing for the next view to find)."""
    c = create(live_server, "summed catch-up")
    at = (int(time.time()) // 60 - 1) * 60 + 1
    for i in range(2):
        add(live_server, c, unique_profile(f"su{i}", "go-runtime/cpu-small.pb.gz"), at, pod="b")
    ahead = (int(time.time()) // 10 + 60) * 10 + 1
    for i in range(windows.PENDING_FROM):
        data = unique_profile(f"sa{i}", "go-runtime/cpu-small.pb.gz")
        add(live_server, c, data, ahead + i * 0.01, pod="b")

    page.goto(f"{c['url']}?match={requests.utils.quote(MATCH_B)}")
    before = offered(page, 2, windows.PENDING_FROM)
    headers = show_all(page, 2, windows.PENDING_FROM, before)
    assert "x-collection-summed" in headers and "wait=1" in page.url
    # It says what it read: windows of members' stacks summed, no pre-merged block.
    line = page.inner_text("#sel-main")
    assert re.search(r"profiles merged \(summed from \d+ time windows?\)", line), line
    page.wait_for_function(
        "() => document.getElementById('meta-list').innerText.includes('Members merged')"
    )
    meta = page.inner_text("#meta-list")
    assert "Summed from time windows" in meta and "Pre-merged" not in meta, meta
    assert page.console_errors == []
