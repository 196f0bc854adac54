"""The union's triple graph from per-shard endpoint tables: the hub cut and entity ids as array work.

The whole-corpus derivation (``linkable_for`` + ``reference_triple_graph``,
now the tests' reference in ``tests/oracles.py``) calls ``is_named`` and
``normalise_entity`` on every triple endpoint in Python; over the union of a
grown index that was most of a generation (49 s of a 100k add). Neither result
depends on anything but the endpoint's text, so a generation keeps, per shard,
an *endpoint table* (``endpoints/<shard>/``): the shard's distinct normalised
keys (``keys.json``), each triple's subject and object key ids (``ends.npy``,
-1 for an empty key) and whether each is a name (``named.npy``). A shard's
table is computed once, by the first generation that lists the shard, and
hard-linked into every later one.

:func:`union_triple_graph` then derives, with numpy over the live triples,
exactly what that derivation gives (a build is this over its passages as one
shard: :func:`corpus_triple_graph`): the ``named`` fallback on the first 5,000
subjects and objects, the ``max_entity_share`` hub cut over the union's
passage count, entity ids in first-appearance order (every subject, then every
object, as ``reference_triple_graph`` assigns them) and the CSR adjacency.
Keys are numbered by the union's vocabulary
(:mod:`gearag.derive.union_vocab`), and :class:`KeyStats` keeps, per key,
its first subject and object positions and its passage count, so an add that
appends a shard counts that shard's triples only; ids and the hub cut stay
exact while the Python work per add is the new shard's endpoints.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from gearag import setops
from gearag.config import GraphConfig
from gearag.data.jsonio import load_json
from gearag.data.jsonstrings import taken
from gearag.derive.union_vocab import UNION_DIR, UnionVocab
from gearag.errors import GearagError, IndexFormatError
from gearag.graph.hubs import NAMED_SAMPLE, hub_cap, too_few_named
from gearag.graph.resolve import usable_key
from gearag.graph.trie import name_key
from gearag.store.collection import load_array
from gearag.store.graph import TripleGraph
from gearag.store.rows import zip_columns
from gearag.store.writer import IndexWriter
from gearag.text import is_named, normalise_entity

T = TypeVar("T")

ENDPOINTS_DIR = "endpoints"
TABLE_FILES = ("keys.json", "ends.npy", "named.npy", "names.json", "name_ends.npy")
#: Each union key's entity id in the triple graph (:class:`KeyStats`).
KEY_ENTITY = "key_entity.npy"
log = logging.getLogger(__name__)



#: Surfaces whose key, name and flag :meth:`EndpointTable.compute` remembers before it starts again.
SEEN_SURFACES = 1 << 20


class EndpointTable:
    """One shard's triple endpoints: distinct normalised keys, per-triple key ids and name flags, and the
    resolution's name keys (:func:`gearag.graph.trie.name_key` of the named endpoints with a usable key)."""

    def __init__(self, keys: list[str] | None, ends: np.ndarray, named: np.ndarray, names: list[str] | None,
                 name_ends: np.ndarray, directory: Path | None = None) -> None:
        self._keys, self._names, self._directory = keys, names, directory
        self.ends = ends  #: int32 (T, 2): subject and object key ids (-1: the key is empty)
        self.named = named  #: bool (T, 2): is_named(subject), is_named(object)
        self.name_ends = name_ends  #: int32 (T, 2): ids into ``names`` (-1: not a name, or an unusable key)

    @property
    def keys(self) -> list[str]:
        """The distinct normalised keys (read from the stored table on first use)."""
        if self._keys is None:
            self._keys = self._strings("keys.json", self.ends)
        return self._keys

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
        return int(ids.max()) + 1 if ids.size else 0

    @classmethod
    def compute(cls, subjects: Sequence[str], objects: Sequence[str]) -> EndpointTable:
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
                    name = name_key(surface) if flag else ""
                    known = seen[surface] = (flag, ids.setdefault(key, len(ids)) if key else -1,
                                             name_ids.setdefault(name, len(name_ids)) if flag and usable_key(name)
                                             else -1)
                flags[t, side], ends[t, side], name_ends[t, side] = known
        return cls(list(ids), ends, flags, list(name_ids), name_ends)

    def write(self, w: IndexWriter, rel: str) -> None:
        w.write_json(f"{rel}/keys.json", self.keys)
        w.write_array(f"{rel}/ends.npy", self.ends)
        w.write_array(f"{rel}/named.npy", self.named)
        w.write_json(f"{rel}/names.json", self.names)
        w.write_array(f"{rel}/name_ends.npy", self.name_ends)

    @classmethod
    def read(cls, directory: Path, n_triples: int) -> EndpointTable | None:
        """The table stored in ``directory`` for a shard of ``n_triples`` triples; None if absent or malformed.

        Its strings are read on first use (:attr:`keys`, :attr:`names`).
        """
        try:
            ends = np.asarray(load_array(directory, "ends.npy"))
            named = np.asarray(load_array(directory, "named.npy"))
            name_ends = np.asarray(load_array(directory, "name_ends.npy"))
        except (OSError, ValueError, GearagError):  # damaged: recompute the table
            return None
        if not all((directory / f).is_file() for f in ("keys.json", "names.json")):
            return None
        for ids in (ends, name_ends):
            if ids.shape != (n_triples, 2) or ids.dtype.kind != "i" or (ids.size and int(ids.min()) < -1):
                return None
        if named.shape != (n_triples, 2) or named.dtype != bool:
            return None
        return cls(None, ends, named, None, name_ends, directory)


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
                w: IndexWriter) -> EndpointTable:
    """Shard ``shard``'s table in the generation being written: hard-linked from ``previous``, else computed."""
    return reuse_or_compute(previous, f"{ENDPOINTS_DIR}/{shard}", TABLE_FILES,
                            lambda d: EndpointTable.read(d, len(subjects)),
                            lambda: EndpointTable.compute(subjects, objects), EndpointTable.write, w)


class UnionTriples(NamedTuple):
    """The union's triples as every union derivation reads them (the triple graph's and the resolution's, full
    and delta): per shard its endpoint table and which of its triples are live, and each live triple's union
    passage row (shard order)."""

    tables: Sequence[EndpointTable]
    keep: Sequence[np.ndarray]
    owner: np.ndarray

    def live_before(self, shards: int) -> int:
        """How many live triples the first ``shards`` shards hold: where the next shard's live triples start."""
        return sum(int(np.count_nonzero(k)) for k in self.keep[:shards])


@dataclass(frozen=True)
class Removal:
    """How a delete renumbers the previous generation's rows: per prior passage row and per prior live triple,
    its index in the union now (-1: deleted); and the triples it deleted, per shard (masks of the shard's
    rows), with their passages as ``shard offset + shard row`` (offsets: the shards' sizes, dead rows
    included)."""

    rows: np.ndarray
    triples: np.ndarray
    gone: tuple[np.ndarray, ...] = ()
    gone_passages: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


class KeyStats:
    """Per union key, over the live triples of the shards it covers: where the key first appears as a linkable
    subject and object (live triple index, -1: never) and in how many distinct passages (the hub cut's count).

    A generation keeps it (``union/key_*.npy``) for the next: when that one
    only appends shards (same leading shards, same tombstones) it counts the
    new shards' triples alone, which start after every counted one.
    """

    def __init__(self, first: np.ndarray, passages: np.ndarray, named_all: bool,
                 entity: np.ndarray | None = None) -> None:
        self.first = first  #: int64 (K, 2)
        self.passages = passages  #: int64 (K,)
        self.named_all = named_all  #: whether every endpoint counted as a name (linkable_for's fallback)
        #: int32 (K,): each key's entity id in the triple graph (-1: none), when known: what a delta's add reads
        #: instead of ordering every key again (docs/delta.md)
        self.entity = entity

    @classmethod
    def grown(cls, prior: KeyStats | None, n_keys: int, named_all: bool) -> KeyStats:
        """``prior`` (or nothing) with rows for keys up to ``n_keys`` (new rows: never seen, no passages)."""
        stats = cls(np.full((n_keys, 2), -1, dtype=np.int64), np.zeros(n_keys, dtype=np.int64), named_all)
        if prior is not None:
            stats.first[: len(prior.first)] = prior.first
            stats.passages[: len(prior.passages)] = prior.passages
        return stats

    def write(self, w: IndexWriter) -> None:
        w.write_array(f"{UNION_DIR}/key_first.npy", self.first)
        w.write_array(f"{UNION_DIR}/key_passages.npy", self.passages)
        w.write_json(f"{UNION_DIR}/key_meta.json", {"named_all": self.named_all})
        if self.entity is not None:
            w.write_array(f"{UNION_DIR}/{KEY_ENTITY}", self.entity)

    def without(self, removal: Removal, gone_ends: np.ndarray, gone_named: np.ndarray) -> tuple[KeyStats, np.ndarray]:
        """These statistics without the triples ``removal`` deleted (``gone_ends``, ``gone_named``: their union
        key ids and name flags, in ``removal.gone`` order), with the keys whose first appearance on a side went
        (``(K, 2)`` mask): the caller finds those again. A deleted passage takes all its pairs with it, so each
        key loses one passage per distinct deleted passage it was in."""
        first = self.first.copy()
        has = first >= 0
        moved = removal.triples[first[has]]
        lost = np.zeros(first.shape, dtype=bool)
        lost[has] = moved < 0
        first[has] = moved
        gone = passages_per_key(gone_ends, removal.gone_passages, gone_named & (gone_ends >= 0), len(self.passages))
        return KeyStats(first, self.passages - gone, self.named_all), lost

    @classmethod
    def read(cls, directory: Path, n_keys: int) -> KeyStats | None:
        try:
            first = np.asarray(load_array(directory, f"{UNION_DIR}/key_first.npy"))
            passages = np.asarray(load_array(directory, f"{UNION_DIR}/key_passages.npy"))
            meta = json.loads((directory / UNION_DIR / "key_meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, GearagError):
            return None
        if first.shape != (n_keys, 2) or passages.shape != (n_keys,) or not isinstance(meta, dict):
            return None
        try:  # optional: an older generation has none
            entity: np.ndarray | None = np.asarray(load_array(directory, f"{UNION_DIR}/{KEY_ENTITY}"))
        except (OSError, ValueError, GearagError):
            entity = None
        return cls(first, passages, bool(meta.get("named_all")),
                   entity if entity is not None and entity.shape == (n_keys,) else None)


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


def links_all(config: GraphConfig, tables: Sequence[EndpointTable], triple_keep: Sequence[np.ndarray]) -> bool:
    """Whether every endpoint links: ``link_entities=all``, or ``linkable_for``'s fallback
    (:func:`gearag.graph.hubs.too_few_named`) over the union's first ``NAMED_SAMPLE`` live subjects and objects
    (read from the leading shards only)."""
    if config.link_entities == "all":
        return True
    parts, have = [], 0
    for table, keep in zip(tables, triple_keep, strict=True):
        if have >= NAMED_SAMPLE:
            break
        # The live rows among the first ones: a shard's leading rows hold its first live ones (no whole-shard mask).
        n = min(len(keep), NAMED_SAMPLE - have)
        while int(np.count_nonzero(keep[:n])) < NAMED_SAMPLE - have and n < len(keep):
            n = min(len(keep), 2 * n)
        parts.append(table.named[:n][keep[:n]][: NAMED_SAMPLE - have])
        have += len(parts[-1])
    named = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=bool)
    sample = np.concatenate([named[:, 0], named[:, 1]])
    return too_few_named(int(sample.sum()), len(sample))


def hub_keys(config: GraphConfig, passages: np.ndarray, n_passages: int) -> np.ndarray:
    """Keys in more than ``max_entity_share`` of the passages (and 20): hubs, which link nothing (none when the
    cut is off)."""
    if config.max_entity_share >= 1.0:
        return np.zeros(len(passages), dtype=bool)
    return passages > hub_cap(config.max_entity_share, n_passages)


def entity_order(first: np.ndarray, hub: np.ndarray, n_triples: int,
                 keys: np.ndarray | None = None) -> np.ndarray:
    """The keys that are entities, in ``reference_triple_graph``'s order: by first appearance over every subject,
    then every object (``first``: (K, 2) live-triple positions, -1: never; ``n_triples`` live triples).
    ``keys``: only those (seen keys), in that order among themselves."""
    order = np.flatnonzero((first >= 0).any(axis=1) & ~hub) if keys is None else keys[~hub[keys]]
    where = np.where(first[order, 0] >= 0, first[order, 0], n_triples + first[order, 1])
    return order[np.argsort(where, kind="stable")]


class TripleInputs(NamedTuple):
    """What the triple graph reads of the union, full (:func:`union_triple_graph`) or as a delta over its base
    (:func:`~gearag.derive.delta_triples.triples_delta`)."""

    live: UnionTriples
    n_passages: int
    keys: UnionVocab  #: the union's vocabulary of keys
    prior: KeyStats | None = None  #: the statistics of the first ``counted`` shards (None: nothing counted)
    counted: int = 0
    removal: Removal | None = None  #: a delete: ``prior`` is of every shard before it, the deleted triples taken away


def named_ends(tables: Sequence[EndpointTable], keep: Sequence[np.ndarray], named_all: bool) -> np.ndarray:
    """(T, 2) per live triple of ``tables``: whether each end counts as a name (every end under the fallback)."""
    parts = [t.named[k] for t, k in zip(tables, keep, strict=True)]
    named = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=bool)
    return np.ones_like(named) if named_all else named


def count_keys(stats: KeyStats, ends: np.ndarray, named: np.ndarray, owner: np.ndarray, start: int) -> np.ndarray:
    """Count the live triples from position ``start`` on (``ends``, ``named``, ``owner``: theirs) into ``stats``:
    the keys' first appearances and their passages (the triples are in no counted shard, so their pairs add to
    the counts); which ends counted."""
    ok = named & (ends >= 0)
    positions = np.arange(start, start + len(ends), dtype=np.int64)
    for side in (0, 1):
        first_seen(stats.first[:, side], ends[:, side][ok[:, side]], positions[ok[:, side]])
    stats.passages += passages_per_key(ends, owner, ok, len(stats.passages))
    return ok


def union_triple_graph(config: GraphConfig, inputs: TripleInputs) -> tuple[TripleGraph, KeyStats]:
    """The triple graph a build of the union makes (``linkable_for`` + ``reference_triple_graph``), from the tables:
    only the triples after ``inputs.counted`` shards are counted into ``inputs.prior`` (or, with a removal, the
    deleted ones taken away from it)."""
    (tables, triple_keep, owner), vocab, removal = inputs.live, inputs.keys, inputs.removal
    ends = union_ends(vocab.remaps, [t.ends for t in tables], triple_keep)
    n_keys = len(vocab.items)
    named_all = links_all(config, tables, triple_keep)
    if named_all and config.link_entities != "all":
        log.warning("few capitalised triple endpoints: linking every endpoint (link_entities=all)")
    named = named_ends(tables, triple_keep, named_all)
    prior, counted = inputs.prior, inputs.counted
    if prior is None or prior.named_all != named_all:
        prior, counted = None, 0
    lost = None
    if prior is not None and removal is not None:
        gone_ends = union_ends(vocab.remaps, [t.ends for t in tables], removal.gone)
        prior, lost = prior.without(removal, gone_ends, named_ends(tables, removal.gone, named_all))
    start = inputs.live.live_before(counted)
    stats = KeyStats.grown(prior, n_keys, named_all)
    count_keys(stats, ends[start:], named[start:], owner[start:], start)
    for side in (0, 1):
        if lost is not None and lost[:, side].any():  # keys whose first appearance was deleted: the next one
            at = np.flatnonzero(named[:, side] & (ends[:, side] >= 0) & lost[np.maximum(ends[:, side], 0), side])
            first_seen(stats.first[:, side], ends[at, side], at)
    hub = hub_keys(config, stats.passages, inputs.n_passages)
    linkable = named & (ends >= 0) & ~hub[np.maximum(ends, 0)]
    order = entity_order(stats.first, hub, len(ends))
    entity = np.full(n_keys + 1, -1, dtype=np.int64)
    entity[order] = np.arange(len(order))
    ids = entity[np.where(linkable, ends, n_keys)].astype(np.int32)
    stats.entity = entity[:-1].astype(np.int32)
    # The keys in entity order: gathered as JSON text from a stored vocabulary (entities.json is written as it is).
    return TripleGraph.from_ids(taken(vocab.items, order), ids[:, 0], ids[:, 1]), stats


def corpus_triple_graph(config: GraphConfig, subjects: Sequence[str], objects: Sequence[str], owner: np.ndarray,
                        n_passages: int) -> TripleGraph:
    """The triple graph of one corpus (a shard's own): :func:`union_triple_graph` over it as the one shard,
    from nothing."""
    table = EndpointTable.compute(subjects, objects)
    vocab = UnionVocab.extend(None, [table.keys])
    live = UnionTriples([table], [np.ones(len(subjects), dtype=bool)], np.asarray(owner))
    graph, _ = union_triple_graph(config, TripleInputs(live, n_passages, vocab))
    return graph
