"""The upload and delete commands, standard library only: shared by `pprof-share` and the
single-file script the server hands out (GET /pprof-share, share/web/cli_script.py).

That script is this module appended to client.py, with the relative imports taken out and
DEFAULT_SERVER set to the server it was downloaded from; so everything here may use only the
standard library and names from client.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .client import DEFAULT_SERVER, SERVER_ENV, ClientError, delete, upload_command

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


def upload_main(args: argparse.Namespace) -> int:
    """Upload files, stdin or a live endpoint's profile; print each link (or JSON line)."""
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
        print(f"pprof-share: {exc}", file=sys.stderr)
        return 1
    print(f"deleted {args.link}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The upload and delete subcommands, on a parser's subparsers."""
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
    p.set_defaults(func=upload_main)

    p = commands.add_parser("delete", help="delete a profile with its delete token")
    p.add_argument("link", metavar="LINK", help="the profile's link (or its id, with --server)")
    p.add_argument("--token", required=True, help="the delete token the upload answered with")
    p.add_argument("--server", help=server_help())
    p.set_defaults(func=delete_main)


def main(argv: Sequence[str] | None = None) -> int:
    """The downloaded script's entry point: upload and delete."""
    parser = Parser(prog="pprof-share", description="Share pprof profiles: upload them, get links.")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
