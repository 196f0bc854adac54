"""SiReRAG pools through the index and the CLI's code path: Tables 5, 6 and 7 on the three dev sets, offline.

Usage::

    PYTHONPATH=src python benchmarks/sirerag_pools.py --indices /work/sire-indices [--sets ...] [--out RESULTS.json]

Per set: ``build_index`` with ``TreesConfig(sirerag=True, ablations=True)``
(offline engine, wordllama) in a child process (wall time, stage times and
the child's peak RSS are the build figures); then, in this process, every
pool (``chunks`` = the passages, ``raptor``, ``sirerag`` and the Table-5
ablations) with the base methods ``dense`` and ``bm25`` at top-20, and GEAR
(offline engine, the paper's iterations per set) over ``chunks`` and over
``sirerag``. Every run goes through :class:`gearag.api.Gearag` and
:func:`gearag.results.result_row` and is scored by
:func:`gearag.evaluation.evaluate_run` — what ``gearag retrieve`` and
``gearag eval`` do. Metrics: answer recall@5/@20 (yes/no questions left out),
passage recall@5/@20 (via sources for pool nodes), time per query (TPQ, ms,
retrieval only: the offline runs generate no answer) and TPER against the
RAPTOR pool (SiReRAG Eq. 1: (TPQ_A / TPQ_B) / (pool size_A / pool size_B)).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from gearag.api import Gearag
from gearag.bench.datasets import shared_datasets
from gearag.data import GoldMatcher, load_corpus, load_questions
from gearag.evaluation import evaluate_run
from gearag.retrieve.config import POOLS

KS = (5, 20)
BUILD = """
import json, time
from gearag.bench.memory import peak_mb
from gearag.config import IndexConfig, TreesConfig
from gearag.data import load_corpus
from gearag.indexing import build_index
passages = load_corpus({corpus!r})
t = time.perf_counter()
index = build_index(passages, {out!r}, IndexConfig(trees=TreesConfig(sirerag=True, ablations=True)), overwrite=True)
print(json.dumps({{"seconds": time.perf_counter() - t, "peak_mb": peak_mb(),
                  "stages": index.manifest["build_seconds"], "trees": index.manifest["trees"]}}))
"""


def build(name: str, indices: Path, force: bool) -> dict:
    ds = shared_datasets()[name]
    out = indices / name
    meta = indices / f"{name}.build.json"
    if out.exists() and meta.exists() and not force:
        return json.loads(meta.read_text())
    code = BUILD.format(corpus=str(ds.corpus), out=str(out))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"build of {name} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    meta.write_text(json.dumps(result, indent=2))
    return result


def run(app: Gearag, questions, method: str, k: int, by_id, **options) -> dict:
    rows = []
    m = app.method(method, **options)
    app.row(m(questions[0].question, k))  # warm-up: loads BM25, vectors and records once, outside the timing
    started = time.perf_counter()
    for q in questions:
        rows.append(app.row(m(q.question, k), qid=q.id, question=q.question))
    ms = 1000 * (time.perf_counter() - started) / len(questions)  # retrieval + run-file row, every pool alike
    report = evaluate_run(questions, rows, KS, by_id).to_dict()
    out = {"tpq_ms": round(ms, 2), **report["recall"], **report.get("answer_recall", {}),
           "answer_questions": report.get("answer_recall_questions"),
           "yes_no_skipped": report.get("answer_recall_skipped_yes_no")}
    if "EM" in report:
        out.update(EM=report["EM"], F1=report["F1"])
    return out


ABLATIONS = {
    "sirerag": "SiReRAG",
    "no_relatedness_summaries": "(A) no relatedness summaries",
    "plus_propositions": "(B) + single propositions",
    "propositions_no_aggregates": "(C) (B) without aggregates",
    "propositions_only": "(D) (C) without relatedness summaries",
    "raptor": "RAPTOR (similarity tree only)",
}


def report(results: dict) -> str:
    """BENCHMARKS.md tables from a results file."""
    sets = list(results)
    out: list[str] = []
    cols = ["AR@5", "AR@20", "R@5", "R@20"]
    for method in ("dense", "bm25"):
        out.append(f"\n**{method}, top-20** (AR = answer recall, R = passage recall via sources; TPQ in ms)\n")
        out.append("| pool | " + " | ".join(f"{s} size | {s} AR@5 | AR@20 | R@5 | R@20 | TPQ" for s in sets)
                   + " | avg AR@5 |")
        out.append("| --- " * (2 + 6 * len(sets)) + "|")
        for pool in ("chunks", "raptor", "sirerag"):
            cells, avg = [], []
            for s in sets:
                r = results[s]["pools"][f"{pool}/{method}"]
                cells += [str(results[s]["sizes"][pool]), *(str(r[c]) for c in cols), str(r["tpq_ms"])]
                avg.append(r["AR@5"])
            out.append(f"| {pool} | " + " | ".join(cells) + f" | {sum(avg) / len(avg):.1f} |")
    out.append("\n**Table 7: time per query and TPER (SiReRAG = A, RAPTOR = B)**\n")
    out.append("| method | " + " | ".join(f"{s} TPQ raptor | TPQ sirerag | size ratio | TPER" for s in sets) + " |")
    out.append("| --- " * (1 + 4 * len(sets)) + "|")
    for method in ("dense", "bm25"):
        cells = []
        for s in sets:
            r = results[s]
            ratio = r["sizes"]["sirerag"] / r["sizes"]["raptor"]
            cells += [str(r["pools"][f"raptor/{method}"]["tpq_ms"]), str(r["pools"][f"sirerag/{method}"]["tpq_ms"]),
                      f"{ratio:.2f}", str(r[f"tper_{method}"])]
        out.append(f"| {method} | " + " | ".join(cells) + " |")
    for method in ("dense", "bm25"):
        out.append(f"\n**Table 5 ablations, {method} top-20**\n")
        out.append("| pool | " + " | ".join(f"{s} size | {s} AR@5 | AR@20 | R@5" for s in sets) + " | avg AR@5 |")
        out.append("| --- " * (2 + 4 * len(sets)) + "|")
        for pool, label in ABLATIONS.items():
            cells, avg = [], []
            for s in sets:
                r = results[s]["pools"][f"{pool}/{method}"]
                cells += [str(results[s]["sizes"][pool]), str(r["AR@5"]), str(r["AR@20"]), str(r["R@5"])]
                avg.append(r["AR@5"])
            out.append(f"| {label} | " + " | ".join(cells) + f" | {sum(avg) / len(avg):.1f} |")
    if all(results[s].get("gear") for s in sets):
        out.append("\n**GEAR (offline engine, BM25 base) over chunks vs over the SiReRAG pool**\n")
        out.append("| base pool | " + " | ".join(f"{s} R@5 | R@20 | AR@5 | AR@20 | EM | F1 | TPQ" for s in sets) + " |")
        out.append("| --- " * (1 + 7 * len(sets)) + "|")
        for pool in ("chunks", "sirerag"):
            cells = []
            for s in sets:
                r = results[s]["gear"][pool]
                cells += [str(r[c]) for c in ("R@5", "R@20", "AR@5", "AR@20")]
                cells += [str(r.get("EM", "")), str(r.get("F1", "")), str(r["tpq_ms"])]
            out.append(f"| {pool} | " + " | ".join(cells) + " |")
    out.append("\n**Builds** (wall seconds per stage, peak RSS of the build process)\n")
    out.append("| set | passages | raptor nodes | sirerag nodes | aggregates | extract | resolve | trees | bm25 | embed"
               " | total | peak MB |")
    out.append("| --- " * 12 + "|")
    for s in sets:
        b = results[s]["build"]
        st, tr = b["stages"], b["trees"]
        out.append(f"| {s} | {results[s]['sizes']['chunks']} | {tr['pools']['raptor']['nodes']} | "
                   f"{tr['pools']['sirerag']['nodes']} | {tr['aggregates']} | {st.get('extract')} | "
                   f"{st.get('resolve', '')} | {st['trees']} | {st['bm25']} | {st['embed']} | {b['seconds']:.0f} | "
                   f"{b['peak_mb']:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--indices", type=Path, required=True)
    ap.add_argument("--sets", default="musique,hotpotqa,2wiki")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--no-gear", action="store_true")
    ap.add_argument("--report", type=Path, help="Print the BENCHMARKS.md tables of a results file and exit.")
    args = ap.parse_args()
    if args.report:
        print(report(json.loads(args.report.read_text())))
        return
    args.indices.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    for name in args.sets.split(","):
        ds = shared_datasets()[name]
        print(f"{name}: building", flush=True)
        built = build(name, args.indices, args.force)
        print(f"  built in {built['seconds']:.0f} s, peak {built['peak_mb']:.0f} MB; stages {built['stages']}",
              flush=True)
        app = Gearag.open(args.indices / name)
        passages = load_corpus(ds.corpus)
        questions = load_questions(ds.questions)
        matcher = GoldMatcher(passages)
        for q in questions:
            matcher.resolve(q)
        by_id = {p.id: (p.title, p.text) for p in app.index.passages}
        sizes = {p: (len(app.index.passages) if p == "chunks" else built["trees"]["pools"][p]["nodes"]) for p in POOLS}
        res: dict = {"build": built, "sizes": sizes, "pools": {}, "gear": {}}
        for pool in POOLS:
            for method in ("dense", "bm25"):
                r = run(app, questions, method, 20, by_id, pool=pool)
                res["pools"][f"{pool}/{method}"] = r
                print(f"  {pool:<27} {method:<5} {r}", flush=True)
        for method in ("dense", "bm25"):
            a, b = res["pools"][f"sirerag/{method}"], res["pools"][f"raptor/{method}"]
            res[f"tper_{method}"] = round((a["tpq_ms"] / b["tpq_ms"]) / (sizes["sirerag"] / sizes["raptor"]), 3)
        if not args.no_gear:
            for pool in ("chunks", "sirerag"):
                r = run(app, questions, "gear", 20, by_id, pool=pool, max_steps=ds.max_steps)
                res["gear"][pool] = r
                print(f"  gear over {pool:<8} {r}", flush=True)
        results[name] = res
        if args.out:
            args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
