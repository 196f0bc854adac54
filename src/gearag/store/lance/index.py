"""A loaded Lance index: the :class:`~gearag.store.interface.IndexStore` interface over Lance tables.

What is fetched on demand (bounded LRUs, so memory does not grow with the corpus): passage ids,
titles and texts; triple subjects, predicates and objects; entity names; every vector and weight;
the entity → triples postings. What is read by position, memory-mapped from a local copy made once
per machine (:mod:`gearag.store.lance.files`), so a process keeps only the pages its queries touch:
the integer graph arrays (triple head/tail entity ids, entity CSR offsets, triple → passage,
passage → triples offsets) and the passage graph prepared for the default query settings (the PPR
operator, entity-name hashes; :mod:`gearag.graph.prepared`), from which a passage-graph query with
other settings, and the GEAR agent's resolver, read too. The ``arrays`` table an export by an older
gearag may hold (the resolution's graph arrays) is not read.
Searches run in Lance: dense top-k (flat, or IVF-SQ / IVF-PQ) and BM25 full-text search.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gearag.errors import IndexFormatError
from gearag.model import Passage
from gearag.store.collection import PASSAGES, TRIPLES, CollectionSpec
from gearag.store.graph import Neighbours
from gearag.store.index import PREPARED
from gearag.store.interface import IndexBase, IndexStore, T
from gearag.store.lance.collection import STORE_ERRORS, LanceCollection, LanceRows, LanceSearchConfig, LanceTable
from gearag.store.lance.export import ENTITIES_TABLE, HELD_ARRAYS, ROW_INDEX, read_meta_version
from gearag.store.lance.files import FILES_TABLE, LocalFiles, cache_root
from gearag.store.lance.memory import limit_malloc_arenas
from gearag.store.lance.storage import Location, connect, import_lancedb, parse_location, store_error
from gearag.store.lance.versions import PinnedDb
from gearag.store.triples import TripleTable

log = logging.getLogger(__name__)


class LancePassages(Sequence[Passage]):
    """``index.passages`` fetched by row from the passages table."""

    def __init__(self, table: LanceTable, cache_rows: int) -> None:
        self.ids = LanceRows(table, "id", cache_rows=cache_rows)
        self.titles = LanceRows(table, "title", cache_rows=cache_rows)
        self.texts = LanceRows(table, "text", cache_rows=cache_rows)
        self.table = table

    def __len__(self) -> int:
        return self.table.rows

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        return Passage(self.ids[row], self.titles[row], self.texts[row])

    def take_rows(self, rows: Sequence[int]) -> list[Passage]:
        """Many passages in one read per column (:func:`gearag.store.rows.rows_at`)."""
        ids, titles, texts = (column.take_rows(rows) for column in (self.ids, self.titles, self.texts))
        return [Passage(i, title, text) for i, title, text in zip(ids, titles, texts, strict=True)]

    def __iter__(self) -> Iterator[Passage]:
        for batch in self.table.scan(["id", "title", "text"], batch=8192):
            ids, titles, texts = (batch.column(i).to_pylist() for i in range(3))
            for pid, title, text in zip(ids, titles, texts, strict=True):
                yield Passage(pid, title, text)


@dataclass(frozen=True)
class LanceTripleGraph(Neighbours):
    """The triple graph (:class:`~gearag.store.graph.TripleGraphStore`) with its entity → triples postings
    fetched per entity (LRU-cached) and its other arrays memory-mapped."""

    entities: Sequence[str]  #: normalised entity names, fetched by id
    head: np.ndarray  #: int32 (T,), entity id of each triple's subject, -1 if none
    tail: np.ndarray  #: int32 (T,), entity id of each triple's object, -1 if none
    indptr: np.ndarray  #: int64 (E + 1,): where each entity's postings start (their counts: its degree)
    postings: LanceRows = field(compare=False)  #: entity → its triple ids, sorted

    def entity_triples(self, entity: int) -> np.ndarray:
        """Triple ids in which ``entity`` is subject or object."""
        if entity < 0:
            return np.zeros(0, dtype=np.int32)
        return np.asarray(self.postings[int(entity)], dtype=np.int32)

    def degree(self, entity: int) -> int:
        return 0 if entity < 0 else int(self.indptr[entity + 1] - self.indptr[entity])


@dataclass
class LanceIndex(IndexBase):
    """An index read from Lance tables (see the module docstring for what is loaded): an
    :class:`~gearag.store.interface.IndexStore`, as an index directory's :class:`~gearag.store.index.Index` is."""

    path: Path  #: the location's URI as a path (:attr:`location` is the URI)
    manifest: dict[str, Any]  #: the manifest of the index directory it was exported from
    passages: LancePassages
    triples: TripleTable
    graph: LanceTripleGraph
    passage_triple_indptr: np.ndarray
    collections: dict[str, LanceCollection]
    identity: str  #: SHA-256 of the export's ``meta`` (which export this is)
    lance_location: Location
    opened_as: str  #: the location as given to open it (an object-store URI keeps its options, e.g. the endpoint)
    db: Any = field(repr=False)
    meta: dict[str, Any] = field(repr=False)  #: the export's ``meta`` row: its manifest, tables, files
    meta_version: int  #: the version of the ``meta`` table this export was read from (``gearag serve`` watches it)
    files: LocalFiles = field(repr=False)  #: the files memory-mapped from the local cache
    #: The LanceDB session: its index and metadata caches, bounded by the config.
    session: Any = field(repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def location(self) -> str:
        return self.lance_location.uri

    def close(self) -> None:
        """Nothing to let go of: an export's tables are read at the versions it wrote, whatever a later one writes."""

    def read_prepared(self, open_: Callable[[dict[str, Any], Callable[[str], np.ndarray]], T | None]) -> T | None:
        """``open_(meta, read)`` of the prepared passage graph, memory-mapped from the local cache (None: the export
        has none)."""
        meta = self.meta.get("prepared")
        if not isinstance(meta, dict):
            return None
        files = self.files
        try:
            return open_(meta, lambda name: files.array(f"graph/{PREPARED}/{name}"))
        except STORE_ERRORS as exc:
            raise store_error(self.lance_location, exc, "cannot read the prepared graph of") from None


def _open_table(db: Any, loc: Location, name: str, rows: int | None) -> LanceTable:
    try:
        table = LanceTable(loc, name, db.open_table(name))
    except STORE_ERRORS as exc:
        raise IndexFormatError(f"{loc}: missing or unreadable table {name} "
                               f"({type(exc).__name__}); export the index again") from None
    if rows is not None and table.rows != rows:
        raise IndexFormatError(f"{loc}: table {name} has {table.rows} rows, the manifest says {rows}; "
                               "export the index again")
    return table


def open_lance_index(location: str | Path, *, verify: bool = False,
                     config: LanceSearchConfig = LanceSearchConfig()) -> LanceIndex:
    """Open the Lance index at ``location`` (directory or object-store URI); errors are one line."""
    loc = parse_location(location)
    limit_malloc_arenas(config.malloc_arenas)
    try:
        # Lance's caches bounded by the config (its defaults allow 7 GiB): query memory must not grow with use.
        session = import_lancedb().Session(index_cache_size_bytes=int(config.index_cache_mb * 2**20),
                                           metadata_cache_size_bytes=int(config.metadata_cache_mb * 2**20))
        db = connect(loc, session)
    except STORE_ERRORS as exc:
        raise store_error(loc, exc, "cannot open") from None
    meta, meta_version = read_meta_version(db, loc)
    db = PinnedDb(db, meta)  # every table at the version this export wrote, whatever a later export writes
    if not meta.get(ROW_INDEX):
        log.warning("%s: exported before gearag indexed each table's row column; it works, but the BM25 of a "
                    "query's candidates scans that column (~0.2 s a query at 1M passages): gearag export the "
                    "index again", loc)
    manifest = meta["manifest"]
    counts = manifest.get("counts", {})
    listed: dict[str, Any] = meta["collections"]
    tables = {name: _open_table(db, loc, info["table"], info["rows"]) for name, info in listed.items()}
    entities = _open_table(db, loc, ENTITIES_TABLE, meta.get("entities"))
    identity = hashlib.sha256(json.dumps(meta, sort_keys=True).encode("utf-8")).hexdigest()
    files = LocalFiles(db, str(loc), meta["files"], cache_root(config.cache_dir) / "lance" / identity[:32],
                       keep_days=config.cache_keep_days)
    try:
        arrays = {rel: files.array(rel) for rel in HELD_ARRAYS}  # memory-mapped from the local cache
    except STORE_ERRORS as exc:
        raise store_error(loc, exc, f"cannot read table {FILES_TABLE} of") from None
    if verify:
        for table in tables.values():
            table.take([0] if table.rows else [], ["row"])  # every table answers a random read
    passages_t, triples_t = tables[PASSAGES], tables[TRIPLES]
    cache = config.cache_rows
    passages = LancePassages(passages_t, cache)
    triple_passage = arrays["arrays/triple_passage.npy"]
    triples = TripleTable(LanceRows(triples_t, "subject", cache_rows=cache),
                          LanceRows(triples_t, "predicate", cache_rows=cache),
                          LanceRows(triples_t, "object", cache_rows=cache), triple_passage)
    graph = LanceTripleGraph(
        entities=LanceRows(entities, "name", cache_rows=cache),
        head=arrays["arrays/triple_head.npy"], tail=arrays["arrays/triple_tail.npy"],
        indptr=arrays["arrays/entity_indptr.npy"], postings=LanceRows(entities, "triples", cache_rows=cache),
    )
    if counts.get("passages") != passages_t.rows or counts.get("triples") != triples_t.rows:
        raise IndexFormatError(f"{loc}: tables do not match the manifest counts; export the index again")
    collections: dict[str, LanceCollection] = {}
    for name, info in listed.items():
        spec = CollectionSpec.from_dict(name, info["spec"])
        text = "tokens" if name in (PASSAGES, TRIPLES) else "text"
        coll = LanceCollection(Path(loc.uri), spec, tables[name], text_column=text, ann=bool(info["ann"]),
                               weights=bool(info["weights"]), config=config,
                               owner=triple_passage if name == TRIPLES else None)
        if name == PASSAGES:
            coll.texts = _content(passages)
        elif name == TRIPLES:
            coll.texts = _triple_texts(triples)
        collections[name] = coll
    return LanceIndex(
        path=Path(loc.uri), manifest=manifest, passages=passages, triples=triples, graph=graph,
        passage_triple_indptr=arrays["arrays/passage_triple_indptr.npy"], collections=collections,
        identity=identity, lance_location=loc, opened_as=str(location), db=db, meta=meta, meta_version=meta_version,
        files=files, session=session,
    )


class _Texts(Sequence[str]):
    def __init__(self, n: int, get: Any, it: Any) -> None:
        self.n, self.get, self.it = n, get, it

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self.get(i) for i in range(*row.indices(self.n))]
        return self.get(int(row))

    def __iter__(self) -> Iterator[str]:
        return iter(self.it())


def _content(passages: LancePassages) -> Any:
    texts = _Texts(len(passages), lambda r: passages[r].content, lambda: (p.content for p in passages))
    return lambda: texts


def _triple_texts(t: TripleTable) -> Any:
    texts = _Texts(len(t), t.text, lambda: (f"{s} {p} {o}" for s, p, o in zip(t.subjects, t.predicates, t.objects,
                                                                              strict=True)))
    return lambda: texts


if TYPE_CHECKING:  # mypy checks that a Lance index is an IndexStore
    _INDEX_STORE: type[IndexStore] = LanceIndex
