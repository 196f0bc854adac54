"""Issue 9 dev benchmark: entity resolution + passage-aware graph vs the title-mention baseline.

Builds (or reuses) the spaCy + wordllama indices of the three dev sets under
``$GEARAG_BENCH_DIR/<set>`` (default ``benchmarks/out/er-indices``, ignored by git), then runs every method
and ablation on every question in one process and prints R@2/5/10/15,
median ms per question and, for GEAR, offline-answer EM/F1. It also prints
R@2/R@5/R@15 on each half of the questions: constants are chosen looking at
the first half only (2Wiki's first 500, HotpotQA's and MuSiQue's first 50),
so the second half is held out.

The indices store the optional graph arrays too (synonym edges, NER-span
mentions), so that one index serves the rows with them on and off; the
default rows use them as the defaults of ``ResolveConfig`` say (an index
built with the defaults stores them only when those are on).
``--all-ablations`` adds the earlier issue-9 ablations (PPR off, resolution
off, passage nodes off, Eq. 9 output, agent changes off).

    PYTHONPATH=src .venv/bin/python benchmarks/er_dev.py [--sets 2wiki,hotpotqa,musique] [--limit N]
        [--force] [--all-ablations] [--core] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gearag.bench.datasets import shared_datasets

DATASETS = shared_datasets()

#: Where the indices live (outside the repository by default: benchmarks/out is ignored by git).
ROOT = Path(os.environ.get("GEARAG_BENCH_DIR", Path(__file__).resolve().parent / "out" / "er-indices"))
KS = (2, 5, 10, 15)


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def build(dataset: str, force: bool) -> dict[str, Any]:
    """Build the index in a child process (wall time, stage times); reuse it when present."""
    out = ROOT / dataset
    if force or not (out / "manifest.json").exists():
        code = (
            "import json,time\nfrom gearag.config import IndexConfig, ResolveConfig\n"
            "from gearag.data import load_corpus\n"
            "from gearag.indexing import build_index\nt=time.perf_counter()\n"
            f"idx=build_index(load_corpus({str(DATASETS[dataset].corpus)!r}), {str(out)!r},"
            " IndexConfig(resolve=ResolveConfig(synonyms=True, ner_mentions=True)), overwrite=True, resume=False)\n"
            "print(json.dumps({'seconds': time.perf_counter()-t, 'stages': idx.manifest['build_seconds'],"
            " 'resolve': idx.manifest.get('resolve')}))\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"build failed for {dataset}:\n{done.stderr[-3000:]}")
        stats = json.loads(done.stdout.strip().splitlines()[-1])
        (out / "bench.json").write_text(json.dumps(stats))
    stats = json.loads((out / "bench.json").read_text()) if (out / "bench.json").exists() else {}
    stages = stats.get("stages", {})
    total_mb = dir_mb(out)
    graph_mb = dir_mb(out / "graph") if (out / "graph").exists() else 0.0
    return {
        "path": str(out),
        "seconds": round(stats.get("seconds", float("nan")), 1),
        "resolve_seconds": stages.get("resolve", 0.0),
        "stages": stages,
        "resolve": stats.get("resolve"),
        "mb": round(total_mb, 1),
        "graph_mb": round(graph_mb, 1),
    }


def default_graph_options() -> dict[str, Any]:
    """Query options that make these indices (which store the optional synonym and NER arrays)
    rank as an index built with the default config would: those arrays used only if it stores them."""
    from gearag.config import ResolveConfig

    index_defaults = ResolveConfig()
    return {"synonym_weight": 1.0 if index_defaults.synonyms else 0.0, "ner_mentions": index_defaults.ner_mentions}


def methods_for(dataset: str, all_ablations: bool = False, core: bool = False) -> list[tuple[str, str, dict[str, Any]]]:
    from gearag.config import ResolveConfig

    steps = DATASETS[dataset].max_steps
    index_defaults = ResolveConfig()
    base = default_graph_options()
    syn_flip = {"synonym_weight": 0.0 if index_defaults.synonyms else 1.0}
    ner_flip = {"ner_mentions": not index_defaults.ner_mentions}
    syn_label = "synonyms off" if index_defaults.synonyms else "synonym edges on"
    ner_label = "NER mentions off" if index_defaults.ner_mentions else "NER mentions on"
    gear = {"max_steps": steps, **base}
    rows = [
        ("bm25", "bm25", {}),
        ("titlelink (baseline)", "titlelink", {}),
        ("SyncGE-offline (PPR)", "syncge", base),
        (f"  SyncGE, {syn_label}", "syncge", {**base, **syn_flip}),
        (f"  SyncGE, {ner_label}", "syncge", {**base, **ner_flip}),
        ("GEAR-offline (PPR)", "gear", gear),
        ("  GEAR, ranking fix off (memory weight 1, no evidence seeds)", "gear",
         {**gear, "memory_weight": 1.0, "seed_evidence": False}),
        (f"  GEAR, {syn_label}", "gear", {**gear, **syn_flip}),
        (f"  GEAR, {ner_label}", "gear", {**gear, **ner_flip}),
        ("  GEAR, evidence seeds off", "gear", {**gear, "seed_evidence": False}),
        ("  SyncGE, question-page seeds off", "syncge", {**base, "question_page_weight": 0.0}),
        ("  GEAR, question-page seeds off", "gear", {**gear, "question_page_weight": 0.0}),
        ("  GEAR, power iteration (not forward push)", "gear", {**gear, "ppr_solver": "power"}),
    ]
    if core:  # the table only: the baselines and both methods with every default
        rows = [r for r in rows if not r[0].startswith(" ")]
    if all_ablations:
        rows += [
            ("  SyncGE, PPR off (Alg. 1 + Eq. 3)", "syncge", {**base, "graph": "beams"}),
            ("  SyncGE, PPR + Alg. 1 fused", "syncge", {**base, "graph": "both"}),
            ("  SyncGE, resolution off", "syncge", {**base, "about_weight": 0.0}),
            ("  SyncGE, passage nodes off", "syncge", {**base, "passage_nodes": False}),
            ("  GEAR, Eq. 9 output (final=rrf)", "gear", {**gear, "final": "rrf"}),
            ("  GEAR, PPR off (Alg. 1 + Eq. 9)", "gear", {**gear, "graph": "beams", "final": "rrf"}),
            ("  GEAR, resolution off", "gear", {**gear, "about_weight": 0.0}),
            ("  GEAR, agent changes off", "gear", {**gear, "chain_agent": False}),
        ]
    return rows


def evaluate(index_path: str, dataset: str, limit: int | None, all_ablations: bool = False,
             core: bool = False) -> list[dict[str, Any]]:
    from gearag.api import Gearag
    from gearag.bench.evaluate import timed_run, warm_up
    from gearag.data import load_questions
    from gearag.evaluation import evaluate_run

    app = Gearag.open(index_path)
    questions = load_questions(DATASETS[dataset].questions)[:limit]
    half = len(questions) // 2
    rows = []
    for label, method, options in methods_for(dataset, all_ablations, core):
        run = app.method(method, **options)
        warm_up(run, 15)
        latencies, run_rows = timed_run(app, run, questions, 15)
        report = evaluate_run(questions, run_rows, KS)
        row: dict[str, Any] = {
            "label": label, "method": method, "options": options,
            "recall": {k: round(100 * v, 1) for k, v in report.recall.items()},
            "median_ms": round(1000 * statistics.median(latencies), 1), "n": len(questions),
        }
        if report.em is not None:
            row["EM"], row["F1"] = round(100 * report.em, 1), round(100 * (report.f1 or 0), 1)
        if half:
            for name, part in (("tune", run_rows[:half]), ("held-out", run_rows[half:])):
                qs = questions[:half] if name == "tune" else questions[half:]
                rep = evaluate_run(qs, part, (2, 5, 15))
                row[name] = {k: round(100 * v, 1) for k, v in rep.recall.items()}
        extra = ""
        if "EM" in row:
            extra += f"  EM {row['EM']:5.1f} F1 {row['F1']:5.1f}"
        if "held-out" in row:
            extra += ("  [first half R@2/5/15 " + "/".join(f"{row['tune'][k]:.1f}" for k in (2, 5, 15))
                      + " | second half " + "/".join(f"{row['held-out'][k]:.1f}" for k in (2, 5, 15)) + "]")
        print(f"  {label:<36} " + " ".join(f"R@{k} {v:5.1f}" for k, v in row["recall"].items())
              + f"  {row['median_ms']:7.1f} ms" + extra, flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="2wiki,hotpotqa,musique")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--force", action="store_true", help="rebuild the indices")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--all-ablations", action="store_true", help="also run the earlier issue-9 ablations")
    parser.add_argument("--core", action="store_true", help="only bm25, titlelink, SyncGE and GEAR with the defaults")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for dataset in args.sets.split(","):
        info = build(dataset, args.force)
        before_s = info["seconds"] - info["resolve_seconds"]
        print(f"\n## {dataset}: index {info['seconds']} s (resolution {info['resolve_seconds']} s; without it"
              f" {before_s:.1f} s), {info['mb']} MB (graph/ {info['graph_mb']} MB; without it"
              f" {info['mb'] - info['graph_mb']:.1f} MB); stages {info['stages']};"
              f" resolve {info['resolve']}", flush=True)
        out[dataset] = {"index": info, "rows": evaluate(info["path"], dataset, args.limit, args.all_ablations,
                                                                args.core)}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
