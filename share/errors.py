"""ShareError and its kinds: an HTTP status and a message that names the problem.

Raised anywhere (the parser, the core, the stores' callers); rendered only by share.web.errors,
so this module imports nothing and `pprof-share top` loads no web stack.
"""

from __future__ import annotations


class ShareError(Exception):
    """An error a client can act on: an HTTP status and a message that names the problem."""

    code = 400
    retry_after: int | None = None  # seconds, sent as Retry-After (503, 429)

    def __init__(
        self, message: str, code: int | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retry_after is not None:
            self.retry_after = retry_after


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


class Unauthorized(ShareError):
    """An upload without the operator's upload token (SHARE_UPLOAD_TOKEN)."""

    code = 401


class StoreUnavailable(ShareError):
    """A store did not answer in time or refused the call: the client should try again.

    Raised by share.store.guard around every backend call, so no caller imports botocore,
    redis or sqlite3 exceptions. `store` names it as its setting does (credentials removed).
    """

    code = 503
    retry_after = 5

    def __init__(self, kind: str, store: str, detail: str = "", stored_nothing: bool = False):
        self.kind, self.store, self.detail = kind, store, detail
        then = "nothing was stored, try again" if stored_nothing else "try again"
        super().__init__(f"the {kind} ({store}) is not answering; {then}")

    def nothing_stored(self) -> StoreUnavailable:
        """The same failure, told to an uploader: nothing of the upload was kept."""
        return StoreUnavailable(self.kind, self.store, self.detail, stored_nothing=True)
