"""Two indexes whose entities are numbered differently, compared through the entities' keys.

A sharded index whose generation is an add's delta written whole (docs/delta.md, "One derivation per artifact")
numbers its entities as the add appended them; a build numbers them from nothing. Its graphs are then a
build's with other entity ids: :func:`assert_same_graph_up_to_numbering` maps one numbering onto the
other by the entities' keys (the triple graph's own, the resolution's from the generation's state) and
compares every edge, weight, name and per-node vector.
"""

from __future__ import annotations

import numpy as np
import pytest

from gearag.graph.prepared import PreparedGraph, stored_prepared
from gearag.store import shards as shard_store
from gearag.store.index import Index, read_manifest


def flattened_generation(index: Index) -> bool:
    """Whether ``index`` is a sharded index whose generation is an add's delta written whole (its entities
    numbered as the add appended them, not as a build numbers them)."""
    if index.manifest.get("layout") != "sharded":
        return False
    gen = read_manifest(index.path / shard_store.GENERATIONS_DIR / index.manifest["generation"]["name"])
    return gen.get("prepared_names") == "flattened"


def resolution_keys(index: Index) -> list[str | None]:
    """Each entity's key in the resolution of ``index``, in its own numbering: the stored graph arrays', for a
    plain build that stores none the ones derived from its passages (its numbering is a build's), or, for
    a generation that stores none, what its state says (lexicon names and endpoint names by entity id; None for
    an entity a delete left with no edge, whose id it kept)."""
    from gearag.derive.delta_resolve import entity_keys
    from gearag.derive.endpoints import EndpointTable
    from gearag.derive.union_resolve import NameStats, ResolveState
    from gearag.derive.union_vocab import UnionVocab
    from gearag.indexing.incremental import _load_state
    from gearag.indexing.ner import stored_ner_spans
    from prepared_oracle import stored_graph_arrays

    arrays = stored_graph_arrays(index)
    if arrays is not None:
        return list(arrays.resolution.keys)
    if index.manifest.get("layout") != "sharded":  # a plain build, an add onto nothing: a build's numbering
        from oracles import index_graph_arrays

        return _with_ner_keys(index, list(index_graph_arrays(index).resolution.keys))
    state = _load_state(index.path, index.manifest)
    gen = index.path / shard_store.GENERATIONS_DIR / state.generation
    ner = index.config.resolve.ner_mentions
    items = list(UnionVocab.extend(None, [EndpointTable.compute(
        s.triples.subjects, s.triples.objects, stored_ner_spans(s.path, [p.text for p in s.passages]) if ner else None
    ).names for s in state.shards]).items)
    names, resolved = NameStats.read(gen, len(items), ner), ResolveState.read(gen, len(index.passages))
    assert names is not None and names.entity is not None and resolved is not None
    lex_entity = resolved.lex_entity if resolved.lex_entity is not None else np.arange(len(resolved.names))
    n = 1 + max(int(np.max(lex_entity, initial=-1)), int(np.max(names.entity, initial=-1)))
    return entity_keys(resolved, names, items, n)  # the NER spans' names among them


def _with_ner_keys(index: Index, keys: list[str | None]) -> list[str | None]:
    """``keys`` (the mentions' entities), and after them, where ``index`` (a plain build) holds NER mentions, the
    keys of the entities only its passages' NER spans name, in the order a build numbers them (the oracle
    ``span_entities`` over the spans spaCy finds again)."""
    from gearag.graph.ner import ner_spans
    from gearag.graph.trie import NameLookup
    from gearag.text import is_named
    from oracles import span_entities

    prepared = stored_prepared(index)
    if prepared is None or not prepared.holds_ner:
        return keys
    keys = keys + [None] * (prepared.n_entities - len(prepared.ner_keys) - len(keys))
    found = span_entities({k: i for i, k in enumerate(keys) if k is not None}, len(keys), NameLookup([]),
                          (np.zeros(1, dtype=np.int64), [], []), ner_spans([p.text for p in index.passages]), is_named)
    return keys + list(found.keys)


def _entries(rows, mapped_rows, mapped_targets, perm) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Every entry of ``rows`` as (row, target, scale id, weight), entity ids mapped through ``perm`` where the
    rows or targets are entities', repeats summed, sorted."""
    n = rows.n_rows
    counts, idx, data, sids = rows.gather(np.arange(n, dtype=np.int64))
    row = np.repeat(np.arange(n), counts)
    idx = np.asarray(idx, dtype=np.int64)
    sid = np.zeros(len(idx), dtype=np.int64) if sids is None else np.asarray(sids, dtype=np.int64)
    row = perm[row] if mapped_rows else row
    idx = perm[idx] if mapped_targets else idx
    sid = np.where(sid > 0, 1 + perm[np.maximum(sid - 1, 0)], 0)
    total: dict[tuple, float] = {}
    for key, w in zip(zip(row.tolist(), idx.tolist(), sid.tolist(), strict=True), np.asarray(data).tolist(),
                      strict=True):
        total[key] = total.get(key, 0.0) + w
    return sorted(total.items())


def assert_same_graph_up_to_numbering(a: Index, b: Index) -> None:
    """The triple graph and the prepared passage graph of ``a`` are ``b``'s with other entity ids: mapped by
    their keys, the same edges with the same weights (sums to a float's rounding), names and triple ends."""
    ga, gb = a.graph, b.graph
    assert sorted(ga.entities) == sorted(gb.entities)
    to_b = {k: i for i, k in enumerate(gb.entities)}
    perm = np.asarray([to_b[k] for k in ga.entities] + [-1], dtype=np.int64)  # -1 maps to -1
    for name in ("head", "tail"):
        np.testing.assert_array_equal(perm[np.asarray(getattr(ga, name))], np.asarray(getattr(gb, name)))
    for e in range(ga.n_entities):
        np.testing.assert_array_equal(ga.entity_triples(e), gb.entity_triples(int(perm[e])))
    pa, pb = stored_prepared(a), stored_prepared(b)
    assert pa is not None and pb is not None
    keys_a, keys_b = resolution_keys(a), resolution_keys(b)
    keys_a += [None] * (pa.n_entities - len(keys_a))  # the last ids may be entities left with no edge too
    assert sorted(k for k in keys_a if k is not None) == sorted(keys_b)  # type: ignore[type-var]
    to_b = {k: i for i, k in enumerate(keys_b)}
    _same_prepared(pa, pb, np.asarray([to_b[k] if k is not None else -1 for k in keys_a] + [-1], dtype=np.int64))


def assert_same_graph(a: Index, b: Index) -> None:
    """The prepared passage graphs of ``a`` and ``b`` (in the same entity numbering: a build's, however made) hold
    the same edges with the same weights (sums to a float's rounding), names and triple ends; their files may
    differ in the order of a row's entries."""
    pa, pb = stored_prepared(a), stored_prepared(b)
    assert pa is not None and pb is not None
    assert_same_prepared(pa, pb)


def assert_same_prepared(pa: PreparedGraph, pb: PreparedGraph) -> None:
    """:func:`assert_same_graph` of two prepared graphs."""
    _same_prepared(pa, pb, np.append(np.arange(pa.n_entities, dtype=np.int64), -1))


def _same_prepared(pa: PreparedGraph, pb: PreparedGraph, perm: np.ndarray) -> None:
    """``pa`` is ``pb`` with its entity ``e`` numbered ``perm[e]`` (-1: a hole a delete left; ``perm[-1]``: -1)."""
    holes = np.flatnonzero(perm[:-1] < 0)  # entities a delete left with no edge (their ids kept): b has none
    assert (pa.n_passages, pa.n_entities - len(holes), pa.n_usable, pa.settings) == (
        pb.n_passages, pb.n_entities, pb.n_usable, pb.settings)
    np.testing.assert_array_equal(perm[np.asarray(pa.triple_ends)], np.asarray(pb.triple_ends))
    live = np.flatnonzero(perm[:-1] >= 0)
    np.testing.assert_array_equal(np.asarray(pa.specificity)[live], np.asarray(pb.specificity)[perm[live]])
    ca, cb = pa.columns, pb.columns
    assert [s.meta() for s in ca.sources] == [s.meta() for s in cb.sources]
    for sa, sb in zip(ca.sources, cb.sources, strict=True):
        ea = _entries(sa.rows, not sa.of_passages, not sa.to_passages, perm)
        eb = _entries(sb.rows, False, False, np.arange(pb.n_entities + 1))
        assert [k for k, _ in ea] == [k for k, _ in eb], sa.name
        np.testing.assert_allclose([w for _, w in ea], [w for _, w in eb], rtol=1e-6, err_msg=sa.name)
    p = pa.n_passages
    node = np.concatenate([np.arange(p), np.where(perm[:-1] >= 0, p + perm[:-1], -1)])  # a's node → b's (-1: a hole)
    for name, rtol in (("sums", 1e-9), ("degree", 0)):
        got, want = np.zeros(len(cb.sums)), np.asarray(getattr(cb, name), dtype=np.float64)
        mine = np.asarray(getattr(ca, name), dtype=np.float64)
        got[node[node >= 0]] = mine[node >= 0]
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=name)
        assert not mine[node < 0].any(), name  # a hole has no out-edge
    scale_a, scale_b = np.asarray(ca.scale), np.asarray(cb.scale)
    lexicon = np.flatnonzero((perm[:-1] >= 0) & (perm[:-1] < len(scale_b) - 1))
    np.testing.assert_array_equal(scale_a[1 + lexicon], scale_b[1 + perm[lexicon]])
    names_a = sorted(zip(np.asarray(pa.names.name_hashes).tolist(), perm[np.asarray(pa.names.name_ids)].tolist(),
                         strict=True))
    names_b = sorted(zip(np.asarray(pb.names.name_hashes).tolist(), np.asarray(pb.names.name_ids).tolist(),
                         strict=True))
    assert names_a == names_b


def union_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, an add derives its generation as a build does (from nothing, or for an index that stores the
    graph arrays, from the union), numbered as a build numbers it: as where no delta can say it."""
    import gearag.indexing.incremental as incremental
    from gearag.indexing.delta_generation import Declined

    monkeypatch.setattr(incremental, "write_delta_generation", lambda *args, **kwargs: Declined("as a build"))
