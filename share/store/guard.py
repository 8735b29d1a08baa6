"""guard(): a store whose failures are StoreUnavailable, so no caller imports botocore/redis.

Each backend names the exceptions that mean "the store did not answer or refused" in its
`failures` attribute (BotoCoreError and ClientError, RedisError, sqlite3.Error); OSError counts
for every backend. FileNotFoundError is not a failure: it is how a missing blob is reported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import StoreUnavailable
from .locate import label


class Guarded:
    """Calls through to a store; its failures become StoreUnavailable naming the store."""

    def __init__(
        self,
        store: Any,
        kind: str,
        url: str,
        on_failure: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self.inner = store
        self.kind = kind  # "blob store" or "metadata store"
        self.label = label(url)
        self._failures: tuple[type[BaseException], ...] = (
            *getattr(store, "failures", ()),
            OSError,
        )
        self._on_failure = on_failure

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except FileNotFoundError:
                raise
            except self._failures as exc:
                if self._on_failure is not None:
                    self._on_failure(self.kind, exc)
                raise StoreUnavailable(self.kind, self.label, detail=str(exc)) from exc

        self.__dict__[name] = call  # found directly from now on
        return call


def guard(
    store: Any, kind: str, url: str, on_failure: Callable[[str, BaseException], None] | None = None
) -> Any:
    """store, with every failure of its calls raised as StoreUnavailable."""
    return Guarded(store, kind, url, on_failure)
