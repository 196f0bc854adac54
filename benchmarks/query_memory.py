"""Query-process memory: load an index, run 30 BM25 then 30 SyncGE questions, print peak/end RSS (MB).

    PYTHONPATH=SRC python benchmarks/query_memory.py INDEX QUESTIONS.json

Run it once per checkout (``PYTHONPATH`` = that checkout's ``src``) on the same index to compare
two versions' query memory (BENCHMARKS.md, "Build memory (branch mem)").
"""

from __future__ import annotations

import json
import random
import sys
import time

from gearag.api import Gearag
from gearag.bench.memory import peak_mb
from gearag.data import load_questions


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    index, qfile = sys.argv[1], sys.argv[2]
    questions = random.Random(0).sample(load_questions(qfile), 30)
    started = time.perf_counter()
    app = Gearag.open(index)
    out = {"load_s": round(time.perf_counter() - started, 1), "after_load_rss": round(rss_mb()),
           "load_peak": round(peak_mb())}
    for name in ("bm25", "syncge"):
        method = app.method(name)
        for q in questions:
            method(q.question, 15)
        out[f"{name}_peak"] = round(peak_mb())
        out[f"{name}_rss"] = round(rss_mb())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
