"""What opening an index costs: seconds and memory (MB) after open, a first BM25 and a first SyncGE query.

    PYTHONPATH=SRC python benchmarks/open_cost.py INDEX

One JSON line: ``open_s``, ``bm25_s``, ``syncge_s`` and after each ``VmRSS`` (resident), ``RssAnon``
(heap: what the process itself holds, not file pages) and ``VmHWM`` (peak). Run it once per checkout
(``PYTHONPATH`` = that checkout's ``src``) on the same index to compare two versions
(BENCHMARKS.md, "Adds and opens at 1M: stored row offsets, id hashes, extended names").
"""

from __future__ import annotations

import json
import sys
import time

from gearag.api import Gearag

QUESTION = "Who is the director of the film that won the award?"


def memory() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS", "RssAnon", "VmHWM")):
                key, value = line.split(":")
                out[key] = round(int(value.split()[0]) / 1024)
    return out


def main() -> None:
    started = time.perf_counter()
    app = Gearag.open(sys.argv[1])
    result: dict[str, object] = {"open_s": round(time.perf_counter() - started, 2), "open": memory()}
    for method in ("bm25", "syncge"):
        started = time.perf_counter()
        app.retrieve(QUESTION, method, 10)
        result[f"{method}_s"] = round(time.perf_counter() - started, 2)
        result[method] = memory()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
