"""`pprof-share top|peek|tags|dot FILE|LINK [-focus=RE ...]`: pprof's reports, computed locally.

The flags are `go tool pprof`'s spellings (`-focus=RE`, `-tagfocus=key=value`, `-lines`,
`-nodecount=N`, `-cum`, ...; `--name` works too) and go through the server's option parsing,
so the text is the server's. Warnings go to stderr first, as pprof prints them. A LINK
(http:// or https://) is fetched as LINK/raw. The analysis modules load only when a command
runs, so the other subcommands start as fast as before.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .client import ClientError, fetch

# Command -> (view, help). Text views equal to `go tool pprof -<command>`.
COMMANDS = {
    "top": ("toptext", "print a profile's top table, as `go tool pprof -top`"),
    "peek": ("peektext", "print callers and callees of functions, as `go tool pprof -peek=RE`"),
    "tags": ("tagstext", "print the label keys and values, as `go tool pprof -tags`"),
    "dot": ("dot", "print the call graph in DOT, as `go tool pprof -dot`"),
}
TEXT_FLAGS = ("focus", "ignore", "hide", "show", "show_from", "prune_from", "tagfocus")
TEXT_FLAGS += ("tagignore", "tagshow", "taghide", "tagroot", "tagleaf", "granularity")
BOOL_FLAGS = ("noinlines", "relative_percentages")
GRANULARITIES = ("functions", "filefunctions", "files", "lines", "addresses")


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register top, peek, tags and dot on the CLI's subcommands."""
    for name, (_, help_text) in COMMANDS.items():
        p = commands.add_parser(name, help=help_text)
        p.add_argument("source", metavar="FILE|LINK", help="a profile file, or a pprof-share link")
        if name == "peek":
            p.add_argument("regex", nargs="?", metavar="REGEX", help="functions to show")
            p.add_argument("-peek", "--peek", dest="peek", metavar="REGEX", help="the same")
        p.add_argument(
            "--sample-index",
            "-sample_index",
            dest="sample_index",
            metavar="NAME",
            help="sample type by name or index (default: the profile's default, else the last)",
        )
        for flag in TEXT_FLAGS:
            p.add_argument(f"-{flag}", f"--{flag}", dest=flag, metavar="VALUE")
        for choice in GRANULARITIES:
            p.add_argument(
                f"-{choice}", f"--{choice}", dest="granularity", action="store_const",
                const=choice, help=f"-granularity={choice}",
            )  # fmt: skip
        for flag in BOOL_FLAGS:
            p.add_argument(f"-{flag}", f"--{flag}", dest=flag, action="store_true")
        if name in ("top", "peek"):
            p.add_argument("-cum", "--cum", dest="cum", action="store_true", help="sort by cum")
        if name in ("top", "dot"):
            default = "all rows" if name == "top" else "80"
            p.add_argument(
                "--nodecount", "-nodecount", dest="nodecount", type=int, metavar="N",
                help=f"show only the top N nodes (default: {default})",
            )  # fmt: skip
            p.add_argument("-nodefraction", "--nodefraction", dest="nodefraction", metavar="F")
            p.add_argument("-edgefraction", "--edgefraction", dest="edgefraction", metavar="F")
        p.set_defaults(func=report_command, view=COMMANDS[name][0], command=name)


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


def query(args: argparse.Namespace) -> dict[str, str]:
    """The flags as the server's query parameters."""
    q: dict[str, str] = {}
    if args.sample_index:
        q["si"] = args.sample_index
    for flag in TEXT_FLAGS:
        if getattr(args, flag, None):
            q[flag] = getattr(args, flag)
    for flag in (*BOOL_FLAGS, "cum"):
        if getattr(args, flag, False):
            q[flag] = "t"
    for flag in ("nodecount", "nodefraction", "edgefraction"):
        value = getattr(args, flag, None)
        if value is not None:
            q[flag] = str(value)
    if args.command == "peek":
        q["peek"] = args.regex or args.peek or ""
    return q


def prepare(data: bytes, view: str, q: dict[str, str]) -> tuple[Any, dict[str, Any], list[str]]:
    """(the parsed profile, the view's options, pprof's warnings) of a profile's bytes."""
    import json

    from .. import pprof
    from ..analysis.model.tables import tables
    from ..analysis.views import options, views
    from ..config import DEFAULTS

    parsed = pprof.parse(data, max_profile_bytes=DEFAULTS["MAX_PROFILE_BYTES"])
    types = parsed.sample_types()
    default = tables(parsed).default_sample_type
    opts = options.parse(view, q, types, default)
    warn_q = {**q, "labels": "t"} if view == "tagstext" else q
    warn = options.parse("warnings", warn_q, types, default)
    lines = json.loads(views.render("warnings", [parsed], warn))["warnings"]
    return parsed, opts, lines


def render(data: bytes, view: str, q: dict[str, str]) -> str:
    """The report text of a profile's bytes (gzip or not)."""
    from ..analysis.views import views

    parsed, opts, _ = prepare(data, view, q)
    return views.render(view, [parsed], opts).decode()


def report_command(args: argparse.Namespace) -> int:
    """Print the report; warnings on stderr; a problem is one line on stderr and status 1."""
    from ..analysis.views.options import OptionError
    from ..errors import ShareError

    if getattr(args, "nodecount", None) is not None and args.nodecount < 0:
        print(f"pprof-share {args.command}: --nodecount must be 0 or more", file=sys.stderr)
        return 2
    from ..analysis.views import views

    try:
        parsed, opts, warnings = prepare(read(args.source), args.view, query(args))
        for line in warnings:  # before the report, or before pprof's refusal, as pprof does
            print(line, file=sys.stderr)
        text = views.render(args.view, [parsed], opts).decode()
    except (ClientError, ShareError, OptionError) as exc:
        print(f"pprof-share {args.command}: {getattr(exc, 'message', None) or exc}",
              file=sys.stderr)  # fmt: skip
        return 1
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: stop quietly
        sys.stderr.close()
    return 0


top_command = report_command  # the name this module exported before peek, tags and dot
