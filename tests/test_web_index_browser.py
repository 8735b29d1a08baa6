"""The index page in headless Chromium against a live server: drag-and-drop, progress, inline
errors, the form without JavaScript, "your uploads", the manual and the one-time banner."""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_cli_upload import serve_small

from share.pprof._proto import profile_pb2

from conftest import ARTIFACTS, http_status, server_error, stop

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).parent / "corpus"
LINK = re.compile(r"/[A-Za-z0-9_-]{16}$")

# Builds a DataTransfer holding files made from base64 strings and drops it on `target`, with
# the dragenter/dragover/drop sequence a real drag produces.
DROP_JS = """
([files, selector]) => {
  const dt = new DataTransfer();
  for (const [name, b64] of files) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    dt.items.add(new File([bytes], name, { type: "application/octet-stream" }));
  }
  const target = document.querySelector(selector);
  const fire = (type) => target.dispatchEvent(
    new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  fire("dragenter");
  fire("dragover");
  const overlay = document.body.classList.contains("dragging");
  const accepted = !fire("drop");  // dispatchEvent is false when the page called preventDefault
  return { overlay, accepted };
}
"""


def unique_profile(path: Path) -> bytes:
    """A corpus profile made unique (time_nanos), so the server never deduplicates it."""
    message = profile_pb2.Profile()
    message.ParseFromString(gzip.decompress(path.read_bytes()))
    message.time_nanos = time.time_ns()
    return gzip.compress(message.SerializeToString())


def drop(page, files: list[tuple[str, bytes]], selector: str = "#manual") -> dict:  # type: ignore[no-untyped-def]
    encoded = [[name, base64.b64encode(data).decode()] for name, data in files]
    return page.evaluate(DROP_JS, [encoded, selector])


def confirm_review(page) -> None:  # type: ignore[no-untyped-def]
    """ "Before sharing" lists what the files hold; upload them as they are."""
    page.locator("#review-upload").click()


def throttle(page, upload_bytes_per_second: int) -> None:  # type: ignore[no-untyped-def]
    """Slow this page's uploads down (Chromium network emulation over CDP)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 0,
            "downloadThroughput": -1,
            "uploadThroughput": upload_bytes_per_second,
        },
    )


def script_errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Errors thrown or logged by scripts. Failed requests are left out: the browser logs a 400
    upload or 403 delete itself, and the viewer's requests are its own tests' business."""
    return [e for e in page.console_errors if not e.startswith("Failed to load resource")]


def stored_uploads(page) -> list[dict]:  # type: ignore[no-untyped-def]
    return page.evaluate("() => JSON.parse(localStorage.getItem('pprof-share:uploads') || '[]')")


def test_drop_anywhere_uploads_and_lands_on_the_link(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    data = unique_profile(CORPUS / "go-runtime" / "cpu-small.pb.gz")
    page.goto(live_server + "/")
    page.screenshot(path=ARTIFACTS / "index.png", full_page=True)
    # Dropped on the manual, far from the form: the whole page is the drop target.
    outcome = drop(page, [("cpu-dropped.pb.gz", data)])
    assert outcome == {"overlay": True, "accepted": True}
    confirm_review(page)
    page.wait_for_url(LINK, timeout=30_000)
    # The viewer soon writes its state into the fragment (#si=cpu): the link is what precedes it.
    link = page.url.split("#", 1)[0]
    with urllib.request.urlopen(link + "/raw", timeout=30) as response:
        assert gzip.decompress(response.read()) == gzip.decompress(data)

    # The page we land on shows the link and the delete token, once.
    banner = page.locator("#upload-banner")
    banner.wait_for()
    page.screenshot(path=ARTIFACTS / "banner.png")
    assert page.locator("#banner-link").input_value() == link
    token = page.locator("#banner-token").input_value()
    assert len(token) >= 16
    assert "shown only this once" in banner.inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    for button, value in (("Copy link", link), ("Copy token", token)):
        page.get_by_role("button", name=button).click()
        page.get_by_role("button", name="Copied").wait_for()
        assert page.evaluate("() => navigator.clipboard.readText()") == value
        page.get_by_role("button", name=button).wait_for()  # the label comes back
    # The same token was remembered for "your uploads".
    remembered = stored_uploads(page)
    assert remembered[0]["url"] == link and remembered[0]["token"] == token
    assert remembered[0]["title"] == "cpu-dropped.pb.gz"
    page.reload()
    assert page.locator("#upload-banner").count() == 0
    assert script_errors(page) == []


def test_progress_bar_while_a_large_profile_uploads(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    data = unique_profile(CORPUS / "go-runtime" / "cpu-xl.pb.gz")
    events: list[tuple[int, int, bool]] = []
    page.expose_function("recordProgress", lambda *args: events.append(tuple(args)))
    page.goto(live_server + "/")
    # Watch the bar as a user would: every change of its state while it is on screen.
    page.evaluate(
        """() => {
          const box = document.getElementById("progress");
          new MutationObserver(() => window.recordProgress(
            Number(box.dataset.loaded), Number(box.dataset.total), !box.hidden
          )).observe(box, { attributes: true });
        }"""
    )
    throttle(page, 2 * 1024 * 1024)  # localhost is too fast to see progress
    drop(page, [("cpu-xl.pb.gz", data)])
    confirm_review(page)
    page.wait_for_function(
        "() => { const b = document.getElementById('progress');"
        " return !b.hidden && Number(b.dataset.loaded) > 0"
        " && Number(b.dataset.loaded) < Number(b.dataset.total); }",
        timeout=20_000,
    )
    page.screenshot(path=ARTIFACTS / "progress.png")
    assert "%" in page.locator("#progress-text").inner_text()
    page.wait_for_url(LINK, timeout=60_000)

    loaded = [e[0] for e in events if e[2]]
    total = events[-1][1]
    assert total >= len(data)  # the multipart body: the file and a little framing
    partial = sorted({x for x in loaded if 0 < x < total})
    assert len(partial) >= 3, events
    assert loaded == sorted(loaded)  # never goes backwards
    assert loaded[-1] == total
    assert script_errors(page) == []


def test_invalid_file_shows_the_servers_message_inline(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    bad = (CORPUS / "invalid" / "json.json").read_bytes()
    expected = server_error(live_server, bad)
    page.goto(live_server + "/")
    drop(page, [("json.json", bad)])
    line = page.locator("#results li.error")
    line.wait_for(timeout=30_000)
    page.screenshot(path=ARTIFACTS / "error.png")
    assert line.locator(".name").inner_text() == "json.json"
    assert line.locator(".outcome").inner_text() == expected
    assert page.url == live_server + "/"
    assert page.locator("#progress").is_hidden()
    assert script_errors(page) == []


def test_several_files_each_get_a_result_line(live_server: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = []
    for name in ("heap.pb.gz", "allocs.pb.gz"):
        path = tmp_path / name
        path.write_bytes(unique_profile(CORPUS / "go-runtime" / name))
        paths.append(path)
    bad = tmp_path / "notes.txt"
    bad.write_text("not a profile\n")
    page.goto(live_server + "/")
    page.locator("#file").set_input_files([paths[0], bad, paths[1]])
    confirm_review(page)
    page.wait_for_function(
        "() => document.querySelectorAll('#results li:not(.pending)').length === 3",
        timeout=30_000,
    )
    lines = page.locator("#results li")
    assert [lines.nth(i).get_attribute("class") for i in range(3)] == ["ok", "error", "ok"]
    links = [lines.nth(i).locator("a").get_attribute("href") for i in (0, 2)]
    assert all(LINK.search(link) for link in links) and links[0] != links[1]
    assert page.url == live_server + "/"  # several files: no navigation
    assert script_errors(page) == []


def test_a_drop_during_an_upload_joins_the_queue(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    first = unique_profile(CORPUS / "go-runtime" / "cpu-large.pb.gz")
    second = unique_profile(CORPUS / "go-runtime" / "heap.pb.gz")
    page.goto(live_server + "/")
    # 600 KB at 128 KiB/s: about 4.6 s, time for the second drop and its review on a loaded
    # machine (at 1 MiB/s the first upload once finished first and the page went to its link).
    throttle(page, 128 * 1024)
    drop(page, [("first.pb.gz", first)])
    confirm_review(page)
    page.wait_for_function("() => Number(document.getElementById('progress').dataset.loaded) > 0")
    drop(page, [("second.pb.gz", second)])
    confirm_review(page)
    page.wait_for_function(
        "() => document.querySelectorAll('#results li.ok').length === 2", timeout=30_000
    )
    names = page.locator("#results li .name").all_inner_texts()
    assert names == ["first.pb.gz", "second.pb.gz"]
    page.wait_for_timeout(300)
    assert page.url == live_server + "/"  # two files: stays, with a line each
    assert script_errors(page) == []


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    url, proc = serve_small(tmp_path_factory.mktemp("small-browser"))
    yield url
    stop(proc)


def test_too_large_is_refused_before_sending(small_server: str, page) -> None:  # type: ignore[no-untyped-def]
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(small_server + "/")
    assert "up to 100 KiB as sent" in page.locator("#upload").inner_text()
    drop(page, [("big.pb.gz", b"\x1f\x8b" + bytes(300 * 1024))])
    line = page.locator("#results li.error")
    line.wait_for()
    assert line.locator(".outcome").inner_text() == "too large: 300.0 KiB, the limit is 100 KiB"
    assert posts == []
    assert script_errors(page) == []


def test_form_works_without_javascript(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(live_server + "/")
        path = tmp_path / "nojs-upload.pb.gz"
        path.write_bytes(unique_profile(CORPUS / "go-runtime" / "block.pb.gz"))
        page.fill("#title", "no script here")
        page.select_option("#expires", "1h")
        page.set_input_files("#file", path)
        page.screenshot(path=ARTIFACTS / "nojs-index.png")
        page.click("#submit")
        page.wait_for_url(LINK, timeout=30_000)
        pid = page.url.rsplit("/", 1)[1]
        with urllib.request.urlopen(f"{live_server}/api/v1/profiles/{pid}", timeout=30) as r:
            record = json.loads(r.read())
        assert record["title"] == "no script here"
        assert record["expires_at"] is not None
        # The banner is server-rendered, so it needs no script either.
        assert len(page.locator("#banner-token").input_value()) >= 16
    finally:
        context.close()


def test_manual_shows_the_real_host_and_live_limits(live_server: str, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(live_server + "/")
    manual = page.locator("#manual").inner_text()
    for line in (
        f"curl -F file=@cpu.pb.gz {live_server}/",
        f"curl --data-binary @cpu.pb.gz {live_server}/",
        f"curl -T cpu.pb.gz {live_server}/",
        f"| curl --data-binary @- {live_server}/",
        f"curl -X DELETE -H 'X-Delete-Token: TOKEN' {live_server}/ID",
        f"go tool pprof -top {live_server}/ID/raw",
    ):
        assert line in manual
    choices = page.locator("#expires option").all_inner_texts()
    for choice in choices:
        assert f"{choice}" in manual
    assert "64 MiB" in manual  # the live server runs with the default limit
    # Every copy button copies its own example.
    assert page.locator("#manual pre .copy").count() == page.locator("#manual pre").count()


def test_your_uploads_lists_and_deletes(live_server: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = []
    for name in ("mutex.pb.gz", "goroutine.pb.gz", "threadcreate.pb.gz"):
        path = tmp_path / name
        path.write_bytes(unique_profile(CORPUS / "go-runtime" / name))
        paths.append(path)
    page.goto(live_server + "/")
    assert page.locator("#mine").is_hidden()  # nothing uploaded from this browser yet
    page.locator("#file").set_input_files(paths)
    confirm_review(page)
    rows = page.locator("#mine-list tr")
    page.wait_for_function("() => document.querySelectorAll('#mine-list tr').length === 3")
    page.screenshot(path=ARTIFACTS / "your-uploads.png", full_page=True)
    uploads = {u["title"]: u for u in stored_uploads(page)}
    assert set(uploads) == {"mutex.pb.gz", "goroutine.pb.gz", "threadcreate.pb.gz"}

    # Delete asks first: nothing is deleted until the uploader says yes.
    mutex = uploads["mutex.pb.gz"]
    row = page.locator(f"#mine-list tr[data-id='{mutex['id']}']")
    row.locator("button.delete").click()
    row.locator(".confirm-delete").wait_for()
    assert "Delete for everyone?" in row.inner_text()
    page.wait_for_timeout(300)
    assert http_status(mutex["url"]) == 200 and rows.count() == 3
    row.locator("button.confirm-no").click()
    assert row.locator(".confirm-delete").count() == 0 and row.locator("button.delete").is_visible()
    assert http_status(mutex["url"]) == 200

    # Delete with the remembered token: gone from the server and from the list.
    row.locator("button.delete").click()
    row.locator("button.confirm-yes").click()
    page.wait_for_function("() => document.querySelectorAll('#mine-list tr').length === 2")
    assert http_status(mutex["url"]) == 404

    # Already deleted elsewhere (404): dropped from the list as well.
    goroutine = uploads["goroutine.pb.gz"]
    request = urllib.request.Request(
        goroutine["url"], method="DELETE", headers={"X-Delete-Token": goroutine["token"]}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 204
    page.locator(f"#mine-list tr[data-id='{goroutine['id']}'] button.delete").click()
    page.locator("#mine-list button.confirm-yes").click()
    page.wait_for_function("() => document.querySelectorAll('#mine-list tr').length === 1")

    # A wrong token: the server's refusal shows on the row, which stays.
    thread = uploads["threadcreate.pb.gz"]
    page.evaluate(
        """() => {
          const list = JSON.parse(localStorage.getItem('pprof-share:uploads'));
          list.forEach((u) => { u.token = 'wrong-token'; });
          localStorage.setItem('pprof-share:uploads', JSON.stringify(list));
        }"""
    )
    page.reload()
    assert rows.count() == 1
    page.locator("#mine-list button.delete").click()
    page.locator("#mine-list button.confirm-yes").click()
    error = page.locator("#mine-list .row-error")
    error.wait_for()
    assert "token" in error.inner_text()
    assert rows.count() == 1
    assert http_status(thread["url"]) == 200
    assert script_errors(page) == []
