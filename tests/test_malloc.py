"""gearag.malloc: memory a worker thread freed goes back to the kernel when asked."""

from __future__ import annotations

import sys
import threading

import pytest

from gearag.malloc import release_free_memory


def _rss_mb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_memory_a_thread_freed_is_released() -> None:
    survivors: list[bytes] = []

    def work() -> None:
        junk = [bytes(2000) + bytes([i % 256]) for i in range(100_000)]  # ~200 MB in this thread's arena
        survivors.append(junk[-1])  # the last block stays: the arena cannot shrink from its top
        del junk

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    before = _rss_mb()
    assert release_free_memory() is True
    assert before - _rss_mb() > 100
