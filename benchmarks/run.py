"""Benchmarks: index the shared datasets and measure retrieval methods side by side.

    python benchmarks/run.py                       # everything (≈ 30–40 min on 2 cores)
    python benchmarks/run.py --datasets musique --embedders wordllama --quick

Each (dataset, extractor, embedder) index is built in a child process (its
wall time and peak RSS are the build figures), then every method runs over
every question in one process, so rows of one table are measured side by
side. Results go to ``benchmarks/out/results.json``; ``report.py`` renders
``BENCHMARKS.md`` from them.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_datasets import DATASETS
from memory import peak_mb, reset_peak

OUT = Path(__file__).resolve().parent / "out"
KS = (2, 5, 10, 15)

#: Table-2-style grid: every base retriever alone, with NaiveGE and with SyncGE-offline.
GRID = [
    (f"{base}{suffix}", method, {} if method == base else {"base": base})
    for base in ("bm25", "dense", "hybrid")
    for suffix, method in (("", base), (" + NaiveGE", "naivege"), (" + SyncGE-offline", "syncge"))
]


def build(dataset: str, extractor: str, embedder: str, force: bool) -> dict[str, Any]:
    """Build one index in a child process; returns its path, wall time and peak memory."""
    ds = DATASETS[dataset]
    tag = f"{dataset}-{extractor.split(':')[0]}-{embedder}"
    out = OUT / "indices" / tag
    if out.exists() and not force:
        manifest = json.loads((out / "manifest.json").read_text())
        return {"path": str(out), "tag": tag, "reused": True, **manifest.get("bench", {})}
    spec = extractor if extractor != "openie" else f"openie:{ds.openie}"
    code = (
        "import json,sys,time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from memory import peak_mb\n"
        "from gearag.config import IndexConfig\nfrom gearag.data import load_corpus\n"
        "from gearag.indexing import build_index\n"
        "t=time.perf_counter()\n"
        f"idx=build_index(load_corpus({str(ds.corpus)!r}), {str(out)!r}, "
        f"IndexConfig.of(extractor={spec!r}, embedder={embedder!r}), overwrite=True, resume=False)\n"
        "print(json.dumps({'seconds': time.perf_counter()-t, 'stages': idx.manifest['build_seconds'],"
        " 'counts': idx.manifest['counts'],"
        " 'peak_rss_mb': peak_mb()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"index build failed for {tag}:\n{done.stderr[-3000:]}")
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    # Remember the build figures beside the index so --reuse runs can report them.
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["bench"] = stats
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return {"path": str(out), "tag": tag, "reused": False, **stats}


def evaluate(index_path: str, dataset: str, methods: list[tuple[str, str, dict]], limit: int | None) -> list[dict]:
    from gearag.api import Gearag
    from gearag.data import load_questions
    from gearag.evaluation import evaluate_run, recall_by_iteration
    from gearag.trace import AgentTrace

    reset_peak()
    app = Gearag.open(index_path)
    index = app.index
    questions = load_questions(DATASETS[dataset].questions)[:limit]
    rows = []
    by_id = {p.id: (p.title, p.text) for p in index.passages}
    for label, method, options in methods:
        options = dict(options)
        method_limit = options.pop("limit", None)
        qs = questions[:method_limit] if method_limit else questions
        run = app.method(method, **options)
        run("warm-up question", 15)  # load models and mmaps before timing
        latencies, run_rows, iterations = [], [], []
        for q in qs:
            t0 = time.perf_counter()
            result = run(q.question, 15)
            latencies.append(time.perf_counter() - t0)
            run_rows.append(app.row(result, qid=q.id))
            if isinstance(result.trace, AgentTrace):
                iterations.append(result.trace.iterations)
        report = evaluate_run(qs, run_rows, KS)
        row = {
            "label": label,
            "method": method,
            "options": options,
            "recall": {k: round(100 * v, 1) for k, v in report.recall.items()},
            "median_ms": round(1000 * statistics.median(latencies), 2),
            "n": len(qs),
        }
        if iterations:
            row["mean_iterations"] = round(statistics.mean(iterations), 2)
            row["by_iteration"] = recall_by_iteration(qs, run_rows, by_id)
        if report.em is not None:
            row["EM"], row["F1"] = round(100 * report.em, 1), round(100 * (report.f1 or 0), 1)
        print(f"  {label:<40} " + " ".join(f"R@{k} {v:5.1f}" for k, v in row["recall"].items())
              + f"  {row['median_ms']:8.2f} ms", flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="musique,hotpotqa,2wiki")
    parser.add_argument("--embedders", default="wordllama,minilm")
    parser.add_argument("--extractors", default="spacy,openie")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions per dataset.")
    parser.add_argument("--force", action="store_true", help="Rebuild indices that exist.")
    parser.add_argument("--skip-agent", action="store_true")
    parser.add_argument("--out", default=str(OUT / "results.json"))
    args = parser.parse_args()

    results: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {_cpus()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "runs": [],
    }
    for dataset in args.datasets.split(","):
        ds = DATASETS[dataset]
        for extractor in args.extractors.split(","):
            if extractor == "openie" and ds.openie is None:
                continue
            for embedder in args.embedders.split(","):
                print(f"{dataset} · {extractor} · {embedder}", flush=True)
                built = build(dataset, extractor, embedder, args.force)
                seconds, peak = built.get("seconds", 0), built.get("peak_rss_mb", 0)
                print(f"  index: {seconds:.1f} s, peak {peak:.0f} MB", flush=True)
                methods = list(GRID)
                # Ablations on the default base retriever.
                methods.append(("bm25 + SyncGE-offline, no diversity", "syncge", {"base": "bm25", "diversity": False}))
                methods.append(("bm25 + SyncGE-offline, Alg. 1 scope", "syncge", {"base": "bm25", "scope": "all"}))
                if embedder != "wordllama":
                    # Exact neural path scores re-encode every candidate path: measured on 100 questions.
                    methods.append(("bm25 + SyncGE-offline, approx. path scores (100 q)", "syncge",
                                    {"base": "bm25", "scoring": "sum", "limit": 100}))
                    methods.append(("bm25 + SyncGE-offline, exact path scores (100 q)", "syncge",
                                    {"base": "bm25", "scoring": "exact", "limit": 100}))
                    # The default grid uses the cheap approximation for neural embedders.
                    methods = [(lab, m, o if m == o.get("base", m) and m in ("bm25", "dense", "hybrid")
                                else {**o, "scoring": o.get("scoring", "sum")}) for lab, m, o in methods]
                if not args.skip_agent:
                    methods.append(("GEAR-offline (bm25)", "gear", {"base": "bm25", "max_steps": ds.max_steps}))
                limit = args.limit
                rows = evaluate(built["path"], dataset, methods, limit)
                results["runs"].append({"dataset": dataset, "extractor": extractor, "embedder": embedder,
                                        "index": built, "rows": rows,
                                        "query_peak_rss_mb": peak_mb()})
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
