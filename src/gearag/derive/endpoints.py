"""Per-shard endpoint tables: each triple end's normalised key, name flag and name key, computed once per shard.

``is_named`` and ``normalise_entity`` depend on an endpoint's text alone, so a generation keeps, per shard, an
*endpoint table* (``endpoints/<shard>/``): the shard's distinct keys (``keys.json``), each triple's subject and
object key ids (``ends.npy``, -1: an empty key), whether each is a name (``named.npy``) and the resolution's
name keys (``names.json``, ``name_ends.npy``); with NER mentions, its passages' named-entity spans as name ids
(``span_rows.npy``, ``span_names.npy``), whose names follow the ends' in ``names.json``. The first generation
that lists the shard computes it, every later one hard-links it; the triple graph and the resolution read the
union's live triples through them (:class:`UnionTriples`, :func:`union_ends`; docs/delta.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from gearag import setops
from gearag.data.jsonio import load_json
from gearag.errors import GearagError, IndexFormatError
from gearag.graph.resolve import usable_key
from gearag.graph.trie import name_key
from gearag.store.npy import kept_arrays
from gearag.store.rows import zip_columns
from gearag.store.writer import IndexWriter
from gearag.text import is_named, normalise_entity

T = TypeVar("T")

ENDPOINTS_DIR = "endpoints"
TABLE_FILES = ("keys.json", "ends.npy", "named.npy", "names.json", "name_ends.npy")
#: A table's span stream (:attr:`EndpointTable.spans`), kept only by an index with NER mentions.
SPAN_FILES = ("span_rows.npy", "span_names.npy")
#: A span's slot in :attr:`~gearag.derive.union_resolve.NameStats.first_span`: ``row * SPAN_SLOTS +`` its place
#: among its passage's spans (a delete renumbers the row alone). A passage with more spans is refused.
SPAN_SLOTS = 1 << 20


#: Surfaces whose key, name and flag :meth:`EndpointTable.compute` remembers before it starts again.
SEEN_SURFACES = 1 << 20


class EndpointTable:
    """One shard's triple endpoints: distinct normalised keys, per-triple key ids and name flags, and the
    resolution's name keys (:func:`gearag.graph.trie.name_key` of the named endpoints with a usable key), with
    the passages' named-entity spans that are such names (:attr:`spans`)."""

    def __init__(self, keys: list[str] | None, ends: np.ndarray, named: np.ndarray, names: list[str] | None,
                 name_ends: np.ndarray, directory: Path | None = None,
                 spans: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self._keys, self._names, self._directory = keys, names, directory
        self.ends = ends  #: int32 (T, 2): subject and object key ids (-1: the key is empty)
        self.named = named  #: bool (T, 2): is_named(subject), is_named(object)
        self.name_ends = name_ends  #: int32 (T, 2): ids into ``names`` (-1: not a name, or an unusable key)
        #: int32 shard passage row (ascending) and id into ``names`` per NER span that is a usable name, in the
        #: passages' order (None: the index keeps no NER mentions)
        self.spans = spans

    @property
    def keys(self) -> list[str]:
        """The distinct normalised keys (read from the stored table on first use)."""
        if self._keys is None:
            self._keys = self._strings("keys.json", self.ends)
        return self._keys

    @property
    def stored(self) -> bool:
        """Whether the table was read from a generation (else computed here: what is derived from it, such as its
        names' token index, is computed again too)."""
        return self._directory is not None

    @property
    def names(self) -> list[str]:
        """The distinct name keys (read from the stored table on first use)."""
        if self._names is None:
            self._names = self._strings("names.json", self.name_ends)
        return self._names

    def _strings(self, file: str, ids: np.ndarray) -> list[str]:
        # A stored table's strings are read only where a generation needs them (a shard the union's stored
        # vocabulary does not cover): the earlier shards' 6.7M strings are not parsed by every add.
        assert self._directory is not None
        path = self._directory / file
        try:
            strings = load_json(path)
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"{path}: unreadable ({exc})") from exc
        if not isinstance(strings, list) or (ids.size and int(ids.max()) >= len(strings)):
            raise IndexFormatError(f"{path}: does not hold the ids of its table")
        return strings

    def id_bound(self, what: str) -> int:
        """One more than the largest id the table's triples use in ``keys`` or ``names``."""
        ids = self.ends if what == "keys" else self.name_ends
        bound = int(ids.max()) + 1 if ids.size else 0
        if what == "names" and self.spans is not None and len(self.spans[1]):
            bound = max(bound, int(self.spans[1].max()) + 1)
        return bound

    @classmethod
    def compute(cls, subjects: Sequence[str], objects: Sequence[str],
                spans: Sequence[Sequence[str]] | None = None) -> EndpointTable:
        """The table of a shard's triples and (``spans``: per passage row, its NER span surfaces) span stream."""
        ids: dict[str, int] = {}
        name_ids: dict[str, int] = {}
        seen: dict[str, tuple[bool, int, int]] = {}
        ends = np.full((len(subjects), 2), -1, dtype=np.int32)
        name_ends = np.full((len(subjects), 2), -1, dtype=np.int32)
        flags = np.zeros((len(subjects), 2), dtype=bool)
        for t, pair in enumerate(zip_columns(subjects, objects)):
            for side, surface in enumerate(pair):
                known = seen.get(surface)
                if known is None:
                    if len(seen) >= SEEN_SURFACES:  # a memo, bounded: ~0.9 GB of surfaces at a million passages
                        seen.clear()
                    flag = is_named(surface)
                    key = normalise_entity(surface)
                    name = _linked_name(surface, flag)
                    known = seen[surface] = (flag, ids.setdefault(key, len(ids)) if key else -1,
                                             name_ids.setdefault(name, len(name_ids)) if name is not None else -1)
                flags[t, side], ends[t, side], name_ends[t, side] = known
        stream = None if spans is None else _span_stream(spans, name_ids)  # its names after the ends'
        return cls(list(ids), ends, flags, list(name_ids), name_ends, spans=stream)

    def write(self, w: IndexWriter, rel: str) -> None:
        w.write_json(f"{rel}/keys.json", self.keys)
        w.write_array(f"{rel}/ends.npy", self.ends)
        w.write_array(f"{rel}/named.npy", self.named)
        w.write_json(f"{rel}/names.json", self.names)
        w.write_array(f"{rel}/name_ends.npy", self.name_ends)
        if self.spans is not None:
            for name, values in zip(SPAN_FILES, self.spans, strict=True):
                w.write_array(f"{rel}/{name}", values)

    @classmethod
    def read(cls, directory: Path, n_triples: int, spans: bool = False) -> EndpointTable | None:
        """The table stored in ``directory`` for a shard of ``n_triples`` triples (``spans``: with its span
        stream); None if absent or malformed.

        Its strings are read on first use (:attr:`keys`, :attr:`names`).
        """
        arrays = kept_arrays(directory, "ends.npy", "named.npy", "name_ends.npy")
        if arrays is None or not all((directory / f).is_file() for f in ("keys.json", "names.json")):
            return None  # damaged: the table is computed again
        ends, named, name_ends = arrays
        for ids in (ends, name_ends):
            if ids.shape != (n_triples, 2) or ids.dtype.kind != "i" or (ids.size and int(ids.min()) < -1):
                return None
        if named.shape != (n_triples, 2) or named.dtype != bool:
            return None
        stream = None
        if spans:
            kept = kept_arrays(directory, *SPAN_FILES)
            if kept is None:  # none (an index from before the stream): computed again
                return None
            rows, names = stream = kept[0], kept[1]
            if rows.shape != names.shape or rows.ndim != 1 or (names.size and int(names.min()) < 0):
                return None
        return cls(None, ends, named, None, name_ends, directory, stream)


def _linked_name(surface: str, named: bool) -> str | None:
    """The resolution's name key of a triple end or span ``surface`` written as a name (``named``: its
    ``is_named``); None where it is not one or its key is not usable (:func:`~gearag.graph.resolve.usable_key`)."""
    if not named:
        return None
    name = name_key(surface)
    return name if usable_key(name) else None


def _span_stream(spans: Sequence[Sequence[str]], name_ids: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per span that names something (:func:`_linked_name`, the rule for triple ends), its passage row and name id
    (``name_ids``, extended with names no triple end has), in the passages' order."""
    rows, names = [], []
    for row, surfaces in enumerate(spans):
        if len(surfaces) > SPAN_SLOTS:  # a span's slot would run into the next row's: ties ordered otherwise
            raise GearagError(f"passage row {row}: {len(surfaces):,} named-entity spans, more than the "
                              f"{SPAN_SLOTS:,} a passage may hold; split it (--max-passage-chars)")
        for surface in surfaces:
            name = _linked_name(surface, is_named(surface))
            if name is not None:
                rows.append(row)
                names.append(name_ids.setdefault(name, len(name_ids)))
    return np.asarray(rows, dtype=np.int32), np.asarray(names, dtype=np.int32)


def reuse_or_compute(previous: Path | None, rel: str, files: Sequence[str], read: Callable[[Path], T | None],
                     compute: Callable[[], T], write: Callable[[T, IndexWriter, str], None], w: IndexWriter) -> T:
    """A per-shard table at ``rel`` of the generation being written: ``previous``'s, hard-linked, when it
    reads back valid; else computed and written."""
    if previous is not None:
        table = read(previous / rel)
        if table is not None:
            for name in files:
                w.link(f"{rel}/{name}", previous / rel / name, previous)
            return table
    table = compute()
    write(table, w, rel)
    return table


def shard_table(previous: Path | None, shard: str, subjects: Sequence[str], objects: Sequence[str],
                w: IndexWriter, spans: Callable[[], Sequence[Sequence[str]]] | None = None) -> EndpointTable:
    """Shard ``shard``'s table in the generation being written (``spans``: with the stream of its passages' NER
    spans): hard-linked from ``previous``, else computed."""
    return reuse_or_compute(previous, f"{ENDPOINTS_DIR}/{shard}", TABLE_FILES + (SPAN_FILES if spans else ()),
                            lambda d: EndpointTable.read(d, len(subjects), spans is not None),
                            lambda: EndpointTable.compute(subjects, objects, spans() if spans else None),
                            EndpointTable.write, w)


class UnionTriples(NamedTuple):
    """The union's triples as every union derivation reads them (the triple graph's and the resolution's, full
    and delta): per shard its endpoint table and which of its triples are live, and each live triple's union
    passage row (shard order)."""

    tables: Sequence[EndpointTable]
    keep: Sequence[np.ndarray]
    owner: np.ndarray
    #: Per shard: shard passage row → union row (-1: deleted), which places the tables' span streams.
    rows: Sequence[np.ndarray] = ()

    @property
    def spanned(self) -> bool:
        """Whether the tables keep span streams (an index with NER mentions)."""
        return any(t.spans is not None for t in self.tables)

    def live_before(self, shards: int) -> int:
        """How many live triples the first ``shards`` shards hold: where the next shard's live triples start."""
        return sum(int(np.count_nonzero(k)) for k in self.keep[:shards])

    def spans(self, remaps: Sequence[np.ndarray], start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The live spans of the shards from ``start`` on (their tables' :attr:`~EndpointTable.spans`; ``remaps``:
        each shard's name id → union name id), in union row order: union passage row, union name id and slot
        (:data:`SPAN_SLOTS`), int64."""
        rows, names, slots = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for table, remap, union_rows in zip(self.tables[start:], remaps[start:], self.rows[start:], strict=True):
            if table.spans is None:
                continue
            local, ids = (np.asarray(a, dtype=np.int64) for a in table.spans)
            at = np.asarray(union_rows, dtype=np.int64)[local]
            place = np.arange(len(local), dtype=np.int64) - np.searchsorted(local, local)
            live = at >= 0
            rows.append(at[live])
            names.append(np.asarray(remap, dtype=np.int64)[ids[live]])
            slots.append(at[live] * SPAN_SLOTS + place[live])
        return np.concatenate(rows), np.concatenate(names), np.concatenate(slots)


def union_ends(remaps: Sequence[np.ndarray], local: Sequence[np.ndarray], keep: Sequence[np.ndarray],
               through: np.ndarray | None = None) -> np.ndarray:
    """Per live triple (``keep``: per shard, its live rows), its endpoints' union ids (-1 kept) from each shard's
    table ids and map: one lookup per end in the map with -1 appended (no mask copy for a shard without
    deletions). ``through``: a map of the union ids (its last entry read for -1), applied to each shard's map
    first, so the ends come out mapped (in its dtype) without an array of union ids in between."""
    parts = []
    dtype = np.int64 if through is None else through.dtype
    for remap, ids, k in zip(remaps, local, keep, strict=True):
        live = np.asarray(ids) if k.all() else ids[k]
        table = np.asarray(remap, dtype=np.int64) if through is None else through[np.asarray(remap)]
        lookup = np.concatenate([table.astype(dtype, copy=False), np.full(1, -1, dtype=dtype)])
        parts.append(lookup[live])  # a local -1 reads the appended -1
    return np.concatenate(parts) if parts else np.zeros((0, 2), dtype)


def passages_per_key(ends: np.ndarray, owner: np.ndarray, ok: np.ndarray, n_keys: int) -> np.ndarray:
    """Per key, in how many distinct passages it is an end where ``ok`` holds (``ends``, ``ok``: (T, 2) per
    triple; ``owner``: each triple's passage)."""
    owner = np.asarray(owner, dtype=np.int64)
    bound = int(owner.max()) + 1 if len(owner) else 1
    pairs = setops.unique(ends[ok].astype(np.int64) * bound + np.repeat(owner[:, None], 2, axis=1)[ok])
    return np.bincount(pairs // bound, minlength=n_keys)


def first_seen(first: np.ndarray, ids: np.ndarray, positions: np.ndarray) -> None:
    """Set ``first[k]`` to the position where ``k`` first occurs in ``ids`` (``positions`` ascending), where unset."""
    uniq, at = np.unique(ids, return_index=True)
    unset = first[uniq] < 0
    first[uniq[unset]] = positions[at[unset]]


