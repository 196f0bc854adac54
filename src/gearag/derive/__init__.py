"""The index's corpus-wide artifacts, derived from its shards: one derivation per artifact.

Each function takes what the previous generation kept (or nothing), the
shards and what was removed, and gives the artifact with the state the next
add extends. An add and a delete give it as a delta over the last generation
written whole (:func:`gearag.derive.union_files.union_delta`); a build, and a
generation the delta cannot say over its base (a new name whose hash a base
name has, a base an older gearag kept), are the same delta over
an empty index (:func:`gearag.derive.union_files.write_from_nothing`); an
index that stores no passage graph keeps its triple graph alone. A compact
derives nothing, re-keying the state to the merged shard (docs/architecture.md).

* :mod:`~gearag.derive.triple_graph` — the triple graph and its hub cut, from nothing or onto a base (key statistics);
* :mod:`~gearag.derive.endpoints` — the per-shard endpoint tables every derivation reads the triples through;
* :mod:`~gearag.derive.union_resolve` — the state the entity resolution keeps, and the steps its deltas share;
* :mod:`~gearag.derive.union_vocab` — the union's key and name vocabularies, kept between generations;
* :mod:`~gearag.derive.text_mentions`, :mod:`~gearag.derive.token_index` — names found in the passages' texts,
  and the per-shard token indices an add scans again;
* :mod:`~gearag.derive.union_files` — all of it written into a generation (and the optional edge kinds, the
  passage graph prepared from it);
* :mod:`~gearag.derive.delta_resolve`, :mod:`~gearag.derive.delta_scan`, :mod:`~gearag.derive.delta_delete` —
  the entity resolution: what an add or a delete changed, over the last generation written whole (docs/delta.md);
* :mod:`~gearag.derive.rekey` — a compact's state, re-keyed to the merged shard.

The artifacts' types and what queries read of them live in :mod:`gearag.graph` and :mod:`gearag.store`,
below this package; running the derivations as build stages and writing generations is :mod:`gearag.indexing`,
above it.
"""
