"""The page of a converted profile in headless Chromium: it says what it was converted from,
and every view (flame graph, top, graph, peek, labels) draws."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_web_refine_browser import settled
from test_web_viewer_browser import open_profile, shot, upload

from conftest import CORPUS

pytestmark = pytest.mark.browser

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("path", "origin"),
    [
        (DATA / "flamegraph/perf-dd-stacks-01.txt", "perf script"),
        (CORPUS / "legacy/google-pprof/java.cpu", "legacy Java CPU"),
    ],
    ids=["perf", "legacy-java"],
)
def test_converted_profile_page_shows_its_origin_and_every_view(page, live_server, path, origin):  # type: ignore[no-untyped-def]
    link = upload(live_server, path)
    open_profile(page, link)
    assert page.inner_text("#converted-from") == f"Converted from {origin} on upload."
    page.wait_for_function("() => document.getElementById('meta-list').children.length > 0")
    assert f"Converted from\n{origin}" in page.inner_text("#meta-list")
    for view in ("top", "graph", "peek", "labels", "flame"):
        page.click(f"#views button[data-view={view}]")
        settled(page, view)
        assert page.get_attribute("#viewer", "data-state") == "ready", view
    shot(page, f"converted-{path.name}")
    assert page.console_errors == []
