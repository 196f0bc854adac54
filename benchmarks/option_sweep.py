"""Sweep one query-time option over values on a dev set, with the first/second-half split.

    PYTHONPATH=src .venv/bin/python benchmarks/option_sweep.py SET OPTION V1,V2,... [--methods syncge,gear]

Runs every method at every value over the er_dev index of SET (``$GEARAG_BENCH_DIR/<set>``, built by
``benchmarks/er_dev.py``; its optional synonym/NER arrays unused, as the defaults do) and prints
R@2/5/15 on the first half of the questions (where constants are chosen), the second half (held
out) and all of them. Every other option stays at its default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from er_dev import DATASETS, ROOT, default_graph_options


def main() -> None:
    from gearag.api import Gearag
    from gearag.data import load_questions
    from gearag.evaluation import evaluate_run

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("set", choices=sorted(DATASETS))
    ap.add_argument("option")
    ap.add_argument("values", help="comma-separated numbers")
    ap.add_argument("--methods", default="syncge,gear")
    args = ap.parse_args()
    ds = DATASETS[args.set]
    questions = load_questions(ds.questions)
    half = len(questions) // 2
    app = Gearag.open(ROOT / args.set)
    for method in args.methods.split(","):
        for value in (float(v) for v in args.values.split(",")):
            options = {**default_graph_options(), args.option: value}
            if method == "gear":
                options["max_steps"] = ds.max_steps
            run = app.method(method, **options)
            rows = [app.row(run(q.question, 15), qid=q.id) for q in questions]
            parts = {"first": (questions[:half], rows[:half]), "second": (questions[half:], rows[half:]),
                     "all": (questions, rows)}
            cells = []
            for name, (qs, rs) in parts.items():
                recall = evaluate_run(qs, rs, (2, 5, 15)).recall
                cells.append(f"{name} " + "/".join(f"{100 * recall[k]:.1f}" for k in (2, 5, 15)))
            print(f"{args.set} {method} {args.option}={value:g}  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
