"""Copy a ``gearag bench`` report into BENCHMARKS.md (between the results markers) with its figures.

    python benchmarks/report.py [BENCH_DIR]        # default benchmarks/out/bench

Hand-written analysis outside the markers is kept; the figures are copied
next to BENCHMARKS.md's other images in ``benchmarks/``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MD = ROOT / "BENCHMARKS.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
FIGURES = ("recall_by_iteration.png", "tokens_by_iteration.png")


def main() -> None:
    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "out" / "bench"
    body = (bench / "results.md").read_text(encoding="utf-8")
    text = MD.read_text() if MD.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    MD.write_text(f"{head}{START}\n{body}{END}{tail}")
    print(f"wrote {MD}")
    for name in FIGURES:
        if (bench / name).exists():
            shutil.copy(bench / name, ROOT / "benchmarks" / name)
            print(f"wrote benchmarks/{name}")


if __name__ == "__main__":
    main()
