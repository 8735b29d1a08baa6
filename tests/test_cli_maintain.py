"""`pprof-share fsck` and `prune` on the configured stores: both kinds of orphan found and
repaired on each backend pair, the stores named first, and no empty store made by mistake."""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from share import create_app
from share.cli import main

from conftest import unique_profile

STRAY = "ZZZZZZZZZZZZZZZZ"  # a blob id no record has


@pytest.fixture
def env(backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("SHARE_BLOBS", backend["BLOBS"])
    monkeypatch.setenv("SHARE_META", backend["META"])
    return backend


def test_fsck_finds_and_repairs_both_kinds_of_orphan(env, capsys):
    app = create_app(env)
    client, share = app.test_client(), app.extensions["share"]
    pids = [
        client.post("/", data=unique_profile(t), headers={"Accept": "application/json"}).get_json()[
            "id"
        ]
        for t in ("kept", "blob-lost")
    ]
    share.blobs.delete(pids[1])  # a record without its blob
    share.blobs.put(STRAY, gzip.compress(b"left by a crash between blob and record"))
    capsys.readouterr()

    assert main(["fsck"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("pprof-share: blobs in ") and env["META"].split("@")[-1] in err
    assert f"record without blob: {pids[1]}\n" in out
    assert f"blob without record: {STRAY}\n" in out
    assert pids[0] not in out
    assert share.meta.load(pids[1]) is not None and share.blobs.exists(STRAY)  # only listed

    assert main(["fsck", "--repair"]) == 0
    assert "(removed)" in capsys.readouterr().out
    assert share.meta.load(pids[1]) is None and not share.blobs.exists(STRAY)
    assert share.meta.load(pids[0]) is not None and share.blobs.exists(pids[0])
    assert main(["fsck"]) == 0
    assert "0 records without blobs, 0 blobs without records" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["prune", "fsck"])
def test_commands_refuse_to_make_a_new_empty_embedded_store(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHARE_BLOBS", raising=False)
    monkeypatch.delenv("SHARE_META", raising=False)
    assert main([command]) == 2
    err = capsys.readouterr().err
    assert "no store at ./data — set SHARE_BLOBS/SHARE_META or run from the service's" in err
    assert err.startswith("pprof-share: blobs in file:./data/blobs, records in sqlite:")
    assert not (tmp_path / "data").exists()


def test_serve_names_its_stores_and_warns_beyond_loopback_without_a_public_url(tmp_path):
    import os
    import subprocess

    from conftest import BIN, free_port, http_status, stop, wait_for_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    env.update(SHARE_BLOBS=f"file:{tmp_path}/blobs", SHARE_META=f"sqlite:{tmp_path}/m.sqlite3")
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "pprof-share"), "serve", "--host", "0.0.0.0", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        assert wait_for_port(port, proc, timeout=30), log.read_text()
        assert http_status(f"http://127.0.0.1:{port}/healthz") == 200  # workers are up
    finally:
        stop(proc)
    lines = log.read_text().splitlines()
    assert lines[0] == (
        f"pprof-share: serving on http://0.0.0.0:{port}/ — blobs in file:{tmp_path}/blobs, "
        f"records in sqlite:{tmp_path}/m.sqlite3"
    )
    assert lines[1].startswith("pprof-share: warning: listening on 0.0.0.0 without SHARE_PUBLIC")
    assert "SHARE_ALLOWED_HOSTS" in lines[1]
