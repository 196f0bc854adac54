"""Which pool nodes fill the dense top 5, and do they hold the answer? (issue 11, 2Wiki AR@5 investigation)

    PYTHONPATH=src python benchmarks/sirerag_top5.py INDEX QUESTIONS [--pool sirerag] [--k 5]

Per node kind (chunk, similarity/relatedness summary, aggregate, proposition): its share of the top-k
slots, how often a slot of that kind contains the gold answer, mean words; and, over the questions the
passages (chunks pool) answer at k but the pool does not, which kinds took their slots.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from gearag.api import Gearag
from gearag.data import load_questions
from gearag.evaluation import answer_keys, contains_answer


def kind_of(entry: dict) -> str:
    kind = entry.get("kind", "chunk")
    return f"{entry.get('tree')} summary" if kind == "summary" else kind


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index")
    ap.add_argument("questions")
    ap.add_argument("--pool", default="sirerag")
    ap.add_argument("--method", default="dense")
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    app = Gearag.open(args.index)
    qs = [q for q in load_questions(args.questions) if answer_keys(q)]
    slots: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    words: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    n_lost = ar_pool = ar_chunks = 0
    for q in qs:
        keys = answer_keys(q)
        pool = app.row(app.retrieve(q.question, args.method, args.k, pool=args.pool))["passages"]
        chunks = app.row(app.retrieve(q.question, args.method, args.k))["passages"]
        got_pool = any(contains_answer(f"{e['title']} {e['text']}", keys) for e in pool)
        got_chunks = any(contains_answer(f"{e['title']} {e['text']}", keys) for e in chunks)
        ar_pool += got_pool
        ar_chunks += got_chunks
        for e in pool:
            kind = kind_of(e)
            slots[kind] += 1
            hits[kind] += contains_answer(f"{e['title']} {e['text']}", keys)
            words[kind] += len(e["text"].split())
        if got_chunks and not got_pool:
            n_lost += 1
            for e in pool:
                lost[kind_of(e)] += 1
    total = sum(slots.values())
    out = {"questions": len(qs), f"AR@{args.k} {args.pool}": round(100 * ar_pool / len(qs), 2),
           f"AR@{args.k} chunks": round(100 * ar_chunks / len(qs), 2), "lost_questions": n_lost,
           "kinds": {k: {"slots %": round(100 * v / total, 1), "answer in slot %": round(100 * hits[k] / v, 1),
                         "words": round(words[k] / v, 1),
                         "slots in lost questions %": round(100 * lost[k] / max(1, sum(lost.values())), 1)}
                     for k, v in slots.most_common()}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
