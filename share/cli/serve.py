"""`pprof-share serve`: the web app under gunicorn, checked before any worker starts."""

from __future__ import annotations

import argparse
import os
import sys


def serve(args: argparse.Namespace) -> int:
    """Run the app under gunicorn; a bad setting or unreachable store stops with one line."""
    from gunicorn.app.base import BaseApplication

    from .. import config
    from ..compute.pool import DIRECTORY_ENV, Supervisor
    from ..config import ConfigError
    from ..web.app import create_app

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

    # One set of compute processes for the instance, shared by every worker (a profile is
    # then warm for all of them), started here in the master before it forks the workers.
    supervisor = Supervisor(config.load(os.environ))
    supervisor.start()
    os.environ[DIRECTORY_ENV] = supervisor.directory
    print(f"pprof-share: serving on http://{args.host}:{args.port}/ with "
          f"{supervisor.size} compute processes", file=sys.stderr)  # fmt: skip
    try:
        Server().run()
    finally:
        supervisor.stop()
    return 0
