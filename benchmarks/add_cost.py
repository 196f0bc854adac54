"""Cost of successive ``gearag add`` / ``gearag delete`` runs on a copy of an index: wall, CPU, peak RSS,
generation parts.

    python benchmarks/add_cost.py --index IDX --add DIR1 --add DIR2 [--delete IDS] --work /tmp/addcost [--out r.json]

Each DIR is a ``gearag synth`` output (corpus.jsonl + triples.json, see
benchmarks/scale.py): its passages are added with ``--extractor
openie:DIR/triples.json``; each IDS file lists passage ids to delete, one per
line. One child process per operation, in the order given, onto a copy
of IDX (which is never written; ``--link``: a copy of hard links). Per add: wall seconds, user + system CPU
seconds and peak RSS of the child (``wait4``), and the seconds the index
records (``last_update``: shard, generation; the generation's
``build_seconds``: graph, resolve, bm25). CPU seconds are what to compare on
a loaded machine; wall seconds include waiting for a core.

The code measured is the one on ``PYTHONPATH`` (point it at another checkout
to measure that one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

GEARAG = "import sys; from gearag.cli import main; sys.exit(main())"


def run_op(index: Path, op: str, source: Path) -> dict[str, object]:
    """One ``gearag add`` (``source``: a synth output) or ``gearag delete`` (``source``: an ids file) child."""
    args = [str(source / "corpus.jsonl"), "--extractor", f"openie:{source / 'triples.json'}"] if op == "add" \
        else [str(source)]
    cmd = [sys.executable, "-c", GEARAG, op, str(index), *args]
    started = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    err = child.stderr.read() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"gearag {op} {source} failed:\n{err}")
    manifest = json.loads((index / "manifest.json").read_text())
    gen = index / "generations" / manifest["generation"]["name"] / "manifest.json"
    return {op: str(source), "wall_seconds": round(wall, 1), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024), "counts": manifest["counts"],
            "format_version": manifest["format_version"], "last_update": manifest["last_update"]["seconds"],
            "generation": json.loads(gen.read_text()).get("build_seconds"), "load_average": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True, help="index to copy (never written)")
    ap.add_argument("--add", dest="ops", action="append", type=lambda v: ("add", Path(v)),
                    help="gearag synth output to add (repeat; operations run in the order given)")
    ap.add_argument("--delete", dest="ops", action="append", type=lambda v: ("delete", Path(v)),
                    help="file of passage ids to delete, one per line (repeat)")
    ap.add_argument("--work", type=Path, required=True, help="directory for the copy (replaced)")
    ap.add_argument("--out", type=Path, help="write the results here as JSON")
    ap.add_argument("--link", action="store_true",
                    help="hard-link the copy's files instead of copying them (a 1M-passage index is ~20 GB; "
                         "safe because gearag add never writes into an existing file: it adds directories and "
                         "renames a new manifest into place)")
    args = ap.parse_args()
    if not args.ops:
        ap.error("give at least one --add or --delete")
    copy = args.work / args.index.name
    if copy.exists():
        shutil.rmtree(copy)
    args.work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(args.index, copy, copy_function=os.link if args.link else shutil.copy2)
    results = []
    for op, source in args.ops:
        results.append(run_op(copy, op, source))
        print(json.dumps(results[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
