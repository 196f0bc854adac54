"""Time the embed stage's work on a slice of a synthetic corpus: its passages, then their triples.

    python benchmarks/embed_stage.py DATA_DIR N [BATCH]

DATA_DIR is a ``gearag synth`` directory (``corpus.jsonl`` and an openie ``triples.json``); the first N
passages and the triples of the first N documents are embedded with the default static embedder, in
chunks of BATCH texts (as ``--embed-batch``), exactly as a local build's embed stage computes them
(:func:`gearag.indexing.executor.embed_texts`). Prints seconds and a checksum of the vectors.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

from gearag.embed import make_embedder
from gearag.indexing.executor import embed_texts


def main(data: Path, n: int, batch: int) -> None:
    with (data / "corpus.jsonl").open(encoding="utf-8") as f:
        passages = [json.loads(line)["text"] for line in itertools.islice(f, n)]
    docs = json.loads((data / "triples.json").read_text(encoding="utf-8"))["docs"][:n]
    triples = [f"{s} {p} {o}" for doc in docs for s, p, o in doc["extracted_triples"]]
    model = make_embedder("wordllama")
    for name, texts in (("passages", passages), ("triples", triples)):
        started = time.perf_counter()
        vectors, _ = embed_texts(model, texts, name, batch)
        seconds = time.perf_counter() - started
        print(f"{name}: {len(texts):,} texts in {seconds:.2f} s (checksum {float(np.abs(vectors).sum()):.3f})")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 4096)
