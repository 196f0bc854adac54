"""A compact's generation: the state a generation keeps, re-keyed to one shard holding its union's live rows.

A compact merges every shard into one without the deleted rows, in union order. The union does not change,
and neither do its resolution, prepared graph and triple graph: their passage rows are the union's rows and
their triple indices its live triples, in the same order. So nothing is derived again. The generation's
graph files are hard-linked (:func:`gearag.indexing.generation.compact_generation`), and of its state only
what is kept per shard is made for the merged one (:func:`rekeyed_state`): its endpoint table, the token
indices of its texts and names, and the key and name vocabularies over it. The key and name statistics are
kept per vocabulary id, so they are moved to the new ids (:meth:`~gearag.derive.triple_graph.KeyStats.taken`,
:meth:`~gearag.derive.union_resolve.NameStats.taken`). The resolve state (the lexicon, the text mentions) is
kept per union row, so it stays as it is. Entity ids stay too: an id a delete left with no edge keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gearag.derive.endpoints import ENDPOINTS_DIR, EndpointTable
from gearag.derive.token_index import RESOLVE_DIR, shard_name_index, shard_token_index
from gearag.derive.triple_graph import KeyStats
from gearag.derive.union_files import ShardColumns, UnionRows, union_triples, vocab_over
from gearag.derive.union_resolve import NameStats
from gearag.derive.union_vocab import UnionVocab
from gearag.store.shards import UNION_VERSION
from gearag.store.writer import IndexWriter


def rekeyed_state(w: IndexWriter, merged: ShardColumns, union: UnionRows, before: Path, done: dict[str, Any],
                  old: Sequence[tuple[str, int]]) -> bool:
    """Write into ``w`` the state of generation ``before`` (``done``: its manifest; ``old``: its shards' names
    and triple counts) re-keyed to ``merged``, the one shard of its union's live rows (``union``: as that
    shard's own). False: ``before`` kept no state this can read; the caller derives the generation instead.
    """
    names = [name for name, _ in old]
    if done.get("union") != UNION_VERSION or done.get("shards") != names:
        return False
    tables = [EndpointTable.read(before / ENDPOINTS_DIR / name, n) for name, n in old]
    if any(t is None for t in tables):
        return False
    table = union_triples(w, [merged], union, None).tables[0]
    for what in ("keys", "names"):
        prior = UnionVocab.read(before, what, names, [t.id_bound(what) for t in tables if t is not None],
                                chained=True)
        if prior is None:
            return False
        vocab, _ = vocab_over(None, [], what, [merged.name], [table], w)
        old_of = prior.find(list(vocab.items))  # each merged string's id in the old vocabulary
        stats = KeyStats.read(before, len(prior.items)) if what == "keys" else NameStats.read(before,
                                                                                           len(prior.items))
        if stats is None or np.any(old_of < 0):
            return False
        stats.taken(old_of).write(w)
    shard_token_index(None, merged.name, merged.texts, w)
    shard_name_index(None, merged.name, table, w)
    for f in sorted((before / RESOLVE_DIR).iterdir()):
        if f.is_file():  # the lexicon and the text mentions, per union row (the per-shard indices are dirs)
            w.link(f"{RESOLVE_DIR}/{f.name}", f, before)
    return True
