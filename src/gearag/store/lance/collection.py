"""A collection whose rows, vectors and searches live in a Lance table (fetched on demand, not loaded whole).

* :class:`LanceTable` — one opened table: random access by row (``take``) behind a bounded LRU, and
  every call's failure turned into a one-line error;
* :class:`LanceRows` — a column read lazily: ``rows[i]``, ``rows[ids]``, ``rows[a:b]``, iteration in
  batches, and ``rows @ q`` for vector columns as a streamed scan (bounded memory, reads every row);
* :class:`LanceCollection` — a :class:`~gearag.store.collection.CollectionStore` over a table: dense
  search (flat, or the IVF index the export built), BM25 through Lance full-text search over the
  pre-analysed ``tokens`` column, rows' vectors and weights by id.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from gearag import setops
from gearag.errors import ConfigError, GearagError
from gearag.model import Hit
from gearag.options import setting
from gearag.store.collection import CollectionSpec, CollectionStore, LoadOnce, SearchingCollection, SpecRows
from gearag.store.lance.storage import Location, store_error
from gearag.tokenizer import tokenize

if TYPE_CHECKING:
    import pyarrow as pa

    from gearag.store.postings import ShardPostings

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")
#: Errors a Lance/object-store call raises (network, missing files, bad queries).
STORE_ERRORS = (OSError, RuntimeError, ValueError, KeyError)


@dataclass(frozen=True)
class LanceSearchConfig:
    """Query-time settings of the Lance backend (options ``--lance-*`` of the commands that open an index)."""

    exact: bool = setting(False, "Lance: dense search ignores the ANN index and scans every vector (exact).",
                          name="lance_exact")
    nprobes: int = setting(32, "Lance: IVF partitions probed per dense query (ANN only).", positive=True,
                           name="lance_nprobes")
    refine_factor: int = setting(10, "Lance: ANN candidates re-scored exactly, as a multiple of k.", min=1,
                                 name="lance_refine_factor")
    cache_rows: int = setting(65_536, "Lance: rows kept per column in the LRU of fetched rows.", min=0,
                              name="lance_cache_rows")
    malloc_arenas: int = setting(0, "Lance: cap glibc's malloc arenas of the whole process at this many before "
                                    "Lance's threads start (0: glibc's default); 2 bounds what freed scan buffers "
                                    "keep, at some dense latency.", min=0, name="lance_malloc_arenas")
    index_cache_mb: float = setting(512.0, "Lance: MB of full-text and vector index pages LanceDB's session caches "
                                           "(Lance's own default: 6 GiB).", positive=True, name="lance_index_cache_mb")
    metadata_cache_mb: float = setting(128.0, "Lance: MB of table metadata LanceDB's session caches (Lance's "
                                              "default: 1 GiB).", positive=True, name="lance_metadata_cache_mb")
    cache_dir: str = setting("", "Lance: local directory the index's graph files are copied to and memory-mapped "
                                 "from (default: $GEARAG_CACHE_DIR, else ~/.cache/gearag).", name="lance_cache_dir")
    cache_keep_days: float = setting(7.0, "Lance: when an open fills a new export's copy in the cache directory, "
                                          "delete other exports' copies not opened for this many days (0: never).",
                                     min=0, name="lance_cache_keep_days")


class LRU(Generic[K, V]):
    """A small thread-safe LRU map (fetched rows, postings)."""

    def __init__(self, size: int) -> None:
        self.size = max(0, size)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recently used), None if it is not kept."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class LanceTable:
    """One opened Lance table of an index."""

    def __init__(self, location: Location, name: str, table: Any) -> None:
        self.location = location
        self.name = name
        self.table = table
        self.dataset = self._call(table.to_lance)
        self.rows = int(self._call(self.dataset.count_rows))

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GearagError:
            raise
        except STORE_ERRORS as exc:
            raise store_error(self.location, exc, f"cannot read table {self.name} of") from None

    def take(self, rows: np.ndarray | Sequence[int], columns: list[str]) -> pa.Table:
        """Rows (positions; the export writes row ``i`` at position ``i``) as a pyarrow table, in order."""
        return self._call(self.dataset.take, np.asarray(rows, dtype=np.int64), columns=columns)

    def scan(self, columns: list[str], batch: int = 65_536) -> Iterator[Any]:
        """Every row's ``columns``, in row order, in record batches."""
        try:
            yield from self.dataset.to_batches(columns=columns, batch_size=batch)
        except STORE_ERRORS as exc:
            raise store_error(self.location, exc, f"cannot read table {self.name} of") from None

    def search(self, build: Any) -> pa.Table:
        """Run a LanceDB query built by ``build(table)``; returns a pyarrow table."""
        return self._call(lambda: build(self.table).to_arrow())


def _column_values(column: Any, dim: int | None) -> Any:
    """A pyarrow column as numpy (vectors: ``(n, dim)`` float32) or a list of Python values."""
    if dim is not None:
        if hasattr(column, "combine_chunks"):
            column = column.combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False)
        return np.asarray(flat, dtype=np.float32).reshape(-1, dim)
    return column.to_pylist()


class LanceRows(Sequence[Any]):
    """One column of a table read on demand; vector columns look like a read-only ``(rows, dim)`` matrix."""

    def __init__(self, table: LanceTable, column: str, *, dim: int | None = None, scalar: bool = False,
                 cache_rows: int = 65_536) -> None:
        self.table = table
        self.column = column
        self.dim = dim
        self.scalar = scalar  # a numeric column: numpy results
        self.cache: LRU[int, Any] = LRU(cache_rows)  # row → its value: a Python value, or a vector's float32 row

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.table.rows, self.dim) if self.dim is not None else (self.table.rows,)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.table.rows

    def _fetch(self, rows: np.ndarray) -> list[Any]:
        out: list[Any] = [self.cache.get(int(r)) for r in rows]
        missing = sorted({int(r) for r, v in zip(rows, out, strict=True) if v is None})
        if missing:
            got = _column_values(self.table.take(missing, [self.column]).column(self.column), self.dim)
            found = dict(zip(missing, got, strict=True))
            for r, v in found.items():
                self.cache.put(r, v)
            out = [found[int(r)] if v is None else v for r, v in zip(rows, out, strict=True)]
        return out

    def _as_array(self, values: list[Any]) -> np.ndarray:
        if self.dim is not None:
            return np.stack(values).astype(np.float32) if values else np.zeros((0, self.dim), np.float32)
        return np.asarray(values, dtype=np.float32)

    def __getitem__(self, key: Any) -> Any:
        n = self.table.rows
        if isinstance(key, (int, np.integer)):
            row = int(key) + (n if key < 0 else 0)
            if not 0 <= row < n:
                raise IndexError(f"row {key} out of range ({n} rows)")
            value = self._fetch(np.asarray([row]))[0]
            return np.asarray(value, dtype=np.float32) if self.dim is not None or self.scalar else value
        if isinstance(key, slice):
            rows = np.arange(n)[key]
        elif isinstance(key, tuple) and len(key) == 2 and self.dim is None:
            return self[key[0]][:, None] if key[1] is None else self[key[0]][key[1]]
        else:
            rows = np.asarray(key)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            rows = rows.astype(np.int64).ravel()
            rows = np.where(rows < 0, rows + n, rows)
            if len(rows) and (rows.min() < 0 or rows.max() >= n):
                raise IndexError(f"row out of range ({n} rows)")
        if isinstance(key, slice) and len(rows) > self.cache.size:
            values = _column_values(self.table.take(rows, [self.column]).column(self.column), self.dim)
        else:
            values = self._fetch(rows)
        return self._as_array(values) if self.dim is not None or self.scalar else list(values)

    def take_rows(self, rows: Sequence[int]) -> list[Any]:
        """Many rows in one read (:func:`gearag.store.rows.rows_at`): indexing by an array of them, as a list."""
        return list(self[np.asarray(rows, dtype=np.int64)])

    def __iter__(self) -> Iterator[Any]:
        for batch in self.table.scan([self.column]):
            values = _column_values(batch.column(0), self.dim)
            yield from values

    def __matmul__(self, q: np.ndarray) -> np.ndarray:
        """``rows @ q`` by a streamed scan: every vector is read once, never held whole."""
        if self.dim is None:
            raise TypeError("only vector columns multiply")
        parts = [_column_values(b.column(0), self.dim) @ np.asarray(q, dtype=np.float32)
                 for b in self.table.scan([self.column])]
        return np.concatenate(parts) if parts else np.zeros((0, *np.shape(q)[1:]), np.float32)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The whole column (reads everything: what the backend otherwise avoids)."""
        values = [v for b in self.table.scan([self.column]) for v in [_column_values(b.column(0), self.dim)]]
        if self.dim is not None:
            out = np.concatenate(values) if values else np.zeros((0, self.dim), np.float32)
        else:
            out = np.asarray([x for part in values for x in part], dtype=np.float32)
        return out if dtype is None else out.astype(dtype)


class LanceCollection(SpecRows):
    """A collection of a Lance index: a :class:`~gearag.store.collection.CollectionStore` over one table, and a
    :class:`~gearag.store.collection.SearchingCollection` (its vector and full-text searches)."""

    #: BM25 is the table's full-text search (:meth:`search_bm25`), never a sharded index's postings.
    bm25_postings: Callable[[], ShardPostings] | None = None

    def __init__(self, root: Path, spec: CollectionSpec, table: LanceTable, *, text_column: str, ann: bool,
                 weights: bool, config: LanceSearchConfig, owner: np.ndarray | None = None) -> None:
        self.root = root
        self.spec = spec
        self.table = table
        self._owner = owner
        self.ann = ann
        self.config = config
        self._has_weights = weights
        self._loaded = LoadOnce()
        self._texts = LanceRows(table, text_column, cache_rows=config.cache_rows)
        #: The text each row is retrieved by (the passages' and triples' are set by the index: their content).
        self.texts: Callable[[], Sequence[str]] = lambda: self._texts
        self._vectors: LanceRows | None = None
        self._weights: LanceRows | None = None
        self._sources_col = LanceRows(table, "sources", cache_rows=config.cache_rows)
        self._record_rows = LanceRows(table, "record", cache_rows=config.cache_rows)

    @property
    def bm25_dir(self) -> Path:
        raise ConfigError(f"collection {self.name!r} is in a Lance index: BM25 is its full-text search "
                          "(search_bm25), there is no bm25s model")

    @property
    def vectors(self) -> LanceRows:
        """The ``vector`` column as a read-only ``(rows, dim)`` matrix fetched on demand: it indexes, multiplies
        (``@``) and has a ``shape`` as the memory-mapped array of a directory index does."""
        if self._vectors is None:
            dim = self.table.dataset.schema.field("vector").type.list_size
            self._vectors = LanceRows(self.table, "vector", dim=dim, cache_rows=self.config.cache_rows)
        return self._vectors

    @property
    def weights(self) -> LanceRows | None:
        """The ``weight`` column read on demand (None: the export has no weights, a neural embedder's)."""
        if not self._has_weights:
            return None
        if self._weights is None:
            self._weights = LanceRows(self.table, "weight", scalar=True, cache_rows=self.config.cache_rows)
        return self._weights

    def sources(self, row: int) -> list[int]:
        if self._owner is not None:
            return [int(self._owner[row])]
        if self.spec.sources is None:
            return [int(row)]
        return [int(x) for x in self._sources_col[int(row)]]

    @property
    def owner(self) -> np.ndarray:
        if self._owner is not None:
            return self._owner
        if self.spec.sources is None:
            return np.arange(len(self), dtype=np.int64)
        raise ConfigError(f"collection {self.name!r} rows have several sources; use sources(row)")

    def record(self, row: int) -> dict[str, Any]:
        if self.spec.records is None:
            raise ConfigError(f"collection {self.name!r} has no records")
        record: dict[str, Any] = json.loads(self._record_rows[int(row)])
        return record

    # -- the search seam ----------------------------------------------------------------
    def search_dense(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = []
        for q in np.asarray(queries, dtype=np.float32).reshape(-1, self.vectors.shape[1]):
            if k <= 0:
                out.append([])
                continue

            def build(tbl: Any, q: np.ndarray = q) -> Any:
                query = tbl.search(q, vector_column_name="vector").metric("dot").limit(k).select(["row", "_distance"])
                if self.ann and self.config.exact:
                    query = query.bypass_vector_index()
                elif self.ann:
                    query = query.nprobes(self.config.nprobes).refine_factor(self.config.refine_factor)
                return query

            res = self.table.search(build)
            rows = res.column("row").to_numpy()
            scores = 1.0 - res.column("_distance").to_numpy().astype(np.float64)
            order = np.lexsort((rows, -scores))
            out.append([Hit(int(rows[i]), float(scores[i]), self.name) for i in order])
        return out

    def _fts(self, query: str, k: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        terms = " ".join(dict.fromkeys(tokenize([query])[0]))
        if not terms or k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)

        def build(tbl: Any) -> Any:
            search = tbl.search(terms, query_type="fts", fts_columns="tokens").limit(k).select(["row", "_score"])
            if rows is not None:
                search = search.where(f"row IN ({','.join(str(int(r)) for r in rows)})", prefilter=True)
            return search

        res = self.table.search(build)
        return res.column("row").to_numpy(), res.column("_score").to_numpy().astype(np.float32)

    def search_bm25(self, query: str, k: int) -> list[Hit]:
        found, scores = self._fts(query, k)
        order = np.lexsort((found, -scores))
        return [Hit(int(found[i]), float(scores[i]), self.name) for i in order if scores[i] > 0]

    def bm25_scores(self, query: str, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float32)
        if len(rows) == 0:
            return out
        unique = setops.unique(rows)
        found, scores = self._fts(query, len(unique), unique)
        score = dict(zip(found.tolist(), scores.tolist(), strict=True))
        return np.asarray([score.get(int(r), 0.0) for r in rows], dtype=np.float32)

    def bm25_retriever(self) -> LanceBM25Retriever:
        return self.cached("bm25_retriever", lambda: LanceBM25Retriever(self))

    def rows_vectors(self, rows: np.ndarray | Sequence[int]) -> np.ndarray:
        return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)])

    def rows_weights(self, rows: np.ndarray | Sequence[int]) -> np.ndarray | None:
        weights = self.weights
        return None if weights is None else np.asarray(weights[np.asarray(rows, dtype=np.int64)])


class LanceBM25Retriever:
    """The registry's ``bm25`` over a Lance collection: its full-text search."""

    def __init__(self, collection: LanceCollection) -> None:
        self.coll = collection
        self.collection = collection.name

    def retrieve(self, query: str, k: int) -> list[Hit]:
        return self.coll.search_bm25(query, k)

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.retrieve(q, k) for q in queries]


if TYPE_CHECKING:  # mypy checks that a Lance collection is a CollectionStore, searched natively
    _COLLECTION_STORE: type[CollectionStore] = LanceCollection
    _SEARCHING: type[SearchingCollection] = LanceCollection
