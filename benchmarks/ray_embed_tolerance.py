"""How far a neural embedder's vectors on Ray are from the single-process ones (docs/distributed.md).

Embeds the passages and the spaCy triples of a 2Wiki slice with ``minilm``
in this process (LocalExecutor) and on a local 2-worker Ray instance
(RayExecutor), both in chunks of ``--embed-batch`` texts, and prints the
largest absolute difference of any component, the smallest cosine between a
row's two versions, and how many rows differ at all. wordllama is checked
too (expected: identical).

    PYTHONPATH=src python benchmarks/ray_embed_tolerance.py --passages 200
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from conftest import wiki_slice
from gearag.distributed import RayConfig, RayExecutor
from gearag.extract import make_extractor
from gearag.indexing.executor import LOCAL
from gearag.model import Passage


def compare(a: np.ndarray, b: np.ndarray) -> dict:
    cos = np.sum(a * b, axis=1)
    return {"rows": int(a.shape[0]), "rows_differing": int(np.any(a != b, axis=1).sum()),
            "max_abs_diff": float(np.max(np.abs(a - b))) if a.size else 0.0,
            "min_cosine": float(np.min(cos)) if a.size else 1.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--embed-batch", type=int, default=256)
    args = parser.parse_args()
    rows, _ = wiki_slice(args.passages, 0)
    passages = [Passage(str(i), r["title"], r["text"]) for i, r in enumerate(rows)]
    triples = [f"{s} {p} {o}" for facts in make_extractor("spacy").extract(passages) for s, p, o in facts]
    texts = {"passages": [p.content for p in passages], "triples": triples}
    results = {}
    with RayExecutor(RayConfig(workers=2)) as ray_exec:
        for embedder in ("wordllama", "minilm"):
            local = LOCAL.embed(embedder, texts, batch=args.embed_batch, description="local")
            remote = ray_exec.embed(embedder, texts, batch=args.embed_batch, description="ray")
            for name in texts:
                results[f"{embedder}/{name}"] = compare(local[name][0], remote[name][0])
    print(json.dumps({"embed_batch": args.embed_batch, **results}, indent=2))


if __name__ == "__main__":
    main()
