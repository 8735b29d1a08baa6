"""The upload, delete and collection commands, standard library only: shared by `pprof-share`
and the single-file script the server hands out (GET /pprof-share, share/web/cli_script.py).

That script is this module appended to client.py, with the relative imports taken out and
DEFAULT_SERVER set to the server it was downloaded from; so everything here may use only the
standard library and names from client.py. The collection commands live here rather than in a
module of their own so that the script has them too: a CI job or a teammate adds to a
collection with the file the server hands out, nothing installed.
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
from urllib.parse import urlencode

from .client import (
    DEFAULT_SERVER,
    SERVER_ENV,
    UPLOAD_TOKEN_ENV,
    USER_AGENT,
    ClientError,
    _error_message,
    _reason,
    delete,
    post_files,
    read_source,
    server_url,
    upload_command,
)

COLLECTION_TOKEN_ENV = "PPROF_SHARE_COLLECTION_TOKEN"
COLLECTION_ID = re.compile(r"[A-Za-z0-9_-]{12}")
# A collection's link: the server (with its path prefix, if any), /c/, the id, then perhaps a
# view or a selection (/c/ID/top, /c/ID?match=...), which say nothing about where to add.
_COLLECTION_LINK = re.compile(
    r"(?P<server>https?://[^?#]+?)/c/(?P<id>[A-Za-z0-9_-]{12})(?:[/?#]|$)"
)
STRIP_HELP = (
    "remove before uploading: labels, labels:KEY,KEY, comments, paths, build_ids, "
    "types:TYPE,TYPE (repeat the flag, or separate items with ';')"
)


class Parser(argparse.ArgumentParser):
    """argparse, except that a profile id starting with '-' is an argument, not an option.

    Ids are 16 characters of base64url, so one in 64 starts with '-': `pprof-share delete
    -JZx8dkX82nVnq_l --token T` must not fail with "the following arguments are required".
    """

    def _parse_optional(self, arg_string: str) -> object:  # argparse's hook, stable since 3.2
        an_id = len(arg_string) == 16 and arg_string not in self._option_string_actions
        if an_id and all(c.isascii() and (c.isalnum() or c in "-_") for c in arg_string):
            return None
        return super()._parse_optional(arg_string)


def server_help() -> str:
    return f"pprof-share server (default: ${SERVER_ENV}, else {DEFAULT_SERVER})"


def fail(message: str) -> int:
    print(f"pprof-share: {message}", file=sys.stderr)
    return 1


def upload_main(args: argparse.Namespace) -> int:
    """Upload files, stdin or a live endpoint's profile; print each link (or JSON line)."""
    if args.collection:
        if args.title or args.expires:
            return fail(
                "--title and --expires are the collection's: give them to `collection create`"
            )
        return add_command(
            args.sources,
            args.collection,
            server=args.server,
            token=args.token,
            labels=args.label or (),
            time=args.time,
            as_json=args.json,
            strip=args.strip or (),
        )
    if args.token or args.label or args.time:
        return fail("--token, --label and --time are for adding to a collection: give --collection")
    return upload_command(
        args.sources,
        server=args.server,
        title=args.title,
        expires=args.expires,
        as_json=args.json,
        strip=args.strip or (),
    )


def delete_main(args: argparse.Namespace) -> int:
    """Delete a profile with the token its upload answered with."""
    try:
        delete(args.link, args.token, server=args.server)
    except ClientError as exc:
        return fail(str(exc))
    print(f"deleted {args.link}")
    return 0


# --- collections: many profiles under one link ------------------------------------------------
def collection_of(link: str, server: str | None = None) -> tuple[str, str]:
    """(server, id) of a collection's link (http://HOST/c/ID, perhaps with a view or a
    selection after it), or of a bare id on --server."""
    link = link.strip()
    if COLLECTION_ID.fullmatch(link) and not os.path.exists(link):
        return server_url(server), link
    found = _COLLECTION_LINK.match(link if "://" in link else "http://" + link)
    if not found:
        raise ClientError(f"{link}: not a collection's link (http://HOST/c/ID) or id")
    return found["server"], found["id"]


def collection_token(explicit: str | None) -> str:
    """--token, else $PPROF_SHARE_COLLECTION_TOKEN."""
    token = (explicit or os.environ.get(COLLECTION_TOKEN_ENV) or "").strip()
    if not token:
        raise ClientError(f"no collection token: give --token or set ${COLLECTION_TOKEN_ENV}")
    return token


def check_labels(items: Sequence[str]) -> list[str]:
    """key=value items as given (the server checks the keys and values)."""
    for item in items:
        if "=" not in item or not item.partition("=")[0].strip():
            raise ClientError(f"label {item!r}: give key=value")
    return list(items)


def request_json(
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> Any:
    """A JSON request to the server (body as JSON, if any); its JSON reply."""
    sent = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        sent["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        raise ClientError(f"{url}: {_error_message(exc.code, exc.read())}", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {url}: {_reason(exc)}") from None
    try:
        return json.loads(payload)
    except ValueError:
        raise ClientError(f"{url} did not answer with JSON: is it pprof-share?") from None


def create_collection(
    server: str,
    title: str | None = None,
    expires: str | None = None,
    retention: str | None = None,
) -> dict[str, Any]:
    """POST /api/v1/collections; the server's JSON reply (id, url, token, ...)."""
    fields = {"title": title, "expires": expires, "retention": retention}
    headers = {}
    if os.environ.get(UPLOAD_TOKEN_ENV):  # creating is writing, as an upload is
        headers["Authorization"] = f"Bearer {os.environ[UPLOAD_TOKEN_ENV]}"
    body = {k: v for k, v in fields.items() if v}
    return request_json("POST", f"{server}/api/v1/collections", body, headers)


def add_to_collection(
    server: str,
    cid: str,
    token: str,
    name: str,
    data: bytes,
    *,
    labels: Sequence[str] = (),
    time: str | None = None,
    strip: str | None = None,
    progress: bool = True,
    timeout: float = 300,
) -> dict[str, Any]:
    """POST one profile to the collection with its labels (key=value) and time; the
    server's JSON reply (the member's url, added: whether it is a new member)."""
    query = [("label", item) for item in labels] + ([("time", time)] if time else [])
    return post_files(
        server,
        [(name, data)],
        path=f"/c/{cid}",
        query=urlencode(query),
        headers={"X-Collection-Token": token},
        strip=strip,
        progress=progress,
        timeout=timeout,
    )


def add_command(
    sources: Sequence[str],
    link: str,
    *,
    server: str | None,
    token: str | None,
    labels: Sequence[str],
    time: str | None,
    as_json: bool,
    strip: Sequence[str] = (),
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Add each source to the collection; print each member's link (or JSON line)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        base, cid = collection_of(link, server)
        secret = collection_token(token)
        items = check_labels(labels)
    except ClientError as exc:
        print(f"pprof-share: {exc}", file=err)
        return 1
    failed = 0
    for source in sources:
        try:
            name, data = read_source(source)
            reply = add_to_collection(
                base, cid, secret, name, data, labels=items, time=time, strip=";".join(strip)
            )
        except ClientError as exc:
            if exc.status in (401, 403, 404, 410):  # the same for every file: say it once
                print(f"pprof-share: {exc}", file=err)
                return 1
            failed += 1
            label = "" if str(exc).startswith(("cannot reach", source)) else f"{source}: "
            print(f"pprof-share: {label}{exc}", file=err)
            continue
        print(json.dumps(reply) if as_json else reply["url"], file=out, flush=True)
        if not as_json and not reply.get("added", True):
            note = "already in the collection (same profile, labels and time)"
            print(f"pprof-share: {name}: {note}", file=err)
    return 1 if failed else 0


def collection_create_main(args: argparse.Namespace) -> int:
    """Create a collection; print its link and its write token, one a line (or the JSON)."""
    try:
        reply = create_collection(server_url(args.server), args.title, args.expires, args.retention)
    except ClientError as exc:
        return fail(str(exc))
    if args.json:
        print(json.dumps(reply))
        return 0
    print(reply["url"])
    print(reply["token"], flush=True)
    print(
        f"pprof-share: add with `pprof-share upload --collection {reply['url']} --token "
        f"{reply['token']} FILE…` or `pprof-share collect` (the token is shown only once)",
        file=sys.stderr,
    )
    return 0


def collection_delete_main(args: argparse.Namespace) -> int:
    """Delete a collection, and the profiles stored through it alone."""
    try:
        server, cid = collection_of(args.link, args.server)
        token = collection_token(args.token)
        reply = request_json("DELETE", f"{server}/c/{cid}", headers={"X-Collection-Token": token})
    except ClientError as exc:
        return fail(str(exc))
    print(f"deleted collection {cid} and {reply.get('profiles_removed', 0)} profiles")
    return 0


TOKEN_HELP = f"the collection's write token (default: ${COLLECTION_TOKEN_ENV})"
LINK_HELP = "the collection's link, http://HOST/c/ID (or its id, with --server)"


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The upload, delete and collection subcommands, on a parser's subparsers."""
    p = commands.add_parser("upload", help="upload profiles and print their links")
    p.add_argument(
        "sources", nargs="+", metavar="PATH|-|URL",
        help="profile files, - for stdin, or a live endpoint such as "
        "http://localhost:6060/debug/pprof/profile?seconds=30",
    )  # fmt: skip
    p.add_argument("--server", help=server_help())
    p.add_argument("--title", help="title shown on the profile page (default: the file name)")
    p.add_argument("--expires", help="1h, 1d, 7d, 30d, never… (default: the server's)")
    p.add_argument("--strip", action="append", metavar="ITEMS", help=STRIP_HELP)
    p.add_argument("--json", action="store_true", help="print the server's JSON reply per upload")
    group = p.add_argument_group("adding to a collection")
    group.add_argument("--collection", metavar="LINK", help="add to this collection: " + LINK_HELP)
    group.add_argument("--token", help=TOKEN_HELP)
    group.add_argument(
        "--label", action="append", metavar="KEY=VALUE", help="a label of each profile (repeat)"
    )
    group.add_argument(
        "--time", help="the profiles' time, RFC 3339 or unix seconds (default: the profile's own)"
    )
    p.set_defaults(func=upload_main)

    p = commands.add_parser("delete", help="delete a profile with its delete token")
    p.add_argument("link", metavar="LINK", help="the profile's link (or its id, with --server)")
    p.add_argument("--token", required=True, help="the delete token the upload answered with")
    p.add_argument("--server", help=server_help())
    p.set_defaults(func=delete_main)

    p = commands.add_parser("collection", help="create or delete a collection of profiles")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = actions.add_parser("create", help="create a collection; print its link and token")
    c.add_argument("--server", help=server_help())
    c.add_argument("--title", help="title shown on the collection's page")
    c.add_argument("--expires", help="after the last add: 1d, 30d, never… (default: the server's)")
    c.add_argument("--retention", help="members older than this are dropped: 1h, 7d…")
    c.add_argument("--json", action="store_true", help="print the server's JSON reply")
    c.set_defaults(func=collection_create_main)
    d = actions.add_parser("delete", help="delete a collection and the profiles only it holds")
    d.add_argument("link", metavar="LINK", help=LINK_HELP)
    d.add_argument("--token", help=TOKEN_HELP)
    d.add_argument("--server", help=server_help())
    d.set_defaults(func=collection_delete_main)


def main(argv: Sequence[str] | None = None) -> int:
    """The downloaded script's entry point: upload, delete and collection."""
    parser = Parser(prog="pprof-share", description="Share pprof profiles: upload them, get links.")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
