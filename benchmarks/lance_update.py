"""An update of a Lance export after `gearag add`, against the export it updates, in one run (issue 14).

    python benchmarks/lance_update.py INDEX ADD_DIR [ADD_DIR2] --work DIR [--ann-min-rows N]

INDEX: an embedded index (not changed: the run works on a hard-linked copy, which ``gearag add`` only
adds files to; ``--in-place`` adds to INDEX itself). ADD_DIR: a ``gearag synth`` corpus disjoint from the
index's (``--first-copy``), with its ``triples.json``. Steps, each a child process (wall seconds, peak RSS
from ``wait4``):

1. ``gearag export COPY LANCE`` — the full export;
2. ``gearag add COPY ADD_DIR/corpus.jsonl --extractor openie:ADD_DIR/triples.json``;
3. ``gearag export COPY LANCE --update`` — appends the added rows, writes the union-derived tables anew;
4. with ADD_DIR2: a second add, then ``--update --keep-hours 0``, which first removes the versions the first
   update replaced (so the disk after it is the steady state: the live export plus the one before it).

The disk of LANCE is measured after each export, and each export's steps are kept with their start times.
Results: ``DIR/lance_update.json`` and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from scale import dir_bytes, gearag_cmd, log, run_child


def _step(argv: list[object], what: str) -> dict[str, Any]:
    log(what)
    lines: list[str] = []
    seconds, peak, stdout = run_child(gearag_cmd(*argv), what=what, stderr_lines=lines)
    out: dict[str, Any] = {"seconds": round(seconds, 1), "peak_mb": round(peak)}
    if argv[0] == "export":  # its steps, each with the seconds since the export started
        out["steps"] = [line.strip() for line in lines if " s  " in line]
    if stdout.strip().startswith("{"):
        out["summary"] = json.loads(stdout)
    return out


def _add(copy: Path, add: Path) -> dict[str, Any]:
    return _step(["add", copy, add / "corpus.jsonl", "--extractor", f"openie:{add / 'triples.json'}"],
                 f"add {add.name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("adds", type=Path, nargs="+", help="one or two synth corpora to add")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--ann-min-rows", type=int, default=100_000)
    ap.add_argument("--in-place", action="store_true",
                    help="add to INDEX itself, not to a hard-linked copy (whose new generations the original keeps "
                         "on disk: ~4 GB an add at 1M)")
    args = ap.parse_args()
    work = args.work
    copy, lance = (args.index if args.in_place else work / "index"), work / "lance"
    for p in (lance,) if args.in_place else (copy, lance):
        if p.exists():
            shutil.rmtree(p)
    work.mkdir(parents=True, exist_ok=True)
    if not args.in_place:
        subprocess.run(["cp", "-al", str(args.index), str(copy)], check=True)  # adds write new files only
    ann = ["--ann-min-rows", args.ann_min_rows]
    result: dict[str, Any] = {"index": str(args.index), "date": time.strftime("%Y-%m-%d %H:%M"),
                              "ann_min_rows": args.ann_min_rows}
    result["export"] = _step(["export", copy, lance, *ann], "full export")
    result["export"]["disk_bytes"] = dir_bytes(lance)
    result["add"] = _add(copy, args.adds[0])
    result["update"] = _step(["export", copy, lance, "--update", *ann], "update")
    result["update"]["disk_bytes"] = dir_bytes(lance)
    if len(args.adds) > 1:
        result["add2"] = _add(copy, args.adds[1])
        result["update2"] = _step(["export", copy, lance, "--update", "--keep-hours", 0, *ann], "update, pruning")
        result["update2"]["disk_bytes"] = dir_bytes(lance)
    (work / "lance_update.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print("| step | wall s | peak MB | Lance disk MB |\n|---|---|---|---|")
    for key in ("export", "add", "update", "add2", "update2"):
        if key in result:
            r = result[key]
            disk = f"{r['disk_bytes'] / 2**20:,.0f}" if "disk_bytes" in r else ""
            print(f"| {key} | {r['seconds']:,.1f} | {r['peak_mb']:,} | {disk} |")


if __name__ == "__main__":
    main()
