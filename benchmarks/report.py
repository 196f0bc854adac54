"""Copy a ``gearag bench`` report (and the SiReRAG pools' tables) into BENCHMARKS.md, with the figures.

    python benchmarks/report.py [BENCH_DIR] [SIRERAG_RESULTS_JSON]
    # defaults: benchmarks/out/bench, benchmarks/out/sirerag/results.json (skipped when absent)

The bench's ``results.md`` goes between the ``results`` markers, the tables of
``benchmarks/sirerag_pools.py --report`` between the ``sirerag`` markers.
Hand-written analysis outside the markers is kept; the figures are copied
next to BENCHMARKS.md's other images in ``benchmarks/``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MD = ROOT / "BENCHMARKS.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
SIRE_START, SIRE_END = "<!-- sirerag:start -->", "<!-- sirerag:end -->"
FIGURES = ("recall_by_iteration.png", "tokens_by_iteration.png")


def fill(text: str, start: str, end: str, body: str) -> str:
    """``text`` with what lies between ``start`` and ``end`` replaced by ``body`` (markers appended if absent)."""
    if start not in text:
        text += f"\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.rstrip()}\n{end}{tail}"


def main() -> None:
    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "out" / "bench"
    sire = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "benchmarks" / "out" / "sirerag" / "results.json"
    text = MD.read_text() if MD.exists() else "# Benchmarks\n"
    text = fill(text, START, END, (bench / "results.md").read_text(encoding="utf-8"))
    if sire.exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from sirerag_pools import report as sirerag_tables

        text = fill(text, SIRE_START, SIRE_END, sirerag_tables(json.loads(sire.read_text(encoding="utf-8"))))
    MD.write_text(text)
    print(f"wrote {MD}")
    for name in FIGURES:
        if (bench / name).exists():
            shutil.copy(bench / name, ROOT / "benchmarks" / name)
            print(f"wrote benchmarks/{name}")
        elif (ROOT / "benchmarks" / name).exists():  # this run drew no such figure: the old one is stale
            (ROOT / "benchmarks" / name).unlink()
            print(f"removed benchmarks/{name}")


if __name__ == "__main__":
    main()
