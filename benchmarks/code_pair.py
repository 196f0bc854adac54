"""Two versions of gearag side by side on one index: adds (delta and full) and queries, alternating.

    python benchmarks/code_pair.py BASE WORK --add CORPUS:TRIPLES --questions Q.json \
        --old OLD/src --new NEW/src [--rounds 5] [--query-rounds 4] [--kinds delta,full] [--delete IDS]
        (kinds: delta, full, delete, compact)

``OLD`` and ``NEW`` are checkouts (``git worktree add``) whose ``src`` each run puts first on
``PYTHONPATH``. Per round and kind, each version adds the corpus (``--extractor openie:TRIPLES``,
``--generation KIND``) onto a fresh hard-linked copy of BASE (an index with shards: a plain one's first
add would also convert it), the order of the two swapped every round; the kind ``delete`` runs
``gearag delete`` of the ids in ``--delete`` instead, and ``compact`` runs ``gearag compact``; then each
version, in turn, runs bm25, syncge and gear over the questions in its own process (the query child of
``scale.py``: warm-up, median latency, R@5/R@15). One JSON line per run (wall seconds and peak RSS of the
update's process, its generation's step seconds; a query run's medians and recall), then the medians per
version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scale import _QUERY_CHILD

GEARAG = "import sys; from gearag.cli import main; sys.exit(main())"
METHODS = ("bm25", "syncge", "gear")


def _query(src: Path, index: Path, questions: Path) -> str:
    """The query child's output, run with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src), "GEARAG_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-c", _QUERY_CHILD, str(index), str(questions), ",".join(METHODS)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"queries with {src} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def _add(src: Path, base: Path, work: Path, corpus: Path, triples: Path, kind: str,
         delete: Path | None = None) -> dict[str, object]:
    if work.exists():
        shutil.rmtree(work)
    subprocess.run(["cp", "-al", str(base), str(work)], check=True)
    env = {**os.environ, "PYTHONPATH": str(src), "GEARAG_PROGRESS": "0"}
    started = time.perf_counter()
    command = {"delete": ["delete", str(work), str(delete)], "compact": ["compact", str(work)]}.get(
        kind, ["add", str(work), str(corpus), "--extractor", f"openie:{triples}", "--generation", kind])
    proc = subprocess.Popen([sys.executable, "-c", GEARAG, *command], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"add with {src} failed: {err.strip()[-2000:]}")
    root = json.loads((work / "manifest.json").read_text(encoding="utf-8"))
    gen = json.loads((work / "generations" / root["generation"]["name"] / "manifest.json").read_text("utf-8"))
    shutil.rmtree(work)
    return {"wall": round(seconds, 2), "peak_mb": round(usage.ru_maxrss / 1024), "steps": gen.get("build_seconds")}


def _values(rows: list[dict[str, object]], key: str, **match: object) -> list[float]:
    return [float(str(row[key])) for row in rows if all(row.get(k) == v for k, v in match.items())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--add", required=True, help="CORPUS:TRIPLES, the passages each add adds and their triples")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--query-rounds", type=int, default=4)
    ap.add_argument("--kinds", default="delta,full", help="of delta, full, delete and compact")
    ap.add_argument("--delete", type=Path, help="the passage ids the delete kind deletes, one per line")
    args = ap.parse_args()
    corpus, triples = (Path(p) for p in args.add.split(":", 1))
    code = {"old": args.old, "new": args.new}
    args.work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []

    def emit(row: dict[str, object]) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)

    for r in range(args.rounds):
        for kind in args.kinds.split(","):
            for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                emit({"run": "add", "kind": kind, "code": name, "round": r,
                      **_add(code[name], args.base, args.work / f"{name}-{kind}", corpus, triples, kind,
                            args.delete)})
    for r in range(args.query_rounds):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            out = _query(code[name], args.base, args.questions)
            result = json.loads(out.strip().splitlines()[-1])["methods"]
            emit({"run": "query", "code": name, "round": r, **{m: result[m]["median_ms"] for m in METHODS},
                  "recall": {m: [result[m]["R@5"], result[m]["R@15"]] for m in METHODS}})
    for name in ("old", "new"):
        adds = {kind: statistics.median(_values(rows, "wall", run="add", kind=kind, code=name))
                for kind in args.kinds.split(",") if args.rounds}
        queries = {m: statistics.median(_values(rows, m, run="query", code=name)) for m in METHODS if args.query_rounds}
        print(json.dumps({"median": name, "add_wall": adds, "query_ms": queries}), flush=True)


if __name__ == "__main__":
    main()
