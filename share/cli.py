"""The command line: `pprof-share serve | top | upload | delete | prune`.

Each subcommand is a small function; heavy imports (Flask, boto3, gunicorn) happen inside the
commands that need them, so `pprof-share top` and `upload` start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

Command = Callable[[argparse.Namespace], int]


def serve(args: argparse.Namespace) -> int:
    """Run the app under gunicorn; a bad setting or unreachable store stops with one line."""
    from gunicorn.app.base import BaseApplication

    from . import create_app
    from .config import ConfigError

    try:
        # Fail fast, in the master, before workers start; then let go of the stores, since a
        # SQLite connection must not cross a fork (each worker opens its own).
        create_app().extensions["share"].close()
    except ConfigError as exc:
        print(f"pprof-share: {exc}", file=sys.stderr)
        return 2

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            self.cfg.set("bind", f"{args.host}:{args.port}")
            self.cfg.set("workers", args.workers)
            self.cfg.set("threads", args.threads)
            self.cfg.set("timeout", 120)
            self.cfg.set("accesslog", "-" if args.access_log else None)
            # Several servers may run on one machine (tests, side by side): no shared socket.
            if "control_socket_disable" in self.cfg.settings:
                self.cfg.set("control_socket_disable", True)

        def load(self):  # type: ignore[no-untyped-def]
            return create_app()

    print(f"pprof-share: serving on http://{args.host}:{args.port}/", file=sys.stderr)
    Server().run()
    return 0


def upload(args: argparse.Namespace) -> int:
    """Upload files, stdin or a live endpoint's profile; print each link (or JSON line)."""
    from .client import upload_command

    return upload_command(
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
    from . import create_app
    from .config import ConfigError

    try:
        removed = create_app().extensions["share"].prune()
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
    p.set_defaults(func=serve)

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

    p = commands.add_parser("delete", help="delete a profile with its delete token")
    p.add_argument("link", metavar="LINK", help="the profile's link (or its id, with --server)")
    p.add_argument("--token", required=True, help="the delete token the upload answered with")
    p.add_argument("--server", help=server_help)
    p.set_defaults(func=delete)

    p = commands.add_parser("prune", help="remove expired profiles (reads SHARE_* settings)")
    p.set_defaults(func=prune)

    from . import topcli  # light: numpy and protobuf load only when `top` runs

    topcli.add_parser(commands)

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
