"""Process-wide memo tables, each bounded, and one way to empty them all: `clear_caches()`.

A long-running process that counts many models keeps at most `maxsize` entries per table; tests
or a caller who wants a cold start clear them.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)
_CACHED: list = []


def memoized(maxsize: int) -> Callable[[F], F]:
    """functools.lru_cache(maxsize), the cached function registered for `clear_caches`."""
    def decorate(fn: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(fn)
        _CACHED.append(cached)
        return cached  # type: ignore[return-value]
    return decorate


def clear_caches() -> None:
    """Empty every memo table of the package (they refill on the next count)."""
    for cached in _CACHED:
        cached.cache_clear()
