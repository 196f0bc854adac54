"""Durable renames: fsync a directory so that the entries just renamed or created in it survive a crash.

This module owns only that step, which the index writer and the sharded index's manifest writer both take
(:mod:`gearag.store.writer`, :mod:`gearag.store.shards`); it sits below both so that neither imports the other.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync directory ``path`` (its entries: a rename into it is on disk once this returns)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
