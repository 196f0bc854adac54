"""What a delta would hold after an add, and whether a push over base + delta ranks as the union (docs/delta.md).

    PYTHONPATH=src python benchmarks/delta_size.py --base BASE_IDX --union UNION_IDX --questions Q.json [--n 200]

``UNION_IDX`` is ``BASE_IDX`` after ``gearag add`` (e.g. a hard-linked copy, added to). The script
finds the delta by comparing the two stored prepared graphs (:func:`gearag.graph.delta.delta_of`, the
brute-force reference: it reads both graphs whole), prints its size against the union's, then ranks
``--n`` questions by PPR from their entities over the union's graph and over base + delta,
alternating, and prints how many rankings are equal and each one's median and p90 time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import orjson

from gearag.graph.delta import delta_of, entity_map
from gearag.graph.passage_graph import PassageGraph
from gearag.store.index import Index


def _load(path: Path):  # type: ignore[no-untyped-def]
    index = Index.load(path)
    prepared = index.stored_prepared_graph()
    graph_dir = path / str(index.manifest.get("graph_dir", "graph"))
    keys = orjson.loads((graph_dir / "entities.json").read_bytes())["keys"]
    return prepared, keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--union", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
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
    cols, about = layered.columns, layered.about
    print(f"nodes {lay.n_nodes:,} (base {lay.base_passages + lay.base_entities:,}); "
          f"new passages {lay.n_passages - lay.base_passages:,}, new entities {lay.n_entities - lay.base_entities:,}")
    print(f"columns: {len(cols.delta.indptr) - 1:,} in the delta, {len(cols.delta.indices):,} entries "
          f"of {len(union.columns.indices):,} ({len(cols.delta.indices) / len(union.columns.indices):.2%})")
    print(f"about rows: {len(about.delta.indptr) - 1:,} in the delta, {len(about.delta.indices):,} entries "
          f"of {len(union.about.indices):,} ({len(about.delta.indices) / len(union.about.indices):.2%})")
    print(f"names: {layered.names.delta.size:,} in the delta of {union.names.size:,}; "
          f"triples appended: {len(layered.triple_ends.tail):,}")
    questions = [q["question"] for q in json.loads(args.questions.read_text(encoding="utf-8"))][: args.n]
    graphs = {"union": PassageGraph(union), "layered": PassageGraph(layered)}
    times: dict[str, list[float]] = {k: [] for k in graphs}
    rankings: dict[str, list[list[int]]] = {k: [] for k in graphs}
    for i, q in enumerate(questions + questions[:5]):  # the first five again at the end: warm
        order = list(graphs) if i % 2 else list(reversed(graphs))
        for name in order:
            t = time.perf_counter()
            r = graphs[name].rank(q, k=10)
            if i >= 5:
                times[name].append(time.perf_counter() - t)
                rankings[name].append(r)
    pairs = list(zip(rankings["union"], rankings["layered"], strict=True))
    print(f"rankings equal: {sum(a == b for a, b in pairs)} of {len(pairs)}")
    for a, b in pairs:
        if a != b:  # where they part, and whether only the order of near-equal scores differs
            at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
            print(f"  differ from rank {at + 1}: union {a[at:]} layered {b[at:]} (same set: {set(a) == set(b)})")
    for name, ts in times.items():
        print(f"{name}: median {statistics.median(ts) * 1e3:.2f} ms, p90 {np.quantile(ts, 0.9) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
