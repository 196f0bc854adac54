"""Build memory per stage: peak and end RSS of each build stage, and where the bytes go (issue #14).

    python benchmarks/build_memory.py --sizes 10000,30000 [--baseline-src DIR] [--tracemalloc]

For each size, a child process loads the synthetic corpus of ``benchmarks/scale.py``
(``OUT/data/size-N/corpus.jsonl`` and its ``triples.json``), makes the openie
extractor and runs :func:`gearag.indexing.write_index` with each default stage
wrapped: before a stage the kernel's peak-RSS mark is reset (``clear_refs``), after
it the stage's own peak (``VmHWM``), the RSS it leaves behind (``VmRSS``) and its
seconds are recorded; the same for reading the corpus, making the extractor, the
commit (``write``) and, where the code has no ``write_index`` (what ``gearag index``
runs since the second memory pass), the final ``Index.load`` of ``build_index``. ``--baseline-src DIR`` runs the
same child with another checkout's ``src`` on ``PYTHONPATH`` first (e.g. the code
before this branch, from ``git archive``), so both rows come from one run on the
same machine state. ``--tracemalloc`` adds the top allocation sites alive at the end
of each stage (slow: use at 10k). ``--compare`` checks that the two builds wrote the
same files (manifests equal but for their dates and timings).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/wt-scale/benchmarks/out/scale/data")
OUT = ROOT / "benchmarks" / "out" / "build_memory"

_CHILD = r"""
import gc, json, os, sys, time, tracemalloc
from pathlib import Path
from gearag.bench.memory import peak_mb, reset_peak

corpus, triples, out, trace = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
os.environ["GEARAG_PROGRESS"] = "0"

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")

rows = []
def top(n=8):
    if not trace:
        return None
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snap.statistics("lineno")
    total = sum(s.size for s in stats)
    return {"total_mb": round(total / 2**20, 1),
            "top": [[f"{s.traceback[0].filename.split('site-packages/')[-1].split('/src/')[-1]}:"
                     f"{s.traceback[0].lineno}", round(s.size / 2**20, 1), s.count] for s in stats[:n]]}

def record(name, started):
    gc.collect()
    rows.append({"stage": name, "seconds": round(time.perf_counter() - started, 2),
                 "peak_mb": round(peak_mb(), 1), "end_rss_mb": round(rss_mb(), 1), "alive": top()})
    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    reset_peak()

if trace:
    tracemalloc.start(1)
reset_peak()
t = time.perf_counter()
from gearag.data import load_corpus
passages = load_corpus(corpus)
record("read corpus", t)
t = time.perf_counter()
from gearag.extract import make_extractor
ex = make_extractor("openie:" + triples)
record("extractor", t)

from gearag.config import IndexConfig
from gearag.indexing import build_index
from gearag.indexing.pipeline import DEFAULT_STAGES

class Measured:
    def __init__(self, stage):
        self.stage, self.name = stage, stage.name
    def run(self, build):
        t = time.perf_counter()
        self.stage.run(build)
        record(self.name, t)

config = IndexConfig.from_dict({"extract": {"extractor": "openie:" + triples}})
t0 = time.perf_counter()
marks = {}
def on_stage(name, secs):
    if name == "write":
        marks["write"] = time.perf_counter()
try:  # what `gearag index` runs: write_index (no Index.load) where the code has it, else build_index
    from gearag.indexing import write_index as run_build
    last = "write"
except ImportError:
    run_build, last = build_index, "write + Index.load"
built = run_build(passages, out, config, extractor=ex, overwrite=True,
                  stages=[Measured(s) for s in DEFAULT_STAGES], on_stage=on_stage)
manifest = built if isinstance(built, dict) else built.manifest
# on_stage("write") runs right after the commit; the rest of build_index is Index.load.
staged = sum(r["seconds"] for r in rows[2:])
rows.append({"stage": last, "seconds": round(time.perf_counter() - t0 - staged, 2),
             "peak_mb": round(peak_mb(), 1), "end_rss_mb": round(rss_mb(), 1), "alive": top()})
print(json.dumps({"rows": rows, "build_seconds": round(time.perf_counter() - t0, 1),
                  "counts": manifest["counts"]}))
"""


def run(src: Path, n: int, out: Path, trace: bool, data: Path = DATA) -> dict:
    corpus = data / f"size-{n}" / "corpus.jsonl"
    triples = data / f"size-{n}" / "triples.json"
    env = {**os.environ, "PYTHONPATH": str(src), "GEARAG_PROGRESS": "0"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(corpus), str(triples), str(out), "1" if trace else "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    stdout, stderr = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build {n} with {src} failed: {stderr[-3000:]}")
    result: dict = json.loads(stdout.strip().splitlines()[-1])
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    # Not the build's peak: resetting VmHWM (clear_refs) between stages resets ru_maxrss too; the table
    # takes the largest stage peak.
    result["ru_maxrss_mb"] = round(usage.ru_maxrss / 1024, 1)
    result["src"] = str(src)
    return result


def same_index(a: Path, b: Path) -> list[str]:
    """Differences between two built indices' manifests (dates and timings aside), file checksums included."""
    ma, mb = (json.loads((p / "manifest.json").read_text()) for p in (a, b))
    for m in (ma, mb):
        m.get("resolve", {}).pop("seconds", None)  # timings
    diffs = []
    for key in sorted(set(ma) | set(mb)):
        if key in ("created", "build_seconds"):
            continue
        if ma.get(key) != mb.get(key):
            if key == "files":
                fa, fb = ma["files"], mb["files"]
                diffs += [f"file {f}" for f in sorted(set(fa) | set(fb)) if fa.get(f) != fb.get(f)]
            else:
                diffs.append(f"manifest {key}")
    return diffs


def table(results: list[dict]) -> str:
    lines = ["| size | code | stage | seconds | stage peak RSS (MB) | RSS after (MB) |", "|---|---|---|---|---|---|"]
    for r in results:
        for row in r["rows"]:
            lines.append(f"| {r['size']:,} | {r['label']} | {row['stage']} | {row['seconds']} | {row['peak_mb']:,.0f} |"
                         f" {row['end_rss_mb']:,.0f} |")
        peak = max(row["peak_mb"] for row in r["rows"])
        lines.append(f"| {r['size']:,} | {r['label']} | **whole build** | {r['wall_seconds']} | **{peak:,.0f}** | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,30000")
    ap.add_argument("--baseline-src", type=Path, help="another checkout's src/ to measure first")
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--compare", action="store_true", help="check both builds wrote the same index")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only-baseline", action="store_true", help="measure only --baseline-src")
    ap.add_argument("--keep", action="store_true", help="keep the built indices")
    ap.add_argument("--data", type=Path, default=DATA, help="scale.py's data directory (size-N/ corpora)")
    args = ap.parse_args()
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        built = []
        for label, src in (("before", args.baseline_src), ("after", ROOT / "src")):
            if src is None or (label == "after" and args.only_baseline):
                continue
            index = args.out / f"index-{n}-{label}"
            print(f"[{time.strftime('%H:%M:%S')}] {n} {label}", file=sys.stderr, flush=True)
            r = run(src, n, index, args.tracemalloc, args.data)
            r.update(size=n, label=label)
            results.append(r)
            built.append(index)
            (args.out / f"result-{n}-{label}{'-trace' if args.tracemalloc else ''}.json").write_text(
                json.dumps(r, indent=1))
            print(table([r]), file=sys.stderr, flush=True)
        if args.compare and len(built) == 2:
            diffs = same_index(*built)
            print(f"{n}: indices {'identical' if not diffs else 'DIFFER: ' + ', '.join(diffs[:10])}",
                  file=sys.stderr, flush=True)
            results[-1]["identical"] = not diffs
        if not args.keep:
            import shutil

            for index in built:
                shutil.rmtree(index, ignore_errors=True)
    print(table(results))


if __name__ == "__main__":
    main()
