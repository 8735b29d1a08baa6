"""Messages between the web tier and a compute process: length-prefixed pickles on a socket.

Plain sockets (not multiprocessing's pipes) so that waiting for an answer cooperates with
gevent's workers as well as with threads. Both ends are our own code: pickle is safe here.
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!Q")
# A background connection's first message, and its caller's "no job after all" (share.compute.pool).
RESERVE, SKIP = "reserve", "skip"


class Closed(EOFError):
    """The other end went away (a compute process died, or its parent did)."""


def send(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)))
    sock.sendall(data)


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise Closed("connection closed")
        got += k
    return bytes(buf)


def recv(sock: socket.socket) -> Any:
    (n,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    return pickle.loads(_exactly(sock, n))
