"""Process memory of a Lance query process: glibc's malloc arenas.

Lance scans run on native worker threads; glibc gives threads their own
malloc arenas (up to 8 per core) and keeps what a scan freed in them. On the
scale corpora a process's flat dense scans left about twice the vector
column resident, growing with the corpus (docs/benchmarks-log.md, "Lance query memory
against corpus size": +244 MB at 101k passages after 50 queries, +11 MB with
``MALLOC_ARENA_MAX=2``). :func:`limit_malloc_arenas` sets the same cap from
inside the process (``mallopt(M_ARENA_MAX)``) before Lance starts its threads.
It is :attr:`~gearag.store.lance.collection.LanceSearchConfig.malloc_arenas`
(``--lance-malloc-arenas``); elsewhere than glibc it does nothing. Off by default (0): the cap is
process-wide, so a library must not set it for the application that opens an
index, and it costs latency (101k passages, flat dense search, loaded 2-core
machine: median 51 ms with glibc's 16 arenas, 59 / 73 / 84 ms with 8 / 4 / 2;
the dense stage kept +230 / +120 / +78 / +35 MB; docs/benchmarks-log.md).
"""

from __future__ import annotations

from gearag.malloc import mallopt

#: mallopt's parameter number for the arena cap (glibc malloc.h).
M_ARENA_MAX = -8


def limit_malloc_arenas(n: int) -> bool:
    """Cap glibc's malloc arenas at ``n`` for this process (0: leave the default); whether it was applied."""
    return n > 0 and mallopt(M_ARENA_MAX, n)
