"""``gearag export INDEX_DIR URI``: a built index into Lance tables (local directory or object storage).

Tables (one Lance dataset each, under ``URI``):

* ``passages`` — ``row, id, title, text, tokens, vector``;
* ``triples`` — ``row, subject, predicate, object, tokens, vector[, weight]``;
* ``entities`` — ``row, name, triples``: the entity → triples postings of the beam search (GEAR §4.2);
* ``c_<name>`` — any further collection (SiReRAG pools): ``row, text, tokens, vector[, weight], sources, record``;
* ``files`` — ``name, part, data``: what queries read by position, memory-mapped from a local copy
  (:mod:`gearag.store.lance.files`): the integer graph arrays (triple head/tail entity, entity CSR
  offsets, triple → passage, passage → triples) and the passage graph prepared for the default query
  settings (:mod:`gearag.graph.prepared`; derived by the caller when the index did not store one);
* ``meta`` — one row: the source index's manifest, what the export wrote and the version of each table
  it wrote (:mod:`gearag.store.lance.versions`). Written last, so an interrupted export is never
  loaded: a first export leaves no ``meta``, a later one the previous ``meta`` and the versions it
  names. ``ExportConfig.update`` appends the rows an add gave the index instead of writing them again,
  and an interrupted export resumes at the collection table it reached (:mod:`gearag.store.lance.resume`);
* ``gearag`` — one row, written first and never dropped: marks the location as gearag's, so an
  interrupted export can be replaced with ``--overwrite`` while tables gearag did not write never are.

An export by an older gearag also wrote ``arrays`` (the resolution's graph arrays, where the index stored
them): none is written or read now, and a later export removes it with the versions it replaced
(:func:`~gearag.store.lance.versions.prune`).

``tokens`` is the row's text as gearag's BM25 analyser sees it (stop words removed, Snowball stems,
space-separated); the full-text index over it splits on whitespace and changes nothing else, so the
Lance BM25 and bm25s score the same terms (their BM25 variants differ: docs/lance.md).
Collections with at least ``ann_min_rows`` rows get an IVF vector index (:func:`ann_config`: int8
scalar-quantised IVF-SQ by default, or IVF-PQ); smaller ones are searched exactly (flat).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gearag.errors import BusyError, ConfigError, IndexFormatError
from gearag.options import setting
from gearag.store.collection import PASSAGES, TRIPLES, Collection
from gearag.store.graph import TripleGraph
from gearag.store.index import FIXED_FILES, GRAPH_DIR, Index
from gearag.store.lance.exclusive import LEASE_TABLE, ExportLease
from gearag.store.lance.files import FILES_TABLE, file_batches
from gearag.store.lance.resume import clear, finished, record, settings_key
from gearag.store.lance.storage import (
    ENTITIES_TABLE,
    META_TABLE,
    OWNER_TABLE,
    Location,
    connect,
    import_lancedb,
    parse_location,
    store_error,
    table_names,
)
from gearag.store.lance.versions import (
    EXPORTED_AT,
    LINEAGE,
    VERSIONS,
    Appendable,
    appendable,
    lineage,
    meta_version,
    prune,
)
from gearag.tokenizer import tokenize

if TYPE_CHECKING:  # the lance extra
    from lancedb.index import IvfPq, IvfSq

FORMAT = "gearag-lance"
#: 2: the integer arrays moved from ``arrays`` to the ``files`` table, with the prepared passage graph.
FORMAT_VERSION = 2
#: The vector indexes an export can build (:func:`ann_config`).
ANN_INDEXES = ("ivf_sq", "ivf_pq")
#: Meta key: the collection tables have a scalar index on ``row`` (earlier exports scan the column).
ROW_INDEX = "row_index"
#: Integer arrays of the embedded layout.
ARRAY_FILES = tuple(f for f in FIXED_FILES if f.endswith(".npy"))
#: The integer arrays a Lance index's queries read (``files`` table). ``arrays/entity_indices.npy`` (the
#: entity → triples postings, 8 bytes per triple) is not exported: the entities table holds the postings.
HELD_ARRAYS = tuple(f for f in ARRAY_FILES if f != "arrays/entity_indices.npy")


@dataclass(frozen=True)
class ExportConfig:
    """How an index is written to Lance."""

    ann_min_rows: int = setting(100_000, "collections with at least this many rows get an IVF vector index",
                                min=1)
    ann_index: str = setting("ivf_sq", "the vector index of those collections: ivf_sq (int8 scalar quantisation) or "
                             "ivf_pq (product quantisation: a quarter of ivf_sq's size, lower recall)",
                             choices=ANN_INDEXES)
    ann_partitions: int = setting(0, "IVF partitions of each vector index (0: √rows; fewer make the index faster "
                                     "to build and each probe scan more rows)", min=0)
    batch: int = setting(8192, "rows per written batch (bounds the export's extra memory)", min=1)
    overwrite: bool = setting(False, "replace a Lance index gearag wrote at URI (never anything else)")
    update: bool = setting(False, "bring the Lance index gearag wrote at URI up to date: append the rows an add "
                                  "gave the index since, write the rest anew (after a delete or compact: all of it)")
    keep_hours: float = setting(1.0, "keep the table versions an export replaces this many hours for the replicas "
                                     "still reading them; a later export removes them", min=0.0)
    #: Merging an update's rows into a table's indexes rewrites them (60–100 s of a 1M update; docs/benchmarks-log.md,
    #: "Updating a Lance export"); a delta index holds only its rows, and searches read each delta beside the
    #: rest (full-text scores use the statistics of all of them: the same as one index's).
    index_deltas: int = setting(4, "an update indexes its rows as a delta of each table index; at this many "
                                   "deltas it merges them into the index instead (rewriting it; 0: every update)",
                                min=0)
    #: Object storage has no lock: an export there holds a lease it renews (gearag.store.lance.exclusive).
    lease_seconds: float = setting(120.0, "object storage: an export's lease on the location lapses this many "
                                          "seconds after its last renewal (renewed every quarter of that); an export "
                                          "that finds a live lease there stops", positive=True)

    def __post_init__(self) -> None:
        if self.ann_index not in ANN_INDEXES:
            raise ConfigError(f"--ann-index: unknown value {self.ann_index!r} (choose from {', '.join(ANN_INDEXES)})")


def ann_config(kind: str, n_rows: int, dim: int, partitions: int = 0) -> IvfPq | IvfSq:
    """LanceDB's vector index config for ``n_rows`` vectors of ``dim`` floats (dot product; ``partitions``, or
    √n when 0: assigning the rows then costs n·√n, so at 100M+ rows a cap makes the build tractable).

    ``ivf_sq`` (the default) keeps each vector as ``dim`` int8 codes; ``ivf_pq`` keeps ``dim / 8``
    one-byte sub-vector codes, 4× smaller. On the wordllama vectors of the scale corpus, IVF-SQ found
    more of the exact top 10 at the default probes and refine factor and trained ~7× faster
    (docs/benchmarks-log.md, "Lance: IVF-SQ or IVF-PQ"). Queries re-score ``refine_factor × k`` candidates
    exactly either way (:class:`~gearag.store.lance.collection.LanceSearchConfig`).
    """
    from lancedb.index import IvfPq, IvfSq

    partitions = min(partitions, n_rows) if partitions > 0 else max(1, int(np.sqrt(n_rows)))
    if kind == "ivf_pq":
        return IvfPq(distance_type="dot", num_partitions=partitions, num_sub_vectors=max(1, dim // 8))
    return IvfSq(distance_type="dot", num_partitions=partitions)


def collection_table(name: str) -> str:
    return name if name in (PASSAGES, TRIPLES) else f"c_{name}"


def _tokens(texts: Sequence[str]) -> list[str]:
    return [" ".join(t) for t in tokenize(texts)]


def _vector_type(pa: Any, dim: int) -> Any:
    return pa.list_(pa.float32(), dim)


def _batches(index: Index, coll: Collection, batch: int, pa: Any, first: int = 0) -> tuple[Any, Iterator[Any]]:
    """Schema and record batches of one collection's table (its rows from ``first`` on)."""
    vectors = coll.vectors
    dim = int(vectors.shape[1])
    weights = coll.weights
    fields = [pa.field("row", pa.int64())]
    if coll.name == PASSAGES:
        fields += [pa.field(n, pa.string()) for n in ("id", "title", "text")]
    elif coll.name == TRIPLES:
        fields += [pa.field(n, pa.string()) for n in ("subject", "predicate", "object")]
    else:
        fields += [pa.field("text", pa.string()), pa.field("sources", pa.list_(pa.int64())),
                   pa.field("record", pa.string())]
    fields += [pa.field("tokens", pa.string()), pa.field("vector", _vector_type(pa, dim))]
    if weights is not None:
        fields.append(pa.field("weight", pa.float32()))
    schema = pa.schema(fields)
    texts = coll.texts()

    def gen() -> Iterator[Any]:
        for start in range(first, len(coll), batch):
            stop = min(start + batch, len(coll))
            rows = range(start, stop)
            cols: dict[str, Any] = {"row": pa.array(np.arange(start, stop, dtype=np.int64))}
            if coll.name == PASSAGES:
                ps = [index.passages[r] for r in rows]
                cols.update(id=[p.id for p in ps], title=[p.title for p in ps], text=[p.text for p in ps])
            elif coll.name == TRIPLES:
                t = index.triples
                cols.update(subject=t.subjects[start:stop], predicate=t.predicates[start:stop],
                            object=t.objects[start:stop])
            else:
                cols.update(text=[texts[r] for r in rows], sources=[coll.sources(r) for r in rows],
                            record=[json.dumps(coll.record(r)) if coll.spec.records else "{}" for r in rows])
            cols["tokens"] = _tokens([texts[r] for r in rows])
            flat = np.ascontiguousarray(vectors[start:stop], dtype=np.float32).ravel()
            cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
            if weights is not None:
                cols["weight"] = pa.array(np.asarray(weights[start:stop], dtype=np.float32))
            yield pa.record_batch([cols[f.name] for f in schema], schema=schema)

    return schema, gen()


def _triple_graph(index: Index) -> TripleGraph:
    """The index's triple graph, whole: a delta generation's (a base's and a delta's, docs/delta.md) joined, once
    for the entities table and the files table both."""
    g = index.graph
    return g if isinstance(g, TripleGraph) else index.cached("triple_graph_whole", g.whole)


def _entities(index: Index, batch: int, pa: Any) -> tuple[Any, Iterator[Any]]:
    g = _triple_graph(index)
    schema = pa.schema([pa.field("row", pa.int64()), pa.field("name", pa.string()),
                        pa.field("triples", pa.list_(pa.int32()))])

    def gen() -> Iterator[Any]:
        # One pass over the names: a sharded index's entities.json is parsed once (0.7 s at 6.7M names), not name
        # by name from its place in the file, as slices of it are (6.9 s).
        names = iter(g.entities)
        for start in range(0, g.n_entities, batch):
            stop = min(start + batch, g.n_entities)
            lo, hi = int(g.indptr[start]), int(g.indptr[stop])
            offsets = pa.array((np.asarray(g.indptr[start : stop + 1]) - lo).astype(np.int32))
            postings = pa.ListArray.from_arrays(offsets, pa.array(np.asarray(g.indices[lo:hi], dtype=np.int32)))
            yield pa.record_batch([pa.array(np.arange(start, stop, dtype=np.int64)),
                                   pa.array(list(islice(names, stop - start))), postings], schema=schema)

    return schema, gen()


def index_arrays(index: Index) -> dict[str, np.ndarray]:
    """The integer arrays of ``ARRAY_FILES``, taken from the loaded index, not from its files.

    A sharded index (gearag.store.shards) has no ``arrays/`` of its own: its graph arrays live in its
    generation and its triple → passage arrays are built from the shards at load.
    """
    g = _triple_graph(index)
    arrays = {"arrays/triple_head.npy": g.head, "arrays/triple_tail.npy": g.tail,
              "arrays/entity_indptr.npy": g.indptr, "arrays/entity_indices.npy": g.indices,
              "arrays/triple_passage.npy": index.triples.passage,
              "arrays/passage_triple_indptr.npy": index.passage_triple_indptr}
    assert set(arrays) == set(ARRAY_FILES)
    return arrays


def graph_dir(index: Index) -> Path:
    """Where the index keeps its passage graph's files (a sharded index: its current generation's)."""
    return index.path / str(index.manifest.get("graph_dir", GRAPH_DIR))


#: The prepared passage graph's files for the ``files`` table (name under ``graph/``, stored file or array) and
#: its meta: what the caller of :func:`export_index` hands over (:func:`gearag.indexing.export.prepared_files`).
PreparedFiles = tuple[list[tuple[str, Path | np.ndarray]], dict[str, Any]]


def _held_files(index: Index) -> list[tuple[str, Path | np.ndarray]]:
    """The integer arrays of the ``files`` table (name, stored file or array)."""
    held = index_arrays(index)
    return [(rel, held[rel]) for rel in HELD_ARRAYS]


def _check_target(db: Any, loc: Location, config: ExportConfig) -> None:
    """Refuse to write over anything gearag did not write; over a gearag Lance index only with overwrite."""
    if not loc.remote:
        path = Path(loc.uri)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{loc}: is a file; give a directory or an object-store URI")
        if (path / "manifest.json").exists():
            raise ConfigError(f"{loc}: holds an embedded gearag index; export to another location")
        if path.is_dir() and any(path.iterdir()) and not any((path / f"{t}.lance").is_dir()
                                                             for t in (META_TABLE, OWNER_TABLE)):
            raise ConfigError(f"{loc}: is not empty and not a gearag Lance index; not overwriting it")
    names = set(table_names(db)) - {LEASE_TABLE}  # an export's lease (gearag.store.lance.exclusive)
    if names and not names & {META_TABLE, OWNER_TABLE}:
        raise ConfigError(f"{loc}: holds tables gearag did not write ({', '.join(sorted(names)[:5])}); "
                          "not overwriting them")
    if names and not (config.overwrite or config.update):
        if META_TABLE in names:
            raise ConfigError(f"{loc}: a Lance index exists there; pass --update to bring it up to date or "
                              "--overwrite to replace it")
        raise ConfigError(f"{loc}: an interrupted gearag export is there; pass --overwrite to finish it (the tables "
                          "it finished for this index are kept) or to replace it")


def _create(db: Any, name: str, data: Any, schema: Any = None) -> Any:
    if schema is None:
        return db.create_table(name, data, mode="overwrite")
    return db.create_table(name, data, schema=schema, mode="overwrite")


def export_index(index_dir: str | Path, location: str | Path, config: ExportConfig = ExportConfig(),
                 progress: Callable[[str], None] | None = None, *,
                 prepared: Callable[[Index], PreparedFiles]) -> dict[str, Any]:
    """Write the embedded index at ``index_dir`` to Lance tables at ``location`` (or, with ``config.update``, bring
    the export there up to date); returns a summary. ``prepared`` gives the prepared passage graph's files, which
    storage copies but does not derive (:func:`gearag.indexing.export.export_index` hands them over)."""
    t0 = time.perf_counter()
    loc = parse_location(location)
    import_lancedb()
    index = Index.open(index_dir)  # leased: a gearag add meanwhile keeps the generation being exported
    try:
        if loc.remote:  # object stores have no flock: a lease with a heartbeat instead
            try:
                db = connect(loc)
                _check_target(db, loc, config)  # before the lease: nothing is written where gearag must not write
                with ExportLease(db, loc, config.lease_seconds) as lease:
                    return _export(index, loc, config, progress, t0, prepared, lease.check)
            except (OSError, RuntimeError, ValueError) as exc:  # taking or renewing the lease
                raise store_error(loc, exc, "cannot write") from None
        from gearag.store.writer import IndexLock

        Path(loc.uri).parent.mkdir(parents=True, exist_ok=True)
        lock = IndexLock(Path(loc.uri))  # the build lock: two exports (or a build) never write one directory
        lock.acquire()
        try:
            return _export(index, loc, config, progress, t0, prepared)
        finally:
            lock.release()
    finally:
        index.close()


def _export(index: Index, loc: Location, config: ExportConfig, progress: Callable[[str], None] | None, t0: float,
            prepared_files: Callable[[Index], PreparedFiles], check: Callable[[], None] | None = None,
            ) -> dict[str, Any]:
    """The export (``export_index``'s); ``check`` raises if it may no longer commit (its lease on object storage
    lapsed)."""
    import pyarrow as pa

    say = progress or (lambda _msg: None)
    now = lineage(index)
    try:
        db = connect(loc)
        _check_target(db, loc, config)
        names = table_names(db)
        previous = _previous_meta(db, loc) if META_TABLE in names else None
        if META_TABLE in names and (previous is None or VERSIONS not in previous):
            db.drop_table(META_TABLE)  # first: it pins no versions, so an interrupted overwrite must never load
        started = _meta_version(db)  # another export's commit meanwhile stops this one before its own
        if OWNER_TABLE not in names:
            _create(db, OWNER_TABLE, pa.table({"written_by": ["gearag export"]}))
        key = settings_key(config)
        done = finished(db, index.identity, key)  # tables an interrupted export finished
        pruned = prune(db, previous, config.keep_hours, resumed=frozenset(done)) if previous is not None else 0
        if pruned:
            say(f"removed {pruned} table version(s) and table(s) the live export does not read")
        if previous is not None and config.update and previous.get("source_identity") == index.identity \
                and VERSIONS in previous:
            say("the Lance index is up to date")
            return _summary(loc, previous, index, t0, {"appended": {}, "up_to_date": True})
    except (OSError, RuntimeError, ValueError) as exc:
        raise store_error(loc, exc, "cannot write") from None
    plan = appendable(previous, index, now) if config.update and previous is not None else None
    if isinstance(plan, str):
        say(f"exporting everything: {plan}")
    update: dict[str, Any] = {"appended": {}} if isinstance(plan, Appendable) else {"rewritten": plan or "no export"}
    tables: dict[str, Any] = {}
    versions: dict[str, int] = {}
    try:
        for name, coll in index.collections.items():
            table = collection_table(name)
            first = plan.rows.get(name) if isinstance(plan, Appendable) else None
            if first is not None and previous is not None:
                tables[name] = _append(db, table, index, coll, first, previous, config, say, pa)
                update["appended"][name] = len(coll) - first
                versions[table] = _version(db, table)
            elif table in done:
                versions[table], tables[name] = done[table]
                say(f"table {table}: kept from the interrupted export of this index (version {versions[table]})")
            else:
                tables[name] = _write(db, table, index, coll, config, say, pa)
                versions[table] = _version(db, table)
                record(db, index.identity, key, table, versions[table], tables[name])
        say(f"table {ENTITIES_TABLE}: {index.graph.n_entities} entities")
        schema, batches = _entities(index, config.batch, pa)
        _create(db, ENTITIES_TABLE, pa.RecordBatchReader.from_batches(schema, batches))
        graph_files, prepared = prepared_files(index)
        sources = _held_files(index) + graph_files
        say(f"table {FILES_TABLE}: {len(sources)} files memory-mapped by queries")
        listing: dict[str, Any] = {}
        _create(db, FILES_TABLE, file_batches(sources, pa, listing))
        versions.update({t: _version(db, t) for t in (ENTITIES_TABLE, FILES_TABLE)})
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "collections": tables,
                "entities": index.graph.n_entities, "source": str(Path(index.path).absolute()),
                "source_identity": index.identity, "manifest": index.manifest, "files": listing,
                "prepared": prepared, ROW_INDEX: True, VERSIONS: versions, LINEAGE: now, EXPORTED_AT: time.time()}
        if check is not None:
            check()
        if _meta_version(db) != started:
            raise BusyError(f"{loc}: another gearag export was committed here while this one ran; this one was not "
                            "committed (the other is served): run it again")
        # The commit: readers follow meta, which names the versions just written (the previous meta named its own).
        _create(db, META_TABLE, pa.table({"meta": [json.dumps(meta)]}))
        clear(db)
    except (OSError, RuntimeError, ValueError) as exc:
        raise store_error(loc, exc, "cannot write") from None
    return _summary(loc, meta, index, t0, update if config.update else None)


def _summary(loc: Location, meta: dict[str, Any], index: Index, t0: float,
             update: dict[str, Any] | None) -> dict[str, Any]:
    summary = {"uri": loc.uri, "seconds": round(time.perf_counter() - t0, 2),
               "tables": {n: t["table"] for n, t in meta["collections"].items()},
               "counts": index.manifest.get("counts", {})}
    return summary | {"update": update} if update is not None else summary


def _previous_meta(db: Any, loc: Location) -> dict[str, Any] | None:
    """The meta of the export at the location; None when it is unreadable or of another format."""
    try:
        return read_meta(db, loc)
    except IndexFormatError:
        return None


def _meta_version(db: Any) -> int | None:
    """The version of the ``meta`` table; None when there is none."""
    return meta_version(db) if META_TABLE in table_names(db) else None


def _version(db: Any, table: str) -> int:
    return int(db.open_table(table).version)


def _write(db: Any, table: str, index: Index, coll: Collection, config: ExportConfig, say: Callable[[str], None],
           pa: Any) -> dict[str, Any]:
    """Write one collection's table anew, with its full-text, ``row`` and (at scale) vector indexes."""
    from lancedb.index import BTree

    say(f"table {table}: {len(coll)} rows")
    schema, batches = _batches(index, coll, config.batch, pa)
    tbl = _create(db, table, pa.RecordBatchReader.from_batches(schema, batches))
    say(f"table {table}: full-text index")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tbl.create_fts_index("tokens", use_tantivy=False, base_tokenizer="whitespace", lower_case=False,
                             stem=False, remove_stop_words=False, ascii_folding=False,
                             with_position=False, replace=True)
    # BM25 of a query's candidate rows filters the full-text search by ``row``: with this index the
    # filter is a lookup, not a scan of the column (SyncGE at 1M: ~210 of its ~255 ms per query).
    tbl.create_index("row", config=BTree())
    info = _table_info(table, coll, None, None)
    return _vector_index(tbl, table, coll, config, info, say)


def _append(db: Any, table: str, index: Index, coll: Collection, first: int, previous: dict[str, Any],
            config: ExportConfig, say: Callable[[str], None], pa: Any) -> dict[str, Any]:
    """Append rows ``first…`` of a collection to the version of its table the previous export wrote, and index them
    (:func:`_index_rows`: full-text scores then use the statistics of all rows; an IVF index files the new vectors
    under the centroids it was trained on)."""
    tbl = db.open_table(table)
    live = previous[VERSIONS][table]
    if tbl.version != live:
        tbl.restore(live)  # past an interrupted export's versions
    old = previous["collections"][coll.name]
    if first < len(coll):
        say(f"table {table}: appending {len(coll) - first} rows ({len(coll)} in all)")
        schema, batches = _batches(index, coll, config.batch, pa, first)
        tbl.add(pa.RecordBatchReader.from_batches(schema, batches))
        _index_rows(tbl, table, config.index_deltas, say)
    info = _table_info(table, coll, old.get("ann_index"), old.get("ann_partitions")) if old.get("ann") \
        else _table_info(table, coll, None, None)
    return _vector_index(db.open_table(table), table, coll, config, info, say)


def _index_rows(tbl: Any, table: str, max_deltas: int, say: Callable[[str], None]) -> None:
    """Add a table's new rows to its indexes: as a delta of each, or merged into it once it has ``max_deltas``."""
    tbl.checkout_latest()  # the rows just added
    held = max((int(tbl.index_stats(i.name).num_indices) for i in tbl.list_indices()), default=1)
    merge = held > max_deltas  # the index and held - 1 deltas: one more would make held deltas
    say(f"table {table}: {'merging the new rows into' if merge else 'indexing the new rows as a delta of'} "
        f"its indexes")
    tbl.to_lance().optimize.optimize_indices(num_indices_to_merge=held if merge else 0)
    tbl.checkout_latest()


def _table_info(table: str, coll: Collection, ann_index: str | None, partitions: int | None) -> dict[str, Any]:
    return {"table": table, "rows": len(coll), "ann": ann_index is not None, "ann_index": ann_index,
            "ann_partitions": partitions, "weights": coll.weights is not None, "spec": coll.spec.to_dict()}


def _vector_index(tbl: Any, table: str, coll: Collection, config: ExportConfig, info: dict[str, Any],
                  say: Callable[[str], None]) -> dict[str, Any]:
    """Train the table's IVF vector index when it has none and has reached ``ann_min_rows`` rows."""
    if info["ann"] or len(coll) < config.ann_min_rows:
        return info
    say(f"table {table}: {config.ann_index.replace('_', '-').upper()} vector index")
    ann_cfg = ann_config(config.ann_index, len(coll), int(coll.vectors.shape[1]), config.ann_partitions)
    tbl.create_index("vector", config=ann_cfg)
    return {**info, "ann": True, "ann_index": config.ann_index, "ann_partitions": ann_cfg.num_partitions}


def read_meta(db: Any, loc: Location) -> dict[str, Any]:
    """The ``meta`` row of a Lance index; a one-line IndexFormatError when it is missing or unreadable."""
    return read_meta_version(db, loc)[0]


def read_meta_version(db: Any, loc: Location) -> tuple[dict[str, Any], int]:
    """The ``meta`` row of a Lance index and the version of the ``meta`` table it was read from (one read: the
    version is the row's, whatever an export commits meanwhile)."""
    try:
        names = set(table_names(db))
    except (OSError, RuntimeError, ValueError) as exc:
        raise store_error(loc, exc) from None
    if META_TABLE not in names:
        hint = "; an interrupted export leaves none" if names else ""
        raise IndexFormatError(f"{loc}: not a gearag Lance index (no {META_TABLE} table{hint})")
    try:
        table = db.open_table(META_TABLE)
        version = int(table.version)
        rows = table.to_arrow().column("meta").to_pylist()
        meta = json.loads(rows[0])
    except (OSError, RuntimeError, ValueError, KeyError, IndexError) as exc:
        raise store_error(loc, exc) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise IndexFormatError(f"{loc}: {META_TABLE} table is not a gearag Lance manifest")
    if meta.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(f"{loc}: Lance index format {meta.get('format_version')} is not supported "
                               f"(this gearag reads {FORMAT_VERSION}); export the index again")
    return meta, version
