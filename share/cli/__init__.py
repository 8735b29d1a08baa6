"""share.cli: the command line, `pprof-share serve | top | upload | merge | delete | prune`.

This module parses the arguments and dispatches; serve (gunicorn on the web app), client (the
standard-library HTTP client of upload and delete), merge (the merge command, on that client)
and top (the -top table, computed locally) are a module each. Heavy imports (Flask, boto3,
gunicorn, numpy) happen inside the commands that need them, so `pprof-share upload` loads
neither Flask nor numpy and starts fast. It may import share.web (serve runs the app),
share.core and below; nothing imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

Command = Callable[[argparse.Namespace], int]


def serve_command(args: argparse.Namespace) -> int:
    """Run the web service under gunicorn."""
    from .serve import serve

    return serve(args)


def upload(args: argparse.Namespace) -> int:
    """Upload files, stdin or a live endpoint's profile; print each link (or JSON line)."""
    from .client import upload_command

    return upload_command(
        args.sources, server=args.server, title=args.title, expires=args.expires, as_json=args.json
    )


def merge(args: argparse.Namespace) -> int:
    """Merge links, ids and files into one new shared profile; print its link."""
    from .merge import merge_command

    return merge_command(
        args.sources, server=args.server, title=args.title, expires=args.expires, as_json=args.json
    )


def delete(args: argparse.Namespace) -> int:
    """Delete a profile with the token its upload answered with."""
    from .client import ClientError
    from .client import delete as delete_profile

    try:
        delete_profile(args.link, args.token, server=args.server)
    except ClientError as exc:
        print(f"pprof-share: {exc}", file=sys.stderr)
        return 1
    print(f"deleted {args.link}")
    return 0


def prune(args: argparse.Namespace) -> int:
    """Remove expired profiles from the configured stores (for cron)."""
    from ..config import ConfigError, load
    from ..core import open_share

    try:
        removed = open_share(load(os.environ)).prune()
    except ConfigError as exc:
        print(f"pprof-share: {exc}", file=sys.stderr)
        return 2
    print(f"removed {removed} expired profile{'' if removed == 1 else 's'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pprof-share", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("serve", help="run the web service under gunicorn")
    p.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    p.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--access-log", action="store_true", help="log every request to stdout")
    p.set_defaults(func=serve_command)

    server_help = "pprof-share server (default: $PPROF_SHARE_SERVER, else http://127.0.0.1:8000)"
    p = commands.add_parser("upload", help="upload profiles and print their links")
    p.add_argument(
        "sources", nargs="+", metavar="PATH|-|URL",
        help="profile files, - for stdin, or a live endpoint such as "
        "http://localhost:6060/debug/pprof/profile?seconds=30",
    )  # fmt: skip
    p.add_argument("--server", help=server_help)
    p.add_argument("--title", help="title shown on the profile page (default: the file name)")
    p.add_argument("--expires", help="1h, 1d, 7d, 30d, never… (default: the server's)")
    p.add_argument("--json", action="store_true", help="print the server's JSON reply per upload")
    p.set_defaults(func=upload)

    p = commands.add_parser(
        "merge", help="merge profiles (links, ids, files) into a new shared one; print its link"
    )
    p.add_argument(
        "sources", nargs="+", metavar="LINK|FILE",
        help="pprof-share links or ids, profile files (- for stdin): merged in this order, "
        "as `go tool pprof -proto a b c` merges them",
    )  # fmt: skip
    p.add_argument("--server", help=server_help + "; default also: the first link's server")
    p.add_argument("--title", help="title of the merged profile (default: what it merges)")
    p.add_argument("--expires", help="1h, 1d, 7d, 30d, never… (default: the server's)")
    p.add_argument("--json", action="store_true", help="print the server's JSON reply")
    p.set_defaults(func=merge)

    p = commands.add_parser("delete", help="delete a profile with its delete token")
    p.add_argument("link", metavar="LINK", help="the profile's link (or its id, with --server)")
    p.add_argument("--token", required=True, help="the delete token the upload answered with")
    p.add_argument("--server", help=server_help)
    p.set_defaults(func=delete)

    p = commands.add_parser("prune", help="remove expired profiles (reads SHARE_* settings)")
    p.set_defaults(func=prune)

    from . import top  # light: numpy and protobuf load only when `top` runs

    top.add_parser(commands)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
