"""Where BM25's MaxScore top k pays (gearag.retrieve.bm25_maxscore): per search, and per method.

    PYTHONPATH=SRC python benchmarks/bm25_pruning.py calls INDEX QUESTIONS.json OUT.json
    PYTHONPATH=SRC python benchmarks/bm25_pruning.py methods INDEX QUESTIONS.json OUT.json \
        [--min-rows N] [--max-terms N]

``calls``: runs the bm25 method over 200 planted questions and GEAR over 30 (every 50th question) and
times every BM25 search of a sharded index (:class:`PostingsBM25`) both ways: pruned (what a failed
attempt then adds: the full scoring) and every row scored, in alternating order. Writes each search's
collection, rows, terms, idfs, dfs and both times to OUT.json and prints, per collection and query
length, the medians and totals. ``methods``: the median latency of bm25 and syncge over 200 of those
questions and of gear over 60, with the pruning thresholds overridden; writes each method's rankings
to OUT.json (compare two runs' rankings: they must be equal). Run pairs alternately (BENCHMARKS.md,
"Where MaxScore pays: rows and query length").
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from gearag.api import Gearag
from gearag.data import load_questions
from gearag.retrieve import bm25, bm25_postings
from gearag.retrieve.base import top_k

LENGTHS = ((1, 3), (3, 5), (5, 7), (7, 10), (10, 99))


def _timed_calls(log: list[dict[str, Any]]) -> None:
    """Wrap PostingsBM25.retrieve: each search also times the pruned and the full top k (alternating)."""
    cls = bm25_postings.PostingsBM25
    real = cls.retrieve

    def retrieve(self: Any, query: str, k: int) -> Any:
        terms = self._terms(query)
        ways = {"pruned": lambda: self.pruned_top_k(self, terms, k),  # the retriever's give-up point
                "full": lambda: top_k(self._scores(terms), k, keep_zero=False, collection=self.collection)}
        order = ["pruned", "full"] if len(log) % 2 else ["full", "pruned"]
        seconds, ok = {}, False
        for way in order:
            t0 = time.perf_counter()
            got = ways[way]()
            seconds[way] = time.perf_counter() - t0
            ok = ok or (way == "pruned" and got is not None)
        log.append({"collection": self.collection, "rows": self.size, "terms": len(terms), "pruned_ok": ok,
                    "idf": [float(i) for i, _ in terms], "df": [sum(e - s for _, s, e in f) for _, f in terms],
                    "pruned_s": seconds["pruned"] + (0.0 if ok else seconds["full"]), "full_s": seconds["full"]})
        return real(self, query, k)

    cls.retrieve = retrieve  # type: ignore[method-assign]


def calls(app: Gearag, questions: list[Any], out: str) -> None:
    log: list[dict[str, Any]] = []
    _timed_calls(log)
    for name, n in (("bm25", 200), ("gear", 30)):
        method = app.method(name)
        for q in questions[:n]:
            method(q.question, 15)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(log, f)
    for collection in sorted({c["collection"] for c in log}):
        mine = [c for c in log if c["collection"] == collection]
        print(f"{collection} ({mine[0]['rows']:,} rows): {len(mine)} searches")
        for lo, hi in LENGTHS:
            group = [c for c in mine if lo <= c["terms"] < hi]
            if group:
                pruned = [1e3 * c["pruned_s"] for c in group]
                full = [1e3 * c["full_s"] for c in group]
                print(f"  {lo}-{hi - 1} terms: {len(group)} searches, {sum(c['pruned_ok'] for c in group)} pruned; "
                      f"median {statistics.median(pruned):.2f} ms pruned against {statistics.median(full):.2f} "
                      f"full; total {sum(pruned):.0f} against {sum(full):.0f} ms")


def methods(app: Gearag, questions: list[Any], out: str) -> None:
    result: dict[str, Any] = {}
    ranked: dict[str, list[Any]] = {}
    for name, n in (("bm25", 200), ("syncge", 200), ("gear", 60)):
        method = app.method(name)
        for q in questions[:3]:
            method(q.question, 15)
        seconds, ranked[name] = [], []
        for q in questions[:n]:
            t0 = time.perf_counter()
            found = method(q.question, 15)
            seconds.append(time.perf_counter() - t0)
            ranked[name].append([(h.idx, round(h.score, 6)) for h in found.passages])
        result[name] = {"n": len(seconds), "median_ms": round(1e3 * statistics.median(seconds), 2)}
    print(json.dumps(result), flush=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(ranked, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["calls", "methods"])
    parser.add_argument("index")
    parser.add_argument("questions")
    parser.add_argument("out")
    parser.add_argument("--min-rows", type=int, help="override PRUNE_MIN_ROWS")
    parser.add_argument("--max-terms", type=int, help="override PRUNE_MAX_TERMS")
    args = parser.parse_args()
    for cls in (bm25.BM25Retriever, bm25_postings.PostingsBM25):
        if args.min_rows is not None:
            cls.PRUNE_MIN_ROWS = args.min_rows
        if args.max_terms is not None:
            cls.PRUNE_MAX_TERMS = args.max_terms
    questions = load_questions(args.questions)[::50]
    app = Gearag.open(args.index)
    (calls if args.what == "calls" else methods)(app, questions, args.out)


if __name__ == "__main__":
    main()
