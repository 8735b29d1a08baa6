"""Every command line README.md shows, copied as it stands, works against `pprof-share serve`."""

from __future__ import annotations

import http.server
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from conftest import BIN, CORPUS

README = Path(__file__).parent.parent / "README.md"
PLACEHOLDER_HOST = "http://localhost:8000"
PROFILE_ENDPOINT = "localhost:6060"


def readme_commands() -> list[str]:
    """Lines of README's sh blocks that talk to the service (curl, go tool pprof)."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    # ./pprof-share is the CLI a line above downloaded from the server.
    wanted = (PLACEHOLDER_HOST[7:] in line or line.startswith("./pprof-share") for line in lines)
    return [line for line, w in zip(lines, wanted, strict=True) if w and not line.startswith("#")]


@pytest.fixture
def fake_pprof_endpoint() -> Iterator[str]:
    """A stand-in for a Go program's /debug/pprof/ handlers, serving a real heap profile."""
    body = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def unique_profile() -> bytes:
    """A real profile with a comment no other test uploads, so this upload gets a token."""
    import gzip
    import uuid

    from share.pprof._proto import profile_pb2

    profile = profile_pb2.Profile.FromString(
        gzip.decompress((CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes())
    )
    profile.string_table.append(f"readme test {uuid.uuid4()}")
    profile.comment.append(len(profile.string_table) - 1)
    return gzip.compress(profile.SerializeToString())


def upload_unique(server: str) -> dict[str, str]:
    reply = requests.post(server, data=unique_profile(), headers={"Accept": "application/json"})
    assert reply.status_code == 201, reply.text
    return reply.json()


def test_readme_lists_upload_and_download_lines():
    commands = readme_commands()
    assert any(c.startswith("curl -F file=@") for c in commands)
    assert any(c.startswith("curl -T") for c in commands)
    assert any("go tool pprof" in c for c in commands)


def new_collection(server: str, members: bool = False) -> dict[str, str]:
    """A collection for the README's /c/CID lines: with members a minute old, on the labels
    its examples select (pod="api-1", a pull request's and main's runs)."""
    r = requests.post(server + "/api/v1/collections", headers={"Accept": "application/json"})
    found = {"id": r.json()["id"], "token": r.json()["token"]}
    now = time.time()
    for name, labels in [
        ("cpu-small", "pod=api-1,branch=pr-42"),
        ("cpu-labels", "pod=api-2,branch=main"),
    ]:
        if members:
            data = (CORPUS / f"go-runtime/{name}.pb.gz").read_bytes()
            headers = {"X-Collection-Token": found["token"], "X-Labels": labels}
            r = requests.post(
                f"{server}/c/{found['id']}?time={now - 60}", data=data, headers=headers
            )
            assert r.status_code in (200, 201), r.text
    return found


def test_readme_commands_work_as_they_stand(live_server, fake_pprof_endpoint, tmp_path):
    if shutil.which("curl") is None:
        pytest.fail("curl is needed for this test")
    shutil.copy(CORPUS / "go-runtime/cpu-small.pb.gz", tmp_path / "cpu.pb.gz")
    shutil.copy(CORPUS / "go-runtime/heap.pb.gz", tmp_path / "heap.pb.gz")
    # The other formats' examples (see tests/data/*/README.md for where they come from).
    data = Path(__file__).parent / "data"
    shutil.copy(data / "flamegraph/perf-dd-stacks-01.txt", tmp_path / "out.perf")
    shutil.copy(CORPUS / "formats/folded-stacks.txt", tmp_path / "out.folded")
    shutil.copy(data / "speedscope/Chrome_65_simple.cpuprofile", tmp_path / "app.cpuprofile")
    shutil.copy(
        data / "speedscope/0.6.0_two-sampled.speedscope.json",
        tmp_path / "profile.speedscope.json",
    )
    ran_cli = False
    shared = upload_unique(live_server)
    collection = new_collection(live_server, members=True)
    ran = 0
    # Lines that delete go last and each get a profile of their own to delete.
    commands = sorted(readme_commands(), key=lambda c: "TOKEN" in c)
    for command in commands:
        if command.startswith("go ") and shutil.which("go") is None:
            continue
        own = upload_unique(live_server) if "TOKEN" in command else shared
        token = own["delete_token"]
        if "/c/CID" in command:  # a collection's line: its own collection when it writes
            c = new_collection(live_server, members=True) if "TOKEN" in command else collection
            command, token = command.replace("/c/CID", f"/c/{c['id']}"), c["token"]
            command = command.replace("/collections/CID", f"/collections/{c['id']}")
        command = command.replace("/collections/CID", f"/collections/{collection['id']}")
        substitutions = {
            PLACEHOLDER_HOST: live_server,
            PROFILE_ENDPOINT: fake_pprof_endpoint,
            "/ID": f"/{own['id']}",
            "TOKEN": token,
        }
        for old, new in substitutions.items():
            command = command.replace(old, new)
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command.replace("curl ", "curl -sSf ")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={"HOME": str(tmp_path), "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin"},
        )
        assert result.returncode == 0, (command, result.stdout[-500:], result.stderr[-500:])
        ran += 1
        # The downloaded CLI was given no --server: it answered with this server's link.
        if command.startswith("./pprof-share upload"):
            assert result.stdout.startswith(live_server + "/"), result.stdout
            ran_cli = True
    assert ran >= 15 and ran_cli
