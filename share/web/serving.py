"""How gunicorn runs the app, for `pprof-share serve` and the Procfile alike
(`gunicorn -c python:share.web.serving "share.web.serving:wsgi()"` reads this module's settings).

The stores are checked once, before any worker starts, in a forked child: the master never
imports boto3, redis or the app, so each gevent worker patches sockets and ssl before anything
has used them; workers do not check again (one booting while a store is down answers 503s).

The worker is gunicorn's gevent worker: each connection is a greenlet, so clients that trickle
a byte a second, or stall, cost a little memory rather than a thread, and one stalled store
call holds only the requests that wait for it. On top of gunicorn's worker, a client that sends
nothing for SHARE_CLIENT_TIMEOUT seconds is dropped: its socket times out, which gunicorn's
gevent worker does not do itself (it waits for ever for a request's body). Handlers must not
block on calls gevent cannot switch out of: socket I/O is patched; SQLite's statements are
short; CPU-heavy work (parsing, views) runs in the compute processes (share.compute), which
the master starts here before the fork and which the workers reach over sockets.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from typing import Any

import gevent
from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

from ..config import load

METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
KEEPALIVE_SECONDS = 2  # gunicorn's own default


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

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        # Yield after each request: a kept-alive client whose next request is already in the
        # socket would otherwise be served again at once, never switching out, while the
        # worker's other connections wait (seconds at the p99 under load).
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            gevent.sleep(0)


def wsgi() -> Any:
    """The app as a worker loads it: stores not checked again (see the module's docstring)."""
    from .app import create_app

    return create_app(check_stores=False)


def check_stores() -> str | None:
    """Open the app once in a forked child: None if it can serve, else the one-line reason."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running the parent's cleanup
        os.close(read)
        code = 0
        try:
            from ..config import ConfigError
            from .app import create_app

            try:
                create_app().extensions["share"].close()
            except ConfigError as exc:
                os.write(write, str(exc).encode())
                code = 2
        except BaseException as exc:  # noqa: BLE001 - anything else is reported the same way
            os.write(write, f"{type(exc).__name__}: {exc}".encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    return None if os.waitstatus_to_exitcode(status) == 0 else message or "could not start"


def start_checked(server: Any) -> None:
    """The Procfile's start: the stores checked, then the metrics directory."""
    problem = check_stores()
    if problem is not None:
        print(f"pprof-share: {problem}", file=sys.stderr)
        sys.exit(2)
    start(server)


def start(server: Any) -> None:
    """Before any worker: the instance's compute processes, and a fresh directory for
    prometheus_client's multiprocess mode."""
    # One set of compute processes for the instance, shared by every worker (a profile is then
    # warm for all of them), started in the master before it forks the workers.
    from ..compute.supervisor import DIRECTORY_ENV, Supervisor

    supervisor = Supervisor(load(os.environ))
    supervisor.start()
    os.environ[DIRECTORY_ENV] = supervisor.directory
    server.share_compute = supervisor
    print(f"pprof-share: {supervisor.size} compute processes ({supervisor.roles()})",
          file=sys.stderr, flush=True)  # fmt: skip
    directory = os.environ.get(METRICS_ENV)
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):  # values of an earlier run's workers
            if name.endswith(".db"):
                os.unlink(os.path.join(directory, name))
    else:
        os.environ[METRICS_ENV] = tempfile.mkdtemp(prefix="pprof-share-metrics-")
        server.share_metrics_dir = os.environ[METRICS_ENV]


def leave(server: Any) -> None:
    supervisor = getattr(server, "share_compute", None)
    if supervisor is not None:
        supervisor.stop()
    made = getattr(server, "share_metrics_dir", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


def worker_gone(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def settings(check: bool = True) -> dict[str, Any]:
    """gunicorn's settings, besides bind and workers; check: the stores, before workers start
    (serve checks them itself, to stop with one line before gunicorn says anything)."""
    timeout = client_timeout()
    return {
        "worker_class": f"{__name__}.Worker",
        "worker_connections": 1000,
        # With gevent, keepalive bounds both an idle kept-alive connection and the time a
        # request's headers may take; short, so a stopping worker is not held by idle clients.
        "keepalive": int(max(1, min(timeout, KEEPALIVE_SECONDS))),
        "timeout": 120,  # a worker whose loop is stuck this long is restarted
        "graceful_timeout": 30,
        "on_starting": start_checked if check else start,
        "on_exit": leave,
        "child_exit": worker_gone,
    }


# Read by `gunicorn -c python:share.web.serving` (the Procfile): its settings as module names.
_PROCFILE = settings()
worker_class = _PROCFILE["worker_class"]
worker_connections = _PROCFILE["worker_connections"]
keepalive = _PROCFILE["keepalive"]
timeout = _PROCFILE["timeout"]
graceful_timeout = _PROCFILE["graceful_timeout"]
on_starting = _PROCFILE["on_starting"]
on_exit = _PROCFILE["on_exit"]
child_exit = _PROCFILE["child_exit"]
