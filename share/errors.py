"""ShareError and its kinds: an HTTP status and a message that names the problem.

Raised anywhere (the parser, the core, the stores' callers); rendered only by share.web.errors,
so this module imports nothing and `pprof-share top` loads no web stack.
"""

from __future__ import annotations


class ShareError(Exception):
    """An error a client can act on: an HTTP status and a message that names the problem."""

    code = 400

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadProfile(ShareError):
    """The upload is not a profile google/pprof would accept."""

    code = 400


class TooLarge(ShareError):
    """The upload, or the profile once decompressed, is over a configured limit."""

    code = 413


class NotFound(ShareError):
    code = 404


class Gone(ShareError):
    """The profile existed but has expired."""

    code = 410


class Forbidden(ShareError):
    code = 403
