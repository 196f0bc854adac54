"""What a delta would hold after an add, and whether a push over base + delta ranks as the union (docs/delta.md).

    PYTHONPATH=src:tests python benchmarks/delta_size.py --base BASE_IDX --union UNION_IDX --questions Q.json [--n 200]

``UNION_IDX`` is ``BASE_IDX`` after ``gearag add`` (e.g. a hard-linked copy, added to). The script
finds the delta by comparing the two stored prepared graphs (``delta_of`` in ``tests/delta_oracles.py``, the
brute-force reference: it reads both graphs whole), prints its size against the union's, then ranks
``--n`` questions by PPR from their entities over the union's graph and over base + delta,
alternating, and prints how many rankings are equal and each one's median and p90 time. It also times
the writer's apply half (:func:`gearag.graph.delta_apply.apply_delta`) on what the add changed in the
resolution (found by brute force too) and checks its column sums and degrees against the union's.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import orjson

from delta_oracles import delta_of, entity_map, resolution_delta_of  # tests/ on PYTHONPATH
from gearag.graph.delta_apply import apply_delta
from gearag.graph.layered import LayeredCsr
from gearag.graph.passage_graph import PassageGraph
from gearag.graph.prepared import stored_prepared
from gearag.graph.scaled import ABOUT_SOURCE, Scaled, TermsByName
from gearag.store.index import Index
from rank_pair import compare, pair_args, questions_of


def _load(path: Path):  # type: ignore[no-untyped-def]
    index = Index.load(path)
    prepared = stored_prepared(index)
    graph_dir = path / str(index.manifest.get("graph_dir", "graph"))
    keys = orjson.loads((graph_dir / "entities.json").read_bytes())["keys"]
    return prepared, keys


def main() -> None:
    args = pair_args(__doc__, "base", "union")
    base, base_keys = _load(args.base)
    union, union_keys = _load(args.union)
    t = time.perf_counter()
    entity_of = entity_map(base_keys, union_keys)
    del base_keys, union_keys
    assert entity_of is not None, "a base key is not in the union"
    layered = delta_of(base, union, entity_of)
    print(f"delta_of: {time.perf_counter() - t:.1f} s")
    assert layered is not None, "declined"
    lay = layered.layout
    print(f"nodes {lay.n_nodes:,} (base {lay.base_passages + lay.base_entities:,}); "
          f"new passages {lay.n_passages - lay.base_passages:,}, new entities {lay.n_entities - lay.base_entities:,}")
    cols, u_cols = layered.columns, union.columns
    assert isinstance(cols, Scaled) and isinstance(u_cols, Scaled)
    total = whole_total = 0
    for src, u_src in zip(cols.sources, u_cols.sources, strict=True):
        name, m, whole = src.name, src.rows, u_src.rows
        assert isinstance(m, LayeredCsr)
        total += len(m.delta.indices)
        whole_total += len(whole.indices)
        n_base = m.base.n_rows
        listed = np.flatnonzero(m.where[:n_base] >= 0)
        appended = listed[np.asarray(m.appends)[listed]] if m.appends is not None else listed[:0]
        replaced = np.setdiff1d(listed, appended)
        sizes = np.diff(m.delta.indptr)
        in_new = int(sizes.sum() - sizes[m.where[listed]].sum())
        print(f"{name}: {len(appended):,} appended to ({int(sizes[m.where[appended]].sum()):,} entries), "
              f"{len(replaced):,} replaced ({int(sizes[m.where[replaced]].sum()):,} entries), "
              f"{m.n_rows - n_base:,} new ({in_new:,} entries); the delta holds {len(m.delta.indices):,} entries, "
              f"the union {len(whole.indices):,} ({len(m.delta.indices) / len(whole.indices):.2%})")
    print(f"all sources: the delta holds {total:,} entries, the union {whole_total:,} ({total / whole_total:.2%})")
    print(f"names: {layered.names.delta.size:,} in the delta of {union.names.size:,}; "
          f"triples appended: {len(layered.triple_ends.tail):,}")
    # The writer's apply half: the prepared graph's delta from what the add changed in the resolution.
    changes = resolution_delta_of(base, union, entity_of)
    assert changes is not None and isinstance(base.columns, Scaled)
    terms = next(s.rows for s in base.columns.sources if s.name == ABOUT_SOURCE)
    by_name = TermsByName.of(terms, len(base.columns.scale))  # kept with the base
    times = []
    for _ in range(3):
        t = time.perf_counter()
        applied = apply_delta(base, changes, by_name)
        times.append(time.perf_counter() - t)
    assert applied is not None
    same = np.array_equal(applied.columns.degree, layered.columns.degree) and np.allclose(
        applied.columns.sums, layered.columns.sums, rtol=1e-12, atol=0)
    files = applied.files()
    print(f"apply_delta: {', '.join(f'{x:.2f}' for x in times)} s; the same sums and degrees as the union's: {same}; "
          f"files {sum(np.asarray(a).nbytes for a in files.values()) / 1e6:.0f} MB")
    compare({"union": PassageGraph(union), "layered": PassageGraph(applied)}, questions_of(args))


if __name__ == "__main__":
    main()
