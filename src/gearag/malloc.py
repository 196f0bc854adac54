"""glibc's malloc, from Python: its arena cap, and handing freed memory back to the kernel.

glibc gives each thread that allocates its own arena and keeps what is
freed there for that arena's next allocations. Memory a worker thread freed
stays resident while the main thread allocates elsewhere: after a growable
build's graph stage, when its triple graph was made on a second thread,
~440 MB of its 1,000 MB at 100k passages (docs/benchmarks-log.md, "Growable builds").
And glibc serves a block from its own mapping (given back when freed) only
above a threshold that grows, as mapped blocks are freed, up to 32 MB: past
that, arrays of a few MB to 32 MB come from the heap and stay resident once
freed, between larger ones (:func:`map_large_blocks`).
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


#: mallopt's parameter number for the mmap threshold (glibc malloc.h).
M_MMAP_THRESHOLD = -3

#: Blocks from which :func:`map_large_blocks` maps each one on its own.
LARGE_BLOCK = 4 << 20


def map_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """Serve every block of ``threshold`` bytes or more from a mapping of its own, given back to the kernel when
    it is freed (``mallopt(M_MMAP_THRESHOLD)``, which also stops the threshold from growing); for the rest of the
    process. A build's graph stage at a million passages peaked 6% lower (8.4 against 9.0 GB; 11% at 200k) in the
    same time: the arrays its steps free no longer stay resident beside the next step's. Whether glibc applied
    it."""
    return mallopt(M_MMAP_THRESHOLD, threshold)
