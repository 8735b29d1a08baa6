"""Slow and silent clients on the real server (gevent workers): 64 connections trickling a
byte a second leave `GET /` quick, and a client silent for SHARE_CLIENT_TIMEOUT is dropped."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator

import pytest
import requests

from conftest import start_server, stop

# Each test bounds how soon a server answers (a 503, a dropped client): run alone (make test).
pytestmark = pytest.mark.latency

CLIENT_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("slow")
    env = dict(
        os.environ,
        SHARE_BLOBS=f"file:{data}/blobs",
        SHARE_META=f"sqlite:{data}/meta.sqlite3",
        SHARE_PUBLIC_URL="",
        SHARE_CLIENT_TIMEOUT=str(CLIENT_TIMEOUT),
    )
    url, proc = start_server(env, data / "server.log")
    yield url
    stop(proc)


def connect(server: str) -> socket.socket:
    host, port = server.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def test_64_trickling_clients_leave_the_index_quick(server):
    for _ in range(6):  # both workers warm (templates compiled): it is slowness that is measured
        assert requests.get(server + "/", timeout=10).status_code == 200
    # Half trickle a request's body, half its headers: a byte a second each, as the attack goes.
    bodies = [connect(server) for _ in range(32)]
    for sock in bodies:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
    headers = [connect(server) for _ in range(32)]
    times = []
    try:
        for second in range(4):
            for sock in bodies:
                sock.sendall(b"x")
            for sock in headers:
                # (dropped once past the bound on headers: that is allowed, and ignored)
                with contextlib.suppress(OSError):
                    sock.sendall(b"GET / HTTP/1.1\r\nX-Slow: "[second : second + 1])
            started = time.monotonic()
            reply = requests.get(server + "/", timeout=10)
            times.append(time.monotonic() - started)
            assert reply.status_code == 200
            time.sleep(max(0.0, 1 - times[-1]))
    finally:
        for sock in bodies + headers:
            sock.close()
    assert max(times) < 1.0, times


def test_a_silent_client_is_dropped_after_the_client_timeout(server):
    sock = connect(server)
    sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nabc")
    started = time.monotonic()
    sock.settimeout(CLIENT_TIMEOUT + 5)
    received = b""
    try:
        while chunk := sock.recv(4096):  # until the server closes the connection
            received += chunk
    except ConnectionResetError:
        pass
    took = time.monotonic() - started
    sock.close()
    # Dropped after the timeout: closed, at most after a 400 for the unfinished request.
    assert received == b"" or received.startswith(b"HTTP/1.1 400"), received[:100]
    assert CLIENT_TIMEOUT - 0.5 < took < CLIENT_TIMEOUT + 1.5, took
    assert requests.get(server + "/healthz", timeout=5).status_code == 200
