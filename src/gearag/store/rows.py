"""An index's passages and triples read from their JSONL files on demand, not held as Python objects.

Loading ``passages.jsonl`` and ``triples.jsonl`` into lists costs about
2 KB per passage and 200 bytes per triple of Python objects (several GB at
a million passages) and a minute of parsing before the first query.
:class:`JsonlRows` keeps only each line's byte offset (8 bytes a row,
found by a vectorised scan for newlines) and the file's memory map; a row
is parsed when it is read. :class:`Column` is one field of such rows
(a triple's subject, predicate or object) and :class:`ConcatRows` the live
rows of several shards' files in order (a sharded index's union), again
without copying them. All three are read-only sequences, equal to any
sequence with equal items, and safe to share between threads.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from gearag.data.jsonio import load_json, parse_json
from gearag.data.jsonstrings import string_spans
from gearag.errors import IndexFormatError
from gearag.store.stacked import LiveParts

T = TypeVar("T")
#: Bytes scanned for newlines at a time when a file's row offsets are found.
SCAN_BYTES = 1 << 26
#: Decoded rows a :class:`JsonlRows` keeps (per file; ~200 bytes a triple, ~1 KB a passage).
CACHE_ROWS = 1 << 16


def map_bytes(path: Path) -> mmap.mmap | bytes:
    """The bytes of the file ``path``, memory-mapped read-only (``b""`` for an empty file, which cannot be
    mapped): pages the kernel reads and may drop again, not the process's own memory."""
    with Path(path).open("rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(fh.fileno()).st_size else b""


def offsets_rel(rel: str) -> str:
    """Where an index stores the row offsets of its JSONL file ``rel`` (``passages.jsonl`` →
    ``offsets/passages.npy``): written with the file, so opening it needs no scan (:class:`JsonlRows`)."""
    return f"offsets/{Path(rel).stem}.npy"


def line_offsets(path: Path) -> np.ndarray:
    """Start offsets of each line of ``path`` plus the file's length (``n + 1`` int64 values)."""
    size = path.stat().st_size
    starts = [np.zeros(1, dtype=np.int64)]
    with path.open("rb") as fh:
        pos = 0
        while pos < size:
            chunk = np.frombuffer(fh.read(SCAN_BYTES), dtype=np.uint8)
            if not len(chunk):
                break
            starts.append(np.flatnonzero(chunk == 10).astype(np.int64) + pos + 1)
            pos += len(chunk)
    offsets = np.concatenate(starts)
    if offsets[-1] != size:  # a last line without its newline
        offsets = np.append(offsets, size)
    return offsets


class _SequenceEq:
    """Equality with any sequence holding equal items (a list, another lazy sequence)."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        mine: Sequence[Any] = self  # type: ignore[assignment]
        return len(mine) == len(other) and all(a == b for a, b in zip(mine, other, strict=True))


class _Rows(_SequenceEq, Generic[T]):
    """Indexing of a sequence read row by row: ``row(i)`` for one row, slices as lists, negative rows from
    the end, an IndexError naming the range."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _read(self, i: int) -> T:
        """Row ``i``, in range."""
        raise NotImplementedError

    def row(self, i: int) -> T:
        """Row ``i`` (negative: from the end); an IndexError naming the range when out of it."""
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} out of range for {n} rows{self._where()}")
        return self._read(i)

    def _where(self) -> str:
        return ""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return [self.row(i) for i in range(*key.indices(len(self)))]
        return self.row(int(key))


class JsonList(_Rows[str], Sequence[str]):
    """A JSON list of strings (an index's ``entities.json``) of known length, read on demand.

    A process that never reads a name never pays for the list: the shards of a
    sharded index each hold one (6.7M names, ~0.5 GB of Python strings, in the
    first shard of a million passages) that its queries never read (they read
    the generation's). A process that reads a few names (a query's triple
    reader) finds where each name is in the file by one scan for its quotes
    (two int64 per name, memory-mapped file) and parses only those; iterating
    parses the whole list once.
    """

    def __init__(self, path: Path, n: int) -> None:
        self.path, self.n = Path(path), n
        self._items: list[str] | None = None
        self._spans: np.ndarray | None = None  #: (n, 2) start and end byte of each name, once scanned
        self._map: mmap.mmap | bytes | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.n

    def items(self) -> list[str]:
        """The parsed list (read once; a damaged file is a one-line IndexFormatError)."""
        if self._items is None:
            with self._lock:
                if self._items is None:
                    try:
                        items = load_json(self.path)
                    except (OSError, ValueError):
                        items = None
                    if not isinstance(items, list) or len(items) != self.n:
                        raise IndexFormatError(f"{self.path.parent}: {self.path.name} is not a list of {self.n} "
                                               "names (corrupt); rebuild the index")
                    self._items = items
        return self._items

    def _read(self, i: int) -> str:
        if self._items is None and self._scanned():
            assert self._spans is not None and self._map is not None
            start, end = self._spans[i]
            try:
                name = parse_json(self._map[int(start) : int(end)])
            except ValueError:
                name = None
            if isinstance(name, str):
                return name
        return self.items()[i]  # not a plain list of strings: parsed whole (a damaged file is an error there)

    def _scanned(self) -> bool:
        """Whether each name's place in the file is known (found now if not yet): the file is ``json.dumps`` of
        a list of n strings, so its unescaped quotes are exactly each name's two ends."""
        if self._spans is None:
            with self._lock:
                if self._spans is None:
                    self._spans = self._scan()
        return len(self._spans) == self.n

    def _scan(self) -> np.ndarray:
        try:
            self._map = map_bytes(self.path)
        except OSError:
            return np.zeros((0, 2), dtype=np.int64)
        spans = string_spans(np.frombuffer(self._map, dtype=np.uint8), self.n) if self.n else None
        return spans if spans is not None else np.zeros((0, 2), dtype=np.int64)

    def __iter__(self) -> Iterator[str]:
        return iter(self.items())

    def __getstate__(self) -> dict[str, Any]:  # pickled as its path: read again where it is read
        return {"path": self.path, "n": self.n}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["n"])  # type: ignore[misc]


class JsonlRows(_Rows[T], Sequence[T]):
    """Rows of a JSONL file, each parsed by ``decode(parse_json(line))`` when read (orjson: ~1.1 µs a triple's
    row instead of ``json``'s ~2.5 µs; a million-passage index's first add reads 17M of them twice)."""

    def __init__(self, path: Path, decode: Callable[[Any], T], offsets: np.ndarray | None = None) -> None:
        """``offsets``: the file's stored row offsets (:func:`offsets_rel`, memory-mapped), else found by a scan."""
        self.path = Path(path)
        self.decode = decode
        if offsets is None:
            offsets = line_offsets(self.path)
        elif len(offsets) < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != self.path.stat().st_size:
            raise IndexFormatError(f"{self.path}: its stored row offsets do not fit the file (corrupt); rebuild "
                                   "the index")
        self.offsets = offsets
        self._map: mmap.mmap | bytes | None = None
        # Rows read lately (a query reads the same candidate triples again and again, a triple's three
        # columns the same row thrice): bounded, emptied when full.
        self._cache: dict[int, T] = {}

    def _buffer(self) -> mmap.mmap | bytes:
        if self._map is None:
            self._map = map_bytes(self.path)
        return self._map

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> T:
        cached = self._cache.get(i)
        return cached if cached is not None else super().row(i)

    def _where(self) -> str:
        return f" of {self.path.name}"

    def _read(self, i: int) -> T:
        buf = self._buffer()
        value = self._decode(buf[int(self.offsets[i]) : int(self.offsets[i + 1])], i)
        if len(self._cache) >= CACHE_ROWS:
            self._cache = {}
        self._cache[i] = value
        return value

    def _decode(self, line: bytes, i: int) -> T:
        try:
            return self.decode(parse_json(line))
        except (ValueError, KeyError, TypeError, IndexError):
            raise IndexFormatError(f"{self.path}: row {i + 1} is corrupt; rebuild the index") from None

    def __iter__(self) -> Iterator[T]:
        with self.path.open("rb") as fh:
            for i, line in enumerate(fh):
                yield self._decode(line, i)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_map": None, "_cache": {}}


class Mapped(_SequenceEq, Sequence[Any]):
    """``fn`` of every item of ``rows``, computed when read (e.g. the passages' texts, without a list of them)."""

    def __init__(self, rows: Sequence[Any], fn: Callable[[Any], Any]) -> None:
        self.rows = rows
        self.fn = fn

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return [self.fn(row) for row in self.rows[key]]
        return self.fn(self.rows[key])

    def __iter__(self) -> Iterator[Any]:
        for row in self.rows:
            yield self.fn(row)


class Column(Mapped):
    """Field ``field`` of every row of ``rows`` (a triple's subjects, predicates or objects)."""

    def __init__(self, rows: Sequence[Sequence[Any]], field: int) -> None:
        super().__init__(rows, itemgetter(field))
        self.field = field


def rows_at(rows: Sequence[T], at: Sequence[int] | np.ndarray) -> list[T]:
    """``[rows[i] for i in at]``, in one read where ``rows`` can read many rows at once (a ``take_rows``
    method: a Lance column reads them in one take, not one take per row)."""
    take = getattr(rows, "take_rows", None)
    wanted = [int(i) for i in at]
    if take is not None:
        return list(take(wanted)) if wanted else []
    return [rows[i] for i in wanted]


def zip_columns(a: Sequence[Any], b: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    """``zip(a, b)``, reading each row once when both are :class:`Column` s of the same rows (a triple's
    subject and object: one parse of its JSONL row, not two)."""
    if isinstance(a, Column) and isinstance(b, Column) and a.rows is b.rows:
        first, second = a.field, b.field
        return ((row[first], row[second]) for row in a.rows)
    return zip(a, b, strict=True)


class ConcatRows(_Rows[T], Sequence[T]):
    """The live rows of several sequences in order (``keeps[i]``: part i's live-row mask, None = all)."""

    def __init__(self, parts: Sequence[Sequence[T]], keeps: Sequence[np.ndarray | None]) -> None:
        self.parts = list(parts)
        self.live_parts = LiveParts([len(p) for p in self.parts], keeps)

    def __len__(self) -> int:
        return self.live_parts.total

    def _read(self, i: int) -> T:
        part, stored = self.live_parts.locate_one(i)
        return self.parts[part][stored]

    def __iter__(self) -> Iterator[T]:
        for part, live in zip(self.parts, self.live_parts.live, strict=True):
            if live is None:
                yield from part
            else:
                keep = np.zeros(len(part), dtype=bool)
                keep[live] = True
                for value, kept in zip(part, keep, strict=True):
                    if kept:
                        yield value

