"""What opening an index costs: seconds and memory (MB) after open, a first BM25 and a first SyncGE query.

    PYTHONPATH=SRC python benchmarks/open_cost.py INDEX [QUESTIONS.json] [--push-workspace dense|touched]

One JSON line: ``open_s``, ``bm25_s``, ``syncge_s`` and after each ``VmRSS`` (resident), ``RssAnon``
(heap: what the process itself holds, not file pages) and ``VmHWM`` (peak). With a questions file
(``gearag synth``'s planted questions), then the median latency of syncge over 100 of them and of gear
over 30 (seed 0, after 15 warm-up questions each). Run it once per checkout
(``PYTHONPATH`` = that checkout's ``src``) on the same index to compare two versions
(BENCHMARKS.md, "Adds and opens at 1M: stored row offsets, id hashes, extended names").
``--push-workspace`` forces forward push's work arrays: dense per thread, or over the nodes a query
touches (:data:`gearag.graph.ppr.DENSE_WORKSPACE_NODES` chooses by the graph's size otherwise).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time

from gearag.api import Gearag
from gearag.bench.memory import peak_mb, rss_mb, rss_parts_mb
from gearag.graph import ppr

QUESTION = "Who is the director of the film that won the award?"


def memory() -> dict[str, int]:
    """Peak, resident and anonymous MB now (the /proc/self/status fields, in their order there)."""
    return {"VmHWM": round(peak_mb()), "VmRSS": round(rss_mb()), "RssAnon": round(rss_parts_mb()[0])}


def main() -> None:
    if "--push-workspace" in sys.argv:
        at = sys.argv.index("--push-workspace")
        ppr.DENSE_WORKSPACE_NODES = {"dense": 1 << 62, "touched": 0}[sys.argv[at + 1]]
        del sys.argv[at : at + 2]
    started = time.perf_counter()
    app = Gearag.open(sys.argv[1])
    result: dict[str, object] = {"open_s": round(time.perf_counter() - started, 2), "open": memory()}
    for method in ("bm25", "syncge"):
        started = time.perf_counter()
        app.retrieve(QUESTION, method, 10)
        result[f"{method}_s"] = round(time.perf_counter() - started, 2)
        result[method] = memory()
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as fh:
            questions = [q["question"] for q in json.load(fh)]
        random.Random(0).shuffle(questions)
        for method, n in (("syncge", 100), ("gear", 30)):
            latencies = []
            for i, question in enumerate(questions[: 15 + n]):
                started = time.perf_counter()
                app.retrieve(question, method, 15)
                if i >= 15:
                    latencies.append(time.perf_counter() - started)
            result[f"{method}_median_ms"] = round(1000 * statistics.median(latencies), 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
