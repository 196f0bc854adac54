"""Reading ``.npy`` files from any thread, and writing them piece by piece, byte-identical to ``np.save``.

Large arrays (a million passages' triple vectors are ~17 GB) are written in
blocks with ``pwrite`` after a header made by ``np.lib.format.open_memmap``,
so only one block is ever in memory and nothing stays mapped. A whole array
is written the same way (:func:`save_npy`): numpy's own writer reports a full
disk as "N requested and M written", an ``OSError`` without its errno, which
no caller can tell from any other failure.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, BinaryIO

import numpy as np

from gearag.errors import GearagError, IndexFormatError

#: numpy parses a ``.npy`` header with ``ast.literal_eval``. CPython 3.11 keeps the AST converter's
#: recursion depth per interpreter, not per thread, so two threads parsing at once can fail with
#: "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; seen here when a
#: generation's two threads read their arrays). Every header gearag reads is parsed under this lock.
_HEADER_LOCK = threading.Lock()


def load_npy(source: Path | str | IO[bytes], *, mmap: bool = True) -> np.ndarray:
    """``np.load`` of one ``.npy`` (memory-mapped unless ``mmap`` is False; pickles refused), safe in threads."""
    with _HEADER_LOCK:
        return np.load(source, mmap_mode="r" if mmap and not hasattr(source, "read") else None, allow_pickle=False)


def unwrapped(a: np.ndarray) -> np.ndarray:
    """``a`` as a plain ndarray view: a memory map stays mapped (its pages are read on demand), but indexing it
    no longer goes through ``np.memmap``'s Python-level ``__getitem__`` (a fifth of a push's time at 1M)."""
    return np.asarray(a) if isinstance(a, np.memmap) else a


def _bases(a: np.ndarray) -> Iterator[object]:
    """``a`` and the objects whose memory it views, outermost first (its ``base`` chain)."""
    obj: object = a
    while obj is not None:
        yield obj
        obj = getattr(obj, "base", None)


def is_mapped(a: np.ndarray) -> bool:
    """Whether ``a`` reads a memory-mapped file (a memory map, or a view of one)."""
    return any(isinstance(obj, np.memmap) for obj in _bases(a))


def release_rows(a: np.ndarray, start: int, stop: int) -> None:
    """Let go of rows ``start:stop`` of a memory-mapped ``a`` from this process's resident memory (they stay in the
    page cache and are read again on demand); nothing for an array in memory, or where the platform has no
    ``MADV_DONTNEED``. A copy of a mapped file read block by block otherwise keeps every page it read resident until
    the map is closed (a compact's copy of the triple vectors: 17 GB at a million passages). A later read may map
    again the page-cache folio around it (up to 2 MB), so a few MB stay resident, not the file."""
    obj = next((b for b in _bases(a) if isinstance(b, mmap.mmap)), None)
    dontneed = getattr(mmap, "MADV_DONTNEED", None)
    if not isinstance(obj, mmap.mmap) or dontneed is None or stop <= start or a.ndim == 0 or a.strides[0] <= 0:
        return
    origin = np.frombuffer(obj, dtype=np.uint8).ctypes.data
    lo = a.ctypes.data - origin + start * a.strides[0]
    hi = min(a.ctypes.data - origin + stop * a.strides[0], len(obj))
    lo -= lo % mmap.PAGESIZE
    obj.madvise(dontneed, lo, hi - lo)


def _npy_writer(path: Path, shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> tuple[int, BinaryIO]:
    """Create ``path`` as an ``np.save``-identical ``.npy`` of ``shape`` and ``dtype`` (data not yet written):
    the data's byte offset and the open file, to :func:`_pwrite_all` rows into."""
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    offset = int(mm.offset)
    del mm  # only the header (and a sparse file): nothing mapped stays resident
    return offset, path.open("r+b")


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """``os.pwrite`` until every byte is written (one call may write fewer)."""
    view = memoryview(data)
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)


def write_blocks(path: Path, shape: tuple[int, ...], dtype: np.dtype | type, blocks: Iterable[np.ndarray]) -> None:
    """Write an array of ``shape`` given as consecutive row ``blocks`` to ``path`` (as ``np.save`` would)."""
    offset, fh = _npy_writer(path, shape, dtype)
    done = 0
    with fh:
        for block in blocks:
            data = np.ascontiguousarray(block, dtype=dtype)
            _pwrite_all(fh.fileno(), data.tobytes(), offset + done)
            done += data.nbytes
        expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if done != expected:
            raise ValueError(f"{path}: blocks held {done} bytes, the array {expected}")
        fh.flush()
        os.fsync(fh.fileno())


def save_npy(path: Path, array: np.ndarray) -> None:
    """``np.save(path, array)``'s bytes (no pickles), written with ``pwrite`` from the array's own memory: a full
    disk is an ``OSError`` with its errno (``ENOSPC``, ``EDQUOT``, ``EFBIG``), not numpy's errno-less one."""
    array = np.ascontiguousarray(array)
    if array.size == 0 or array.dtype.hasobject:  # nothing to map (or refused, as np.save refuses it)
        np.save(path, array, allow_pickle=False)
        return
    offset, fh = _npy_writer(path, array.shape, array.dtype)
    with fh:
        _pwrite_all(fh.fileno(), array.reshape(-1).view(np.uint8).data, offset)


def kept_arrays(root: Path, *rels: str) -> list[np.ndarray] | None:
    """The arrays ``rels`` under ``root`` (memory-mapped, as plain arrays), None when one is missing or damaged:
    for kept state a caller can make again instead."""
    try:
        return [np.asarray(load_array(root, rel)) for rel in rels]
    except (OSError, ValueError, GearagError):
        return None


def load_array(root: Path, rel: str) -> np.ndarray:
    """Memory-map ``root/rel``; a damaged file is an IndexFormatError naming it (never advice to unpickle)."""
    try:
        return load_npy(root / rel)
    except FileNotFoundError:
        raise IndexFormatError(f"{root}: missing file {rel}; rebuild the index") from None
    except (OSError, ValueError, EOFError, TypeError) as exc:
        reason = "not a plain numeric array" if "pickle" in str(exc).lower() else "unreadable array header"
        raise IndexFormatError(f"{root}: {rel} is corrupt ({reason}); rebuild the index") from None
