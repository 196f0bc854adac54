"""Read leases: a process that opened an index keeps the files it reads while an update replaces them.

``gearag add``, ``delete`` and ``compact`` write a new generation (a compact
also a new shard) and then remove what the new manifest no longer lists; the
first update of a plain index moves its files into a shard. A process that
opened the index before (``gearag serve``, a notebook) reads files lazily:
passages by offset, the prepared passage graph and the entity names on its
first graph query. Removed under it, its next query failed, with an error that
called the index corrupt.

A reader (:meth:`gearag.store.index.Index.open`, which every command and
:func:`gearag.api.Gearag.open` use) holds a shared ``flock`` on
``.leases/<name>`` inside the index directory while its index lives: ``name``
is the generation it loaded, or :data:`PLAIN` for an index that has none. The
OS drops the lock when the process exits, even on ``kill -9``. An update
removes a generation (and the shards only it lists) or a converted index's
plain files only if no reader holds their lease (:func:`claimed`: no lease
file, or one it can lock exclusively); while a reader holds it they stay, and
a later update removes them once it has let go. A reader that waited for an update's lock reads the manifest again
and leases what it now names. Where the lease file cannot be made (an index on
a read-only file system) a reader goes without one: nothing there can change.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The directory of lease files, inside the index directory (never listed in a manifest).
LEASES_DIR = ".leases"
#: The lease name of an index without generations (a plain build).
PLAIN = "plain"


def lease_name(manifest: dict[str, Any]) -> str:
    """What a reader of the index with ``manifest`` leases: its generation's name, or :data:`PLAIN`."""
    generation = manifest.get("generation")
    if isinstance(generation, dict) and isinstance(generation.get("name"), str):
        return generation["name"]
    return PLAIN


class Lease:
    """A shared lock on one lease file, held until :meth:`release`, garbage collection or exit."""

    def __init__(self, fd: int, name: str) -> None:
        self._fd: int | None = fd
        self.name = name

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing drops the flock

    def __del__(self) -> None:
        self.release()

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _no_lease, ()  # a copy in another process (Ray, pickle) holds nothing


def _no_lease() -> None:
    return None


def _open(root: Path, name: str) -> int:
    directory = root / LEASES_DIR
    directory.mkdir(exist_ok=True)
    return os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o644)


def take(root: Path, name: str) -> Lease | None:
    """A shared lease on ``name`` in the index at ``root``; None where the lease file cannot be made.

    Blocks while an update holds it exclusively (for the moment it removes what
    the lease guards): the caller then finds the manifest changed and leases anew.
    """
    try:
        fd = _open(root, name)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return Lease(fd, name)


@contextlib.contextmanager
def claimed(root: Path, name: str, *, create: bool = False) -> Iterator[bool]:
    """Whether no reader holds ``name``'s lease; while the block runs with True, none can take it.

    The lease file is removed when the block ends (a reader blocked on it then
    finds the manifest changed). Without a lease file no reader holds one: True,
    and none is made, unless ``create``: an update that commits inside the block
    (a conversion's directory swap) makes one and locks it, so that a reader
    cannot lease the old state before the commit and read it after. Without
    ``create`` the update committed before the block: a reader that leases the
    old state now reads the manifest again and moves on. Where no lease file
    can be made: True.
    """
    try:
        fd = _open(root, name) if create else os.open(root / LEASES_DIR / name, os.O_RDWR)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
        (root / LEASES_DIR / name).unlink(missing_ok=True)
    finally:
        os.close(fd)


def held_by_reader(root: Path, name: str) -> bool:
    """Whether a reader holds ``name``'s lease now (a probe: the answer may change the next moment)."""
    try:
        fd = os.open(root / LEASES_DIR / name, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def lease_files(root: Path) -> list[str]:
    """The names of the lease files in the index at ``root``."""
    directory = root / LEASES_DIR
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
