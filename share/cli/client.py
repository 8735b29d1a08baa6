"""The CLI's HTTP client: upload files, stdin or a live pprof endpoint (to / or to a
collection), and delete.

Standard library only (http.client, urllib) so `pprof-share upload` starts fast. Every failure
becomes a ClientError whose message is the one line the CLI prints.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO, TextIO
from urllib.parse import parse_qs, urlsplit

SERVER_ENV = "PPROF_SHARE_SERVER"
UPLOAD_TOKEN_ENV = "PPROF_SHARE_UPLOAD_TOKEN"  # a server's SHARE_UPLOAD_TOKEN, sent as Bearer
DEFAULT_SERVER = "http://127.0.0.1:8000"  # where `make run` serves
USER_AGENT = "pprof-share-cli"
CHUNK_BYTES = 64 * 1024
# A live endpoint takes `seconds=` to answer; this much longer before we give up on it.
FETCH_GRACE_SECONDS = 30
# host:port/path without a scheme, as people paste from `curl localhost:6060/...`.
_BARE_URL = re.compile(r"^[\w.-]+:\d+/")


class ClientError(Exception):
    """A failure to report as one line; the CLI exits non-zero. status: the HTTP status of
    the server's refusal, if it answered one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def server_url(explicit: str | None) -> str:
    """The server from --server, else $PPROF_SHARE_SERVER, else the local default."""
    url = (explicit or os.environ.get(SERVER_ENV) or DEFAULT_SERVER).strip()
    if "://" not in url:
        url = "http://" + url
    return url.rstrip("/")


class Progress:
    """A progress bar on a terminal's stderr, drawn only once an upload takes a moment."""

    def __init__(
        self, label: str, total: int, stream: TextIO | None = None, delay: float = 0.4
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label, self.total, self.delay = label, max(total, 1), delay
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False

    def update(self, done: int) -> None:
        """Redraw for `done` bytes sent, at most ten times a second."""
        now = time.monotonic()
        if not self.enabled or now - self.started < self.delay or now - self.last_draw < 0.1:
            return
        self.last_draw = now
        self.drawn = True
        fraction = min(done / self.total, 1.0)
        width = 30
        filled = int(fraction * width)
        bar = "#" * filled + "-" * (width - filled)
        state = "processing…" if done >= self.total else f"{fraction:4.0%}"
        self.stream.write(
            f"\r{self.label[:30]} [{bar}] {_human(done)}/{_human(self.total)} {state}  "
        )
        self.stream.flush()

    def finish(self) -> None:
        """Erase the bar so the link that follows stands alone."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


def _human(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _error_message(status: int, payload: bytes) -> str:
    """The server's own words: the JSON error message, else the first line of the body."""
    try:
        message = json.loads(payload)["error"]["message"]
        if isinstance(message, str) and message:
            return f"{message} (HTTP {status})"
    except (ValueError, KeyError, TypeError):
        pass
    text = payload.decode("utf-8", "replace").strip()
    first = text.splitlines()[0] if text and not text.startswith("<") else ""
    return f"{first[:300]} (HTTP {status})" if first else f"HTTP {status}"


def _multipart(
    files: Sequence[tuple[str, bytes]], fields: dict[str, str]
) -> tuple[str, list[bytes], int]:
    """Content type, body pieces and total length of a multipart form: each file a field
    'file', in order."""
    boundary = f"pprof-share-{uuid.uuid4().hex}"
    head = b""
    for name, value in fields.items():
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        ).encode()
    parts = []
    for i, (filename, data) in enumerate(files):
        safe_name = re.sub(r'["\r\n\\]', "_", filename) or "profile"
        parts.append(
            head
            + (b"\r\n" if i else b"")
            + (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{safe_name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
            ).encode()
        )
        parts.append(data)
        head = b""
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", parts, sum(map(len, parts))


def _connection(url: str, timeout: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ClientError(f"{url}: the server must be an http:// or https:// URL")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(parts.netloc, timeout=timeout)


def _pieces(parts: list[bytes]) -> Iterator[bytes]:
    for part in parts:
        view = memoryview(part)
        for start in range(0, len(view), CHUNK_BYTES):
            yield view[start : start + CHUNK_BYTES]


def upload(
    server: str,
    data: bytes,
    *,
    filename: str,
    title: str | None = None,
    expires: str | None = None,
    strip: str | None = None,
    progress: bool = True,
    timeout: float = 300,
) -> dict[str, Any]:
    """POST one profile as a form; returns the server's JSON reply (id, url, delete_token…)."""
    return post_files(
        server,
        [(filename, data)],
        title=title,
        expires=expires,
        strip=strip,
        progress=progress,
        timeout=timeout,
    )


def post_files(
    server: str,
    files: Sequence[tuple[str, bytes]],
    *,
    path: str = "/",
    query: str = "",
    headers: dict[str, str] | None = None,
    title: str | None = None,
    expires: str | None = None,
    strip: str | None = None,
    progress: bool = True,
    timeout: float = 300,
) -> dict[str, Any]:
    """POST files as one form to the server's path (/, or a collection's /c/ID) with query
    (merge=1, label=k=v) and extra headers; its JSON reply."""
    pairs = (("title", title), ("expires", expires), ("strip", strip))
    fields = {k: v for k, v in pairs if v}
    content_type, parts, total = _multipart(files, fields)
    conn = _connection(server, timeout)
    label = files[0][0] if len(files) == 1 else f"{len(files)} files"
    bar = Progress(label, total) if progress else None
    try:
        try:
            target = urlsplit(server).path.rstrip("/") + path + (f"?{query}" if query else "")
            conn.putrequest("POST", target)
            conn.putheader("Content-Type", content_type)
            conn.putheader("Content-Length", str(total))
            conn.putheader("Accept", "application/json")
            conn.putheader("User-Agent", USER_AGENT)
            if os.environ.get(UPLOAD_TOKEN_ENV):
                conn.putheader("Authorization", f"Bearer {os.environ[UPLOAD_TOKEN_ENV]}")
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            conn.endheaders()
        except OSError as exc:
            raise ClientError(f"cannot reach {server}: {_reason(exc)}") from None
        sent = 0
        try:
            for piece in _pieces(parts):
                conn.send(piece)
                sent += len(piece)
                if bar:
                    bar.update(sent)
        except (BrokenPipeError, ConnectionResetError):
            # The server may refuse early (too large) and close: its answer is still readable.
            pass
        except OSError as exc:
            raise ClientError(f"upload to {server} failed: {_reason(exc)}") from None
        try:
            response = conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise ClientError(f"{server} closed the connection: {_reason(exc)}") from None
    finally:
        if bar:
            bar.finish()
        conn.close()
    if response.status in (200, 201):
        try:
            return json.loads(payload)
        except ValueError:
            raise ClientError(f"{server} did not answer with JSON: is it pprof-share?") from None
    if response.status in (301, 302, 303, 307, 308):
        where = response.getheader("Location", "?")
        raise ClientError(f"{server} redirects to {where}: use that as --server")
    raise ClientError(_error_message(response.status, payload), response.status)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def delete(link: str, token: str, server: str | None = None, timeout: float = 30) -> None:
    """DELETE a profile by its link (or id, on the configured server) with its token."""
    url = link if "://" in link else f"{server_url(server)}/{link.strip('/')}"
    request = urllib.request.Request(
        url,
        method="DELETE",
        headers={"X-Delete-Token": token, "Accept": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        raise ClientError(f"{url}: {_error_message(exc.code, exc.read())}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {url}: {_reason(exc)}") from None


def profile_seconds(url: str) -> int:
    """The `seconds=` a live endpoint profiles for (0 when it answers at once, like heap)."""
    try:
        return max(0, int(parse_qs(urlsplit(url).query).get("seconds", ["0"])[-1]))
    except ValueError:
        return 0


def fetch(url: str, stream: TextIO | None = None) -> bytes:
    """GET a profile from a live endpoint, with a countdown on a terminal while it profiles."""
    stream = stream if stream is not None else sys.stderr
    seconds = profile_seconds(url)
    done = threading.Event()
    ticker = None
    if seconds and stream.isatty():
        ticker = threading.Thread(target=_countdown, args=(url, seconds, done, stream), daemon=True)
        ticker.start()
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=seconds + FETCH_GRACE_SECONDS) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise ClientError(f"{url}: {_error_message(exc.code, exc.read())}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {url}: {_reason(exc)}") from None
    finally:
        done.set()
        if ticker:
            ticker.join()


def _countdown(url: str, seconds: int, done: threading.Event, stream: TextIO) -> None:
    deadline = time.monotonic() + seconds
    while not done.is_set():
        left = deadline - time.monotonic()
        state = f"{left:3.0f} s left" if left > 0 else "waiting for the profile…"
        stream.write(f"\rprofiling {url}: {state}\x1b[K")
        stream.flush()
        done.wait(1.0 if left > 1 else 0.2)
    stream.write("\r\x1b[K")
    stream.flush()


def read_source(source: str, stdin: BinaryIO | None = None) -> tuple[str, bytes]:
    """(name, bytes) of a file path, `-` for stdin, or a live endpoint URL."""
    if source == "-":
        return "stdin", (stdin or sys.stdin.buffer).read()
    if source.startswith(("http://", "https://")) or (
        _BARE_URL.match(source) and not os.path.exists(source)
    ):
        url = source if "://" in source else "http://" + source
        parts = urlsplit(url)
        return f"{parts.netloc}{parts.path}", fetch(url)
    try:
        with open(source, "rb") as f:
            return os.path.basename(source), f.read()
    except OSError as exc:
        raise ClientError(f"{source}: {exc.strerror or exc}") from None


def upload_command(
    sources: Sequence[str],
    *,
    server: str | None,
    title: str | None,
    expires: str | None,
    as_json: bool,
    strip: Sequence[str] = (),
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Upload each source in turn; print links (or JSON lines). 0 only if all succeeded."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    base = server_url(server)
    failed = 0
    for source in sources:
        try:
            name, data = read_source(source)
            reply = upload(
                base, data, filename=name, title=title, expires=expires, strip=";".join(strip)
            )
        except ClientError as exc:
            failed += 1
            label = "" if str(exc).startswith(("cannot reach", source)) else f"{source}: "
            print(f"pprof-share: {label}{exc}", file=err)
            continue
        print(json.dumps(reply) if as_json else reply["url"], file=out, flush=True)
        if as_json:
            continue
        if reply.get("deduplicated"):
            print(
                f"pprof-share: {name}: already uploaded, same link; no new delete token", file=err
            )
            if reply.get("title_kept") is not None:
                kept = reply["title_kept"] or "(none)"
                print(f"pprof-share: {name}: the first upload's title is kept: {kept}", file=err)
        elif reply.get("delete_token"):
            print(
                f"pprof-share: {name}: delete with `pprof-share delete {reply['url']} "
                f"--token {reply['delete_token']}` (the token is shown only once)",
                file=err,
            )
    return 1 if failed else 0
