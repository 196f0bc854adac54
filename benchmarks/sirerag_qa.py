"""Time per query over the SiReRAG pools (one sequential run) and the offline QA protocol (§5), per dev set.

    PYTHONPATH=src python benchmarks/sirerag_qa.py /work/sire-indices --out benchmarks/sirerag_qa.results.json

For each set and pool (chunks, raptor, sirerag) and retriever (dense, bm25): every question once, one at a
time, in one process (``Gearag.retrieve``, the code of ``gearag retrieve``), after one warm-up query;
TPQ = mean ms per query of retrieving the top 20 and building the run row. Then the QA protocol with
the offline engine (``--answer``: the top 20 pool nodes → the offline extracted answer) scored by
``evaluate_run`` (``gearag eval``): EM/F1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from gearag.api import Gearag
from gearag.data import load_questions
from gearag.evaluation import evaluate_run

SETS = {"musique": "musique_train/musique_train.json", "hotpotqa": "hotpotqa_train/hotpotqa_train.json",
        "2wiki": "2wikimultihopqa/2wikimultihopqa.json"}
DATA = Path("/work/shared/data")
POOLS = ("chunks", "raptor", "sirerag")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("indices", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--no-qa", action="store_true")
    args = ap.parse_args()
    results: dict[str, dict] = {}
    for name, qpath in SETS.items():
        app = Gearag.open(args.indices / name)
        qs = load_questions(DATA / qpath)
        res = results[name] = {"questions": len(qs), "tpq_ms": {}, "qa": {}}
        for method in ("dense", "bm25"):
            for pool in POOLS:
                run = app.method(method, pool=pool)
                app.row(run(qs[0].question, 20))  # warm-up: loads vectors / BM25
                times = []
                for q in qs:
                    t = time.perf_counter()
                    app.row(run(q.question, 20), qid=q.id, question=q.question)
                    times.append(1000 * (time.perf_counter() - t))
                res["tpq_ms"][f"{method}/{pool}"] = {"mean": round(statistics.fmean(times), 2),
                                                     "median": round(statistics.median(times), 2)}
                print(name, method, pool, res["tpq_ms"][f"{method}/{pool}"], flush=True)
        if not args.no_qa:
            for pool in POOLS:
                run = app.method("dense", pool=pool, answer=True)
                rows, times = [], []
                for q in qs:
                    t = time.perf_counter()
                    rows.append(app.row(run(q.question, 20), qid=q.id, question=q.question))
                    times.append(1000 * (time.perf_counter() - t))
                report = evaluate_run(qs, rows, (5, 20)).to_dict()
                res["qa"][pool] = {"EM": report.get("EM"), "F1": report.get("F1"),
                                   "AR@5": report["answer_recall"]["AR@5"],
                                   "ms_per_query": round(statistics.fmean(times), 1)}
                print(name, "qa dense", pool, res["qa"][pool], flush=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
