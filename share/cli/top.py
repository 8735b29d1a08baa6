"""`pprof-share top FILE|LINK`: the table of `go tool pprof -top`, computed locally.

A LINK (http:// or https://) is fetched as LINK/raw. The analysis modules load only when the
command runs, so the other subcommands start as fast as before.
"""

from __future__ import annotations

import argparse
import sys

from .client import ClientError, fetch


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `top` on the CLI's subcommands."""
    p = commands.add_parser("top", help="print a profile's top table, as `go tool pprof -top`")
    p.add_argument("source", metavar="FILE|LINK", help="a profile file, or a pprof-share link")
    p.add_argument(
        "--sample-index",
        "-sample_index",
        dest="sample_index",
        metavar="NAME",
        help="sample type by name or index (default: the profile's default, else the last)",
    )
    p.add_argument(
        "--nodecount",
        "-nodecount",
        type=int,
        default=0,
        metavar="N",
        help="show only the top N rows (default: all)",
    )
    p.set_defaults(func=top_command)


def raw_url(link: str) -> str:
    """Where a link's profile is: LINK/raw."""
    link = link.rstrip("/")
    return link if link.endswith("/raw") else link + "/raw"


def read(source: str) -> bytes:
    """The bytes of a file, or of a link's raw profile."""
    if source.startswith(("http://", "https://")):
        return fetch(raw_url(source))
    try:
        with open(source, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ClientError(f"{source}: {exc.strerror or exc}") from None


def render(data: bytes, sample: str | None, node_count: int) -> str:
    """The -top text of a profile's bytes (gzip or not)."""
    from .. import pprof
    from ..analysis import views
    from ..analysis.tables import tables
    from ..config import DEFAULTS

    parsed = pprof.parse(data, max_profile_bytes=DEFAULTS["MAX_PROFILE_BYTES"])
    index = tables(parsed).sample_index(sample)
    return views.top_text(parsed, index, node_count).decode()


def top_command(args: argparse.Namespace) -> int:
    """Print the table; a problem is one line on stderr and exit status 1."""
    from ..analysis.tables import SampleTypeError
    from ..errors import ShareError

    if args.nodecount < 0:
        print("pprof-share top: --nodecount must be 0 or more", file=sys.stderr)
        return 2
    try:
        text = render(read(args.source), args.sample_index, args.nodecount)
    except (ClientError, ShareError, SampleTypeError) as exc:
        print(f"pprof-share top: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: stop quietly
        sys.stderr.close()
    return 0
