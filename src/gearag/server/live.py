"""The index a service answers from, opened again when it is updated (add, delete, compact, export; issue 14).

An update of an index directory commits a new root manifest (a new file,
renamed into place); an export to a Lance location commits a new ``meta``
table version, which names the table versions it wrote
(:mod:`gearag.store.lance.versions`). At most every ``reload_seconds`` a
request starts a thread that looks at that stamp (the manifest's inode, size
and modification time; the ``meta`` version) and, when it changed, opens the
index again (0.7 s for a sharded 1M index) while requests are answered from
the current one; the service then answers from the new one. A call already running
keeps the index it started with: its read lease (:mod:`gearag.store.lease`)
keeps that generation's files until the last such call drops it; a Lance
export keeps the table versions it replaced ``--keep-hours``. An index that
fails to open (an update still writing, a damaged file) is logged and the
service keeps the one it has, trying again after the next interval.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gearag.api import Gearag
from gearag.errors import GearagError
from gearag.store.index import MANIFEST

log = logging.getLogger("gearag.server")

Stamp = tuple[int, ...]
#: Seconds between collections while the previous index is still in use, and how many are tried (beyond the
#: default 60 s time limit of a call).
RETIRE_SECONDS = 5.0
RETIRE_TRIES = 15


def manifest_stamp(root: Path) -> Stamp | None:
    """(inode, size, mtime) of ``root``'s manifest: an update replaces the file, so the inode changes."""
    try:
        st = os.stat(root / MANIFEST)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class LiveGearag:
    """The service's :class:`Gearag`, opened again by ``reopen`` when its index was updated."""

    def __init__(self, gearag: Gearag, reopen: Callable[[], Gearag] | None = None, interval: float = 0.0,
                 root: Path | str | None = None, announce: Callable[[str], None] | None = None,
                 stamp: Callable[[], Stamp | None] | None = None) -> None:
        """``stamp``: what changes when the index at ``root`` is updated (default: its manifest's
        :func:`manifest_stamp`); None when it cannot be read."""
        self._gearag = gearag
        self._announce = announce or log.info
        self._reopen = reopen if interval > 0 and root is not None else None
        self._interval = interval
        self._root = root
        self._look = stamp or (lambda: manifest_stamp(Path(root)) if root is not None else None)
        self._stamp = self._look() if self._reopen is not None else None
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        #: The threads opening an update and letting the previous index go, once started (tests wait for them).
        self.opening: threading.Thread | None = None
        self.retiring: threading.Thread | None = None

    def get(self) -> Gearag:
        """The current index's Gearag. When ``interval`` seconds have passed a thread looks for an update (a stat of
        the manifest; a read of the object store for a Lance export) and opens one it finds; the request and the
        event loop never wait for either, and the update is served once open."""
        if self._reopen is None or time.monotonic() - self._checked < self._interval:
            return self._gearag
        if not self._lock.acquire(blocking=False):
            return self._gearag  # an update is being looked for or opened: answer from the current index meanwhile
        self.opening = threading.Thread(target=self._look_and_open, name="gearag-reload", daemon=True)
        self.opening.start()
        return self._gearag

    def _look_and_open(self) -> None:
        """Open the index again if its stamp changed (holding the lock the caller took) and serve it; a failure keeps
        the current one."""
        try:
            assert self._reopen is not None
            stamp = self._look()
            if stamp is None or stamp == self._stamp:
                return
            fresh = self._reopen()
        except (GearagError, OSError, RuntimeError, ValueError) as exc:
            log.warning("index %s changed but did not open (%s); still serving the previous one", self._root, exc)
        else:
            previous = self._gearag
            self._gearag, self._stamp = fresh, stamp
            self._retire(weakref.ref(previous.index))
            del previous
            counts = fresh.index.manifest.get("counts", {})
            self._announce(f"index {self._root} updated: now serving {counts.get('passages', '?')} passages")
        finally:
            self._checked = time.monotonic()
            self._lock.release()

    def _retire(self, index: weakref.ref[Any]) -> None:
        """Let the previous index go once no call uses it, so that its read lease goes with it and the next update
        can remove its files. Its objects hold each other (cached methods), so only a full collection frees them:
        one runs every :data:`RETIRE_SECONDS` until it is gone, at most :data:`RETIRE_TRIES` times (a collection
        pauses the process ~0.13 s at a million passages)."""

        def collect() -> None:
            for _ in range(RETIRE_TRIES):
                gc.collect()
                if index() is None:
                    return
                time.sleep(RETIRE_SECONDS)
            log.warning("the previous index of %s is still in use; its files stay until it is let go", self._root)

        self.retiring = threading.Thread(target=collect, name="gearag-retire", daemon=True)
        self.retiring.start()
