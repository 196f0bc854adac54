"""A compact's generation: the state a generation keeps, re-keyed to one shard holding its union's live rows.

A compact merges every shard into one without the deleted rows, in union order. The union does not change,
and neither do its resolution, prepared graph and triple graph: their passage rows are the union's rows and
their triple indices its live triples, in the same order. So nothing is derived again. The generation's
graph files are hard-linked (:func:`gearag.indexing.generation.compact_generation`), and of its state only
what is kept per shard is made for the merged one (:func:`rekeyed_state`), composed from the old shards'
without parsing a triple or a text again: the endpoint table (the live triples' ends through the union's vocabularies,
numbered again by first appearance), the two vocabularies over it (the union's strings and hashes, taken in
that order), the token indices of its texts and names (the old shards' postings with their rows mapped to
the merged shard's: :meth:`~gearag.derive.token_index.TokenIndex.merged`), each equal to what the merged
shard's own rows would make (tested). The key and name statistics are kept per vocabulary id, so they are
moved to the new ids (:meth:`~gearag.derive.triple_graph.KeyStats.taken`,
:meth:`~gearag.derive.union_resolve.NameStats.taken`). The resolve state (the lexicon, the text mentions) is
kept per union row, so it stays as it is. Entity ids stay too: an id a delete left with no edge keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gearag.derive.endpoints import ENDPOINTS_DIR, SPAN_FILES, EndpointTable
from gearag.derive.token_index import RESOLVE_DIR, TokenIndex
from gearag.derive.triple_graph import KeyStats
from gearag.derive.union_resolve import NameStats
from gearag.derive.union_vocab import UNION_DIR, UnionVocab
from gearag.store.shards import UNION_VERSION
from gearag.store.writer import IndexWriter


class OldShard(NamedTuple):
    """One of the shards a compact merges, as the merged shard takes its rows."""

    name: str
    n_triples: int
    rows: np.ndarray  #: per passage row of the shard, its row in the merged shard (-1: deleted)
    triple_keep: np.ndarray  #: per triple of the shard, whether it is live (kept in the merged shard, in order)


def _merged_ids(union_ids: list[np.ndarray], n_union: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The live triples' ends (then spans) as union ids (per shard, -1: none) numbered as one table numbers them,
    by first appearance: the ends flat in those ids, the union id of each, and each union id's (-1: not live)."""
    flat = np.concatenate([ids.reshape(-1) for ids in union_ids])
    held = np.flatnonzero(flat >= 0)
    distinct, first = np.unique(flat[held], return_index=True)
    union_of = distinct[np.argsort(first, kind="stable")]
    new = np.full(n_union, -1, dtype=np.int64)
    new[union_of] = np.arange(len(union_of))
    ends = np.full(len(flat), -1, dtype=np.int32)
    ends[held] = new[flat[held]]
    return ends, union_of, new


def rekeyed_state(w: IndexWriter, merged: str, before: Path, done: dict[str, Any], old: Sequence[OldShard]) -> bool:
    """Write into ``w`` the state of generation ``before`` (``done``: its manifest; ``old``: its shards) re-keyed
    to shard ``merged``, the one shard of its union's live rows, every part composed from what ``before`` keeps
    per shard (module docstring). False: ``before`` kept no state this can read; the caller derives the
    generation instead."""
    names = [s.name for s in old]
    if done.get("union") != UNION_VERSION or done.get("shards") != names:
        return False
    spans = (before / ENDPOINTS_DIR / old[0].name / SPAN_FILES[0]).is_file() if old else False
    read = [EndpointTable.read(before / ENDPOINTS_DIR / s.name, s.n_triples, spans) for s in old]
    tables = [t for t in read if t is not None]
    texts = [TokenIndex.read(before / RESOLVE_DIR / s.name, len(s.rows)) for s in old]
    if len(tables) != len(old) or any(i is None for i in texts):
        return False
    ends, vocabs, name_rows = {}, {}, []
    for what in ("keys", "names"):
        vocab = UnionVocab.read(before, what, names, [t.id_bound(what) for t in tables])
        if vocab is None:
            return False
        stats = KeyStats.read(before, len(vocab.items)) if what == "keys" else NameStats.read(
            before, len(vocab.items), spans)
        if stats is None:
            return False
        local = [(t.ends if what == "keys" else t.name_ends)[s.triple_keep] for t, s in zip(tables, old, strict=True)]
        remaps = list(vocab.remaps)
        n_ends = 2 * sum(len(ids) for ids in local)
        if what == "names" and spans:  # the live spans' names after every triple end's, as a table numbers them
            local += [t.spans[1][s.rows[t.spans[0]] >= 0] for t, s in zip(tables, old, strict=True)
                      if t.spans is not None]
            remaps += remaps
        union_ids = [np.where(ids >= 0, remap[np.maximum(ids, 0)], -1)
                     for ids, remap in zip(local, remaps, strict=True)]
        flat, union_of, new = _merged_ids(union_ids, len(vocab.items))
        ends[what], span_names = flat[:n_ends].reshape(-1, 2), flat[n_ends:]
        vocabs[what] = vocab.taken(union_of)
        vocabs[what].write(w, what, [merged])
        stats.taken(union_of).write(w)
        if what == "names":  # per shard: its table's name id → the merged one's (for the names' token index)
            name_rows = [new[remap] for remap in vocab.remaps]
    named = np.concatenate([t.named[s.triple_keep] for t, s in zip(tables, old, strict=True)])
    span_rows = [s.rows[t.spans[0]] for t, s in zip(tables, old, strict=True) if t.spans is not None]
    stream = (np.concatenate([r[r >= 0] for r in span_rows]).astype(np.int32), span_names) if spans else None
    EndpointTable(list(vocabs["keys"].items), ends["keys"], named, list(vocabs["names"].items),
                  ends["names"], spans=stream).write(w, f"{ENDPOINTS_DIR}/{merged}")
    by_name = [TokenIndex.read(before / UNION_DIR / "name_tokens" / s.name, t.id_bound("names"))
               for s, t in zip(old, tables, strict=True)]
    if any(i is None for i in by_name):
        return False
    TokenIndex.merged([(i, s.rows) for i, s in zip(texts, old, strict=True) if i is not None]).write(
        w, f"{RESOLVE_DIR}/{merged}")
    TokenIndex.merged([(i, m) for i, m in zip(by_name, name_rows, strict=True) if i is not None]).write(
        w, f"{UNION_DIR}/name_tokens/{merged}")
    for f in sorted((before / RESOLVE_DIR).iterdir()):
        if f.is_file():  # the lexicon and the text mentions, per union row (the per-shard indices are dirs)
            w.link(f"{RESOLVE_DIR}/{f.name}", f, before)
    return True
