"""In headless Chromium: what a dropped file holds before it is sent, the dark theme, the page at
390 px, the embed framed by another site (and the page refused), and "Open in speedscope" on a
locally served speedscope build (the npm package) reading the raw link through CORS."""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from test_web_index_browser import LINK, drop, script_errors

from share.pprof._proto import profile_pb2

from conftest import ARTIFACTS, CORPUS, start_server, stop, unavailable

pytestmark = pytest.mark.browser

SPEEDSCOPE = "speedscope@1.25.0"

# Mean luminance of the painted pixels of the flame graph canvas, and a digest of them.
CANVAS = """() => {
  const c = document.getElementById("fg-canvas");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let sum = 0, n = 0, h = 0x811c9dc5;
  for (let i = 0; i < d.length; i += 4) {
    h = Math.imul(h ^ d[i] ^ (d[i + 1] << 8) ^ (d[i + 2] << 16), 0x01000193);
    if (d[i + 3]) { sum += 0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2]; n++; }
  }
  return { luminance: n ? sum / n : -1, painted: n, digest: h >>> 0 };
}"""


def unique(path: Path) -> bytes:
    message = profile_pb2.Profile.FromString(gzip.decompress(path.read_bytes()))
    message.time_nanos = time.time_ns()
    return gzip.compress(message.SerializeToString())


def upload(base: str, data: bytes) -> str:
    reply = requests.post(base + "/", data=data, timeout=60)
    assert reply.status_code in (200, 201), reply.text
    return reply.text.strip()


def ready(page, url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(url)
    page.wait_for_selector("#viewer[data-state=ready]", timeout=60_000)


def test_labels_are_shown_before_upload_and_ticked_ones_stripped(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    data = unique(CORPUS / "go-runtime/cpu-labels.pb.gz")
    message = profile_pb2.Profile.FromString(gzip.decompress(data))
    keys = {message.string_table[lb.key] for s in message.sample for lb in s.label}
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(live_server + "/")
    drop(page, [("labelled.pb.gz", data)])
    review = page.locator("#review")
    review.wait_for()
    shown = set(page.locator("#review-labels label[data-key]").evaluate_all(
        "(ls) => ls.map((l) => l.dataset.key)"
    ))  # fmt: skip
    assert shown == keys and len(keys) >= 2
    text = page.locator("#review-labels").inner_text()
    assert "/api/users" in text  # a value as an example, read from the file in the browser
    assert (
        "/usr/" in page.locator("#review-paths").inner_text()
        or page.locator("#review-paths li").count()
    )
    page.screenshot(path=str(ARTIFACTS / "links-review.png"), full_page=True)
    assert posts == []  # nothing was sent while the uploader looks
    page.locator("#review-labels label[data-key='endpoint'] input").check()
    page.locator("#review-paths input").check()
    page.locator("#review-upload").click()
    page.wait_for_url(LINK, timeout=30_000)
    stored = profile_pb2.Profile.FromString(
        gzip.decompress(requests.get(page.url.split("#")[0] + "/raw", timeout=30).content)
    )
    left = {stored.string_table[lb.key] for s in stored.sample for lb in s.label}
    assert left == keys - {"endpoint"}
    assert not any("/" in stored.string_table[f.filename] for f in stored.function)
    assert script_errors(page) == []


def test_dark_theme_changes_the_page_and_the_canvas(live_server: str, browser) -> None:  # type: ignore[no-untyped-def]
    link = upload(live_server, (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())
    seen = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1200, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        ready(page, link)
        seen[scheme] = {
            "bg": page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor"),
            "canvas": page.evaluate(CANVAS),
        }
        page.screenshot(path=str(ARTIFACTS / f"links-{scheme}.png"))
        if scheme == "dark":
            # The toggle takes the page back to light, canvas included, and is remembered.
            page.locator("#theme-toggle").click()
            page.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
            assert page.evaluate(CANVAS)["digest"] == seen["light"]["canvas"]["digest"]
            page.reload()
            page.wait_for_selector("#viewer[data-state=ready]")
            assert (
                page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor")
                == (seen["light"]["bg"])
            )
        context.close()
    assert seen["light"]["bg"] == "rgb(255, 255, 255)" and seen["dark"]["bg"] != seen["light"]["bg"]
    light, dark = seen["light"]["canvas"], seen["dark"]["canvas"]
    assert light["painted"] > 1000 and dark["painted"] > 1000
    assert dark["luminance"] < light["luminance"] - 30 and dark["digest"] != light["digest"]


def test_the_page_reads_at_390_px(live_server: str, browser) -> None:  # type: ignore[no-untyped-def]
    link = upload(live_server, (CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes())
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = context.new_page()
    ready(page, link)
    page.locator("#top-table tbody tr").first.wait_for()
    widths = page.evaluate(
        """() => ({
          table: document.getElementById("top-table").getBoundingClientRect().width,
          name: document.querySelector("#top-table th[data-key=name]")
            .getBoundingClientRect().width,
          page: document.documentElement.scrollWidth,
        })"""
    )
    page.screenshot(path=str(ARTIFACTS / "links-390.png"), full_page=True)
    context.close()
    assert widths["name"] >= 0.6 * widths["table"], widths
    assert widths["page"] <= 390, widths  # nothing sticks out sideways


@pytest.fixture
def other_origin(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A second site on another port: its pages frame ours."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    server.shutdown()
    server.server_close()


def test_another_site_can_frame_the_embed_but_not_the_page(
    live_server: str, page, other_origin
) -> None:  # type: ignore[no-untyped-def]
    site, folder = other_origin
    link = upload(live_server, (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())
    (folder / "post.html").write_text(
        f'<iframe id="e" src="{link}/embed" width="900" height="400"></iframe>'
        f'<iframe id="p" src="{link}" width="900" height="400"></iframe>'
    )
    page.goto(f"{site}/post.html")
    embed = page.frame_locator("#e")
    embed.locator("#embed[data-state=ready]").wait_for(timeout=30_000)
    assert embed.locator("#sample-type option").count() == 2
    painted = page.locator("#e").element_handle().content_frame().evaluate(CANVAS)
    assert painted["painted"] > 1000
    page.wait_for_timeout(500)
    framed = page.locator("#p").element_handle().content_frame()
    assert framed.query_selector("#viewer") is None  # refused: frame-ancestors 'none'
    assert requests.get(link, headers={"Accept": "text/html"}, timeout=30).status_code == 200
    page.screenshot(path=str(ARTIFACTS / "links-embed.png"))


def test_an_embedded_diff_with_a_filter_is_that_view(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    """/ID/embed?diff_base=…&hide=… draws the diff the page would: both totals, the filter, red
    and green frames, and a link to the same view."""
    after = upload(live_server, unique(CORPUS / "go-runtime/cpu-labels.pb.gz"))
    before = upload(live_server, unique(CORPUS / "go-runtime/cpu-small.pb.gz"))
    query = f"diff_base={before.rsplit('/', 1)[1]}&hide=runtime"
    page.goto(f"{after}/embed?{query}")
    page.wait_for_selector("#embed[data-state=ready]", timeout=30_000)
    assert "→" in page.inner_text("#total")
    assert page.inner_text("#filters") == "hide=runtime"
    assert page.get_attribute(".em-brand", "href") == f"{after}?{query}"
    colours = page.evaluate(
        """() => {
          const c = document.getElementById("fg-canvas");
          const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
          let red = 0, green = 0;
          for (let i = 0; i < d.length; i += 4) {
            if (d[i] > d[i + 1] + 60) red++;
            if (d[i + 1] > d[i] + 60) green++;
          }
          return { red, green };
        }"""
    )
    assert colours["red"] > 100 and colours["green"] > 100, colours
    page.goto(f"{after}/embed?focus=(")  # pprof's own error, as text
    page.wait_for_selector("#embed[data-state=error]", timeout=30_000)
    assert "missing closing )" in page.inner_text("#status")
    assert [e for e in page.console_errors if "status of 400" not in e] == []


@pytest.fixture(scope="session")
def speedscope_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The speedscope npm package, installed once into a cache outside the repository."""
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not installed (make test installs it)")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pprof-share-tests"
    prefix = cache / SPEEDSCOPE.replace("@", "-")
    release = prefix / "node_modules/speedscope/dist/release"
    if not (release / "index.html").exists():
        result = subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(prefix),
             SPEEDSCOPE],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if result.returncode != 0:
            unavailable(f"npm install {SPEEDSCOPE} failed: {result.stderr[-300:]}")
    return release


def test_open_in_speedscope_loads_the_profile(
    browser, speedscope_build: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(speedscope_build)
    )
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    speedscope = f"http://127.0.0.1:{site.server_address[1]}/"
    env = dict(
        os.environ,
        SHARE_BLOBS=f"file:{tmp_path}/blobs",
        SHARE_META=f"sqlite:{tmp_path}/meta.sqlite3",
        SHARE_SPEEDSCOPE_URL=speedscope,
    )
    server, proc = start_server(env, tmp_path / "server.log", workers=1)
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        link = upload(server, (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())
        page = context.new_page()
        ready(page, link)
        href = page.get_attribute("#speedscope-link", "href")
        assert href.startswith(speedscope + "#profileURL=http%3A%2F%2F127.0.0.1")
        fetched: list[tuple[str, int, str | None]] = []

        def seen(response) -> None:  # type: ignore[no-untyped-def]
            if response.url.endswith("/raw"):
                origin = response.headers.get("access-control-allow-origin")
                fetched.append((response.url, response.status, origin))

        context.on("response", seen)
        with context.expect_page() as opened:
            page.locator("#speedscope-link").click()
        tab = opened.value
        tab.wait_for_function("() => document.title.endsWith(' - speedscope')", timeout=60_000)
        tab.wait_for_timeout(500)
        tab.screenshot(path=str(ARTIFACTS / "links-speedscope.png"))
        assert fetched == [(f"{link}/raw", 200, "*")]  # cross-origin, allowed by CORS
        body = tab.locator("body").inner_text()
        assert "Something went wrong" not in body and "unrecognized format" not in body.lower()
    finally:
        context.close()
        stop(proc)
        site.shutdown()
        site.server_close()
