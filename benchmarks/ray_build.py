"""Build time and peak memory of `gearag index`, single process vs `--ray` (BENCHMARKS.md, "Distributed builds (Ray)").

Runs the CLI in a subprocess per mode and samples its whole process tree
(the driver, spaCy's worker processes, and with --ray the local Ray
instance: GCS, raylet, workers) every 0.5 s. Memory is the sum of PSS
(proportional set size, /proc/PID/smaps_rollup), so pages shared between
forked workers or mapped from Ray's shared-memory object store are counted
once; the driver's own peak RSS is reported too. Stderr lines are
timestamped to show where the time goes (Ray start-up, each stage). After
both builds the two indexes are compared file by file (SHA-256).

    PYTHONPATH=src python benchmarks/ray_build.py ../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json \
        --out /tmp/raybench --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from gearag.store import checksum


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree(root: int) -> list[int]:
    kids = _children()
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(kids.get(pid, []))
    return out


def _kb(pid: int, path: str, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Sampler(threading.Thread):
    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peak_pss_mb = 0.0
        self.peak_driver_rss_mb = 0.0
        self.max_processes = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            pids = _tree(self.root)
            pss = sum(_kb(p, "smaps_rollup", "Pss:") for p in pids) / 1024
            self.peak_pss_mb = max(self.peak_pss_mb, pss)
            self.peak_driver_rss_mb = max(self.peak_driver_rss_mb, _kb(self.root, "status", "VmRSS:") / 1024)
            self.max_processes = max(self.max_processes, len(pids))
            self.stop.wait(0.5)


def run(corpus: Path, out: Path, extra: list[str]) -> dict:
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-c", "import sys; from gearag.cli import main; sys.exit(main())",
           "index", str(corpus), "--out", str(out), *extra]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "GEARAG_PROGRESS": "0"})
    sampler = Sampler(proc.pid)
    sampler.start()
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(f"{time.perf_counter() - started:7.1f}s  {line.rstrip()}")
    code = proc.wait()
    wall = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    if code != 0:
        raise SystemExit("\n".join(lines))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return {"command": " ".join(["gearag", "index", corpus.name, "--out", out.name, *extra]),
            "wall_s": round(wall, 1), "stages_s": manifest["build_seconds"],
            "peak_tree_pss_mb": round(sampler.peak_pss_mb), "peak_driver_rss_mb": round(sampler.peak_driver_rss_mb),
            "max_processes": sampler.max_processes, "executor": manifest.get("build_executor"),
            "stderr": lines}


def same_index(a: Path, b: Path) -> list[str]:
    ma = json.loads((a / "manifest.json").read_text(encoding="utf-8"))["files"]
    mb = json.loads((b / "manifest.json").read_text(encoding="utf-8"))["files"]
    return sorted(f for f in set(ma) | set(mb) if not checksum.same_content(ma.get(f), mb.get(f)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/raybench"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {
        "load_average_before": os.getloadavg(),
        "single": run(args.corpus, args.out / "single", []),
        "ray": run(args.corpus, args.out / "ray", ["--ray", "--ray-workers", str(args.workers),
                                                  "--ray-batch-size", str(args.batch_size)]),
        "load_average_after": os.getloadavg(),
    }
    results["differing_files"] = same_index(args.out / "single", args.out / "ray")
    (args.out / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    for mode in ("single", "ray"):
        r = results[mode]
        print(f"{mode}: {r['wall_s']} s wall, peak PSS of the process tree {r['peak_tree_pss_mb']} MB "
              f"({r['max_processes']} processes), driver peak RSS {r['peak_driver_rss_mb']} MB")
        print("  stages:", r["stages_s"])
        print("\n".join("  " + line for line in r["stderr"]))
    print("differing files:", results["differing_files"] or "none")


if __name__ == "__main__":
    main()
