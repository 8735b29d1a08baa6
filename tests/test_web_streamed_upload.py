"""Streamed uploads: a body is spooled to a file as it arrives, validated by the compute tier
from that file and stored from it (to S3 with a multipart upload above a size), so a web
worker's memory stays flat whatever the upload's size; the spool files go in every outcome."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from share.compute import spool
from share.pprof.wire import uvarint
from share.store import locate
from share.store.s3 import MULTIPART_BYTES

from conftest import CORPUS, backend_settings, start_server, stop, unique_profile

MiB = 1 << 20
UPLOAD_BYTES = 64 * MiB  # SHARE_MAX_UPLOAD_BYTES' default: the largest upload taken
GROWTH_LIMIT = 32_000_000  # issue 18: four concurrent 64 MiB uploads grow a worker by < 32 MB


STORED_BLOCK = 65535  # the most a deflate block of stored (uncompressed) bytes holds


def stored_gzip(raw: bytes, blocks: int) -> bytes:
    """raw in a gzip of `blocks` stored (uncompressed) deflate blocks: 18 + 5 bytes per block
    more than raw, which the blocks must hold."""
    out = bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
    for i in range(blocks):
        piece = raw[i * STORED_BLOCK : (i + 1) * STORED_BLOCK]
        out += bytes([i == blocks - 1]) + struct.pack("<HH", len(piece), len(piece) ^ 0xFFFF)
        out += piece
    return bytes(out + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF))


@functools.cache
def noise(size: int) -> bytes:
    """Random text: incompressible enough, and cheap to decode as the string table's UTF-8."""
    return base64.b64encode(os.urandom(size // 4 * 3 + 3))[:size]


def big_profile(size: int, tag: str) -> bytes:
    """A valid profile of its own (tag) of exactly `size` bytes, in a gzip of stored blocks
    (as large on the wire as inflated): a corpus profile whose string table holds extra,
    unreferenced entries of random text. It validates in well under a second, so that the
    uploads' time goes to moving their bytes."""
    base = gzip.decompress((CORPUS / "go-runtime/heap.pb.gz").read_bytes())
    base += b"\x32" + uvarint(len(tag)) + tag.encode()
    blocks = -(-(size - 18) // (STORED_BLOCK + 5))
    room = size - 18 - 5 * blocks - len(base)  # what the extra entries take, framing and all
    text, entries, used = noise(size), [], 0
    while (rest := room - used) > 0:
        length = 1 << 20
        if rest <= length + 16:  # the last: exactly what is left, framing included
            fits = [rest - 1 - k for k in (1, 2, 3) if len(uvarint(rest - 1 - k)) == k]
            length = fits[0] if fits else 0  # (none at a varint's edge: an empty one first)
        entries.append(b"\x32" + uvarint(length) + text[used : used + length])
        used += len(entries[-1])
    data = stored_gzip(base + b"".join(entries), blocks)
    assert len(data) == size, (len(data), size)
    return data


def write_profiles(directory: Path, count: int, size: int, tag: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = directory / f"big-{tag}-{i}.pb.gz"
        path.write_bytes(big_profile(size, f"streamed-{tag}-{i}"))
        paths.append(path)
    return paths


def web_worker(master: int, timeout: float = 20) -> int:
    """The one gunicorn worker: the master's child that is not a compute process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master and b"share.compute" not in cmdline:
                return int(entry)
        time.sleep(0.05)
    raise AssertionError("gunicorn started no worker")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


class RssSampler(threading.Thread):
    """The largest RSS of a process, read from /proc every 20 ms until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.samples = pid, 0, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self.samples += 1
            self._stop_event.wait(0.02)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        return self.peak


def curl(*args: str) -> subprocess.Popen[bytes]:
    """curl as a user runs it; -w appends the status on a line of its own."""
    return subprocess.Popen(
        ["curl", "-sS", "-H", "Accept: text/plain", "-w", "\n%{http_code}\n", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def post(url: str, data: bytes, method: str = "POST", **headers: str) -> tuple[int, bytes]:
    """(status, body) of an upload, errors included; JSON asked for."""
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Accept": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return reply.read()


def spool_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(spool.PREFIX))


def no_spool_files_within(directory: Path, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while spool_files(directory):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def spool_file_appears(directory: Path, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not spool_files(directory):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Accept: text/plain", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_reply(sock: socket.socket) -> tuple[int, bytes]:
    """(status, whole reply) of a response, read until its end or the connection's."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
            top, _, body = received.partition(b"\r\n\r\n")
            length = [h for h in top.lower().split(b"\r\n") if h.startswith(b"content-length:")]
            if length and len(body) >= int(length[0].split(b":")[1]):
                break
    except ConnectionResetError:
        pass  # after the reply: the server closed with our unread body in its buffer
    assert received.startswith(b"HTTP/1.1 "), received[:200]
    return int(received.split()[1]), received


def bytes_read(pid: int) -> int:
    """What the process has read from files and sockets (/proc/PID/io rchar)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar for {pid}")


@pytest.fixture(scope="module")
def spool_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The servers' TMPDIR: where their spool files go, so that a test can see them."""
    return tmp_path_factory.mktemp("spool")


def server_env(spool_dir: Path, stores: dict[str, str]) -> dict[str, str]:
    return dict(
        os.environ,
        **{f"SHARE_{k}": v for k, v in stores.items()},
        SHARE_PUBLIC_URL="",
        SHARE_PRECOMPUTE="off",
        TMPDIR=str(spool_dir),
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, spool_dir: Path) -> Iterator[dict[str, Any]]:
    """`pprof-share serve --workers 1` on local stores, spooling to spool_dir."""
    data = tmp_path_factory.mktemp("streamed")
    stores = {"BLOBS": f"file:{data}/blobs", "META": f"sqlite:{data}/meta.sqlite3"}
    log = data / "server.log"
    url, proc = start_server(server_env(spool_dir, stores), log, workers=1)
    yield {"url": url, "worker": web_worker(proc.pid), "data": data, "log": log}
    stop(proc)


def test_four_concurrent_64_mib_uploads_grow_the_web_worker_by_under_32_mb(
    server: dict[str, Any], spool_dir: Path, tmp_path: Path
) -> None:
    url, worker = server["url"] + "/", server["worker"]
    files = write_profiles(tmp_path, 4, UPLOAD_BYTES, tag=1)
    for _ in range(3):  # warm: the first requests import and compile what uploads use
        small = curl("--data-binary", f"@{CORPUS / 'go-runtime/cpu-small.pb.gz'}", url)
        assert small.communicate()[0].decode().split()[-1] in ("200", "201")
    before = rss_bytes(worker)
    sampler = RssSampler(worker)
    sampler.start()
    started = time.monotonic()
    uploads = [
        curl("--data-binary", f"@{files[0]}", url),  # a raw body (Content-Length)
        curl("-F", f"file=@{files[1]}", url),  # a multipart form
        curl("-T", str(files[2]), url),  # PUT /big-1-2.pb.gz
        curl("-H", "Transfer-Encoding: chunked", "--data-binary", f"@{files[3]}", url),
    ]
    replies = [u.communicate(timeout=120) for u in uploads]
    took = time.monotonic() - started
    peak = sampler.stop()
    links = []
    for out, err in replies:
        *link, status = out.decode().split()
        assert status == "201", (out[-300:], err)
        links.extend(link)
    growth = peak - before
    print(
        f"web worker RSS {before / MiB:.1f} MiB before, {peak / MiB:.1f} MiB at most during: "
        f"+{growth / 1e6:.1f} MB ({sampler.samples} samples, {took:.1f} s)"
    )
    assert sampler.samples > 10
    assert growth < GROWTH_LIMIT, f"the web worker grew by {growth / 1e6:.1f} MB"
    assert no_spool_files_within(spool_dir)
    stored = server["data"] / "blobs"
    for link, path in zip(links, files, strict=True):
        pid = link.rsplit("/", 1)[1]
        assert (stored / pid[:2] / pid).read_bytes() == path.read_bytes()  # stored as sent


def test_spool_files_are_gone_after_a_success_a_400_and_a_store_failure(
    server: dict[str, Any], spool_dir: Path
) -> None:
    url = server["url"] + "/"
    status, _ = post(url, unique_profile("streamed-success"))
    assert status == 201 and no_spool_files_within(spool_dir)
    status, body = post(url + "broken.pb.gz", b"\x1f\x8b" + os.urandom(2 * MiB), method="PUT")
    assert status == 400 and b"gzip" in body, body
    assert no_spool_files_within(spool_dir)
    blobs = server["data"] / "blobs"
    aside = blobs.with_name("blobs-aside")
    blobs.rename(aside)
    blobs.write_bytes(b"")  # the store fails: a file where its directory was
    try:
        status, body = post(url, unique_profile("streamed-store-failure"))
    finally:
        blobs.unlink()
        aside.rename(blobs)
    assert status == 503, body
    assert no_spool_files_within(spool_dir)


def test_a_body_over_the_limit_is_refused_without_reading_it(
    server: dict[str, Any], spool_dir: Path
) -> None:
    # Its Content-Length over the limit: 413 before a byte of the body is read.
    with connect(server["url"]) as sock:
        sock.sendall(head("POST", "/", "Content-Length: 1073741824") + b"x" * MiB)
        status, reply = read_reply(sock)
    assert status == 413 and b"upload is 1 GiB, over the limit of 64 MiB" in reply, reply
    # Chunked: read up to the limit, then 413 while the client is still sending.
    worker, frame = server["worker"], b"100000\r\n" + b"x" * MiB + b"\r\n"
    read_before, sent = bytes_read(worker), [0]
    sock = connect(server["url"])
    sock.sendall(head("POST", "/", "Transfer-Encoding: chunked"))

    def send() -> None:
        try:
            while sent[0] < UPLOAD_BYTES + 64 * MiB:
                sock.sendall(frame)
                sent[0] += MiB
        except OSError:
            pass  # the server closed the connection: it reads no more

    sender = threading.Thread(target=send)
    sender.start()
    try:
        status, reply = read_reply(sock)
        sender.join(timeout=30)
    finally:
        sock.close()
    assert status == 413 and b"upload over the limit of 64 MiB" in reply, reply
    # Nobody read the rest: what the worker read, from /proc. (Whether the client could send it
    # all is the kernel's business once the read side is shut: it failed one fresh-clone run.)
    assert bytes_read(worker) - read_before < UPLOAD_BYTES + 4 * MiB
    assert no_spool_files_within(spool_dir)


@pytest.mark.parametrize("idiom", ["raw", "chunked", "form"])
def test_a_client_that_leaves_mid_body_leaves_no_spool_file(
    server: dict[str, Any], spool_dir: Path, idiom: str
) -> None:
    part = b"x" * (4 * MiB)
    if idiom == "raw":
        start = head("POST", "/", "Content-Length: 16777216") + part
    elif idiom == "chunked":
        start = head("POST", "/", "Transfer-Encoding: chunked") + b"400000\r\n" + part
    else:
        preamble = (
            b"--b\r\nContent-Disposition: form-data; name=file; filename=p.pb.gz\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n"
        )
        framing = head("POST", "/", "Content-Type: multipart/form-data; boundary=b",
                       "Content-Length: 16777216")  # fmt: skip
        start = framing + preamble + part
    with connect(server["url"]) as sock:
        sock.sendall(start)
        assert spool_file_appears(spool_dir), "the body is not spooled as it arrives"
    assert no_spool_files_within(spool_dir)
    assert post(server["url"] + "/", unique_profile(f"after-{idiom}"))[0] == 201  # serving on
    assert "Traceback" not in server["log"].read_text()  # a 400 for the client gone, not a 500


def test_a_large_upload_goes_to_s3_in_parts_and_reads_back_byte_identical(
    request: pytest.FixtureRequest, tmp_path: Path, spool_dir: Path
) -> None:
    import boto3

    stores = backend_settings("s3+redis", request, tmp_path)
    bucket, _, prefix = stores["BLOBS"].removeprefix("s3://").partition("/")
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    url, proc = start_server(server_env(spool_dir, stores), tmp_path / "server.log", workers=1)
    try:
        as_sent = big_profile(MULTIPART_BYTES + 2 * MiB, "s3-as-sent")  # stored as uploaded
        uncompressed = gzip.decompress(big_profile(MULTIPART_BYTES * 3 // 2, "s3-raw"))
        for data in (as_sent, uncompressed):  # the second's blob: the compute tier's gzip
            status, body = post(url + "/", data)
            assert status == 201, body
            pid = json.loads(body)["id"]
            etag = s3.head_object(Bucket=bucket, Key=f"{prefix}/{pid}")["ETag"].strip('"')
            assert etag.endswith("-2"), etag  # a multipart upload of two parts
            stored = get(f"{url}/{pid}/raw")
            assert stored == data if data is as_sent else gzip.decompress(stored) == data
        # A blob the store lost is put back from the new upload's file.
        s3.delete_object(Bucket=bucket, Key=f"{prefix}/{pid}")
        status, body = post(url + "/", uncompressed)
        assert status == 200, body
        assert gzip.decompress(get(f"{url}/{pid}/raw")) == uncompressed
        assert no_spool_files_within(spool_dir)
    finally:
        stop(proc)


def test_put_file_stores_the_file_as_put_does(backend: dict[str, Any], tmp_path: Path) -> None:
    store = locate.blob_store(backend["BLOBS"])
    for name, size in (("small", 1000), ("large", MULTIPART_BYTES + 1)):
        path = tmp_path / name
        path.write_bytes(os.urandom(size))
        store.put_file(f"key-{name}", path)
        assert store.get(f"key-{name}") == path.read_bytes()
    assert sorted(store.keys()) == ["key-large", "key-small"]  # and no temporary file left
