"""`pprof-share delete` against a live server, and `pprof-share prune` on local stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_upload import REPO, cli, unique_profile

from conftest import http_status, make_app


def uploaded(server: str, tmp_path: Path) -> dict:
    path = tmp_path / "to-delete.pb.gz"
    path.write_bytes(unique_profile())
    result = cli("upload", str(path), "--json", server=server)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_delete_with_a_wrong_token_is_refused(live_server: str, tmp_path: Path) -> None:
    reply = uploaded(live_server, tmp_path)
    result = cli("delete", reply["url"], "--token", "not-the-token", server=live_server)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"pprof-share: {reply['url']}: ")
    assert "token" in lines[0] and "(HTTP 403)" in lines[0]
    assert http_status(reply["raw_url"]) == 200


def test_delete_with_the_token(live_server: str, tmp_path: Path) -> None:
    reply = uploaded(live_server, tmp_path)
    result = cli("delete", reply["url"], "--token", reply["delete_token"], server=live_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"deleted {reply['url']}\n"
    assert http_status(reply["url"]) == 404
    assert http_status(reply["raw_url"]) == 404
    again = cli("delete", reply["url"], "--token", reply["delete_token"], server=live_server)
    assert again.returncode == 1 and "(HTTP 404)" in again.stderr


def test_delete_by_id_on_the_configured_server(live_server: str, tmp_path: Path) -> None:
    reply = uploaded(live_server, tmp_path)
    result = cli("delete", reply["id"], "--token", reply["delete_token"], server=live_server)
    assert result.returncode == 0, result.stderr
    assert http_status(reply["url"]) == 404


def test_prune_removes_only_expired_profiles(tmp_path: Path) -> None:
    stores = {"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"}
    # Uploaded "two hours ago" for one hour: expired now. A second one is still live.
    past_app = make_app({**stores, "CLOCK": lambda: time.time() - 7200})
    past = past_app.extensions["share"]
    old = past.upload(unique_profile(), expires="1h").record.id
    old_collection, _ = past_app.extensions["collections"].create(expires="1h")
    live = make_app(stores).extensions["share"].upload(unique_profile(), expires="1h")
    env = dict(os.environ, **{f"SHARE_{k}": v for k, v in stores.items()})
    run = [sys.executable, "-m", "share.cli", "prune"]
    result = subprocess.run(run, capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "removed 1 expired profile\nremoved 1 expired collection\n"
    assert make_app(stores).extensions["collections"].index.load(old_collection.id) is None
    share = make_app(stores).extensions["share"]
    assert share.meta.load(old) is None and not share.blobs.exists(old)
    assert share.record(live.record.id).id == live.record.id
    result = subprocess.run(run, capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert result.stdout == "removed 0 expired profiles\nremoved 0 expired collections\n"


def test_prune_with_a_bad_setting_says_which(tmp_path: Path) -> None:
    env = dict(os.environ, SHARE_META="mysql://nope")
    result = subprocess.run(
        [sys.executable, "-m", "share.cli", "prune"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("pprof-share: SHARE_META='mysql://nope'")


@pytest.mark.parametrize("pid", ["-JZx8dkX82nVnq_l", "--Zx8dkX82nVnq_l"])
def test_an_id_that_starts_with_a_dash_is_an_argument(pid: str) -> None:
    """Ids are base64url: one in 64 starts with '-'; argparse would take it for an option."""
    from share.cli import build_parser

    args = build_parser().parse_args(["delete", pid, "--token", "t"])
    assert args.link == pid and args.token == "t"
    args = build_parser().parse_args(["merge", "a.pb.gz", pid])
    assert args.sources == ["a.pb.gz", pid]
    with pytest.raises(SystemExit):  # a real option is still one
        build_parser().parse_args(["delete", pid, "--tokenx", "t"])
