"""Benchmarks: a thin wrapper around ``gearag bench``, the one way numbers are made.

    python benchmarks/run.py                           # = gearag bench --out benchmarks/out/bench ...
    python benchmarks/run.py --datasets musique --limit 20

Defaults reproduce BENCHMARKS.md's run: the three shared sets, the spaCy and
(for MuSiQue) the shipped GPT-3.5 OpenIE triples, wordllama. Any other
``gearag bench`` option passes through. ``report.py`` then copies the table
into BENCHMARKS.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out" / "bench"
DEFAULTS = ["--extractors", "spacy,openie", "--embedders", "wordllama"]


def main(argv: list[str] | None = None) -> int:
    from gearag.cli import main as gearag

    args = list(sys.argv[1:] if argv is None else argv)
    if "--out" not in args:
        args += ["--out", str(OUT)]
    for i in range(0, len(DEFAULTS), 2):
        if DEFAULTS[i] not in args:
            args += DEFAULTS[i : i + 2]
    return gearag(["bench", *args])


if __name__ == "__main__":
    sys.exit(main())
