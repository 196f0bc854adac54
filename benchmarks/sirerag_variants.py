"""Query-time pool variants for the 2Wiki AR@5 investigation (issue 11): exact for dense retrieval.

    PYTHONPATH=src python benchmarks/sirerag_variants.py /work/sire-indices

Dense scores do not depend on the pool, so removing a kind of node from a pool is the same as
reading the pool's ranking deeper and skipping those nodes. Variants:

* ``sirerag``: the pool as built;
* ``multi-passage aggregates``: without the aggregates whose facts all come from one passage
  (that passage is in the pool; the aggregate repeats part of it and adds no cross-document relation);
* ``no relatedness summaries`` (Table 5 (A)) and both together.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gearag.api import Gearag
from gearag.data import load_questions
from gearag.evaluation import answer_keys, contains_answer

SETS = {"musique": "musique_train/musique_train.json", "hotpotqa": "hotpotqa_train/hotpotqa_train.json",
        "2wiki": "2wikimultihopqa/2wikimultihopqa.json"}
DATA = Path("/work/shared/data")


def keep(variant: str, entry: dict) -> bool:
    kind = entry.get("kind")
    single = kind == "aggregate" and len(entry["sources"]) == 1
    rel_summary = kind == "summary" and entry.get("tree") == "relatedness"
    if variant == "multi-passage aggregates":
        return not single
    if variant == "no relatedness summaries":
        return not rel_summary
    if variant == "both":
        return not (single or rel_summary)
    return True


def main() -> None:
    root = Path(sys.argv[1])
    variants = ["chunks", "sirerag", "multi-passage aggregates", "no relatedness summaries", "both"]
    out: dict[str, dict] = {}
    for name, qpath in SETS.items():
        app = Gearag.open(root / name)
        qs = [q for q in load_questions(DATA / qpath) if answer_keys(q)]
        ar = {v: {5: 0, 20: 0} for v in variants}
        size = {}
        coll = app.index.collection("sirerag")
        recs = [coll.record(r) for r in range(len(coll))]
        for v in variants[1:]:
            size[v] = sum(keep(v, {**rec, "sources": coll.sources(r)}) for r, rec in enumerate(recs))
        size["chunks"] = len(app.index.passages)
        for q in qs:
            keys = answer_keys(q)
            chunks = app.row(app.retrieve(q.question, "dense", 20))["passages"]
            deep = app.row(app.retrieve(q.question, "dense", 200, pool="sirerag"))["passages"]
            for v in variants:
                top = chunks if v == "chunks" else [e for e in deep if keep(v, e)][:20]
                for k in (5, 20):
                    ar[v][k] += any(contains_answer(f"{e['title']} {e['text']}", keys) for e in top[:k])
        out[name] = {v: {"size": size[v], "AR@5": round(100 * ar[v][5] / len(qs), 2),
                         "AR@20": round(100 * ar[v][20] / len(qs), 2)} for v in variants}
        print(name, json.dumps(out[name]), flush=True)
    print("| variant | " + " | ".join(f"{s} size | AR@5 | AR@20" for s in SETS) + " | avg AR@5 |")
    print("| --- " * (2 + 3 * len(SETS)) + "|")
    for v in variants:
        cells = [f"{out[s][v]['size']} | {out[s][v]['AR@5']} | {out[s][v]['AR@20']}" for s in SETS]
        avg = round(sum(out[s][v]["AR@5"] for s in SETS) / len(SETS), 1)
        print(f"| {v} | " + " | ".join(cells) + f" | {avg} |")


if __name__ == "__main__":
    main()
