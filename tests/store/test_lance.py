"""The LanceDB backend on a real 2Wiki slice: agreement with the embedded index, S3 replicas, errors.

The method contract on a Lance index is tests/test_contract.py (its ``app`` fixture runs every
method on both backends). Skipped only when the ``lance`` extra is not installed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import wiki_slice
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.embed import index_embedder
from gearag.errors import ConfigError, IndexFormatError
from gearag.graph.prepared import stored_prepared
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.retrieve.bm25 import bm25_scores, search_bm25
from gearag.retrieve.dense import search_dense
from gearag.store.backend import backend_of, open_index
from gearag.store.index import Index
from gearag.store.npy import is_mapped
from numbering import flattened_generation
from prepared_oracle import stored_graph_arrays

pytest.importorskip("lancedb", reason="the lance extra is not installed")

from gearag.indexing.export import export_index
from gearag.store.lance.export import HELD_ARRAYS, ExportConfig
from gearag.store.lance.index import LanceIndex

#: Dense scores: Lance returns ``1 - dot`` in float32, so scores agree to float32 rounding.
SCORE_TOL = 1e-5


@pytest.fixture(scope="module")
def slice_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, list[str]]:
    rows, questions = wiki_slice(30, 4)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    index = build_index(passages, tmp_path_factory.mktemp("lance") / "index", IndexConfig())
    return index, [q["question"] for q in questions]


@pytest.fixture(scope="module")
def lance(slice_index: tuple[Index, list[str]], tmp_path_factory: pytest.TempPathFactory) -> LanceIndex:
    index, _ = slice_index
    uri = tmp_path_factory.mktemp("lance") / "store"
    export_index(index.path, uri)
    opened = open_index(uri)
    assert isinstance(opened, LanceIndex)
    return opened


def _same_ranking(a: list, b: list) -> None:
    """Same rows in the same order, except that rows whose scores tie (within SCORE_TOL) may swap."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert abs(x.score - y.score) <= SCORE_TOL
        if x.idx != y.idx:
            tied = {h.idx for h in a if abs(h.score - x.score) <= SCORE_TOL}
            assert y.idx in tied


def test_rows_texts_and_sources_match(slice_index: tuple[Index, list[str]], lance: LanceIndex) -> None:
    index, _ = slice_index
    assert backend_of(lance.location) == "lance" and backend_of(index.path) == "embedded"
    assert list(lance.passages) == list(index.passages)
    assert [lance.passages[r] for r in (0, 7, len(index.passages) - 1)] == [index.passages[r] for r in
                                                                             (0, 7, len(index.passages) - 1)]
    n_t = len(index.triples)
    for t in (0, n_t // 2, n_t - 1):
        assert lance.triples[t] == index.triples[t] and lance.triples.text(t) == index.triples.text(t)
    assert list(lance.triples.subjects) == list(index.triples.subjects)
    tl, te = lance.collection("triples"), index.collection("triples")
    assert [tl.sources(t) for t in range(0, n_t, 37)] == [te.sources(t) for t in range(0, n_t, 37)]
    ids = np.arange(0, n_t, 11)
    np.testing.assert_allclose(tl.rows_vectors(ids), te.rows_vectors(ids), atol=0)
    np.testing.assert_allclose(tl.rows_weights(ids), te.rows_weights(ids), atol=0)  # type: ignore[arg-type]


def test_graph_postings_match(slice_index: tuple[Index, list[str]], lance: LanceIndex) -> None:
    index, _ = slice_index
    g, lg = index.graph, lance.graph
    assert list(lg.entities) == list(g.entities)
    for e in range(g.n_entities):
        np.testing.assert_array_equal(lg.entity_triples(e), g.entity_triples(e))
    for t in range(len(index.triples)):
        np.testing.assert_array_equal(lg.neighbours(t), g.neighbours(t))


@pytest.mark.parametrize("collection", ["passages", "triples"])
def test_dense_top_k_matches_exact_search(slice_index: tuple[Index, list[str]], lance: LanceIndex,
                                          collection: str) -> None:
    index, questions = slice_index
    q = index_embedder(index).encode(questions)
    embedded = search_dense(index.collection(collection), q, 10)
    on_lance = search_dense(lance.collection(collection), q, 10)
    for a, b in zip(embedded, on_lance, strict=True):
        _same_ranking(a, b)


@pytest.mark.parametrize(("kind", "partitions"), [("ivf_sq", 0), ("ivf_pq", 0), ("ivf_sq", 4)])
def test_dense_ann_index_is_built_at_scale_and_exact_bypasses_it(slice_index: tuple[Index, list[str]],
                                                                  tmp_path: Path, kind: str, partitions: int) -> None:
    """With an IVF index of either kind (forced on this slice's triples; √n partitions or a given number) exact
    search still equals the embedded one, and the approximate search finds most of its top 10."""
    from gearag.store.lance.collection import LanceSearchConfig
    from gearag.store.lance.index import open_lance_index

    index, questions = slice_index
    assert len(index.triples) >= 256 > len(index.passages)  # PQ trains 256 centroids
    export_index(index.path, tmp_path / "ann", ExportConfig(ann_min_rows=256, ann_index=kind,
                                                            ann_partitions=partitions))
    ann = open_lance_index(tmp_path / "ann")
    triples, passages = ann.meta["collections"]["triples"], ann.meta["collections"]["passages"]
    assert triples["ann"] and triples["ann_index"] == kind
    assert triples["ann_partitions"] == (partitions or int(np.sqrt(len(index.triples))))
    assert not passages["ann"] and passages["ann_index"] is None
    exact = open_lance_index(tmp_path / "ann", config=LanceSearchConfig(exact=True))
    q = index_embedder(index).encode(questions)
    truth = search_dense(index.collection("triples"), q, 10)
    for a, b in zip(truth, search_dense(exact.collection("triples"), q, 10), strict=True):
        _same_ranking(a, b)
    approx = search_dense(ann.collection("triples"), q, 10)
    assert all(len(hits) == 10 for hits in approx)
    found = sum(len({h.idx for h in a} & {h.idx for h in t}) for a, t in zip(approx, truth, strict=True))
    assert found >= 0.5 * 10 * len(questions)


def test_an_unknown_ann_index_is_a_one_line_error_before_anything_is_written(
        slice_index: tuple[Index, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gearag.cli import main

    index, _ = slice_index
    assert main(["export", str(index.path), str(tmp_path / "x"), "--ann-index", "hnsw"]) == 2
    err = capsys.readouterr().err
    assert "--ann-index: unknown value 'hnsw' (choose from ivf_sq, ivf_pq)" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_bm25_matches_the_same_rows(slice_index: tuple[Index, list[str]], lance: LanceIndex) -> None:
    """Same analysed terms, so the same rows match; the BM25 variants differ, so scores (and order) may."""
    index, questions = slice_index
    for name in ("passages", "triples"):
        e, lc = index.collection(name), lance.collection(name)
        n = len(e)
        for question in questions:
            a, b = search_bm25(e, question, n), search_bm25(lc, question, n)
            assert {h.idx for h in a} == {h.idx for h in b} and a
            assert [h.score for h in b] == sorted((h.score for h in b), reverse=True)
            rows = np.arange(0, n, 3)
            se, sl = bm25_scores(e, question, rows), bm25_scores(lc, question, rows)
            np.testing.assert_array_equal(se > 0, sl > 0)
    assert search_bm25(lance.collection("passages"), "the of and", 5) == []


def test_stored_graphs_match(slice_index: tuple[Index, list[str]], lance: LanceIndex) -> None:
    """A build stores its prepared passage graph, not the resolution's arrays (an add onto nothing): the export
    holds it array for array."""
    index, _ = slice_index
    assert stored_graph_arrays(index) is None
    pa, pb = stored_prepared(index), stored_prepared(lance)
    assert pa is not None and pb is not None and pa.meta() == pb.meta()
    for name, array in pa.files().items():
        np.testing.assert_array_equal(np.asarray(pb.files()[name]), np.asarray(array), err_msg=name)


def test_a_sharded_index_exports_like_a_plain_one(tmp_path: Path) -> None:
    """A sharded index (after ``gearag add``) has no arrays/ or graph/ of its own; the export takes them from
    the loaded index and the current generation, and the Lance index holds the same rows and graph."""
    from gearag.indexing.incremental import add_documents

    rows, _ = wiki_slice(16, 1)
    passages = [Passage(f"s{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    build_index(passages[:10], tmp_path / "grown", IndexConfig())
    grown = add_documents(tmp_path / "grown", passages[10:])
    assert grown.manifest["layout"] == "sharded" and not (tmp_path / "grown" / "arrays").exists()
    export_index(tmp_path / "grown", tmp_path / "store")
    lance = open_index(tmp_path / "store")
    assert isinstance(lance, LanceIndex)
    assert list(lance.passages) == list(grown.passages)
    assert list(lance.triples.subjects) == list(grown.triples.subjects)
    np.testing.assert_array_equal(lance.triples.passage, grown.triples.passage)
    np.testing.assert_array_equal(lance.passage_triple_indptr, grown.passage_triple_indptr)
    for name in ("head", "tail", "indptr"):
        np.testing.assert_array_equal(getattr(lance.graph, name), getattr(grown.graph, name))
    for entity in range(grown.graph.n_entities):
        np.testing.assert_array_equal(lance.graph.entity_triples(entity), grown.graph.entity_triples(entity))
    # The add's delta written whole stores no resolution arrays (docs/delta.md): the export holds its prepared
    # graph, array for array.
    assert flattened_generation(grown) and stored_graph_arrays(grown) is None
    pa, pb = stored_prepared(grown), stored_prepared(lance)
    assert pa is not None and pb is not None and pa.meta() == pb.meta()
    for name, array in pa.files().items():
        np.testing.assert_array_equal(np.asarray(pb.files()[name]), np.asarray(array), err_msg=name)


def test_open_memory_maps_the_graph_files_from_a_local_copy(lance: LanceIndex, tmp_path: Path) -> None:
    """The integer arrays and the prepared passage graph are copied once into the cache directory (checked
    against their hashes) and memory-mapped; nothing reads them whole per process (BENCHMARKS.md)."""
    from gearag.store.lance.collection import LanceSearchConfig
    from gearag.store.lance.files import FILES_TABLE, PART_BYTES
    from gearag.store.lance.index import open_lance_index

    cache = tmp_path / "cache"
    opened = open_lance_index(lance.location, config=LanceSearchConfig(cache_dir=str(cache)))
    assert isinstance(opened.graph.head, np.memmap) and isinstance(opened.triples.passage, np.memmap)
    np.testing.assert_array_equal(opened.graph.head, lance.graph.head)
    copies = sorted(p.relative_to(opened.files.directory).as_posix() for p in opened.files.directory.rglob("*.npy"))
    assert copies == sorted(HELD_ARRAYS) and opened.files.directory.parent.parent == cache
    assert "arrays/entity_indices.npy" not in opened.files  # the postings come from the entities table
    parts = opened.db.open_table(FILES_TABLE).to_lance().to_table(columns=["data"]).column("data").to_pylist()
    assert max(len(p) for p in parts) <= PART_BYTES
    prepared = stored_prepared(opened)
    assert prepared is not None and is_mapped(prepared.columns.sources[0].rows.data)
    # A damaged local copy (wrong size, e.g. a crash before the rename on another filesystem) is fetched again.
    target = opened.files.directory / "arrays/triple_head.npy"
    target.write_bytes(b"x")
    again = open_lance_index(lance.location, config=LanceSearchConfig(cache_dir=str(cache)))
    np.testing.assert_array_equal(again.graph.head, lance.graph.head)
    assert not list(opened.files.directory.rglob("*.part"))


def test_lance_queries_rank_through_the_prepared_graph_as_embedded_does(
        slice_index: tuple[Index, list[str]], lance: LanceIndex) -> None:
    from gearag.derive.graph_for import passage_graph_for

    index, questions = slice_index
    ge, gl = passage_graph_for(index), passage_graph_for(lance)
    assert is_mapped(gl.prepared.columns.sources[0].rows.indices)
    for question in questions:
        assert gl.question_entities(question) == ge.question_entities(question)
        assert gl.rank(question) == ge.rank(question)


def test_each_collection_table_indexes_its_row_column(lance: LanceIndex) -> None:
    """BM25 of a query's candidate rows filters the full-text search by ``row``: a scalar index makes that a
    lookup instead of a scan of the column (SyncGE at 1M: ~210 of ~255 ms a query without it)."""
    for name in ("passages", "triples"):
        indexed = [ix.columns for ix in lance.collection(name).table.table.list_indices()]
        assert ["row"] in indexed and ["tokens"] in indexed, (name, indexed)


def test_an_export_without_the_row_index_opens_with_a_warning_to_export_again(
        lance: LanceIndex, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from gearag.store.lance import index as lance_index

    with caplog.at_level(logging.WARNING, logger="gearag.store.lance.index"):
        lance_index.open_lance_index(lance.location)
    assert not caplog.records  # an export of this gearag says it has the index
    real = lance_index.read_meta_version

    def older_meta(db: object, loc: object) -> tuple[dict[str, object], int]:
        meta, version = real(db, loc)
        return {k: v for k, v in meta.items() if k != lance_index.ROW_INDEX}, version

    monkeypatch.setattr(lance_index, "read_meta_version", older_meta)
    with caplog.at_level(logging.WARNING, logger="gearag.store.lance.index"):
        older = lance_index.open_lance_index(lance.location)
    assert older.passages[0] == lance.passages[0]
    assert any("export the index again" in r.getMessage() for r in caplog.records)


def test_the_offline_readers_read_their_candidates_in_a_few_takes(
        slice_index: tuple[Index, list[str]], lance: LanceIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """SyncGE's reader and GEAR's gist read the candidate triples' fields in one take per column (one take
    per candidate made a SyncGE query ~4x slower at 100k passages), and pick the embedded index's facts."""
    from gearag.agent.config import AgentEngineConfig
    from gearag.agent.offline import offline_engine
    from gearag.store.lance.collection import LanceTable
    from gearag.store.lance.index import open_lance_index

    index, questions = slice_index
    fresh = open_lance_index(lance.location)  # its row caches empty
    takes: list[int] = []
    real = LanceTable.take

    def counted(self: LanceTable, rows: object, columns: list[str]) -> object:
        takes.append(1)
        return real(self, rows, columns)

    monkeypatch.setattr(LanceTable, "take", counted)
    rows = list(range(len(index.passages)))
    on_lance, embedded = (offline_engine(ix, AgentEngineConfig()) for ix in (fresh, index))
    for question in questions:
        for role in ("reader", "gist"):
            takes.clear()
            facts = getattr(on_lance, role).read(question, rows)
            assert facts and len(takes) <= 8, (role, len(takes))
            assert facts == getattr(embedded, role).read(question, rows)


def test_an_export_of_the_previous_format_asks_to_be_exported_again(lance: LanceIndex, tmp_path: Path) -> None:
    import shutil

    from gearag.store.lance.storage import META_TABLE, connect, parse_location

    copy = tmp_path / "old"
    shutil.copytree(lance.location, copy)
    db = connect(parse_location(copy))
    db.open_table(META_TABLE).delete("true")
    db.open_table(META_TABLE).add([{"meta": json.dumps({**lance.meta, "format_version": 1})}])
    with pytest.raises(IndexFormatError, match=r"format 1 is not supported.*export the index again"):
        open_index(copy)


def test_export_refuses_to_overwrite_what_it_did_not_write(slice_index: tuple[Index, list[str]],
                                                           tmp_path: Path) -> None:
    index, _ = slice_index
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty and not a gearag Lance index"):
        export_index(index.path, tmp_path / "other")
    with pytest.raises(ConfigError, match="holds an embedded gearag index"):
        export_index(index.path, index.path)
    export_index(index.path, tmp_path / "mine")
    with pytest.raises(ConfigError, match="--overwrite"):
        export_index(index.path, tmp_path / "mine")
    export_index(index.path, tmp_path / "mine", ExportConfig(overwrite=True))
    assert len(open_index(tmp_path / "mine").passages) == len(index.passages)
    from gearag.errors import BusyError
    from gearag.store.writer import IndexLock

    lock = IndexLock(tmp_path / "busy")  # another export or build holds the directory
    lock.acquire()
    try:
        with pytest.raises(BusyError, match="another gearag build"):
            export_index(index.path, tmp_path / "busy")
    finally:
        lock.release()
    assert not (tmp_path / "busy").exists()


def test_an_interrupted_export_is_replaced_with_overwrite_and_never_loaded(
        slice_index: tuple[Index, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An export that fails after writing some tables leaves no loadable index; --overwrite replaces it."""
    from gearag.store.lance import export as export_module

    index, _ = slice_index

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "_entities", fail)
    with pytest.raises(Exception, match="disk full"):
        export_index(index.path, tmp_path / "cut")
    monkeypatch.undo()
    with pytest.raises(Exception, match="not a gearag Lance index"):
        open_index(tmp_path / "cut")
    with pytest.raises(ConfigError, match=r"interrupted gearag export.*--overwrite"):
        export_index(index.path, tmp_path / "cut")
    export_index(index.path, tmp_path / "cut", ExportConfig(overwrite=True))
    assert len(open_index(tmp_path / "cut").passages) == len(index.passages)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) < 400
    return text


def test_bad_locations_are_one_line_errors(slice_index: tuple[Index, list[str]], tmp_path: Path) -> None:
    index, _ = slice_index
    with pytest.raises(ConfigError, match="unsupported URI scheme 'ftp'") as info:
        Gearag.open("ftp://host/idx")
    _one_line(info.value)
    with pytest.raises(ConfigError, match="unknown option 'colour'"):
        Gearag.open("s3://bucket/idx?colour=red")
    with pytest.raises(ConfigError, match="no bucket"):
        Gearag.open("s3:///idx")
    export_index(index.path, tmp_path / "idx")
    import shutil

    shutil.rmtree(tmp_path / "idx" / "entities.lance")
    with pytest.raises(IndexFormatError, match="missing or unreadable table entities") as info:
        Gearag.open(tmp_path / "idx")
    _one_line(info.value)
    shutil.rmtree(tmp_path / "idx" / "meta.lance")  # an interrupted export: no meta table
    with pytest.raises(IndexFormatError, match=r"not a gearag Lance index \(no meta table; an interrupted"):
        Gearag.open(tmp_path / "idx")


def test_without_the_extra_a_lance_uri_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # import lancedb -> ImportError
    with pytest.raises(ConfigError, match=r"pip install 'gearag\[lance\]'") as info:
        Gearag.open("s3://bucket/idx?endpoint=http://127.0.0.1:1")
    _one_line(info.value)


# --------------------------------------------------------------------------- object storage (moto)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 (port chosen by the OS) with bucket ``gearag``; fake credentials."""
    pytest.importorskip("moto", reason="moto[server] is in the dev extra")
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
                                            "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1")
    for key in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        os.environ.pop(key, None)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        _, port = server.get_host_and_port()
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="gearag")
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_two_replicas_read_one_index_from_s3(slice_index: tuple[Index, list[str]], s3_endpoint: str) -> None:
    from fastapi.testclient import TestClient

    from gearag.server.app import create_app
    from gearag.server.settings import ServerSettings

    index, questions = slice_index
    uri = f"s3://gearag/wiki?endpoint={s3_endpoint}"
    export_index(index.path, uri)
    replicas = [Gearag.open(uri), Gearag.open(uri)]
    assert replicas[0].index is not replicas[1].index
    assert replicas[0].index.identity == replicas[1].index.identity
    local = Gearag(index)
    for method in ("dense", "syncge"):
        for question in questions[:2]:
            rows = [[h.idx for h in r.retrieve(question, method, 5).passages] for r in replicas]
            assert rows[0] == rows[1] and len(rows[0]) == 5
            if method == "dense":  # exact search: the embedded ranking (syncge's BM25 parts may differ)
                assert rows[0] == [h.idx for h in local.retrieve(question, method, 5).passages]
    answers = []
    for replica in replicas:
        with TestClient(create_app(replica, ServerSettings())) as client:
            reply = client.post("/v1/retrieve", json={"question": questions[0], "method": "bm25", "top_k": 5})
            assert reply.status_code == 200, reply.text
            answers.append(reply.json())
    assert answers[0]["passages"] == answers[1]["passages"] and answers[0]["passages"]


def test_an_update_on_s3_reaches_new_replicas_while_open_ones_keep_their_versions(
        tmp_path: Path, s3_endpoint: str) -> None:
    from gearag.indexing.incremental import add_documents

    rows, questions = wiki_slice(16, 2)
    passages = [Passage(f"u{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    build_index(passages[:10], tmp_path / "idx", IndexConfig())
    uri = f"s3://gearag/updated?endpoint={s3_endpoint}"
    export_index(tmp_path / "idx", uri)
    serving = Gearag.open(uri)
    before = [h.idx for h in serving.retrieve(questions[0]["question"], "syncge", 5).passages]
    add_documents(tmp_path / "idx", passages[10:13])
    update = ExportConfig(update=True, keep_hours=0)
    assert export_index(tmp_path / "idx", uri, update)["update"]["appended"]["passages"] == 3
    assert len(serving.index.passages) == 10  # its versions, while the update is live
    assert [h.idx for h in serving.retrieve(questions[0]["question"], "syncge", 5).passages] == before
    assert [p.id for p in Gearag.open(uri).index.passages] == [p.id for p in passages[:13]]
    add_documents(tmp_path / "idx", passages[13:])
    export_index(tmp_path / "idx", uri, update)  # first removes what the first export wrote and the update replaced
    assert [p.id for p in Gearag.open(uri).index.passages] == [p.id for p in passages]


def test_an_export_to_s3_stops_while_another_holds_the_location(
        tmp_path: Path, s3_endpoint: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Object storage has no lock: the export lease (gearag.store.lance.exclusive) keeps a second export out."""
    from gearag.cli import main
    from gearag.store.lance.exclusive import LEASE_TABLE, ExportLease
    from gearag.store.lance.storage import connect, parse_location, table_names

    rows, _ = wiki_slice(8, 1)
    build_index([Passage(f"x{i}", r["title"], r["text"]) for i, r in enumerate(rows)], tmp_path / "idx", IndexConfig())
    uri = f"s3://gearag/leased?endpoint={s3_endpoint}"
    db = connect(parse_location(uri))
    with ExportLease(db, parse_location(uri), 60.0):  # another export, running
        assert main(["export", str(tmp_path / "idx"), uri]) == 2
        assert "another gearag export" in capsys.readouterr().err
        assert "meta" not in table_names(db)  # it wrote nothing
    assert main(["export", str(tmp_path / "idx"), uri]) == 0
    assert LEASE_TABLE not in table_names(db) and len(Gearag.open(uri).index.passages) == len(rows)


def test_unreachable_or_missing_s3_index_is_a_quick_one_line_error(s3_endpoint: str) -> None:
    with pytest.raises(IndexFormatError, match="not a gearag Lance index") as info:
        Gearag.open(f"s3://gearag/nothing-here?endpoint={s3_endpoint}")
    _one_line(info.value)
    # Port 1 refuses connections: bounded by connect_timeout, max_retries and retry_timeout.
    bounded = "connect_timeout=1&timeout=2&max_retries=0&retry_timeout=1"
    with pytest.raises(IndexFormatError, match=r"object store at http://127\.0\.0\.1:1 failed") as info:
        Gearag.open(f"s3://gearag/idx?endpoint=http://127.0.0.1:1&{bounded}")
    _one_line(info.value)


def test_cli_export_info_and_ask_on_a_lance_uri(slice_index: tuple[Index, list[str]], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from gearag.cli import main

    index, questions = slice_index
    uri = str(tmp_path / "cli-lance")
    assert main(["export", str(index.path), uri]) == 0
    capsys.readouterr()
    assert main(["info", uri]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["backend"] == "lance" and summary["counts"]["passages"] == len(index.passages)
    assert main(["ask", uri, questions[0], "--method", "dense", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passages"]
    assert main(["info", "ftp://nowhere/x"]) == 2
    assert "unsupported URI scheme" in capsys.readouterr().err


def test_updates_of_a_lance_export_name_the_index_directory_to_update(lance: LanceIndex, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from gearag.cli import main

    corpus = tmp_path / "more.jsonl"
    corpus.write_text('{"title": "A", "text": "An added passage."}\n', encoding="utf-8")
    ids = tmp_path / "ids.txt"
    ids.write_text("p0\n", encoding="utf-8")
    for argv in (["add", str(lance.location), str(corpus)], ["delete", str(lance.location), str(ids)],
                 ["compact", str(lance.location)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "a Lance export is read-only" in err and "export it again" in err and len(err.strip().splitlines()) == 1


def test_lances_session_caches_are_bounded_by_the_config(lance: LanceIndex) -> None:
    """Full-text and metadata pages cached by LanceDB stay under the configured sizes (its defaults allow 7 GiB)."""
    from gearag.store.lance.collection import LanceSearchConfig
    from gearag.store.lance.index import open_lance_index

    sizes = []
    small = 0.05  # MB: well under what these searches cache (~0.5 MB)
    for config in (LanceSearchConfig(), LanceSearchConfig(index_cache_mb=small, metadata_cache_mb=small)):
        opened = open_lance_index(lance.location, config=config)
        for name in ("passages", "triples"):
            for word in ("film", "born", "director", "river", "album", "war", "king", "city", "song", "team"):
                search_bm25(opened.collection(name), f"{word} of the year", 10)
        sizes.append(opened.session.size_bytes)
    assert sizes[0] > 4 * small * 2**20 and sizes[1] < sizes[0] / 2, sizes


def test_a_prepared_graph_of_another_version_is_prepared_in_memory_instead(
        slice_index: tuple[Index, list[str]], lance: LanceIndex, tmp_path: Path) -> None:
    import shutil

    from gearag.derive.graph_for import passage_graph_for
    from gearag.store.lance.storage import META_TABLE, connect, parse_location

    index, questions = slice_index
    copy = tmp_path / "other"
    shutil.copytree(lance.location, copy)
    db = connect(parse_location(copy))
    db.open_table(META_TABLE).delete("true")
    db.open_table(META_TABLE).add([{"meta": json.dumps({**lance.meta, "prepared": {**lance.meta["prepared"],
                                                                                   "version": -1}})}])
    opened = open_index(copy)
    assert stored_prepared(opened) is None
    graph = passage_graph_for(opened)
    assert not is_mapped(graph.prepared.columns.sources[0].rows.data)
    assert graph.rank(questions[0]) == passage_graph_for(index).rank(questions[0])
