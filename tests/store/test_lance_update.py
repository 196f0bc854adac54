"""Updating a Lance export after `gearag add`: appended rows, pinned versions, pruning, replicas.

An update must rank exactly as a fresh export of the same index; a reader keeps the versions it opened;
an update that fails halfway leaves the previous export whole. Skipped without the ``lance`` extra.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import wiki_slice
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.errors import ConfigError
from gearag.indexing import build_index
from gearag.indexing.delta_generation import DeltaConfig
from gearag.indexing.incremental import add_documents, delete_documents
from gearag.model import Passage
from gearag.store.backend import open_index
from gearag.store.index import read_manifest
from gearag.store.shards import GENERATIONS_DIR, generation_ref, is_delta

pytest.importorskip("lancedb", reason="the lance extra is not installed")

from gearag.indexing.export import export_index
from gearag.store.lance import export as export_module
from gearag.store.lance.export import ExportConfig
from gearag.store.lance.index import LanceIndex
from gearag.store.lance.storage import connect, parse_location, table_names
from gearag.store.lance.versions import VERSIONS

UPDATE = ExportConfig(update=True)
_ENTITIES = export_module._entities
METHODS = ("bm25", "dense", "syncge", "gear")


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Passage], list[str]]:
    rows, questions = wiki_slice(36, 4)
    return [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)], [q["question"] for q in questions]


@pytest.fixture(scope="module")
def built(corpus: tuple[list[Passage], list[str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the first 24 passages, exported; copied by each test that changes it."""
    root = tmp_path_factory.mktemp("update")
    build_index(corpus[0][:24], root / "index", IndexConfig())
    export_index(root / "index", root / "store")
    return root


@pytest.fixture()
def work(built: Path, tmp_path: Path) -> Path:
    shutil.copytree(built / "index", tmp_path / "index")
    shutil.copytree(built / "store", tmp_path / "store")
    return tmp_path


def _ranked(g: Gearag, questions: list[str], method: str) -> list[list[tuple[int, float]]]:
    return [[(h.idx, h.score) for h in g.retrieve(q, method=method, top_k=8).passages] for q in questions]


def _versions(uri: Path) -> dict[str, list[int]]:
    db = connect(parse_location(uri))
    return {name: [int(v["version"]) for v in db.open_table(name).to_lance().versions()]
            for name in table_names(db)}


def test_an_update_appends_the_added_rows_and_ranks_as_a_fresh_export(
        work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    before = open_index(work / "store")
    assert isinstance(before, LanceIndex)
    old_fragments = {f.fragment_id for f in before.collection("passages").table.dataset.get_fragments()}
    grown = add_documents(work / "index", passages[24:])
    summary = export_index(work / "index", work / "store", UPDATE)
    assert summary["update"]["appended"] == {"passages": len(passages) - 24,
                                                 "triples": len(grown.triples) - len(before.triples)}
    export_index(work / "index", work / "fresh")
    updated, fresh = open_index(work / "store"), open_index(work / "fresh")
    assert isinstance(updated, LanceIndex)
    # The first rows are the previous export's data, not a copy of it.
    assert old_fragments < {f.fragment_id for f in updated.collection("passages").table.dataset.get_fragments()}
    assert list(updated.passages) == list(grown.passages)
    assert list(updated.triples.subjects) == list(grown.triples.subjects)
    for e in range(0, grown.graph.n_entities, 7):
        np.testing.assert_array_equal(updated.graph.entity_triples(e), grown.graph.entity_triples(e))
    a, b = Gearag(updated), Gearag(fresh)
    for method in METHODS:
        assert _ranked(a, questions, method) == _ranked(b, questions, method), method


def test_an_add_written_as_a_delta_exports_as_a_full_one(work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    """A delta generation (docs/delta.md) is exported whole: updated and fresh, it ranks as the same add
    written in full."""
    passages, questions = corpus
    shutil.copytree(work / "index", work / "full")
    add_documents(work / "index", passages[24:], delta=DeltaConfig(write="delta"))
    add_documents(work / "full", passages[24:], delta=DeltaConfig(write="full"))
    assert is_delta(read_manifest(work / "index" / GENERATIONS_DIR / generation_ref(
        work / "index", read_manifest(work / "index"))[0]))
    export_index(work / "index", work / "store", UPDATE)
    export_index(work / "index", work / "fresh")
    export_index(work / "full", work / "fresh-full")
    want = Gearag.open(work / "fresh-full")
    for got in (Gearag.open(work / "store"), Gearag.open(work / "fresh")):
        assert isinstance(got.index, LanceIndex)
        for method in METHODS:
            assert _ranked(got, questions, method) == _ranked(want, questions, method), method


def test_an_updates_rows_are_delta_indexes_until_there_are_too_many(
        work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    config = ExportConfig(update=True, index_deltas=1)

    def segments() -> set[int]:
        table = connect(parse_location(work / "store")).open_table("triples")
        return {int(table.index_stats(i.name).num_indices) for i in table.list_indices()}

    for stop, held in ((30, {2}), (len(passages), {1})):  # a delta, then merged with the next rows
        add_documents(work / "index", passages[24:stop] if stop == 30 else passages[30:])
        export_index(work / "index", work / "store", config)
        assert segments() == held
        export_index(work / "index", work / f"fresh{stop}")
        a, b = Gearag.open(work / "store"), Gearag.open(work / f"fresh{stop}")
        for method in ("bm25", "syncge"):
            assert _ranked(a, questions, method) == _ranked(b, questions, method), (stop, method)


def test_an_update_of_an_unchanged_index_writes_nothing(work: Path) -> None:
    versions = _versions(work / "store")
    summary = export_index(work / "index", work / "store", UPDATE)
    assert summary["update"] == {"appended": {}, "up_to_date": True}
    assert _versions(work / "store") == versions


def test_after_a_delete_an_update_writes_everything_and_says_why(
        work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    delete_documents(work / "index", ["p3"])
    said: list[str] = []
    summary = export_index(work / "index", work / "store", UPDATE, progress=said.append)
    assert "deleted" in summary["update"]["rewritten"] and any("exporting everything" in s for s in said)
    lance, embedded = open_index(work / "store"), open_index(work / "index")
    assert [p.id for p in lance.passages] == [p.id for p in embedded.passages]
    questions = corpus[1]
    assert _ranked(Gearag(lance), questions, "syncge") == _ranked(Gearag(embedded), questions, "syncge")


def test_a_reader_keeps_the_versions_it_opened_while_an_update_is_written(
        work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    reader = Gearag.open(work / "store")
    n, ranked = len(reader.index.passages), _ranked(reader, questions, "gear")
    add_documents(work / "index", passages[24:])
    export_index(work / "index", work / "store", UPDATE)
    assert len(reader.index.passages) == n and _ranked(reader, questions, "gear") == ranked
    assert [p.id for p in reader.index.passages] == [p.id for p in passages[:24]]
    assert len(open_index(work / "store").passages) == len(passages)


def test_an_interrupted_update_leaves_the_previous_export_whole_and_the_next_one_completes(
        work: Path, corpus: tuple[list[Passage], list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    passages, questions = corpus
    before = _ranked(Gearag.open(work / "store"), questions, "syncge")
    add_documents(work / "index", passages[24:])

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "_entities", fail)  # after the collection tables were appended to
    with pytest.raises(Exception, match="disk full"):
        export_index(work / "index", work / "store", UPDATE)
    monkeypatch.undo()
    kept = open_index(work / "store")
    assert [p.id for p in kept.passages] == [p.id for p in passages[:24]]
    assert _ranked(Gearag(kept), questions, "syncge") == before
    summary = export_index(work / "index", work / "store", UPDATE)
    assert summary["update"]["appended"]["passages"] == len(passages) - 24  # onto the previous export, once
    assert [p.id for p in open_index(work / "store").passages] == [p.id for p in passages]


def test_replaced_versions_go_only_after_keep_hours(work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    add_documents(work / "index", passages[24:30])
    export_index(work / "index", work / "store", UPDATE)
    kept = _versions(work / "store")
    add_documents(work / "index", passages[30:])
    export_index(work / "index", work / "store", UPDATE)  # the first update is not an hour old: nothing goes
    grown = _versions(work / "store")
    assert all(set(kept[name]) <= set(grown[name]) for name in kept)
    db = connect(parse_location(work / "store"))
    db.create_table("c_stale", [{"x": 1}])  # a table no export lists any more (e.g. a pool the index dropped)
    db.create_table("notes", [{"x": 1}])  # one gearag never writes: it stays
    previous = open_index(work / "store")
    assert isinstance(previous, LanceIndex)
    summary = export_index(work / "index", work / "store", ExportConfig(update=True, keep_hours=0))
    assert summary["update"]["up_to_date"]  # nothing to write, but what the live export does not read goes
    pruned = _versions(work / "store")
    assert "c_stale" not in pruned and "notes" in pruned and len(pruned["meta"]) == 1
    for name, version in previous.meta[VERSIONS].items():
        assert pruned[name] == [version], name
    assert _ranked(Gearag(previous), questions, "gear") == _ranked(Gearag.open(work / "store"), questions, "gear")
    add_documents(work / "index", [Passage("extra", "Extra", "An extra passage about nothing in particular.")])
    export_index(work / "index", work / "store", UPDATE)
    assert len(open_index(work / "store").passages) == len(passages) + 1


def test_update_needs_no_flag_on_an_empty_location_and_the_cli_names_it(
        work: Path, capsys: pytest.CaptureFixture[str], corpus: tuple[list[Passage], list[str]]) -> None:
    from gearag.cli import main

    summary = export_index(work / "index", work / "new", UPDATE)
    assert summary["update"] == {"rewritten": "no export"}
    with pytest.raises(ConfigError, match="--update"):
        export_index(work / "index", work / "store")
    add_documents(work / "index", corpus[0][24:])
    assert main(["export", str(work / "index"), str(work / "store"), "--update"]) == 0
    captured = capsys.readouterr()
    n = len(corpus[0]) - 24
    assert f'"passages": {n}' in captured.out and f"appending {n} rows" in captured.err
    assert main(["export", str(work / "index"), str(work / "store"), "--keep-hours", "-1"]) == 2
    assert "--keep-hours" in capsys.readouterr().err


def test_a_service_over_a_lance_export_serves_its_update(work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    from fastapi.testclient import TestClient

    from gearag.server import ServerSettings, create_app

    passages, _ = corpus
    said: list[str] = []
    settings = ServerSettings(access_log=False, reload_seconds=3600)  # the test looks (refresh)
    with TestClient(create_app(Gearag.open(work / "store"), settings, announce=said.append)) as client:

        def served() -> int:
            client.app.state.live.refresh()  # type: ignore[attr-defined]  # what its thread does every interval
            return int(client.get("/v1/index").json()["counts"]["passages"])

        assert served() == 24
        add_documents(work / "index", passages[24:])
        assert served() == 24  # the index directory changed; the export did not
        export_index(work / "index", work / "store", UPDATE)
        assert served() == len(passages)
        assert said == [f"index {parse_location(work / 'store').uri} updated: now serving {len(passages)} passages"]


def test_a_service_serves_an_export_committed_while_it_opened(work: Path,
                                                              corpus: tuple[list[Passage], list[str]]) -> None:
    """The meta version it compares is the one its index was read at, not the one there once it started."""
    from fastapi.testclient import TestClient

    from gearag.server import ServerSettings, create_app

    passages, _ = corpus
    opened = Gearag.open(work / "store")
    add_documents(work / "index", passages[24:])
    export_index(work / "index", work / "store", UPDATE)  # committed after the open, before the service starts
    with TestClient(create_app(opened, ServerSettings(access_log=False, reload_seconds=3600))) as client:
        live = client.app.state.live  # type: ignore[attr-defined]
        assert live.refresh()
        assert live.get().index.meta_version > opened.index.meta_version  # type: ignore[attr-defined]
        info = client.get("/v1/index").json()
        assert info["counts"]["passages"] == len(passages)
        assert info["served"]["stamp"] == str(live.get().index.meta_version)  # which export a replica serves


def test_an_interrupted_export_resumes_at_the_collection_table_it_reached(
        work: Path, corpus: tuple[list[Passage], list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.store.lance.resume import PROGRESS_TABLE

    passages, questions = corpus
    add_documents(work / "index", passages[24:])
    written: list[str] = []
    write = export_module._write

    def counted(db: object, table: str, *args: object) -> object:
        written.append(table)
        return write(db, table, *args)  # type: ignore[arg-type]

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "_write", counted)
    monkeypatch.setattr(export_module, "_entities", fail)  # after both collection tables
    with pytest.raises(Exception, match="disk full"):
        export_index(work / "index", work / "new")
    with pytest.raises(ConfigError, match=r"interrupted gearag export.*--overwrite to finish it"):
        export_index(work / "index", work / "new")
    pq = ExportConfig(overwrite=True, ann_index="ivf_pq")  # other settings: what was finished is not reused
    with pytest.raises(Exception, match="disk full"):
        export_index(work / "index", work / "new", pq)
    assert written == ["passages", "triples"] * 2
    monkeypatch.setattr(export_module, "_entities", _ENTITIES)
    said: list[str] = []
    export_index(work / "index", work / "new", pq, progress=said.append)
    assert written == ["passages", "triples"] * 2  # kept, not written again
    assert sum("kept from the interrupted export" in line for line in said) == 2
    assert PROGRESS_TABLE not in table_names(connect(parse_location(work / "new")))  # committed: nothing to resume
    export_index(work / "index", work / "fresh")
    a, b = Gearag.open(work / "new"), Gearag.open(work / "fresh")
    for method in METHODS:
        assert _ranked(a, questions, method) == _ranked(b, questions, method), method


def test_pruning_keeps_the_tables_an_interrupted_export_finished(work: Path) -> None:
    from gearag.store.lance.versions import prune

    db = connect(parse_location(work / "store"))
    live = open_index(work / "store")
    assert isinstance(live, LanceIndex)
    db.create_table("c_pending", [{"x": 1}])  # a pool table an interrupted export finished (to be resumed)
    prune(db, live.meta, keep_hours=0, resumed=frozenset({"c_pending"}))
    assert "c_pending" in table_names(db)
    assert prune(db, live.meta, keep_hours=0) == 1 and "c_pending" not in table_names(db)  # versions went before


def test_the_arrays_table_an_older_export_wrote_is_not_read_and_pruning_removes_it(
        work: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    """An older gearag's export also held the resolution's graph arrays (an ``arrays`` table): nothing reads it,
    and a prune past the live export's keep time drops it as a table that export does not list."""
    from gearag.store.lance.versions import prune

    db = connect(parse_location(work / "store"))
    db.create_table("arrays", [{"name": "graph/entities.json", "data": b"not read"}])
    live = open_index(work / "store")
    assert isinstance(live, LanceIndex) and "arrays" not in live.meta[VERSIONS]
    assert all(_ranked(Gearag.open(work / "store"), corpus[1], "syncge"))
    assert prune(db, live.meta, keep_hours=0) >= 1 and "arrays" not in table_names(db)
