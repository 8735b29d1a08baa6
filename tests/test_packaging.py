"""The wheel installs anywhere: built from this tree, installed into a fresh virtualenv with no
source tree on sys.path, `pprof-share serve` from an empty directory serves pages, assets,
uploads and views."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import CORPUS, free_port, stop, wait_for_port

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("pprof_share-*.whl")
    return built


def test_the_wheel_carries_templates_static_and_the_proto(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "share/web/templates/profile.html" in names
    assert "share/web/static/viewer.js" in names
    assert "share/pprof/_proto/profile.proto" in names
    assert not any(n.startswith(("tests/", "templates/", "static/")) for n in names)


def test_the_sdist_carries_them_and_builds_the_same_wheel(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "-o", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    (sdist,) = tmp_path.glob("pprof_share-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"templates/profile.html", "static/viewer.js", "share/web/app.py"} <= names
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(sdist)],
        check=True, capture_output=True,
    )  # fmt: skip
    (built,) = tmp_path.glob("pprof_share-*.whl")
    assert "share/web/templates/profile.html" in zipfile.ZipFile(built).namelist()


def test_installed_wheel_serves_from_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # Only the dependencies come from the test's environment (a path, not a site dir: its
    # .pth files, among them the editable install of this checkout, are not read).
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    where = subprocess.run(
        [str(python), "-c", "import share; print(share.__file__)"],
        cwd=empty, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(site), where  # the installed copy, not this checkout

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHARE_", "PYTHON"))}
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(env_dir / "bin" / "pprof-share"), "serve", "--port", str(port)],
            cwd=empty, env=env, stdout=subprocess.DEVNULL, stderr=out,
        )  # fmt: skip
    try:
        assert wait_for_port(port, proc, timeout=30), log.read_text()
        base = f"http://127.0.0.1:{port}"
        assert get(base + "/")[0] == 200
        status, css = get(base + "/static/base.css")
        assert status == 200 and b"{" in css
        upload = urllib.request.Request(
            base + "/",
            data=(CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes(),
            headers={"Accept": "application/json"},
        )
        with urllib.request.urlopen(upload, timeout=60) as reply:
            assert reply.status == 201
            pid = json.loads(reply.read())["id"]
        # A browser gets the page (a client without Accept, the profile: README "One link").
        status, page = get(f"{base}/{pid}", {"Accept": "text/html"})
        assert status == 200 and b"viewer.js" in page
        status, script = get(f"{base}/pprof-share")  # built from the installed sources
        assert status == 200 and f"DEFAULT_SERVER = '{base}'".encode() in script
        status, png = get(f"{base}/{pid}/preview.png")
        assert status == 200 and png.startswith(b"\x89PNG")
        status, doc = get(f"{base}/api/v1/profiles/{pid}/flamegraph")
        assert status == 200 and json.loads(doc)["total"] > 0
        assert (empty / "data" / "meta.sqlite3").exists()  # the embedded default, here
    finally:
        stop(proc)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    with urllib.request.urlopen(
        urllib.request.Request(url, headers=headers or {}), timeout=60
    ) as reply:
        return reply.status, reply.read()
