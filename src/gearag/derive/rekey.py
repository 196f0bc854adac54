"""A compact's generation: the state a generation keeps, re-keyed to one shard holding its union's live rows.

Nothing is derived again (docs/delta.md, "A compact"): :func:`rekeyed_state` composes the merged shard's endpoint
table, vocabularies, token indices and key and name statistics from the old shards' (each equal to what the
merged shard's own rows would make: tested); the resolve state, kept per union row, is hard-linked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gearag.derive.endpoints import ENDPOINTS_DIR, SPAN_FILES, EndpointTable, union_ends
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
    per shard (docs/delta.md, "A compact"). False: ``before`` kept no state this can read; the caller derives the
    generation instead."""
    names = [s.name for s in old]
    if done.get("union") != UNION_VERSION or done.get("shards") != names:
        return False
    spans = (before / ENDPOINTS_DIR / old[0].name / SPAN_FILES[0]).is_file() if old else False
    read = [EndpointTable.read(before / ENDPOINTS_DIR / s.name, s.n_triples, spans) for s in old]
    tables = [t for t in read if t is not None]
    if len(tables) != len(old):
        return False
    texts = [TokenIndex.read(before / RESOLVE_DIR / s.name, len(s.rows)) for s in old]
    by_name = [TokenIndex.read(before / UNION_DIR / "name_tokens" / s.name, t.id_bound("names"))
               for s, t in zip(old, tables, strict=True)]
    if any(i is None for i in texts + by_name):
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
        union_ids = [union_ends(vocab.remaps, [t.ends if what == "keys" else t.name_ends for t in tables],
                                [s.triple_keep for s in old])]
        n_ends = union_ids[0].size
        if what == "names" and spans:  # the live spans' names after every triple end's, as a table numbers them
            live = [(t.spans[1], s.rows[t.spans[0]] >= 0) for t, s in zip(tables, old, strict=True)
                    if t.spans is not None]
            union_ids.append(union_ends(vocab.remaps, [n for n, _ in live], [k for _, k in live]))
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
    TokenIndex.merged([(i, s.rows) for i, s in zip(texts, old, strict=True) if i is not None]).write(
        w, f"{RESOLVE_DIR}/{merged}")
    TokenIndex.merged([(i, m) for i, m in zip(by_name, name_rows, strict=True) if i is not None]).write(
        w, f"{UNION_DIR}/name_tokens/{merged}")
    for f in sorted((before / RESOLVE_DIR).iterdir()):
        if f.is_file():  # the lexicon and the text mentions, per union row (the per-shard indices are dirs)
            w.link(f"{RESOLVE_DIR}/{f.name}", f, before)
    return True
