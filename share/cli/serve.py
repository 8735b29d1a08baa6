"""`pprof-share serve`: the web app under gunicorn (share.web.serving: gevent workers), its
settings and stores checked before any worker starts, with one line when they cannot work."""

from __future__ import annotations

import argparse
import os
import sys


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace) -> int:
    """Run the app under gunicorn; a bad setting or unreachable store stops with one line."""
    from gunicorn.app.base import BaseApplication

    from ..config import ConfigError, host_list, load
    from ..store.locate import describe
    from ..web import serving

    try:
        settings = load(os.environ)
    except ConfigError as exc:
        print(f"pprof-share: {exc}", file=sys.stderr)
        return 2
    problem = serving.check_stores()
    if problem is not None:
        print(f"pprof-share: {problem}", file=sys.stderr)
        return 2

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for name, value in serving.settings(check=False).items():
                self.cfg.set(name, value)
            self.cfg.set("bind", f"{args.host}:{args.port}")
            self.cfg.set("workers", args.workers)
            self.cfg.set("accesslog", None)  # share.web.ops writes one line per request
            # Several servers may run on one machine (tests, side by side): no shared socket.
            if "control_socket_disable" in self.cfg.settings:
                self.cfg.set("control_socket_disable", True)

        def load(self):  # type: ignore[no-untyped-def]
            return serving.wsgi()

    stores = describe(settings["BLOBS"], settings["META"])
    print(f"pprof-share: serving on http://{args.host}:{args.port}/ — {stores}", file=sys.stderr)
    if not is_loopback(args.host) and not settings["PUBLIC_URL"]:
        hosts = ", ".join(host_list(settings["ALLOWED_HOSTS"])) or "loopback names only"
        print(
            f"pprof-share: warning: listening on {args.host} without SHARE_PUBLIC_URL; links "
            f"are built only for requests to SHARE_ALLOWED_HOSTS ({hosts})",
            file=sys.stderr,
        )
    Server().run()
    return 0
