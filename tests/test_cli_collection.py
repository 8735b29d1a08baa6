"""`pprof-share collection create | delete` and `pprof-share upload --collection` against a live
`pprof-share serve`: members land with their labels and time, a wrong or missing token is one
line and nothing stored, retries are no-ops, and the script the server hands out does the same.
The CLI runs as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, unique_profile

REPO = Path(__file__).parent.parent
TOKEN_ENV = "PPROF_SHARE_COLLECTION_TOKEN"


def cli(
    *args: str,
    server: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `pprof-share …` as a user would, with the server from the environment."""  # fmt: skip
    base = {k: v for k, v in os.environ.items() if not k.startswith("PPROF_SHARE")}
    return subprocess.run(
        [*(command or [sys.executable, "-m", "share.cli"]), *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True, text=True, encoding="latin-1", cwd=REPO, timeout=60,
        env={**base, "PPROF_SHARE_SERVER": server, **(env or {})},
    )  # fmt: skip


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def members(server: str, cid: str) -> list[dict[str, Any]]:
    return get_json(f"{server}/api/v1/collections/{cid}/members")["members"]


def profile_file(tmp_path: Path, name: str, base: str = "go-runtime/cpu-small.pb.gz") -> Path:
    """A corpus profile of its own (a new id), written to tmp_path/name."""
    path = tmp_path / name
    path.write_bytes(unique_profile(uuid.uuid4().hex[:16], base))
    return path


def create(server: str, *args: str) -> tuple[str, str, str]:
    """`pprof-share collection create`: (link, id, token)."""
    result = cli("collection", "create", *args, server=server)
    assert result.returncode == 0, result.stderr
    link, token = result.stdout.splitlines()
    return link, link.rsplit("/", 1)[1], token


def test_create_then_upload_lands_members_with_their_labels(
    live_server: str, tmp_path: Path
) -> None:
    result = cli("collection", "create", "--title", "api fleet", server=live_server)
    assert result.returncode == 0, result.stderr
    link, token = result.stdout.splitlines()  # the link, then the token: one a line
    assert link.startswith(f"{live_server}/c/") and len(link.rsplit("/", 1)[1]) == 12
    assert f"--collection {link} --token {token}" in result.stderr
    cid = link.rsplit("/", 1)[1]
    heap = "go-runtime/heap.pb.gz"
    files = [profile_file(tmp_path, "a.pb.gz"), profile_file(tmp_path, "heap.pb.gz", heap)]
    added = cli(
        "upload", "--collection", link, "--token", token, "--label", "pod=api-1",
        "--label", "branch=main", "--time", "2026-11-30T12:00:00Z", *map(str, files),
        server=live_server,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stderr == ""
    links = added.stdout.splitlines()
    assert len(links) == 2 and all(u.startswith(live_server + "/") for u in links)
    found = {m["url"]: m for m in members(live_server, cid)}  # one time: in any order
    assert sorted(found) == sorted(links)
    assert [found[u]["labels"] for u in links] == [{"pod": "api-1", "branch": "main"}] * 2
    assert [found[u]["time"] for u in links] == ["2026-11-30T12:00:00Z"] * 2
    assert [found[u]["kind"] for u in links] == ["cpu", "heap"]
    record = get_json(f"{live_server}/api/v1/collections/{cid}")
    assert record["title"] == "api fleet" and record["members"] == 2


def test_create_json_with_retention_and_expiry(live_server: str) -> None:
    result = cli(
        "collection", "create", "--json", "--retention", "7d", "--expires", "30d",
        server=live_server,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["retention_seconds"] == 7 * 86400 and reply["expires_at"]
    assert reply["token"] and reply["url"] == f"{live_server}/c/{reply['id']}"


def test_link_forms_token_from_the_environment_and_stdin(live_server: str, tmp_path: Path) -> None:
    link, cid, token = create(live_server)
    env = {TOKEN_ENV: token}
    forms = [
        ("--collection", cid),  # a bare id, on the configured server
        ("--collection", f"{link}/top?match=pod%3D%22api-1%22"),  # a view's link, selection too
        ("--collection", link.removeprefix("http://")),  # no scheme, as pasted
    ]
    for i, form in enumerate(forms):
        path = profile_file(tmp_path, f"p{i}.pb.gz")
        result = cli("upload", *form, "--label", f"n={i}", str(path), server=live_server, env=env)
        assert result.returncode == 0, (form, result.stderr)
    data = unique_profile(uuid.uuid4().hex[:16])
    piped = cli("upload", "--collection", link, "--label", "n=stdin", "-", server=live_server,
                env=env, stdin=data)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    found = sorted(m["labels"]["n"] for m in members(live_server, cid))  # same time: any order
    assert found == ["0", "1", "2", "stdin"]


def test_json_reply_and_a_repeated_add_is_a_no_op(live_server: str, tmp_path: Path) -> None:
    link, cid, token = create(live_server)
    path = profile_file(tmp_path, "same.pb.gz")
    args = ("upload", "--collection", link, "--token", token, "--label", "pod=a",
            "--time", "1764590400", str(path))  # fmt: skip
    first = cli(*args, "--json", server=live_server)
    assert first.returncode == 0, first.stderr
    reply = json.loads(first.stdout)
    assert reply["added"] is True and reply["collection"] == link
    assert reply["member"]["labels"] == {"pod": "a"}
    again = cli(*args, server=live_server)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == reply["url"]
    assert again.stderr.strip() == (
        "pprof-share: same.pb.gz: already in the collection (same profile, labels and time)"
    )
    assert len(members(live_server, cid)) == 1


@pytest.mark.parametrize("token", ["wrong-token", None])
def test_a_wrong_or_missing_token_is_one_line_and_nothing_stored(
    live_server: str, tmp_path: Path, token: str | None
) -> None:
    link, cid, _ = create(live_server)
    paths = [str(profile_file(tmp_path, f"{i}.pb.gz")) for i in range(2)]
    given = ("--token", token) if token else ()
    result = cli("upload", "--collection", link, *given, "--label", "pod=a", *paths,
                 server=live_server)  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines  # said once, not once per file
    if token:
        assert lines[0] == (
            "pprof-share: wrong or missing collection token (send it in the X-Collection-Token "
            "header) (HTTP 403)"
        )
    else:
        assert lines[0] == (
            f"pprof-share: no collection token: give --token or set ${TOKEN_ENV}"
        )  # fmt: skip
    assert members(live_server, cid) == []


def test_bad_labels_and_times_are_the_servers_one_line(live_server: str, tmp_path: Path) -> None:
    link, cid, token = create(live_server)
    path = str(profile_file(tmp_path, "p.pb.gz"))
    base = ("upload", "--collection", link, "--token", token)
    for extra, says in [
        (("--label", "9pod=a"), "label key '9pod'"),
        (("--label", "pod"), "label 'pod': give key=value"),
        (("--time", "yesterday"), "time='yesterday': not a time"),
    ]:
        result = cli(*base, *extra, path, server=live_server)
        assert result.returncode == 1, result.stdout
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and says in lines[0], lines
    assert members(live_server, cid) == []


def test_collection_options_go_together(live_server: str, tmp_path: Path) -> None:
    path = str(profile_file(tmp_path, "p.pb.gz"))
    alone = cli("upload", "--label", "pod=a", path, server=live_server)
    assert alone.returncode == 1 and alone.stdout == ""
    assert alone.stderr.strip().endswith("give --collection")
    link, _, token = create(live_server)
    titled = cli("upload", "--collection", link, "--token", token, "--title", "x", path,
                 server=live_server)  # fmt: skip
    assert titled.returncode == 1
    assert "give them to `collection create`" in titled.stderr
    bad = cli("upload", "--collection", "http://x/not-a-collection", "--token", "t", path,
              server=live_server)  # fmt: skip
    assert bad.returncode == 1
    assert bad.stderr.strip() == (
        "pprof-share: http://x/not-a-collection: not a collection's link (http://HOST/c/ID) or id"
    )


def test_delete_a_collection_with_its_token(live_server: str, tmp_path: Path) -> None:
    link, cid, token = create(live_server)
    added = cli("upload", "--collection", link, "--token", token,
                str(profile_file(tmp_path, "p.pb.gz")), server=live_server)  # fmt: skip
    assert added.returncode == 0, added.stderr
    refused = cli("collection", "delete", link, "--token", "nope", server=live_server)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
    assert "(HTTP 403)" in refused.stderr
    done = cli("collection", "delete", link, "--token", token, server=live_server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"deleted collection {cid} and 1 profiles\n"
    with pytest.raises(urllib.error.HTTPError) as gone:
        get_json(f"{live_server}/api/v1/collections/{cid}")
    gone.value.close()
    assert gone.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as member:
        urllib.request.urlopen(added.stdout.strip() + "/raw", timeout=30)
    member.value.close()
    assert member.value.code in (404, 410)


def test_an_unreachable_server_is_one_line() -> None:
    server = f"http://127.0.0.1:{free_port()}"
    result = cli("collection", "create", server=server)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        f"pprof-share: cannot reach {server}/api/v1/collections: Connection refused"
    )


def test_the_downloaded_script_creates_and_adds(live_server: str, tmp_path: Path) -> None:
    """The one file GET /pprof-share hands out has the collection commands, on its server."""
    script = tmp_path / "pprof-share"
    with urllib.request.urlopen(f"{live_server}/pprof-share", timeout=30) as response:
        script.write_bytes(response.read())
    run = [sys.executable, "-I", str(script)]  # -I: the file alone, not the package beside it
    made = cli("collection", "create", "--title", "ci", server="", command=run)  # no --server
    assert made.returncode == 0, made.stderr
    link, token = made.stdout.splitlines()
    assert link.startswith(f"{live_server}/c/")
    path = profile_file(tmp_path, "bench.pb.gz")
    added = cli("upload", "--collection", link, "--token", token, "--label", "branch=pr-42",
                str(path), server="", command=run)  # fmt: skip
    assert added.returncode == 0, added.stderr
    found = members(live_server, link.rsplit("/", 1)[1])
    assert [m["labels"] for m in found] == [{"branch": "pr-42"}]
