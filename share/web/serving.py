"""How gunicorn runs the app, for `pprof-share serve` and the Procfile alike
(`gunicorn -c python:share.web.serving "share:create_app()"` reads this module's settings).

The worker is gunicorn's gevent worker: each connection is a greenlet, so clients that trickle
a byte a second, or stall, cost a little memory rather than a thread, and one stalled store
call holds only the requests that wait for it. On top of gunicorn's worker, a client that sends
nothing for SHARE_CLIENT_TIMEOUT seconds is dropped: its socket times out, which gunicorn's
gevent worker does not do itself (it waits for ever for a request's body). Handlers must not
block on calls gevent cannot switch out of: socket I/O is patched; SQLite's statements are
short; CPU-heavy work (parsing, views) holds the worker's other requests while it runs.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any

from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

from ..config import load

METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def client_timeout() -> float:
    return float(load(os.environ)["CLIENT_TIMEOUT"])


class _QuietTimeouts(logging.Filter):
    """A dropped silent client is one line, not a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], TimeoutError):
            record.msg, record.args, record.exc_info = "dropped a silent client", (), None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


class Worker(GeventWorker):
    """gunicorn's gevent worker whose client sockets time out after SHARE_CLIENT_TIMEOUT."""

    def init_process(self) -> None:
        self.client_timeout = client_timeout()
        logging.getLogger("gunicorn.error").addFilter(_QuietTimeouts())
        super().init_process()

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # GeventWorker.handle would make the socket blocking without a timeout.
        client.settimeout(self.client_timeout)
        AsyncWorker.handle(self, listener, client, addr)


def on_starting(server: Any) -> None:
    """Before any worker: a fresh directory for prometheus_client's multiprocess mode."""
    directory = os.environ.get(METRICS_ENV)
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):  # values of an earlier run's workers
            if name.endswith(".db"):
                os.unlink(os.path.join(directory, name))
    else:
        os.environ[METRICS_ENV] = tempfile.mkdtemp(prefix="pprof-share-metrics-")
        server.share_metrics_dir = os.environ[METRICS_ENV]


def on_exit(server: Any) -> None:
    made = getattr(server, "share_metrics_dir", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def settings() -> dict[str, Any]:
    """gunicorn's settings, besides bind and workers."""
    timeout = client_timeout()
    return {
        "worker_class": f"{__name__}.Worker",
        "worker_connections": 1000,
        # With gevent, keepalive also bounds how long a request's headers may take.
        "keepalive": int(max(1, timeout)),
        "timeout": 120,  # a worker whose loop is stuck this long is restarted
        "graceful_timeout": 30,
        "on_starting": on_starting,
        "on_exit": on_exit,
        "child_exit": child_exit,
    }


# Read by `gunicorn -c python:share.web.serving` (the Procfile).
globals().update(settings())
