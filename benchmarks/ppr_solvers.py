"""Forward push against power iteration for the passage graph's PPR, side by side in one process.

    PYTHONPATH=src .venv/bin/python benchmarks/ppr_solvers.py --dev [--sets 2wiki,hotpotqa,musique]
        [--scale INDEX=QUESTIONS ...] [--methods syncge,gear] [--limit N] [--json out.json]

``--dev`` runs the three dev sets over the er_dev indices (``$GEARAG_BENCH_DIR/<set>``, built by
``benchmarks/er_dev.py``; their optional synonym/NER arrays are left unused, as the defaults do);
``--scale`` runs a ``benchmarks/scale.py`` index over its planted-question sample. For every index
and method, the two solvers run one after the other (the order alternates between methods) with
everything else at its default: R@5 / R@15, median and p99 ms per question, and how many of the
top-15 passages the two rankings share (mean over questions).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from er_dev import DATASETS, ROOT, default_graph_options

SOLVERS = ("power", "push")


def compare(index: str, questions: list[Any], methods: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from gearag.api import Gearag
    from gearag.bench.evaluate import timed_run, warm_up
    from gearag.evaluation import evaluate_run

    app = Gearag.open(index)
    rows = []
    for n, (method, options) in enumerate(methods):
        ranked: dict[str, list[list[str]]] = {}
        for solver in SOLVERS if n % 2 == 0 else SOLVERS[::-1]:
            run = app.method(method, **options, ppr_solver=solver)
            warm_up(run, 15)
            latencies, run_rows = timed_run(app, run, questions, 15)
            report = evaluate_run(questions, run_rows, (5, 15))
            ranked[solver] = [[p["id"] for p in r["passages"]] for r in run_rows]
            ms = sorted(1000 * t for t in latencies)
            row = {"index": index, "method": method, "solver": solver,
                   "R@5": round(100 * report.recall[5], 1), "R@15": round(100 * report.recall[15], 1),
                   "median_ms": round(statistics.median(ms), 1), "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 1),
                   "n": len(questions)}
            rows.append(row)
            print(f"  {Path(index).name:<14} {method:<7} {solver:<6} R@5 {row['R@5']:5.1f} R@15 {row['R@15']:5.1f} "
                  f"median {row['median_ms']:8.1f} ms  p99 {row['p99_ms']:8.1f} ms", flush=True)
        shared = [len(set(a) & set(b)) / max(len(a), 1) for a, b in zip(ranked["power"], ranked["push"], strict=True)]
        rows[-1]["top15_shared"] = rows[-2]["top15_shared"] = round(100 * statistics.mean(shared), 1)
        print(f"  {'':<14} {method:<7} top-15 shared by the two solvers: {rows[-1]['top15_shared']:.1f}%", flush=True)
    return rows


def main() -> None:
    from gearag.data import load_questions

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", action="store_true", help="the three dev sets (er_dev indices)")
    ap.add_argument("--sets", default="2wiki,hotpotqa,musique")
    ap.add_argument("--scale", action="append", default=[], metavar="INDEX=QUESTIONS")
    ap.add_argument("--methods", default="syncge,gear")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    names = args.methods.split(",")
    results: list[dict[str, Any]] = []
    if args.dev:
        for name in args.sets.split(","):
            ds = DATASETS[name]
            base = default_graph_options()
            methods = [(m, {**base, **({"max_steps": ds.max_steps} if m == "gear" else {})}) for m in names]
            results += compare(str(ROOT / name), load_questions(ds.questions)[: args.limit], methods)
    for spec in args.scale:
        index, qfile = spec.split("=", 1)
        results += compare(index, load_questions(qfile)[: args.limit], [(m, {}) for m in names])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
