"""The LanceDB backend against the embedded index on one dataset (BENCHMARKS.md, "LanceDB backend").

Exports a built index to a local Lance directory (timed), then, in a fresh child process per backend
(so resident memory is that backend's alone): opens the index, runs bm25, dense and syncge on the
first ``--limit`` questions, and reports recall@2/5/15, the median latency per question and the
resident memory (VmRSS) after all queries.

    PYTHONPATH=src .venv/bin/python benchmarks/lance_backend.py INDEX_DIR [--dataset 2wiki] [--limit 200]
        [--lance DIR] [--json out.json] [--cache-rows N] [--questions FILE]
    PYTHONPATH=src .venv/bin/python benchmarks/lance_backend.py INDEX_DIR --stages LOCATION --limit 50
        [--questions FILE] [--cache-rows N]

``--questions FILE``: a gearag question file instead of the dataset's questions (e.g. the planted
questions of a synthetic scale corpus, BENCHMARKS.md "Lance query memory against corpus size").
``--stages`` prints resident MB after each stage and, in brackets, the stage's peak (VmHWM since
the previous line). It also names the objects whose size grows with the corpus: the integer graph arrays held
at open, the passage-graph arrays, the PassageGraph's sparse matrices, and Lance's session caches.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from gearag.bench.memory import peak_mb, reset_peak, rss_mb, rss_parts_mb
from gearag.graph.prepared import stored_prepared

METHODS = ("bm25", "dense", "syncge")
KS = (2, 5, 15)


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def stage_mb() -> str:
    """Resident MB now (anonymous + file-backed) and the peak since the last call (VmHWM, reset through
    /proc/self/clear_refs)."""
    peak = peak_mb()
    reset_peak()  # the next stage's peak starts from here
    anon, mapped = rss_parts_mb()
    return f"{rss_mb():.0f} MB (anon {anon:.0f}, file {mapped:.0f}; peak {peak:.0f})"


def load_qs(dataset: str, questions_file: str | None, limit: int) -> list[Any]:
    """The first ``limit`` questions of ``questions_file``, else of the shared dataset."""
    from gearag.bench.datasets import shared_datasets
    from gearag.data import load_questions

    return load_questions(questions_file or shared_datasets()[dataset].questions)[:limit]


#: LanceSearchConfig fields set from the command line (--cache-rows, --malloc-arenas); unset: the defaults.
LANCE_OPTIONS: dict[str, int] = {}


def open_app(location: str, cache_rows: int | None) -> Any:
    """``Gearag.open(location)``; a Lance index with ``cache_rows`` rows per column LRU and
    :data:`LANCE_OPTIONS` when given."""
    from gearag.api import Gearag
    from gearag.store.backend import backend_of

    options = {**LANCE_OPTIONS, **({"cache_rows": cache_rows} if cache_rows is not None else {})}
    if backend_of(location) == "lance" and options:
        from gearag.store.lance.collection import LanceSearchConfig
        from gearag.store.lance.index import open_lance_index

        return Gearag(open_lance_index(location, config=LanceSearchConfig(**options)))
    return Gearag.open(location)


def child(location: str, dataset: str, limit: int, cache_rows: int | None,
          questions_file: str | None = None) -> dict[str, Any]:
    """One backend: open, run every method on the questions, measure."""
    from gearag.bench.evaluate import timed_run, warm_up
    from gearag.evaluation import evaluate_run
    from gearag.store.backend import backend_of

    questions = load_qs(dataset, questions_file, limit)
    lance = backend_of(location) == "lance"
    if lance:
        from gearag.store.lance.storage import import_lancedb

        import_lancedb()  # the libraries' own memory, counted in rss_start_mb
    base = rss_mb()
    t0 = time.perf_counter()
    app = open_app(location, cache_rows)
    out: dict[str, Any] = {"open_seconds": round(time.perf_counter() - t0, 2), "rss_start_mb": round(base, 1),
                           "rss_open_mb": round(rss_mb(), 1), "methods": {}}
    for method in METHODS:
        run = app.method(method)
        warm = warm_up(run, 15)
        latencies, rows = timed_run(app, run, questions, 15)
        report = evaluate_run(questions, rows, KS)
        out["methods"][method] = {
            "recall": {k: round(100 * v, 1) for k, v in report.recall.items()},
            "median_ms": round(1000 * statistics.median(latencies), 1),
            "p90_ms": round(1000 * sorted(latencies)[int(0.9 * (len(latencies) - 1))], 1),
            "first_query_s": round(warm, 2),
            "ranking": [[p["id"] for p in r["passages"]] for r in rows],
        }
    out["rss_after_mb"] = round(rss_mb(), 1)
    out["n"] = len(questions)
    return out


def array_mb(obj: Any, seen: set[int] | None = None, depth: int = 0) -> tuple[float, float]:
    """MB of the numpy arrays (and scipy sparse matrices' arrays) reachable from ``obj`` through
    attributes, lists, tuples and dicts: (in memory, memory-mapped), each array counted once."""
    import mmap

    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 6:
        return 0.0, 0.0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        if id(base) in seen and base is not obj:
            return 0.0, 0.0
        seen.add(id(base))
        mapped = isinstance(obj, np.memmap) or isinstance(base, mmap.mmap)
        return (0.0, obj.nbytes / 1e6) if mapped else (obj.nbytes / 1e6, 0.0)
    if isinstance(obj, dict):
        items: Any = obj.values()
    elif isinstance(obj, (list, tuple)):
        items = obj if len(obj) < 64 else ()
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).values()
    elif hasattr(obj, "__slots__"):
        items = [getattr(obj, n, None) for n in obj.__slots__]
    else:
        return 0.0, 0.0
    mem = mapped_mb = 0.0
    for item in items:
        a, b = array_mb(item, seen, depth + 1)
        mem, mapped_mb = mem + a, mapped_mb + b
    return mem, mapped_mb


#: The LanceDB session of the index opened by ``stages`` (its index and metadata caches), when Lance.
SESSION: list[Any] = []


def lance_cache_mb() -> str:
    """Size of the LanceDB session's caches (index + metadata), '' when no session is watched."""
    if not SESSION:
        return ""
    s = SESSION[0]
    return f"; LanceDB session caches {s.size_bytes / 1e6:.1f} MB ({s.approx_num_items} items)"


def stages(location: str, dataset: str, limit: int, cache_rows: int | None = None,
           questions_file: str | None = None) -> None:
    """Resident memory after each stage of use (both backends import the Lance libraries first)."""
    from gearag.derive.graph_for import resolution_of
    from gearag.embed import index_embedder
    from gearag.retrieve.bm25 import search_bm25
    from gearag.store.lance.storage import import_lancedb

    import_lancedb()

    questions = [q.question for q in load_qs(dataset, questions_file, limit)]
    print(f"libraries imported: {stage_mb()}")
    app = open_app(location, cache_rows)
    if getattr(app.index, "session", None) is not None:
        SESSION.append(app.index.session)
    print(f"open: {stage_mb()}{lance_cache_mb()}")
    ix = app.index
    held = {"head": ix.graph.head, "tail": ix.graph.tail, "indptr": ix.graph.indptr, "indices": ix.graph.indices,
            "triple_passage": ix.triples.passage, "passage_triple_indptr": ix.passage_triple_indptr}
    mem, mapped = array_mb(list(held.values()))
    print(f"  integer graph arrays: {mem:.1f} MB in memory, {mapped:.1f} MB memory-mapped")
    index_embedder(app.index).encode(["x"])
    print(f"embedder loaded: {stage_mb()}")
    for q in questions:
        search_bm25(app.index.collection("passages"), q, 15)
    print(f"bm25 over passages, {len(questions)} queries: {stage_mb()}{lance_cache_mb()}")
    dense_ms = []
    for q in questions:
        t0 = time.perf_counter()
        app.retrieve(q, "dense", 15)
        dense_ms.append(1000 * (time.perf_counter() - t0))
    print(f"dense, {len(questions)} queries: {stage_mb()}{lance_cache_mb()}; "
          f"median {statistics.median(dense_ms):.1f} ms")
    counted: set[int] = set()
    if stored_prepared(ix) is None:  # no prepared graph: the first query derives it (as a build would)
        arrays = resolution_of(app.index)
        mem, mapped = array_mb(arrays, counted)
        print(f"passage-graph arrays loaded: {stage_mb()}")
        print(f"  passage-graph arrays: {mem:.1f} MB in memory, {mapped:.1f} MB memory-mapped")
    app.retrieve(questions[0], "syncge", 15)
    print(f"first syncge query (passage graph opened or prepared): {stage_mb()}{lance_cache_mb()}")
    graphs = [v for k, v in ix._cache.items() if k.startswith("passage_graph:")]
    if graphs:
        mem, mapped = array_mb([list(g.prepared.files().values()) for g in graphs], counted)
        print(f"  prepared passage graph: {mem:.1f} MB in memory, {mapped:.1f} MB memory-mapped, "
              f"{len(graphs)} graph(s), entity matcher over {sum(g.trie.size for g in graphs)} names")
    for q in questions:
        app.retrieve(q, "syncge", 15)
    print(f"syncge, {len(questions)} more queries: {stage_mb()}{lance_cache_mb()}")


def overlap(a: list[list[str]], b: list[list[str]], k: int) -> float:
    """Mean share of the top ``k`` that two runs have in common."""
    return statistics.mean(len(set(x[:k]) & set(y[:k])) / max(1, min(k, len(x))) for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path)
    parser.add_argument("--dataset", default="2wiki")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--lance", type=Path, default=None, help="where to export (default: INDEX.lance)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--cache-rows", type=int, default=None, help="Lance: rows kept per column LRU")
    parser.add_argument("--malloc-arenas", type=int, default=None,
                        help="Lance: glibc malloc arenas (LanceSearchConfig.malloc_arenas; 0: glibc's default)")
    parser.add_argument("--stages", default=None, metavar="LOCATION",
                        help="print resident memory after each stage of use of LOCATION, then exit")
    parser.add_argument("--questions", default=None, metavar="FILE",
                        help="a gearag question file (default: the dataset's questions)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.malloc_arenas is not None:
        LANCE_OPTIONS["malloc_arenas"] = args.malloc_arenas
    if args.stages:
        stages(args.stages, args.dataset, args.limit, args.cache_rows, args.questions)
        return
    if args.child:
        print(json.dumps(child(args.child, args.dataset, args.limit, args.cache_rows, args.questions)))
        return
    from gearag.indexing.export import export_index
    from gearag.store.lance.export import ExportConfig

    target = args.lance or args.index.with_name(args.index.name + ".lance")
    if target.exists():
        shutil.rmtree(target)
    t0 = time.perf_counter()
    export_index(args.index, target, ExportConfig())
    export_s = time.perf_counter() - t0
    result: dict[str, Any] = {"dataset": args.dataset, "export_seconds": round(export_s, 1),
                              "embedded_mb": round(dir_mb(args.index), 1), "lance_mb": round(dir_mb(target), 1)}
    print(f"export {export_s:.1f} s; size embedded {result['embedded_mb']} MB, lance {result['lance_mb']} MB",
          flush=True)
    for name, location in (("embedded", args.index), ("lance", target)):
        extra = ["--cache-rows", str(args.cache_rows)] if args.cache_rows is not None else []
        if args.malloc_arenas is not None:
            extra += ["--malloc-arenas", str(args.malloc_arenas)]
        if args.questions:
            extra += ["--questions", args.questions]
        done = subprocess.run([sys.executable, __file__, str(args.index), "--dataset", args.dataset, "--limit",
                               str(args.limit), "--child", str(location), *extra], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        result[name] = json.loads(done.stdout.strip().splitlines()[-1])
        r = result[name]
        print(f"{name}: open {r['open_seconds']} s, RSS before open {r['rss_start_mb']} MB, "
              f"after {r['n']} questions x {len(METHODS)} methods "
              f"{r['rss_after_mb']} MB (at open {r['rss_open_mb']} MB)", flush=True)
        for method, m in r["methods"].items():
            print(f"  {method:<7} " + " ".join(f"R@{k} {v:5.1f}" for k, v in m["recall"].items())
                  + f"  median {m['median_ms']:7.1f} ms  p90 {m['p90_ms']:7.1f} ms  first {m['first_query_s']} s",
                  flush=True)
    for method in METHODS:
        a, b = result["embedded"]["methods"][method]["ranking"], result["lance"]["methods"][method]["ranking"]
        same = statistics.mean(x == y for x, y in zip(a, b, strict=True))
        result.setdefault("agreement", {})[method] = {"identical_top15": round(100 * same, 1),
                                                      "overlap@5": round(100 * overlap(a, b, 5), 1),
                                                      "overlap@15": round(100 * overlap(a, b, 15), 1)}
        print(f"agreement {method}: identical top-15 {100 * same:.1f}% of questions, "
              f"top-5 overlap {100 * overlap(a, b, 5):.1f}%, top-15 overlap {100 * overlap(a, b, 15):.1f}%")
    if args.json:
        for name in ("embedded", "lance"):
            for m in result[name]["methods"].values():
                m.pop("ranking")
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
