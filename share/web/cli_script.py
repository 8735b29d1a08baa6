"""GET /pprof-share: the command line client as one Python file, for `curl -o` and a plain python3.

Built from the package's own sources, share/cli/client.py then share/cli/script.py (both
standard library only), read as text once per process: their docstrings, `__future__` and
relative imports are taken out, and DEFAULT_SERVER is set to the server the file came from.
Nothing of share.cli is imported or run here; the web tier only hands its text out.
"""

from __future__ import annotations

import ast
import functools
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from flask import Response

from .api import base_url

CLI_DIR = Path(__file__).resolve().parent.parent / "cli"
SOURCES = ("client.py", "script.py")


def _body(source: str) -> str:
    """A module's code without its docstring, `from __future__` and relative imports."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for i, node in enumerate(tree.body):
        is_doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        is_import = isinstance(node, ast.ImportFrom) and (
            node.level > 0 or node.module == "__future__"
        )
        if is_doc or is_import:
            drop.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return "".join(line for n, line in enumerate(lines) if n not in drop).strip("\n") + "\n"


@functools.lru_cache(maxsize=1)
def template() -> str:
    """The script with a placeholder for its server, built once."""
    try:
        release = version("pprof-share")
    except PackageNotFoundError:
        release = "source"
    parts = [
        "#!/usr/bin/env python3\n",
        '"""pprof-share: upload pprof profiles and get links; delete them with their token.\n\n'
        "    ./pprof-share upload cpu.pb.gz [--title T] [--expires 7d] [--strip labels]\n"
        "    ./pprof-share delete LINK --token TOKEN\n\n"
        f"Built by pprof-share {release} from share/cli/client.py and share/cli/script.py;\n"
        'needs only Python 3.11 or later, no packages."""\n\n',
        "from __future__ import annotations\n\n",
    ]
    for name in SOURCES:
        parts += [
            f"# ---- {name} ",
            "-" * (90 - len(name)),
            "\n",
            _body((CLI_DIR / name).read_text()),
            "\n",
        ]
    parts += [
        "# The server this file was downloaded from.\n",
        "DEFAULT_SERVER = __SERVER__\n\n",
        'if __name__ == "__main__":\n    sys.exit(main())\n',
    ]
    return "".join(parts)


def script_for(server: str) -> str:
    """The script whose default --server is server."""
    return template().replace("__SERVER__", repr(server), 1)


def cli_script() -> Response:
    """The script, with this server as its default (SHARE_PUBLIC_URL, else the request's host)."""
    response = Response(script_for(base_url()), mimetype="text/x-python")
    response.headers["Content-Disposition"] = "attachment; filename=pprof-share"
    response.headers["Cache-Control"] = "no-cache"
    return response
