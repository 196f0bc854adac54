"""Stable 64-bit hashes of strings: the same in every process (Python's ``hash`` is salted per process).

Indices store them to find strings without reading every stored string:
the union's vocabularies and token indices (:mod:`gearag.derive.union_vocab`,
:mod:`gearag.derive.union_resolve`) and the passages' ids
(:mod:`gearag.store.passage_ids`). Two strings may share a hash, so every
user confirms a match against the string itself (or only widens a
candidate set with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import blake2b

import numpy as np


def stable_hashes(strings: Iterable[str]) -> np.ndarray:
    """A 64-bit hash per string (blake2b of its UTF-8), as int64."""
    return np.fromiter((int.from_bytes(blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little",
                                       signed=True) for s in strings), dtype=np.int64)
