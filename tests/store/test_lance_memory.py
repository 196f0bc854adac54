"""The Lance query process caps glibc's malloc arenas (LanceSearchConfig.malloc_arenas)."""

from __future__ import annotations

import os
import platform
import sys

import pytest

from gearag.store.lance.collection import LanceSearchConfig
from gearag.store.lance.memory import limit_malloc_arenas


def test_zero_leaves_the_default_and_glibc_takes_a_cap() -> None:
    assert LanceSearchConfig().malloc_arenas == 0  # off unless asked: the cap is process-wide
    assert limit_malloc_arenas(0) is False
    if not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"):
        pytest.skip("mallopt(M_ARENA_MAX) is glibc's")
    assert limit_malloc_arenas(8 * (os.cpu_count() or 1)) is True  # glibc's own default on 64-bit: no change
