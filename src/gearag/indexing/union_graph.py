"""The union's triple graph from per-shard endpoint tables: the hub cut and entity ids as array work (issue 14).

:func:`gearag.indexing.graph.linkable_for` and :meth:`TripleGraph.build` call
``is_named`` and ``normalise_entity`` on every triple endpoint in Python; over
the union of a grown index that was most of a generation (49 s of a 100k
add). Neither result depends on anything but the endpoint's text, so a
generation keeps, per shard, an *endpoint table* (``endpoints/<shard>/``):
the shard's distinct normalised keys (``keys.json``), each triple's subject
and object key ids (``ends.npy``, -1 for an empty key) and whether each is a
name (``named.npy``). A shard's table is computed once, by the first
generation that lists the shard, and hard-linked into every later one.

:func:`union_triple_graph` then derives, with numpy over the live triples,
exactly what a from-scratch build derives: the ``named`` fallback on the
first 5,000 subjects and objects, the ``max_entity_share`` hub cut over the
union's passage count, entity ids in first-appearance order (every subject,
then every object, as ``TripleGraph.build`` assigns them) and the CSR
adjacency — so entity ids and the hub cut stay exact while the Python work
per add is the new shard's endpoints only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from gearag.config import GraphConfig
from gearag.errors import GearagError
from gearag.graph.resolve import usable_key
from gearag.graph.trie import name_key
from gearag.store.collection import load_array
from gearag.store.graph import TripleGraph
from gearag.store.writer import IndexWriter
from gearag.text import is_named, normalise_entity

T = TypeVar("T")

ENDPOINTS_DIR = "endpoints"
TABLE_FILES = ("keys.json", "ends.npy", "named.npy", "names.json", "name_ends.npy")
#: linkable_for's sample for the "few capitalised endpoints" fallback: this many subjects and objects.
SAMPLE = 5000


class EndpointTable:
    """One shard's triple endpoints: distinct normalised keys, per-triple key ids and name flags, and the
    resolution's name keys (:func:`gearag.graph.trie.name_key` of the named endpoints with a usable key)."""

    def __init__(self, keys: list[str], ends: np.ndarray, named: np.ndarray, names: list[str],
                 name_ends: np.ndarray) -> None:
        self.keys = keys
        self.ends = ends  #: int32 (T, 2): subject and object key ids (-1: the key is empty)
        self.named = named  #: bool (T, 2): is_named(subject), is_named(object)
        self.names = names
        self.name_ends = name_ends  #: int32 (T, 2): ids into ``names`` (-1: not a name, or an unusable key)

    @classmethod
    def compute(cls, subjects: Sequence[str], objects: Sequence[str]) -> EndpointTable:
        ids: dict[str, int] = {}
        name_ids: dict[str, int] = {}
        seen: dict[str, tuple[bool, int, int]] = {}
        ends = np.full((len(subjects), 2), -1, dtype=np.int32)
        name_ends = np.full((len(subjects), 2), -1, dtype=np.int32)
        flags = np.zeros((len(subjects), 2), dtype=bool)
        for t, pair in enumerate(zip(subjects, objects, strict=True)):
            for side, surface in enumerate(pair):
                known = seen.get(surface)
                if known is None:
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
        """The table stored in ``directory`` for a shard of ``n_triples`` triples; None if absent or malformed."""
        try:
            keys = json.loads((directory / "keys.json").read_text(encoding="utf-8"))
            names = json.loads((directory / "names.json").read_text(encoding="utf-8"))
            ends = np.asarray(load_array(directory, "ends.npy"))
            named = np.asarray(load_array(directory, "named.npy"))
            name_ends = np.asarray(load_array(directory, "name_ends.npy"))
        except (OSError, ValueError, GearagError):  # damaged: recompute the table
            return None
        for vocab, ids in ((keys, ends), (names, name_ends)):
            if (not isinstance(vocab, list) or ids.shape != (n_triples, 2) or ids.dtype.kind != "i"
                    or (ids.size and (int(ids.min()) < -1 or int(ids.max()) >= len(vocab)))):
                return None
        if named.shape != (n_triples, 2) or named.dtype != bool:
            return None
        return cls(keys, ends, named, names, name_ends)


def reuse_or_compute(previous: Path | None, rel: str, files: Sequence[str], read: Callable[[Path], T | None],
                     compute: Callable[[], T], write: Callable[[T, IndexWriter, str], None], w: IndexWriter) -> T:
    """A per-shard table at ``rel`` of the generation being written: ``previous``'s, hard-linked, when it
    reads back valid; else computed and written."""
    if previous is not None:
        table = read(previous / rel)
        if table is not None:
            for name in files:
                w.path(f"{rel}/{name}").hardlink_to(previous / rel / name)
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


def union_triple_graph(config: GraphConfig, tables: Sequence[EndpointTable], triple_keep: Sequence[np.ndarray],
                       owner: np.ndarray, n_passages: int) -> TripleGraph:
    """The triple graph a build of the union makes (``linkable_for`` + ``TripleGraph.build``), from the tables.

    ``triple_keep``: per shard, its live triples; ``owner``: each live triple's
    union passage row.
    """
    vocab: dict[str, int] = {}
    ends_parts, named_parts = [], []
    for table, keep in zip(tables, triple_keep, strict=True):
        remap = np.fromiter((vocab.setdefault(k, len(vocab)) for k in table.keys), dtype=np.int64,
                            count=len(table.keys))
        local = table.ends[keep].astype(np.int64)
        ends_parts.append(np.where(local >= 0, remap[np.maximum(local, 0)] if len(remap) else -1, -1))
        named_parts.append(table.named[keep])
    ends = np.concatenate(ends_parts) if ends_parts else np.zeros((0, 2), np.int64)
    named = np.concatenate(named_parts) if named_parts else np.zeros((0, 2), bool)
    n_keys = len(vocab)
    if config.link_entities == "all":
        named = np.ones_like(named)
    else:
        sample = np.concatenate([named[:SAMPLE, 0], named[:SAMPLE, 1]])
        if len(sample) and int(sample.sum()) < 0.05 * len(sample):
            named = np.ones_like(named)  # linkable_for logs this fallback; a build's log already did
    linkable = named & (ends >= 0)
    if config.max_entity_share < 1.0:
        cap = max(20, config.max_entity_share * n_passages)
        owner2 = np.concatenate([owner, owner]).astype(np.int64)
        flat, ok = ends.T.ravel(), linkable.T.ravel()
        pairs = np.unique(flat[ok] * max(n_passages, 1) + owner2[ok])
        counts = np.bincount(pairs // max(n_passages, 1), minlength=n_keys)
        hub = counts > cap
        linkable &= ~hub[np.maximum(ends, 0)]
    # Entity ids in first-appearance order over every subject, then every object (TripleGraph.build).
    seq = np.where(linkable, ends, -1).T.ravel()
    valid = np.flatnonzero(seq >= 0)
    uniq, first = np.unique(seq[valid], return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    entity = np.full(n_keys + 1, -1, dtype=np.int64)
    entity[order] = np.arange(len(order))
    ids = entity[np.where(seq >= 0, seq, n_keys)].astype(np.int32)
    n = len(ends)
    names = list(vocab)
    return TripleGraph.from_ids([names[int(k)] for k in order], ids[:n], ids[n:])
