"""Where a Lance export's memory goes: per stage, wall seconds, peak resident MB and resident MB after it,
split into anonymous memory (heap) and file-backed pages (the index's memory-mapped vectors, which the
kernel can drop; :func:`gearag.bench.memory.rss_parts_mb`, shared memory counted with them).

    python benchmarks/export_memory.py INDEX_DIR OUT_URI [--ann-min-rows N] [--ann-index ivf_sq|ivf_pq]

The stages are the export's progress messages (one per table, its full-text
and vector indices). The peak is the process's VmHWM, reset at each stage
(Linux ``/proc/self/clear_refs``), so each stage's peak is its own. OUT_URI is
replaced (``--overwrite``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index", type=Path)
    ap.add_argument("out")
    ap.add_argument("--ann-min-rows", type=int, default=100_000)
    ap.add_argument("--ann-index", default="ivf_sq")
    args = ap.parse_args()
    from gearag.bench.memory import peak_mb, reset_peak, rss_mb, rss_parts_mb
    from gearag.indexing.export import export_index
    from gearag.store.lance.export import ExportConfig

    stages: list[dict[str, object]] = []
    started = [time.perf_counter(), "open the index"]

    def close_stage() -> None:
        anon, file_backed = rss_parts_mb()
        stages.append({"stage": started[1], "seconds": round(time.perf_counter() - float(started[0]), 1),
                       "peak_mb": round(peak_mb()), "rss_mb_after": round(rss_mb()),
                       "anon_mb_after": round(anon), "file_mb_after": round(file_backed)})
        print(json.dumps(stages[-1]), flush=True)
        reset_peak()  # the next stage's peak is its own

    def say(message: str) -> None:
        close_stage()
        started[:] = [time.perf_counter(), message]

    reset_peak()
    export_index(args.index, args.out, ExportConfig(ann_min_rows=args.ann_min_rows, ann_index=args.ann_index,
                                                  overwrite=True), say)
    close_stage()


if __name__ == "__main__":
    main()
