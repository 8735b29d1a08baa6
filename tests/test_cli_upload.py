"""`pprof-share upload` against a live `pprof-share serve`: files, stdin, a live pprof endpoint,
rejected files, limits and an unreachable server. The CLI runs as a real subprocess."""

from __future__ import annotations

import calendar
import gzip
import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from share.cli import client
from share.pprof._proto import profile_pb2

from conftest import free_port, server_error, start_server, stop

REPO = Path(__file__).parent.parent
CORPUS = Path(__file__).parent / "corpus"
CPU_SMALL = CORPUS / "go-runtime" / "cpu-small.pb.gz"


def unique_profile(path: Path = CPU_SMALL) -> bytes:
    """A corpus profile made unique (time_nanos), so the server never deduplicates it."""
    message = profile_pb2.Profile()
    message.ParseFromString(gzip.decompress(path.read_bytes()))
    message.time_nanos = time.time_ns()
    return gzip.compress(message.SerializeToString())


def cli(
    *args: str, server: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run `pprof-share …` as a user would, with the server from the environment."""
    env = dict(os.environ, PPROF_SHARE_SERVER=server)
    return subprocess.run(
        [sys.executable, "-m", "share.cli", *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True,
        text=True,
        encoding="latin-1",
        env=env,
        cwd=REPO,
        timeout=timeout,
    )


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def record_of(link: str) -> dict:
    base, pid = link.rsplit("/", 1)
    return json.loads(fetch(f"{base}/api/v1/profiles/{pid}"))


def test_upload_file_prints_only_the_link(live_server: str, tmp_path: Path) -> None:
    path = tmp_path / "cpu-unique.pb.gz"
    path.write_bytes(unique_profile())
    result = cli("upload", str(path), server=live_server)
    assert result.returncode == 0, result.stderr
    link = result.stdout.strip()
    assert result.stdout == link + "\n"
    assert link.startswith(live_server + "/")
    assert gzip.decompress(fetch(link + "/raw")) == gzip.decompress(path.read_bytes())
    assert record_of(link)["title"] == "cpu-unique.pb.gz"
    # The delete token goes to stderr, once; stderr is not a terminal, so no progress bar.
    assert "--token " in result.stderr
    assert "\r" not in result.stderr


def test_upload_title_expiry_and_json(live_server: str, tmp_path: Path) -> None:
    path = tmp_path / "p.pb.gz"
    path.write_bytes(unique_profile())
    result = cli(
        "upload", str(path), "--title", "checkout p99", "--expires", "1h", "--json",
        server=live_server,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["title"] == "checkout p99"
    assert reply["delete_token"]
    assert reply["deduplicated"] is False
    created = calendar.timegm(time.strptime(reply["created_at"], "%Y-%m-%dT%H:%M:%SZ"))
    expires = calendar.timegm(time.strptime(reply["expires_at"], "%Y-%m-%dT%H:%M:%SZ"))
    assert 3590 <= expires - created <= 3610
    assert record_of(reply["url"])["title"] == "checkout p99"


def test_upload_same_profile_twice_gives_same_link_without_token(
    live_server: str, tmp_path: Path
) -> None:
    path = tmp_path / "twice.pb.gz"
    path.write_bytes(unique_profile())
    first = cli("upload", str(path), "--json", server=live_server)
    second = cli("upload", str(path), "--json", server=live_server)
    assert first.returncode == second.returncode == 0, second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["url"] == two["url"]
    assert two["deduplicated"] is True and "delete_token" not in two
    third = cli("upload", str(path), server=live_server)
    assert third.stdout.strip() == one["url"]
    assert "already uploaded" in third.stderr and "--token" not in third.stderr


def test_upload_stdin(live_server: str) -> None:
    data = unique_profile()
    result = cli("upload", "-", server=live_server, stdin=data)
    assert result.returncode == 0, result.stderr
    link = result.stdout.strip()
    assert gzip.decompress(fetch(link + "/raw")) == gzip.decompress(data)


def test_upload_several_files_reports_each(live_server: str, tmp_path: Path) -> None:
    good = [tmp_path / "a.pb.gz", tmp_path / "b.pb.gz"]
    for path in good:
        path.write_bytes(unique_profile())
    bad = CORPUS / "invalid" / "json.json"
    result = cli("upload", str(good[0]), str(bad), str(good[1]), server=live_server)
    assert result.returncode == 1
    links = result.stdout.split()
    assert len(links) == 2 and links[0] != links[1]
    errors = [line for line in result.stderr.splitlines() if "json.json" in line]
    assert len(errors) == 1


@pytest.mark.parametrize(
    "name", ["invalid/json.json", "invalid/random-bytes.bin", "invalid/empty.bin"]
)
def test_rejected_file_exits_non_zero_with_the_servers_message(live_server: str, name: str) -> None:
    path = CORPUS / name
    result = cli("upload", str(path), server=live_server)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"pprof-share: {path}: ")
    assert server_error(live_server, path.read_bytes()) in lines[0]
    assert "(HTTP 400)" in lines[0]


def test_missing_file(live_server: str, tmp_path: Path) -> None:
    result = cli("upload", str(tmp_path / "nope.pb.gz"), server=live_server)
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"pprof-share: {tmp_path / 'nope.pb.gz'}: No such file or directory"
    )


def test_unreachable_server(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    result = cli("upload", str(CPU_SMALL), server=server, timeout=30)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == f"pprof-share: cannot reach {server}: Connection refused"


def test_server_flag_beats_environment(live_server: str, tmp_path: Path) -> None:
    path = tmp_path / "flag.pb.gz"
    path.write_bytes(unique_profile())
    env_server = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = cli("upload", str(path), "--server", live_server, server=env_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(live_server + "/")


# --- a live pprof endpoint, as net/http/pprof serves it ----------------------------------------
class PprofEndpoint(BaseHTTPRequestHandler):
    """Serves one profile at /debug/pprof/profile after sleeping `seconds`, like Go does."""

    body = b""
    requests: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        type(self).requests.append(self.path)
        if not self.path.startswith("/debug/pprof/profile"):
            self.send_error(404, "no such profile")
            return
        seconds = client.profile_seconds("http://x" + self.path)
        time.sleep(seconds)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[tuple[str, type[PprofEndpoint]]]:
    handler = type("Handler", (PprofEndpoint,), {"body": unique_profile(), "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_upload_from_live_endpoint(live_server: str, endpoint) -> None:  # type: ignore[no-untyped-def]
    host, handler = endpoint
    url = f"http://{host}/debug/pprof/profile?seconds=1"
    started = time.monotonic()
    result = cli("upload", url, server=live_server)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started >= 1  # it waited for the profile, then uploaded
    assert handler.requests == ["/debug/pprof/profile?seconds=1"]
    link = result.stdout.strip()
    assert gzip.decompress(fetch(link + "/raw")) == gzip.decompress(handler.body)
    assert record_of(link)["title"] == f"{host}/debug/pprof/profile"


def test_upload_from_live_endpoint_without_scheme(live_server: str, endpoint) -> None:  # type: ignore[no-untyped-def]
    host, handler = endpoint
    result = cli("upload", f"{host}/debug/pprof/profile?seconds=0", server=live_server)
    assert result.returncode == 0, result.stderr
    assert handler.requests == ["/debug/pprof/profile?seconds=0"]


def test_live_endpoint_error_is_one_line(live_server: str, endpoint) -> None:  # type: ignore[no-untyped-def]
    host, _ = endpoint
    result = cli("upload", f"http://{host}/debug/pprof/nothing", server=live_server)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines == [f"pprof-share: http://{host}/debug/pprof/nothing: HTTP 404"]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_countdown_on_a_terminal_while_the_target_profiles(endpoint) -> None:  # type: ignore[no-untyped-def]
    host, handler = endpoint
    stream = FakeTerminal()
    data = client.fetch(f"http://{host}/debug/pprof/profile?seconds=2", stream=stream)
    assert data == handler.body
    shown = stream.getvalue()
    assert "2 s left" in shown and "1 s left" in shown
    assert shown.endswith("\r\x1b[K")  # erased before the link is printed


def test_progress_bar_only_on_a_terminal() -> None:
    terminal, pipe = FakeTerminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = client.Progress("cpu.pb.gz", 1000, stream=stream, delay=0)
        bar.update(500)
        bar.finish()
    assert pipe.getvalue() == ""
    assert "[###############---------------]" in terminal.getvalue()
    assert "50%" in terminal.getvalue()


# --- limits: a server of our own with a small upload limit -------------------------------------
SMALL_LIMIT = 100 * 1024


def serve_small(data: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """`pprof-share serve` of our own with a 100 KiB upload limit: (base URL, process)."""
    env = dict(
        os.environ,
        SHARE_BLOBS=f"file:{data}/blobs",
        SHARE_META=f"sqlite:{data}/meta.sqlite3",
        SHARE_MAX_UPLOAD_BYTES=str(SMALL_LIMIT),
    )
    return start_server(env, data / "server.log", workers=1)


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url, proc = serve_small(tmp_path_factory.mktemp("small"))
    yield url
    stop(proc)


# Just over the limit (the core refuses it after reading) and far over it (refused before the
# body is read, so the server may close while the client is still sending).
@pytest.mark.parametrize("size", [SMALL_LIMIT + 20 * 1024, 6 * SMALL_LIMIT])
def test_upload_over_the_limit_names_the_limit(
    small_server: str, tmp_path: Path, size: int
) -> None:
    path = tmp_path / "big.pb.gz"
    path.write_bytes(os.urandom(size))
    result = cli("upload", str(path), server=small_server)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"pprof-share: {path}: ")
    assert "100 KiB" in lines[0] and "(HTTP 413)" in lines[0]


def test_upload_token_from_the_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHARE_", "PPROF_SHARE"))}
    env.update(
        SHARE_BLOBS=f"file:{tmp_path}/blobs",
        SHARE_META=f"sqlite:{tmp_path}/meta.sqlite3",
        SHARE_UPLOAD_TOKEN="team-token",
    )
    server, proc = start_server(env, tmp_path / "server.log", workers=1)
    try:
        path = tmp_path / "cpu.pb.gz"
        path.write_bytes(unique_profile())
        refused = cli("upload", str(path), server=server)
        assert refused.returncode != 0 and "Authorization: Bearer" in refused.stderr
        os.environ[client.UPLOAD_TOKEN_ENV] = "team-token"
        try:
            done = cli("upload", str(path), server=server)
        finally:
            del os.environ[client.UPLOAD_TOKEN_ENV]
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(server + "/")
    finally:
        stop(proc)
