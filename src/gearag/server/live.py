"""The index a service answers from, opened again when it is updated (add, delete, compact, export).

An update of an index directory commits a new root manifest (a new file,
renamed into place); an export to a Lance location commits a new ``meta``
table version, which names the table versions it wrote
(:mod:`gearag.store.lance.versions`). Every ``reload_seconds`` a thread of
the service's own, not a request, compares a stamp of the index at its
location (the manifest's SHA-256; the ``meta`` table's version) with the
stamp of the index being served (what was read when it was opened, so an
update committed while it opened is not missed). When they differ it opens the
index again (0.7 s for a sharded 1M index) while requests are answered from
the current one; the service then answers from the new one. A service with
no requests follows too, so it never falls further behind than one interval:
a Lance export removes the versions it replaced after ``--keep-hours``,
which an idle replica that only looked at requests could still have been
reading. A call already running keeps the index it started with: its read
lease (:mod:`gearag.store.lease`) keeps that generation's files until the
last such call drops it; a Lance export keeps the table versions it replaced
``--keep-hours``. An index that fails to open (an update still writing, a
damaged file, a look at the stamp that fails, whatever the error's type) is
logged and the service keeps the one it has; it opens that update again
after a wait that doubles from the interval (at most
:data:`RETRY_MAX_SECONDS`), and a newer update at once. ``GET /v1/index``
(``served``) and ``/metrics`` report what is served and why an update was not.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gearag.api import Gearag
from gearag.engine import EngineConfig
from gearag.errors import GearagError
from gearag.store.index import manifest_identity

log = logging.getLogger("gearag.server")

#: What changes when an index is updated: its manifest's SHA-256 (a directory), its meta table's version (Lance).
Stamp = str | int
#: Seconds between collections while the previous index is still in use, and how many are tried (beyond the
#: default 60 s time limit of a call).
RETIRE_SECONDS = 5.0
RETIRE_TRIES = 15
#: The longest wait (seconds) before an update that did not open is opened again: each failure of the same update
#: doubles the wait from the reload interval, so a damaged one is not opened every interval for ever (the looks,
#: a read of its stamp, go on every interval: a newer update is opened at once).
RETRY_MAX_SECONDS = 300.0


#: The question the methods are warmed with (:func:`warm_methods`): any text does; this one names entities.
WARM_QUESTION = "Who directed the film that won the award in the city where its author was born?"


def warm_methods(gearag: Gearag, names: Sequence[str], config_of: Callable[[str], Any] | None = None) -> None:
    """Run each method of ``names`` once, with its config (``config_of(name)``; default: its defaults), so that
    what it loads on its first call (the entity names, the prepared graph, the BM25 postings, the embedder) is
    loaded before a request asks; a method that fails is logged and skipped (the warm-up only saves time)."""
    for name in names:
        started = time.perf_counter()
        try:
            config = _offline(config_of(name)) if config_of is not None else None
            gearag.method(name, config)(WARM_QUESTION, 10)
        except Exception:  # never stops the reload thread or the start: a request would report it
            log.warning("warming method %s failed; its first request loads what it reads", name, exc_info=True)
        else:
            log.info("method %s warmed in %.2f s", name, time.perf_counter() - started)


def _offline(config: Any) -> Any:
    """``config`` with the offline engine: what a method loads is the same with any engine, and a warm-up question
    through an LLM engine would spend minutes of model time (and the operator's tokens) on a question nobody
    asked."""
    engine = getattr(config, "engine", None)
    if not isinstance(engine, EngineConfig) or engine.engine == "offline":
        return config
    return dataclasses.replace(config, engine=engine.offline())


def manifest_stamp(root: Path) -> Stamp | None:
    """The SHA-256 of ``root``'s manifest (what ``Index.identity`` holds for the index read from it); None when it
    cannot be read."""
    try:
        return manifest_identity(root)
    except GearagError:
        return None


class LiveGearag:
    """The service's :class:`Gearag`, opened again by ``reopen`` when its index was updated."""

    def __init__(self, gearag: Gearag, reopen: Callable[[], Gearag] | None = None, interval: float = 0.0,
                 root: Path | str | None = None, announce: Callable[[str], None] | None = None,
                 stamp: Callable[[], Stamp | None] | None = None,
                 served: Callable[[Gearag], Stamp | None] | None = None,
                 warm: Callable[[Gearag], None] | None = None) -> None:
        """``stamp``: the stamp of the index now at ``root`` (default: :func:`manifest_stamp`), None when it cannot
        be read; ``served``: the stamp of an opened index, read when it was opened (default: its
        ``index.identity``); ``warm``: run on an index once opened, before it is served (:func:`warm_methods`).
        With ``reopen``, an ``interval`` > 0 and a ``root``, :meth:`watch` starts a thread that looks every
        ``interval`` seconds until :meth:`close`."""
        self._gearag = gearag
        self._announce = announce or log.info
        self._reopen = reopen if interval > 0 and root is not None else None
        self._interval = interval
        self._root = root
        self._look = stamp or (lambda: manifest_stamp(Path(root)) if root is not None else None)
        self._served = served or (lambda g: getattr(g.index, "identity", None) or None)
        self._warm = warm
        self._stamp = self._served(gearag)
        if self._stamp is None and self._reopen is not None:
            self._stamp = self._look()  # what is there now: an index opened without its stamp
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: What ``GET /v1/index`` and ``/metrics`` report: when the index served was opened, the last look, the
        #: updates served since the start, and the looks since the last success that found an update that did not
        #: open (with the last such error).
        self.opened_at: float = time.time()
        self.looked_at: float | None = None
        self.reloads = self.failures = 0
        self.last_error: str | None = None
        # An update that did not open (its stamp), how many times in a row, and when (monotonic) to try it again.
        self._failed: Stamp | None = None
        self._tries, self._retry_at = 0, 0.0
        #: The thread letting the previous index go, once started (tests wait for it).
        self.retiring: threading.Thread | None = None
        self.watching: threading.Thread | None = None

    def get(self) -> Gearag:
        """The index being served. Requests never wait for a look or an open: the update is served once open."""
        return self._gearag

    def status(self) -> dict[str, Any]:
        """What is served and how the service follows its index (``GET /v1/index``'s ``served``): the stamp of
        the index served (its manifest's SHA-256, or its Lance ``meta`` version), when it was opened and last
        looked at (Unix seconds), the reload interval (0: off), the updates served since the start, and the
        failed opens since the last update served, with the last one's error."""
        return {"stamp": None if self._stamp is None else str(self._stamp), "opened_at": self.opened_at,
                "looked_at": self.looked_at, "reload_seconds": self._interval if self._reopen is not None else 0.0,
                "reloads": self.reloads, "failures": self.failures, "last_error": self.last_error}

    def warm_up(self) -> None:
        """Warm the index being served (the service is starting)."""
        if self._warm is not None:
            self._warm(self._gearag)

    def watch(self) -> None:
        """Start looking for updates every ``interval`` seconds on a thread of its own (the service has started)."""
        if self._reopen is not None and self.watching is None:
            self._stop = threading.Event()  # this thread's: one closed earlier stops on its own
            self.watching = threading.Thread(target=self._watch, args=(self._stop,), name="gearag-reload",
                                             daemon=True)
            self.watching.start()

    def close(self) -> None:
        """Stop looking for updates (the service is shutting down)."""
        self._stop.set()
        self.watching = None

    def refresh(self) -> bool:
        """Look for an update now and open it; whether the index served changed. Waits for a look already
        running."""
        if self._reopen is None:
            return False
        with self._lock:
            return self._look_and_open()

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            self.refresh()

    def _look_and_open(self) -> bool:
        """Open the index again if its stamp changed (the caller holds the lock) and serve it; a failure keeps the
        current one."""
        assert self._reopen is not None
        self.looked_at = time.time()
        stamp = None
        try:
            stamp = self._look()
            if stamp is None or stamp == self._stamp:
                return False
            if stamp == self._failed and time.monotonic() < self._retry_at:
                return False  # that update did not open: it is tried again once its wait is over
            fresh = self._reopen()
            if self._warm is not None:
                self._warm(fresh)  # on this thread: requests are answered from the current index meanwhile
        except Exception as exc:  # the looks run on their own thread, which must outlive any error
            # A damaged update, a storage error, or one a backend raises as its own type (an object store's client):
            # an exception that ended the thread would leave the service on its index for ever, unreported.
            known = isinstance(exc, (GearagError, OSError, RuntimeError, ValueError))
            self.failures, self.last_error = self.failures + 1, str(exc) or type(exc).__name__
            self._tries = self._tries + 1 if stamp is not None and stamp == self._failed else 1
            self._failed = stamp
            wait = min(self._interval * 2 ** (self._tries - 1), RETRY_MAX_SECONDS)
            self._retry_at = time.monotonic() + wait
            log.warning("index %s changed but did not open (%s); still serving the previous one, trying again in "
                        "%.0f s", self._root, exc, wait, exc_info=not known)
            return False
        previous = self._gearag
        # The stamp of what was opened, not the one just looked at: an update committed in between is seen next.
        served = self._served(fresh)
        self._gearag, self._stamp = fresh, stamp if served is None else served
        self.opened_at, self.reloads, self.failures, self.last_error = time.time(), self.reloads + 1, 0, None
        self._failed, self._tries = None, 0
        self._retire(weakref.ref(previous.index))
        del previous
        counts = fresh.index.manifest.get("counts", {})
        self._announce(f"index {self._root} updated: now serving {counts.get('passages', '?')} passages")
        return True

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
