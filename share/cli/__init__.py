"""share.cli: the command line, `pprof-share serve | top | peek | tags | dot | upload | merge |
delete | collection | collect | prune | fsck`.

This module parses the arguments and dispatches; serve (gunicorn on the web app), client (the
standard-library HTTP client of upload and delete), script (the upload, delete and collection
commands, also served as a single-file script by the web app), merge (the merge command, on the
same client), collect (/debug/pprof endpoints scraped into a collection, on it too), top
(pprof's text reports: top, peek, tags, dot, computed locally) and maintain (prune and fsck,
on the configured stores) are a module each. Heavy imports (Flask, boto3, gunicorn,
numpy) happen inside the commands that need them, so `pprof-share upload` loads neither Flask
nor numpy and starts fast. It may import share.web (serve runs the app), share.core and below;
nothing imports it.
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


def prune(args: argparse.Namespace) -> int:
    """Remove expired profiles from the configured stores (for cron)."""
    from .maintain import prune as prune_command

    return prune_command()


def fsck(args: argparse.Namespace) -> int:
    """List (with --repair, remove) records without blobs and blobs without records."""
    from .maintain import fsck as fsck_command

    return fsck_command(repair=args.repair)


def build_parser() -> argparse.ArgumentParser:
    from .script import Parser  # standard library only: ids starting with '-' are arguments

    parser = Parser(prog="pprof-share", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("serve", help="run the web service under gunicorn")
    p.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    p.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    p.set_defaults(func=serve_command)

    from . import script  # standard library only, as the script the server hands out

    script.add_commands(commands)

    from . import merge  # standard library only, as the upload client

    merge.add_parser(commands)

    from . import collect  # standard library only, as the upload client

    collect.add_parser(commands)

    p = commands.add_parser("prune", help="remove expired profiles (reads SHARE_* settings)")
    p.set_defaults(func=prune)

    p = commands.add_parser(
        "fsck", help="find records without blobs and blobs without records (safe while serving)"
    )
    p.add_argument("--repair", action="store_true", help="remove what was found")
    p.set_defaults(func=fsck)

    from . import top  # light: numpy and protobuf load only when a report command runs

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
