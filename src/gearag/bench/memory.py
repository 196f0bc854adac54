"""Peak resident memory of this process, from /proc (Linux).

``ru_maxrss`` survives ``exec`` and so reports the parent's size for a
child started by ``subprocess``; ``VmHWM`` belongs to the current address
space, and writing 5 to ``/proc/self/clear_refs`` resets it between runs.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def _status_mb(key: str) -> float:
    """Field ``key`` of /proc/self/status in MB (NaN where there is none)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    """High-water mark of resident memory since start or the last :func:`reset_peak`, in MB."""
    return _status_mb("VmHWM")


def rss_mb() -> float:
    """Resident memory now, in MB."""
    return _status_mb("VmRSS")


def rss_parts_mb() -> tuple[float, float]:
    """Resident memory now split into anonymous (the heap: only exiting frees it) and file-backed pages
    (memory-mapped files: page cache, shared between processes and dropped by the kernel under pressure)."""
    return _status_mb("RssAnon"), _status_mb("RssFile") + _status_mb("RssShmem")


def reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
