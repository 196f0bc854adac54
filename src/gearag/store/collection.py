"""Collections: the named, retrievable row sets of an index.

A collection is rows of text with what retrieval needs over them: a BM25
index, unit-length vectors, and for each row the passages it came from.
GEAR's passages ``C`` (each row its own source) and triples ``T`` (each row
one source passage, §3) are the two built-in collections; later artefacts
(SiReRAG tree nodes, ...) are further collections listed in the manifest,
and every retriever works over any of them unchanged.

The manifest's ``collections`` section names each collection's files
relative to the index directory::

    "triples": {"rows": 103067, "bm25": "bm25/triples", "vectors": "vectors/triples.npy",
                "weights": "vectors/triple_weights.npy", "sources": "arrays/triple_passage.npy"}

``sources`` is either one int array (row → passage row) or, for rows that
cover several passages, ``{"indptr": ..., "indices": ...}`` in CSR form.

Collections may share files: with ``select`` (an int array, one entry per
row), row ``i`` of the collection is row ``select[i]`` of its ``vectors``,
``sources`` and ``records`` files, which then hold a table shared by
several collections (the SiReRAG pools store every tree node once and
select their rows from it). BM25 is never shared: its statistics depend on
the collection's rows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from gearag.errors import ConfigError, IndexFormatError
from gearag.store.npy import load_array as load_array

if TYPE_CHECKING:
    from gearag.model import Hit
    from gearag.store.postings import ShardPostings

#: The collections every GEAR index has.
PASSAGES = "passages"
TRIPLES = "triples"

T = TypeVar("T")


@dataclass(frozen=True)
class CollectionSpec:
    """What the manifest records about one collection."""

    name: str
    rows: int
    bm25: str | None = None
    vectors: str | None = None
    #: Static embedders only: token-sum norms, so ``weights[i] * vectors[i]`` is row i's token sum.
    weights: str | None = None
    #: Row → source passage rows: one ``.npy`` path, or ``{"indptr": path, "indices": path}``; None = identity.
    sources: str | dict[str, str] | None = None
    #: Row records (JSONL) for collections other than passages and triples.
    records: str | None = None
    #: Row ``i`` is row ``select[i]`` of the (shared) vectors, sources and records files; None = identity.
    select: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": self.rows}
        for key in ("bm25", "vectors", "weights", "sources", "records", "select"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any]) -> CollectionSpec:
        """A spec from its manifest entry; a malformed entry (hand-edited?) is a ValueError."""
        rows = data["rows"]
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise ValueError(f"collection {name!r}: rows must be a non-negative integer")
        paths = {key: data.get(key) for key in ("bm25", "vectors", "weights", "records", "select")}
        if not all(v is None or (isinstance(v, str) and v) for v in paths.values()):
            raise ValueError(f"collection {name!r}: file entries must be paths")
        sources = data.get("sources")
        csr = isinstance(sources, dict) and set(sources) == {"indptr", "indices"} and all(
            isinstance(v, str) for v in sources.values())
        if not (sources is None or isinstance(sources, str) or csr):
            raise ValueError(f"collection {name!r}: sources must be a path or {{indptr, indices}}")
        return cls(name, rows, paths["bm25"], paths["vectors"], paths["weights"], sources, paths["records"],
                   paths["select"])

    def files(self) -> list[str]:
        """Files (and directories, for BM25) this collection needs."""
        out = [v for v in (self.bm25, self.vectors, self.weights, self.records, self.select) if v]
        if isinstance(self.sources, str):
            out.append(self.sources)
        elif isinstance(self.sources, dict):
            out.extend(self.sources.values())
        return out


def default_specs(counts: dict[str, int], *, weights: bool) -> dict[str, CollectionSpec]:
    """The passages and triples collections in the standard layout (format 1 indices have no listing)."""
    return {
        PASSAGES: CollectionSpec(PASSAGES, counts.get(PASSAGES, 0), "bm25/passages", "vectors/passages.npy"),
        TRIPLES: CollectionSpec(TRIPLES, counts.get(TRIPLES, 0), "bm25/triples", "vectors/triples.npy",
                                "vectors/triple_weights.npy" if weights else None, "arrays/triple_passage.npy"),
    }


class LoadOnce:
    """Values loaded once per key, on first use: thread-safe, and re-entrant, so a loader may need another
    (a collection's row selection). ``deferred``: loaders to call instead of the one asked with, by key."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._values: dict[str, Any] = {}
        self.deferred: dict[str, Callable[[], Any]] = {}

    def get(self, key: str, load: Callable[[], T]) -> T:
        value = self._values.get(key)
        if value is None:
            with self._lock:
                value = self._values.get(key)
                if value is None:
                    value = self._values[key] = self.deferred.pop(key, load)()
        return value


class VectorRows(Protocol):
    """A collection's vectors (or weights) as retrieval reads them: rows that index and multiply (``@``) like
    a ``(rows, dim)`` matrix — a memory-mapped array, or a Lance column fetched on demand."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, key: Any, /) -> Any: ...

    def __matmul__(self, other: Any, /) -> Any: ...


class CollectionStore(Protocol):
    """What the rest of gearag reads from one collection of an index: :class:`Collection` (the files of an index
    directory) and :class:`gearag.store.lance.collection.LanceCollection` (a Lance table). Searching is
    :mod:`gearag.retrieve`'s, or the collection's own when it is a :class:`SearchingCollection`."""

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> CollectionSpec: ...

    @property
    def root(self) -> Path:
        """The index's location (its files are relative to it)."""
        ...

    @property
    def bm25_postings(self) -> Callable[[], ShardPostings] | None:
        """Reads the shards' postings BM25 is scored from (a sharded index), else None."""
        ...

    @property
    def bm25_dir(self) -> Path:
        """The bm25s model's directory (ConfigError: the collection has none)."""
        ...

    @property
    def vectors(self) -> VectorRows:
        """Unit-length row embeddings."""
        ...

    @property
    def weights(self) -> VectorRows | None:
        """Token-sum norms of a static embedder, None for neural embedders."""
        ...

    @property
    def owner(self) -> np.ndarray:
        """Row → its source passage row (ConfigError: rows with several sources)."""
        ...

    def __len__(self) -> int: ...

    def texts(self) -> Sequence[str]:
        """The text each row is retrieved by."""
        ...

    def cached(self, key: str, load: Callable[[], T]) -> T: ...

    def rows_vectors(self, rows: np.ndarray | Sequence[int]) -> np.ndarray: ...

    def rows_weights(self, rows: np.ndarray | Sequence[int]) -> np.ndarray | None: ...

    def sources(self, row: int) -> list[int]: ...

    def record(self, row: int) -> dict[str, Any]: ...


class SpecRows:
    """What every collection answers from its spec and its :class:`LoadOnce` (no state of its own)."""

    spec: CollectionSpec
    _loaded: LoadOnce

    @property
    def name(self) -> str:
        return self.spec.name

    def __len__(self) -> int:
        return self.spec.rows

    def cached(self, key: str, load: Callable[[], T]) -> T:
        """``load()`` once per collection and key (thread-safe; re-entrant, so loaders may nest): what a
        reader builds over this collection's storage (a BM25 model, a retriever) lives as long as it."""
        return self._loaded.get(key, load)


@dataclass
class Collection(SpecRows):
    """One loaded collection. Arrays are memory-mapped on first use (thread-safe).

    Storage only: it hands out rows, vectors, the BM25 model's directory or
    a sharded index's postings (:attr:`bm25_postings`); searching them is
    :mod:`gearag.retrieve`'s (:func:`gearag.retrieve.dense.search_dense`,
    :func:`gearag.retrieve.bm25.collection_bm25`), which keeps what it builds
    in :meth:`cached`. A backend that searches its own storage (e.g.
    :class:`gearag.store.lance.collection.LanceCollection`) is a
    :class:`SearchingCollection` and is searched through it.
    """

    root: Path
    spec: CollectionSpec
    #: The text each row is retrieved by (title + newline + text for passages, "s p o" for triples).
    texts: Callable[[], Sequence[str]]
    #: Reads the shards' postings BM25 is scored from instead of a bm25s model at ``spec.bm25`` (a sharded
    #: index: :mod:`gearag.store.postings`).
    bm25_postings: Callable[[], ShardPostings] | None = None
    _loaded: LoadOnce = field(default_factory=LoadOnce, repr=False, compare=False)

    @classmethod
    def preloaded(cls, root: Path, spec: CollectionSpec, texts: Callable[[], Sequence[str]],
                  arrays: dict[str, Callable[[], Any]],
                  bm25_postings: Callable[[], ShardPostings] | None = None) -> Collection:
        """A collection whose ``vectors``/``weights``/``sources`` come from ``arrays`` (loaders, each called
        once on first use) instead of ``spec``'s files: a sharded index's union of several shards
        (:mod:`gearag.store.shards`)."""
        collection = cls(root, spec, texts, bm25_postings)
        collection._loaded.deferred.update(arrays)
        return collection

    def _once(self, key: str, load: Callable[[], T]) -> T:
        return self._loaded.get(key, load)

    def _array(self, rel: str, ndim: int = 1) -> np.ndarray:
        """A memory-mapped array of this collection with one row per collection row."""
        array = load_array(self.root, rel)
        if array.ndim != ndim or len(array) != self.spec.rows or array.dtype.kind not in "iuf":
            raise IndexFormatError(f"{self.root}: {rel} has the wrong shape or type (corrupt); rebuild the index")
        return array

    def selection(self) -> np.ndarray | None:
        """Rows of the shared files this collection's rows are (``select``), checked; None = identity."""
        rel = self.spec.select
        if rel is None:
            return None
        return self._once("select", lambda: np.asarray(self._array(rel), dtype=np.int64))

    def _selected(self, rel: str, ndim: int) -> np.ndarray:
        """A shared array's rows of this collection: a memory-mapped view when they are one run, else a copy."""
        select = self.selection()
        if select is None:
            return self._array(rel, ndim)
        array = load_array(self.root, rel)
        if array.ndim != ndim or array.dtype.kind not in "iuf" or (
                len(select) and (int(select.min()) < 0 or int(select.max()) >= len(array))):
            raise IndexFormatError(f"{self.root}: {rel} does not hold the rows {self.spec.select} selects "
                                   "(corrupt); rebuild the index")
        if len(select) and int(select[-1]) - int(select[0]) == len(select) - 1 and bool(np.all(np.diff(select) == 1)):
            return array[int(select[0]) : int(select[-1]) + 1]
        return np.asarray(array[select])

    @property
    def bm25_dir(self) -> Path:
        """The directory of the bm25s model over this collection's rows (ConfigError: it has none)."""
        if self.spec.bm25 is None:
            raise ConfigError(f"collection {self.name!r} has no BM25 index")
        return self.root / self.spec.bm25

    @property
    def vectors(self) -> np.ndarray:
        """Unit-length float32 row embeddings, memory-mapped."""
        if self.spec.vectors is None:
            raise ConfigError(f"collection {self.name!r} has no vectors")
        rel = self.spec.vectors
        return self._once("vectors", lambda: self._selected(rel, ndim=2))

    @property
    def weights(self) -> np.ndarray | None:
        """Token-sum norms of a static embedder (None for neural embedders)."""
        if self.spec.weights is None:
            return None
        rel = self.spec.weights
        return self._once("weights", lambda: np.asarray(self._array(rel)))

    def rows_vectors(self, rows: np.ndarray | Sequence[int]) -> np.ndarray:
        """The unit vectors of ``rows``, in that order, shape ``(len(rows), dim)``."""
        return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)])

    def rows_weights(self, rows: np.ndarray | Sequence[int]) -> np.ndarray | None:
        """Token-sum norms of ``rows`` (static embedders), None for neural embedders."""
        weights = self.weights
        return None if weights is None else np.asarray(weights[np.asarray(rows, dtype=np.int64)])

    def _sources(self) -> tuple[np.ndarray, np.ndarray | None]:
        src = self.spec.sources
        if isinstance(src, str):
            return np.asarray(self._array(src) if self.spec.select is None else load_array(self.root, src)), None
        if isinstance(src, dict):
            return np.asarray(load_array(self.root, src["indptr"])), np.asarray(load_array(self.root, src["indices"]))
        rows = np.arange(self.spec.rows, dtype=np.int64)
        return rows, None

    def sources(self, row: int) -> list[int]:
        """Passage rows that row ``row`` of this collection came from."""
        first, indices = self._once("sources", self._sources)
        select = self.selection()
        if select is not None:
            row = int(select[row])
        if indices is None:
            return [int(first[row])]
        return [int(x) for x in indices[first[row] : first[row + 1]]]

    def _records(self) -> list[dict[str, Any]]:
        if self.spec.records is None:
            raise ConfigError(f"collection {self.name!r} has no records")
        with (self.root / self.spec.records).open(encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh]
        select = self.selection()
        if select is None:
            return records
        if len(select) and int(select.max()) >= len(records):
            raise IndexFormatError(f"{self.root}: {self.spec.records} does not hold the rows {self.spec.select} "
                                   "selects (corrupt); rebuild the index")
        return [records[int(r)] for r in select]

    def record(self, row: int) -> dict[str, Any]:
        """Row ``row``'s record (``text`` and, for pool nodes, ``level``, ``tree``, ``kind``); loaded once."""
        records: list[dict[str, Any]] = self._once("records", self._records)
        return records[row]

    @property
    def owner(self) -> np.ndarray:
        """Row → its (first) source passage row, for collections with one source per row."""
        first, indices = self._once("sources", self._sources)
        if indices is not None:
            raise ConfigError(f"collection {self.name!r} rows have several sources; use sources(row)")
        select = self.selection()
        return first if select is None else first[select]


@runtime_checkable
class SearchingCollection(Protocol):
    """A collection whose backend searches its own storage (a Lance table's vector and full-text indexes):
    retrieval asks it instead of scoring the rows itself."""

    def search_dense(self, queries: np.ndarray, k: int) -> list[list[Hit]]: ...

    def search_bm25(self, query: str, k: int) -> list[Hit]: ...

    def bm25_scores(self, query: str, rows: np.ndarray) -> np.ndarray: ...

    def bm25_retriever(self) -> RowRetriever: ...


class RowRetriever(Protocol):
    """What :meth:`SearchingCollection.bm25_retriever` hands out: the top ``k`` rows for a query, best first
    (:class:`gearag.retrieve.base.Retriever`, stated here because the store imports nothing that builds on it)."""

    def retrieve(self, query: str, k: int) -> list[Hit]: ...

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


if TYPE_CHECKING:  # mypy checks that a collection of an index directory is a CollectionStore
    _COLLECTION_STORE: type[CollectionStore] = Collection
