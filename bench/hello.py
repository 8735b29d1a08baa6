"""The peer of bench/load.py: a hello-world Flask route under the very gunicorn settings of
`pprof-share serve` (share.web.serving: the same worker class, connections, keepalive).

    .venv/bin/python bench/hello.py PORT WORKERS
"""

from __future__ import annotations

import sys
from pathlib import Path

from flask import Flask

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

app = Flask("hello")


@app.get("/")
def hello() -> str:
    return "hello, world\n"


def main() -> None:
    from gunicorn.app.base import BaseApplication

    from share.web import serving

    port, workers = int(sys.argv[1]), int(sys.argv[2])

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for name, value in serving.settings(check=False).items():
                self.cfg.set(name, value)
            self.cfg.set("bind", f"127.0.0.1:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("control_socket_disable", True)

        def load(self):  # type: ignore[no-untyped-def]
            return app

    Server().run()


if __name__ == "__main__":
    main()
