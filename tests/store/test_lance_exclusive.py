"""One export at a time at an object-store location (gearag.store.lance.exclusive): a lease with a heartbeat,
and a commit that stops when another export committed meanwhile. Skipped without the ``lance`` extra."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import wiki_slice
from gearag.config import IndexConfig
from gearag.errors import BusyError
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents
from gearag.model import Passage
from gearag.store.index import Index

pytest.importorskip("lancedb", reason="the lance extra is not installed")

from gearag.indexing.export import export_index, prepared_files
from gearag.store.lance import exclusive
from gearag.store.lance import export as export_module
from gearag.store.lance.exclusive import LEASE_TABLE, ExportLease
from gearag.store.lance.export import ExportConfig
from gearag.store.lance.index import open_lance_index
from gearag.store.lance.storage import connect, parse_location, table_names


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setattr(exclusive, "SETTLE_SECONDS", 0.0)
    return connect(parse_location(tmp_path / "store"))


def _lease(db: object, seconds: float = 60.0) -> ExportLease:
    return ExportLease(db, parse_location("/x"), seconds)


def test_a_live_lease_stops_another_export_and_a_lapsed_one_is_taken_over(db: object) -> None:
    with _lease(db) as first:
        with pytest.raises(BusyError, match=f"pid {os.getpid()}"):  # names the holder
            _lease(db).__enter__()
        assert first.check() is None
    assert LEASE_TABLE not in table_names(db)  # dropped at the end
    stale = _lease(db, seconds=0.05)
    stale._write()  # an export that died holding it
    time.sleep(0.1)
    with _lease(db) as taker:
        assert db.open_table(LEASE_TABLE).to_arrow().to_pylist()[0]["owner"] == taker.owner  # type: ignore[attr-defined]
        stale._write()  # the dead one's last write lands late: this export no longer holds the lease
        with pytest.raises(BusyError, match="took over"):
            taker.check()
    assert LEASE_TABLE in table_names(db)  # what another holds is left alone


def test_of_two_exports_that_found_the_lease_free_the_later_writer_holds_it(db: object) -> None:
    early, late = _lease(db), _lease(db)
    early._settle = late._write  # type: ignore[method-assign]  # the other writes while this one waits
    with pytest.raises(BusyError):
        early.__enter__()  # it reads the other's row back: it stops
    with late:  # the later writer finds its own row and holds the lease
        late.check()
        with pytest.raises(BusyError):
            _lease(db).__enter__()


def test_the_lease_is_renewed_while_the_export_runs(db: object) -> None:
    with _lease(db, seconds=0.2) as lease:
        first = db.open_table(LEASE_TABLE).to_arrow().to_pylist()[0]["beat"]  # type: ignore[attr-defined]
        deadline = time.monotonic() + 60  # a bound for a loaded machine: it is renewed every 0.05 s
        while time.monotonic() < deadline:
            if db.open_table(LEASE_TABLE).to_arrow().to_pylist()[0]["beat"] > first:  # type: ignore[attr-defined]
                break
            time.sleep(0.02)
        else:
            pytest.fail("the lease was not renewed")
        lease.check()


def test_an_export_stops_before_its_commit_when_another_was_committed_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows, _ = wiki_slice(14, 1)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    build_index(passages[:10], tmp_path / "index", IndexConfig())
    export_index(tmp_path / "index", tmp_path / "store")
    shutil.copytree(tmp_path / "index", tmp_path / "other")
    add_documents(tmp_path / "index", passages[10:12])
    add_documents(tmp_path / "other", passages[10:])
    real = export_module._meta_version
    calls: list[int] = []

    def another_commits_meanwhile(db: object) -> int | None:
        calls.append(1)
        if len(calls) == 2:  # just before this export's commit, another export of the location commits (as on
            other = Index.open(tmp_path / "other")  # object storage, where no lock of the directory keeps it out)
            export_module._export(other, parse_location(tmp_path / "store"), ExportConfig(overwrite=True), None, 0.0,
                                  prepared_files)
            other.close()
        return real(db)

    monkeypatch.setattr(export_module, "_meta_version", another_commits_meanwhile)
    with pytest.raises(BusyError, match="was committed here while this one ran"):
        export_index(tmp_path / "index", tmp_path / "store", ExportConfig(update=True))
    monkeypatch.undo()
    assert len(open_lance_index(tmp_path / "store").passages) == len(passages)  # the other export is served, whole
