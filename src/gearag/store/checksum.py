"""File checksums in an index manifest: what :class:`~gearag.store.writer.IndexWriter` records, what loading checks.

Each file a manifest lists has ``{"bytes": size, ALGORITHM: hex, "sample": hex}``:
a digest of the whole file, and for files over :data:`SMALL_FILE_BYTES` a digest
of :data:`SAMPLE_BLOCKS` evenly spaced blocks that every load checks (the full
digest is checked for small files and by ``--verify``).

New files are checksummed with XXH3-128 (:data:`WRITTEN`). The checksums are
there to catch corrupt, truncated or swapped files, not forgery (whoever can
write a file can write the manifest too), so a cryptographic hash buys nothing:
SHA-256 runs at ~0.4 GB/s here, XXH3 at ~4 GB/s, and an add at a million
passages writes ~3.3 GB of arrays that one background thread checksums while
the add's own threads run (docs/benchmarks-log.md, "Adds at 1M: file checksums").
Manifests written before (format version 2 and older) list SHA-256 digests
(key ``"sha256"``); they are read and checked with that algorithm, file by
file, so an index mixing both (an add's new files beside linked old ones) is
valid.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import xxhash


class _Digest(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


#: Manifest key → digest constructor. A file's entry holds exactly one of these keys.
ALGORITHMS: dict[str, Callable[[], _Digest]] = {"xxh3_128": xxhash.xxh3_128, "sha256": hashlib.sha256}
#: The algorithm new manifests use.
WRITTEN = "xxh3_128"

#: Files up to this size are checksummed in full on every load; larger ones by sampled blocks.
SMALL_FILE_BYTES = 8 << 20
#: Sampled check of a large file: this many blocks of this size, evenly spaced, first and last included.
SAMPLE_BLOCKS = 16
SAMPLE_BLOCK_BYTES = 64 << 10
#: Read size when checksumming a whole file.
_READ_BYTES = 1 << 22


def algorithm(meta: Any) -> str | None:
    """The algorithm of a manifest file entry ``meta`` (None: not a valid entry: no size or no one digest)."""
    if not isinstance(meta, dict) or not isinstance(meta.get("bytes"), int) or isinstance(meta["bytes"], bool):
        return None
    found = [name for name in ALGORITHMS if isinstance(meta.get(name), str)]
    return found[0] if len(found) == 1 else None


def file_digest(path: Path, name: str = WRITTEN) -> str:
    """The ``name`` digest (a key of :data:`ALGORITHMS`) of the whole file at ``path``, as hex."""
    digest = ALGORITHMS[name]()
    with path.open("rb") as fh:
        # One buffer the file's size, up to _READ_BYTES, read into again: a service hashes its ~14 KB manifest
        # every few seconds (gearag.server.live), which must not allocate a 4 MiB block each time.
        buffer = bytearray(min(_READ_BYTES, max(os.fstat(fh.fileno()).st_size, 1)))
        view = memoryview(buffer)
        while size := fh.readinto(buffer):
            digest.update(view[:size])
    return digest.hexdigest()


def sampled_digest(path: Path, size: int, name: str = WRITTEN) -> str:
    """The ``name`` digest of :data:`SAMPLE_BLOCKS` evenly spaced blocks of a file of ``size`` bytes."""
    digest = ALGORITHMS[name]()
    last = max(size - SAMPLE_BLOCK_BYTES, 0)
    offsets = sorted({round(i * last / (SAMPLE_BLOCKS - 1)) for i in range(SAMPLE_BLOCKS)})
    with path.open("rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            digest.update(fh.read(SAMPLE_BLOCK_BYTES))
    return digest.hexdigest()


def entry(path: Path, size: int) -> dict[str, Any]:
    """The manifest entry of the file at ``path`` (``size`` bytes), with :data:`WRITTEN` digests."""
    meta: dict[str, Any] = {"bytes": size, WRITTEN: file_digest(path)}
    if size > SMALL_FILE_BYTES:
        meta["sample"] = sampled_digest(path, size)
    return meta


def mismatch(path: Path, meta: dict[str, Any], *, full: bool) -> str | None:
    """How the file at ``path`` fails its entry ``meta`` (None: it matches): its size, then its full digest
    (small files, or ``full``) or its sampled one (entries without a sample are checked by size only)."""
    size = path.stat().st_size
    if size != meta["bytes"]:
        return "has the wrong size"
    name = algorithm(meta)
    if name is None:
        return "has a malformed manifest entry"
    if full or size <= SMALL_FILE_BYTES:
        return "fails its checksum" if file_digest(path, name) != meta[name] else None
    if "sample" in meta and sampled_digest(path, size, name) != meta["sample"]:
        return "fails its sampled checksum"
    return None


def same_content(a: Any, b: Any) -> bool:
    """Whether two manifest entries say the same bytes (same size and a digest of one algorithm equal)."""
    name = algorithm(a)
    return name is not None and name == algorithm(b) and a["bytes"] == b["bytes"] and a[name] == b[name]
