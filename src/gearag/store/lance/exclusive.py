"""One export at a time at an object-store location: a lease with a heartbeat.

An export to a local directory holds the build lock (``flock``) of the directory. Object stores have
no such lock, and two exports that overlap there (a scheduled ``gearag export --update`` that starts
while the last one still runs: a full export takes minutes at 1M passages) write the same tables:
one could pin versions that hold the other's rows, and no replica would open the result. So an export
to object storage first takes a lease, a one-row table (:data:`LEASE_TABLE`: who holds it and when it
last said so):

* a lease another export renewed less than ``lease_seconds`` ago refuses this export (a one-line
  :class:`~gearag.errors.BusyError` naming the holder); an older one was left by an export that died
  and is taken over;
* after writing its row the export waits :data:`SETTLE_SECONDS` and reads the lease again: of two
  exports that both found it free, the later writer holds it and the other stops (an object store
  keeps the last write);
* a thread renews it every quarter of ``lease_seconds`` while the export runs;
* right before its commit (the ``meta`` table) the export checks that it still holds the lease
  (:meth:`ExportLease.check`; and, wherever it writes, that no other export committed since it
  started), else it stops without committing: the export that was live stays live. The lease is
  dropped when the export ends.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any

from gearag.errors import BusyError
from gearag.store.lance.storage import Location, table_names

#: The lease of the export writing a location (absent: none is).
LEASE_TABLE = "export_lease"
#: Seconds between writing the lease and reading it back: another export that found the lease free at the same
#: time has written its own by then.
SETTLE_SECONDS = 2.0


class ExportLease:
    """The lease of one export on ``loc`` (module docstring); a context manager that takes and drops it."""

    def __init__(self, db: Any, loc: Location, lease_seconds: float) -> None:
        self.db, self.loc, self.seconds = db, loc, float(lease_seconds)
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _row(self) -> dict[str, Any] | None:
        if LEASE_TABLE not in table_names(self.db):
            return None
        rows = self.db.open_table(LEASE_TABLE).to_arrow().to_pylist()
        return rows[0] if rows else None

    def _write(self) -> None:
        import pyarrow as pa

        now = time.time()
        row = {"owner": [self.owner], "host": [socket.gethostname()], "pid": [os.getpid()], "beat": [now],
               "seconds": [self.seconds]}
        self.db.create_table(LEASE_TABLE, pa.table(row), mode="overwrite")

    def _held_by_other(self, row: dict[str, Any] | None) -> bool:
        """Whether ``row`` is another export's lease that has not lapsed (by the seconds its holder gave it)."""
        return row is not None and row.get("owner") != self.owner and \
            time.time() - float(row["beat"]) < float(row.get("seconds") or self.seconds)

    def _busy(self, row: dict[str, Any]) -> BusyError:
        age = time.time() - float(row["beat"])
        return BusyError(f"{self.loc}: another gearag export (host {row.get('host')}, pid {row.get('pid')}) is writing "
                         f"here; its lease was renewed {age:.0f} s ago and lapses "
                         f"{float(row.get('seconds') or self.seconds):.0f} s after that: wait for it to finish (or, "
                         "if it died, for its lease to lapse)")

    def __enter__(self) -> ExportLease:
        row = self._row()
        if self._held_by_other(row):
            assert row is not None
            raise self._busy(row)
        self._write()
        self._settle()
        row = self._row()
        if row is None or row.get("owner") != self.owner:
            raise self._busy(row or {"beat": time.time()})  # another export took it in the same moment
        self._beat = threading.Thread(target=self._renew, name="gearag-export-lease", daemon=True)
        self._beat.start()
        return self

    def _settle(self) -> None:
        time.sleep(SETTLE_SECONDS)

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            try:
                row = self._row()
                if row is not None and row.get("owner") != self.owner:
                    return  # taken over (this export stalled past its lease): check() stops it before its commit
                self._write()
            except (OSError, RuntimeError, ValueError):
                continue  # a failed renewal: the next one may pass; check() decides at the commit

    def check(self) -> None:
        """Before the commit: this export still holds the lease."""
        row = self._row()
        if row is None or row.get("owner") != self.owner:
            raise BusyError(f"{self.loc}: another gearag export took over this location while this one ran (its "
                            "lease lapsed); this export was not committed: run it again once that one has finished")

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        try:
            row = self._row()
            if row is not None and row.get("owner") == self.owner:
                self.db.drop_table(LEASE_TABLE)
        except (OSError, RuntimeError, ValueError):
            pass  # left behind: it lapses after lease_seconds
