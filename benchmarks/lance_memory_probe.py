"""Probes behind BENCHMARKS.md "Lance query memory against corpus size": what holds the memory a stage keeps.

    PYTHONPATH=src .venv/bin/python benchmarks/lance_memory_probe.py open LOCATION
    PYTHONPATH=src .venv/bin/python benchmarks/lance_memory_probe.py dense LOCATION QUESTIONS
    PYTHONPATH=src .venv/bin/python benchmarks/lance_memory_probe.py syncge LOCATION QUESTIONS

* ``open``: RSS and the Python heap (tracemalloc) after opening LOCATION and after loading its
  passage-graph arrays;
* ``dense``: RSS after 1, 10, 50 and 150 more dense queries, before and after glibc's
  ``malloc_trim(0)`` (freed memory glibc keeps vs memory still in use); run it again with
  ``MALLOC_ARENA_MAX=2`` in the environment to see the per-thread arenas' share;
* ``syncge``: the Python allocations the first syncge query keeps (tracemalloc, top lines): the
  PassageGraph and its entity trie.
"""

from __future__ import annotations

import ctypes
import sys
import tracemalloc

from gearag.bench.memory import rss_mb


def main() -> None:
    mode, location = sys.argv[1], sys.argv[2]
    from gearag.store.lance.storage import import_lancedb

    import_lancedb()
    from gearag.api import Gearag
    from gearag.data import load_questions
    from gearag.derive.graph_for import resolution_of

    questions = [q.question for q in load_questions(sys.argv[3])[:150]] if len(sys.argv) > 3 else []
    if mode == "open":
        print(f"libraries: {rss_mb():.0f} MB")
        tracemalloc.start()
        app = Gearag.open(location)
        cur, peak = tracemalloc.get_traced_memory()
        print(f"open: {rss_mb():.0f} MB; Python heap +{cur / 1e6:.1f} MB (peak {peak / 1e6:.1f})")
        tracemalloc.reset_peak()
        resolution_of(app.index)
        cur, peak = tracemalloc.get_traced_memory()
        print(f"passage-graph arrays: {rss_mb():.0f} MB; Python heap +{cur / 1e6:.1f} MB (peak {peak / 1e6:.1f})")
    elif mode == "dense":
        app = Gearag.open(location)
        app.index.embedder.encode(["x"])
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        print(f"open + embedder, trimmed: {rss_mb():.0f} MB")
        for n in (1, 10, 50, 150):
            for q in questions[:n]:
                app.retrieve(q, "dense", 15)
            before = rss_mb()
            libc.malloc_trim(0)
            print(f"dense x{n} more: {before:.0f} MB; after malloc_trim(0): {rss_mb():.0f} MB")
    elif mode == "syncge":
        app = Gearag.open(location)
        app.index.embedder.encode(["x"])
        resolution_of(app.index)
        tracemalloc.start(1)
        app.retrieve(questions[0], "syncge", 15)
        snap = tracemalloc.take_snapshot()
        cur, peak = tracemalloc.get_traced_memory()
        print(f"first syncge query: Python heap +{cur / 1e6:.1f} MB kept (peak {peak / 1e6:.1f} MB)")
        for stat in snap.statistics("lineno")[:8]:
            frame = stat.traceback[0]
            where = frame.filename.split("site-packages/")[-1].split("src/")[-1]
            print(f"  {stat.size / 1e6:7.1f} MB  {stat.count:9d} blocks  {where}:{frame.lineno}")
    else:
        raise SystemExit(f"unknown mode {mode!r}: open | dense | syncge")


if __name__ == "__main__":
    main()
