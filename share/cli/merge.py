"""`pprof-share merge LINK|ID|FILE...`: merge profiles into a new shared one; print its link.

Links and ids of the server are merged there (POST /api/v1/merge), so nothing is sent but
their names; files (or links to another server, fetched first) go up in one form to
/?merge=1, in the order given, which is the order pprof merges them in. Standard library
only, like the upload client.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, TextIO
from urllib.parse import urlsplit

from .client import (
    SERVER_ENV,
    UPLOAD_TOKEN_ENV,
    USER_AGENT,
    ClientError,
    _error_message,
    _reason,
    fetch,
    post_files,
    read_source,
    server_url,
)

_ID = re.compile(r"[A-Za-z0-9_-]{16}")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _link_id(source: str, server: str) -> str | None:
    """The id of a link to this server (or of a bare id that is not a file), else None."""
    if "://" not in source:
        return source if _ID.fullmatch(source) and not os.path.exists(source) else None
    if _origin(source) != _origin(server):
        return None
    found = [s for s in urlsplit(source).path.split("/") if _ID.fullmatch(s)]
    return found[0] if found else None


def _raw(link: str) -> str:
    link = link.split("?")[0].rstrip("/")
    return link if link.endswith("/raw") else link + "/raw"


def merge_json(server: str, ids: list[str], fields: dict[str, str], timeout: float = 300) -> Any:
    """POST /api/v1/merge; the server's JSON reply."""
    body = json.dumps({"profiles": ids, **fields}).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    if os.environ.get(UPLOAD_TOKEN_ENV):  # a merge is stored as an upload
        headers["Authorization"] = f"Bearer {os.environ[UPLOAD_TOKEN_ENV]}"
    request = urllib.request.Request(
        f"{server}/api/v1/merge", data=body, method="POST", headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ClientError(_error_message(exc.code, exc.read())) from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {server}: {_reason(exc)}") from None
    except ValueError:
        raise ClientError(f"{server} did not answer with JSON: is it pprof-share?") from None


def merge(
    sources: Sequence[str], *, server: str | None, title: str | None, expires: str | None
) -> Any:
    """Merge the sources on the server (--server, else the first link's, else the default)."""
    first_link = next((s for s in sources if "://" in s), None)
    base = server_url(server or (_origin(first_link) if first_link else None))
    fields = {k: v for k, v in (("title", title), ("expires", expires)) if v}
    ids = [_link_id(s, base) for s in sources]
    if all(ids):
        return merge_json(base, ids, fields)  # type: ignore[arg-type]
    files = []
    for source, pid in zip(sources, ids, strict=True):
        if pid is not None or "://" in source:
            url = _raw(source if "://" in source else f"{base}/{pid}")
            files.append((pid or urlsplit(url).path.strip("/"), fetch(url)))
        else:
            files.append(read_source(source))
    return post_files(base, files, query="merge=1", title=title, expires=expires)


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `merge` on the CLI's subcommands."""
    p = commands.add_parser(
        "merge", help="merge profiles (links, ids, files) into a new shared one; print its link"
    )
    p.add_argument(
        "sources", nargs="+", metavar="LINK|FILE",
        help="pprof-share links or ids, profile files (- for stdin): merged in this order, "
        "as `go tool pprof -proto a b c` merges them",
    )  # fmt: skip
    p.add_argument(
        "--server", help=f"pprof-share server (default: the first link's, else ${SERVER_ENV})"
    )
    p.add_argument("--title", help="title of the merged profile (default: what it merges)")
    p.add_argument("--expires", help="1h, 1d, 7d, 30d, never… (default: the server's)")
    p.add_argument("--json", action="store_true", help="print the server's JSON reply")
    p.set_defaults(func=merge_main)


def merge_main(args: argparse.Namespace) -> int:
    return merge_command(
        args.sources, server=args.server, title=args.title, expires=args.expires, as_json=args.json
    )


def merge_command(
    sources: Sequence[str],
    *,
    server: str | None,
    title: str | None,
    expires: str | None,
    as_json: bool,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print the merged profile's link (or the server's JSON); a problem is one line on stderr."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        reply = merge(sources, server=server, title=title, expires=expires)
    except ClientError as exc:
        print(f"pprof-share merge: {exc}", file=err)
        return 1
    print(json.dumps(reply) if as_json else reply["url"], file=out, flush=True)
    if not as_json and reply.get("delete_token"):
        print(
            f"pprof-share: delete with `pprof-share delete {reply['url']} "
            f"--token {reply['delete_token']}` (the token is shown only once)",
            file=err,
        )
    return 0
