"""The cold first view of a large profile shows progress on the page: a spinner, the time
elapsed and what the server is doing — not a blank canvas."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import CORPUS, start_server, stop

pytestmark = pytest.mark.browser


def post(url: str, data: bytes) -> str:
    request = urllib.request.Request(url + "/", data=data, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())["id"]


def test_a_slow_first_view_shows_a_spinner_with_time_and_stage(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Precompute off: the first view is cold on purpose.
    env = dict(os.environ, SHARE_BLOBS=f"file:{tmp_path}/b", SHARE_META=f"sqlite:{tmp_path}/m",
               SHARE_ANALYSIS_WORKERS="1", SHARE_PUBLIC_URL="", SHARE_PRECOMPUTE="off")  # fmt: skip
    log = tmp_path / "server.log"
    url, proc = start_server(env, log, workers=1)
    try:
        pid = post(url, (CORPUS / "go-runtime/cpu-xl.pb.gz").read_bytes())
        other = post(url, (CORPUS / "google-pprof-testdata/large.cpu").read_bytes())
        # Make it cold: the one compute process, which validated both, is replaced.
        compute = int(re.findall(r"compute\[(\d+)\]: done ingest", log.read_text())[-1])
        os.kill(compute, signal.SIGKILL)
        time.sleep(0.3)

        # Another profile's cold views hold the process first: the page's view waits its turn.
        # Enough of them (0.1-0.5 s each) that the wait outlasts the spinner's 0.3 s delay and
        # a poll or two, however fast the views themselves become.
        def fetch(view: str) -> None:
            urllib.request.urlopen(f"{url}/api/v1/profiles/{other}/{view}", timeout=60).read()

        views = ["top", "flamegraph", "peek?peek=runtime", "tags", "top?granularity=lines"]
        views += ["top?focus=runtime", "flamegraph?hide=runtime", "top?granularity=files"]
        busy = [threading.Thread(target=fetch, args=(v,)) for v in views]
        for thread in busy:
            thread.start()
        time.sleep(0.1)
        seen: list[str] = []
        page.goto(f"{url}/{pid}")
        deadline = time.monotonic() + 60
        while page.get_attribute("#viewer", "data-state") is None and time.monotonic() < deadline:
            text = page.text_content("#status") or ""
            if text.startswith("Analysing"):
                seen.append(text)
            time.sleep(0.05)
        for thread in busy:
            thread.join()
        assert page.get_attribute("#viewer", "data-state") == "ready"
        assert seen, "no progress was shown while the first view was computed"
        assert any(re.match(r"Analysing the profile… \d+\.\d s — \w", t) for t in seen), seen[-3:]
        assert page.eval_on_selector("#status", "e => e.hidden || e.textContent === ''")
        assert not page.console_errors
    finally:
        stop(proc)
