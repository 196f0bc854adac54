"""Dense search through a Lance export's vector indexes against exact search (BENCHMARKS.md, "Lance: IVF-SQ or
IVF-PQ").

    PYTHONPATH=src python benchmarks/lance_ann.py INDEX_DIR LANCE_URI --questions FILE [--limit 200] [--k 10]
        [--nprobes 16,32,64]

For each collection the export gave a vector index: recall@k of the Lance search (the share of the exact
top k it returns, exact being the embedded index's brute-force search over the same vectors) and the
median and p99 latency of one query, for each ``--nprobes`` (the other settings at their defaults). The
questions are a random sample (seed 0) of ``--limit`` from the question file, embedded with the
index's embedder. The exact top k of every question is computed first, in one pass over the vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index", type=Path)
    ap.add_argument("lance")
    ap.add_argument("--questions", required=True, type=Path)
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--nprobes", default="16,32,64")
    args = ap.parse_args()
    from gearag.retrieve.dense import search_dense
    from gearag.store.index import Index
    from gearag.store.lance.collection import LanceSearchConfig
    from gearag.store.lance.index import open_lance_index

    rows = json.loads(args.questions.read_text(encoding="utf-8"))
    random.Random(0).shuffle(rows)
    questions = [r["question"] for r in rows[: args.limit]]
    index = Index.load(args.index)
    q = index.embedder.encode(questions)
    meta = open_lance_index(args.lance).meta["collections"]
    for name, table in meta.items():
        if not table.get("ann"):
            continue
        t0 = time.perf_counter()
        exact = [{h.idx for h in hits} for hits in search_dense(index.collection(name), q, args.k)]
        print(f"{name}: {table['rows']:,} rows, {table.get('ann_index') or 'ivf_pq'}; exact top {args.k} of "
              f"{len(questions)} questions in {time.perf_counter() - t0:.1f} s", flush=True)
        for nprobes in (int(n) for n in args.nprobes.split(",")):
            coll = open_lance_index(args.lance, config=LanceSearchConfig(nprobes=nprobes)).collection(name)
            search_dense(coll, q[:1], args.k)  # the index's first pages read
            found, ms = 0, []
            for vector, truth in zip(q, exact, strict=True):
                t0 = time.perf_counter()
                hits = search_dense(coll, vector[None, :], args.k)[0]
                ms.append(1000 * (time.perf_counter() - t0))
                found += len({h.idx for h in hits} & truth)
            p99 = float(np.percentile(ms, 99))
            print(f"  nprobes {nprobes}: recall@{args.k} {found / (args.k * len(questions)):.3f}, "
                  f"median {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
