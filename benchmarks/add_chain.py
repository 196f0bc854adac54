"""A chain of ``gearag add`` commands onto a copy of an index: each add's wall time, peak and generation kind.

    python benchmarks/add_chain.py BASE WORK CORPUS[:TRIPLES] [CORPUS[:TRIPLES] ...]
        [--split N] [--adds K] [--label L] [-- gearag add options...]

Copies BASE (an index with shards) to WORK/index by hard links (nothing of BASE is written: every
add writes new files and a new manifest), then runs one ``gearag add`` per corpus file, in order, each
in its own process (``--extractor openie:TRIPLES`` where a triples file is given). ``--split N`` cuts
each corpus into files of N passages first (under WORK), so ``--adds`` small adds come from one corpus
(BENCHMARKS.md, "A bound on the shards since the base"). Options after ``--`` go to every add
(``--generation delta``, ``--delta-shards 1000``...). Prints one JSON line per add: its number, wall
seconds (process start to exit), peak RSS (the child's own, from ``wait4``), the generation it wrote
(``delta`` or ``full``) and the shards since its base; and last the median wall of the delta adds and
of the full ones.
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


def split(corpus: Path, size: int, out: Path) -> list[Path]:
    """``corpus`` (JSON lines) cut into files of ``size`` passages under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    files = []
    for n, start in enumerate(range(0, len(lines), size)):
        path = out / f"{corpus.stem}-{n:04d}.jsonl"
        path.write_text("\n".join(lines[start : start + size]) + "\n", encoding="utf-8")
        files.append(path)
    return files


def generation_of(index: Path) -> tuple[str, int]:
    """The kind of ``index``'s current generation and the shards since its base (0 for a full one)."""
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    name = str(manifest["generation"]["name"])
    gen = json.loads((index / "generations" / name / "manifest.json").read_text(encoding="utf-8"))
    delta = gen.get("delta")
    if isinstance(delta, dict):
        return "delta", len(gen["shards"]) - len(delta.get("shards") or [])
    return "full", 0


def run_add(index: Path, corpus: Path, triples: Path | None, options: list[str]) -> tuple[float, float]:
    """One ``gearag add`` in a child process: (wall seconds, the child's peak RSS in GB)."""
    argv = [sys.executable, "-m", "gearag.cli", "add", str(index), str(corpus), *options]
    if triples is not None:
        argv += ["--extractor", f"openie:{triples}"]
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"gearag add {corpus} failed ({child.returncode}): {err.decode(errors='replace')[-400:]}")
    return wall, usage.ru_maxrss / 1e6  # KB on Linux


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("corpora", nargs="+", help="CORPUS[:TRIPLES]: a JSON-lines corpus, its OpenIE triples file")
    ap.add_argument("--split", type=int, default=0, help="cut each corpus into adds of this many passages")
    ap.add_argument("--adds", type=int, default=0, help="stop after this many adds (0: all)")
    ap.add_argument("--label", default="", help="a label on every line")
    args = ap.parse_args(argv)
    if args.work.resolve() == args.base.resolve() or args.base.resolve() in args.work.resolve().parents:
        raise SystemExit("WORK must be outside BASE")
    plan: list[tuple[Path, Path | None]] = []
    for spec in args.corpora:
        corpus, _, triples = spec.partition(":")
        files = split(Path(corpus), args.split, args.work / "split") if args.split else [Path(corpus)]
        plan += [(f, Path(triples) if triples else None) for f in files]
    if args.adds:
        plan = plan[: args.adds]
    index = args.work / "index"
    args.work.mkdir(parents=True, exist_ok=True)
    if index.exists():
        shutil.rmtree(index)
    subprocess.run(["cp", "-al", str(args.base), str(index)], check=True)  # hard links: BASE is never written
    walls: dict[str, list[float]] = {"delta": [], "full": []}
    for n, (corpus, triples) in enumerate(plan, 1):
        wall, peak = run_add(index, corpus, triples, extra)
        kind, since = generation_of(index)
        walls[kind].append(wall)
        print(json.dumps({"label": args.label, "add": n, "corpus": corpus.name, "wall_s": round(wall, 2),
                          "peak_gb": round(peak, 2), "generation": kind, "shards_since_base": since}), flush=True)
    print(json.dumps({"label": args.label, "median_wall_s": {k: round(statistics.median(v), 2)
                                                              for k, v in walls.items() if v},
                      "adds": {k: len(v) for k, v in walls.items()}}), flush=True)


if __name__ == "__main__":
    main()
