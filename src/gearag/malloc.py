"""glibc's malloc, from Python: its arena cap, and handing freed memory back to the kernel.

glibc gives each thread that allocates its own arena and keeps what is
freed there for that arena's next allocations. Memory a worker thread freed
stays resident while the main thread allocates elsewhere: after a growable
build's graph stage, when its triple graph was made on a second thread,
~440 MB of its 1,000 MB at 100k passages (docs/benchmarks-log.md, "Growable builds").
Elsewhere than glibc every function here does nothing and returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt  # noqa: B018 (musl has no mallopt/malloc_trim)
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def mallopt(param: int, value: int) -> bool:
    """``mallopt(param, value)``; whether glibc applied it."""
    libc = _glibc()
    return bool(libc.mallopt(int(param), int(value))) if libc is not None else False


def release_free_memory() -> bool:
    """Give the free pages of every arena back to the kernel (``malloc_trim(0)``); whether any were."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
