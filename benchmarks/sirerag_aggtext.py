"""Titled vs released proposition aggregates (issue 11, branch sire4): answer recall on question halves.

    PYTHONPATH=src python benchmarks/sirerag_aggtext.py --released /work/sire-indices --titled /work/sire4-indices \\
        [--out benchmarks/sirerag_aggtext.results.json]

Both roots hold one index per set (``musique``, ``hotpotqa``, ``2wiki``) built with ``--sirerag``: the released
aggregate text (``--sirerag-aggregate-text facts``, the default before this branch) and the titled one (the
default now). Every run goes through :meth:`gearag.api.Gearag.retrieve` (the code of ``gearag retrieve
--pool``); answer recall is :func:`gearag.evaluation.contains_answer` over the top-k entries' title + text, as
``gearag eval`` computes it (yes/no questions left out). Protocol against tuning: the choice was made on the
FIRST half of each set's questions (2Wiki 500, MuSiQue and HotpotQA 50), the second half is held out; the
table gives first / second / full for chunks, the released pool and the titled pool, dense top-20 (AR@5,
AR@20) and BM25 top-20 (AR@5).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gearag.api import Gearag
from gearag.data import load_questions
from gearag.evaluation import answer_keys, contains_answer

SETS = {"musique": "musique_train/musique_train.json", "hotpotqa": "hotpotqa_train/hotpotqa_train.json",
        "2wiki": "2wikimultihopqa/2wikimultihopqa.json"}
FIRST_HALF = {"musique": 50, "hotpotqa": 50, "2wiki": 500}
DATA = Path("/work/shared/data")
#: (row label, index root option, pool, method)
RUNS = [("chunks dense", "released", "chunks", "dense"), ("released dense", "released", "sirerag", "dense"),
        ("titled dense", "titled", "sirerag", "dense"), ("chunks bm25", "released", "chunks", "bm25"),
        ("released bm25", "released", "sirerag", "bm25"), ("titled bm25", "titled", "sirerag", "bm25")]


def first_hit(app: Gearag, question: str, keys: list[str], method: str, pool: str, k: int) -> int | None:
    entries = app.row(app.retrieve(question, method, k, pool=pool))["passages"]
    for rank, e in enumerate(entries):
        if contains_answer(f"{e['title']} {e['text']}", keys):
            return rank
    return None


def measure(roots: dict[str, Path], name: str) -> dict:
    qs = load_questions(DATA / SETS[name])
    apps = {label: Gearag.open(root / name) for label, root in roots.items()}
    out: dict = {}
    for label, root, pool, method in RUNS:
        app = apps[root]
        counts = {s: {"n": 0, 5: 0, 20: 0} for s in ("first", "second", "full")}
        for i, q in enumerate(qs):
            keys = answer_keys(q)
            if not keys:
                continue
            hit = first_hit(app, q.question, keys, method, pool, 20)
            for split in ("first" if i < FIRST_HALF[name] else "second", "full"):
                c = counts[split]
                c["n"] += 1
                c[5] += hit is not None and hit < 5
                c[20] += hit is not None
        coll = "passages" if pool == "chunks" else pool
        splits = {s: {"n": c["n"], "AR@5": round(100 * c[5] / c["n"], 2), "AR@20": round(100 * c[20] / c["n"], 2)}
                  for s, c in counts.items()}
        out[label] = {"size": len(app.index.collection(coll)), **splits}
        print(name, label, json.dumps(out[label]), flush=True)
    return out


def report(results: dict) -> None:
    """One row per set and question half; chunks / released / titled side by side."""
    pools = ("chunks", "released", "titled")
    cols = [("dense", "AR@5"), ("dense", "AR@20"), ("bm25", "AR@5")]
    head = [f"{m} {c} {p}" for m, c in cols for p in pools]
    print("| set | half | scored | " + " | ".join(head) + " |")
    print("| --- " * (len(head) + 3) + "|")
    for name in SETS:
        if name not in results:
            continue
        for split in ("first", "second", "full"):
            n = results[name]["chunks dense"][split]["n"]
            cells = [str(results[name][f"{p} {m}"][split][c]) for m, c in cols for p in pools]
            print(f"| {name} | {split} | {n} | " + " | ".join(cells) + " |")
    sizes = ", ".join(f"{name} {results[name]['released dense']['size']} → {results[name]['titled dense']['size']}"
                      for name in SETS if name in results)
    print(f"\nSiReRAG pool size, released → titled: {sizes}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--released", type=Path, required=True)
    ap.add_argument("--titled", type=Path, required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report", type=Path, help="print the tables of a results file and exit")
    args = ap.parse_args()
    if args.report:
        report(json.loads(args.report.read_text()))
        return
    results = {name: measure({"released": args.released, "titled": args.titled}, name)
               for name in args.sets.split(",")}
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    if set(results) == set(SETS):
        report(results)


if __name__ == "__main__":
    main()
