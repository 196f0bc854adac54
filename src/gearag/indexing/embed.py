"""Stage 4 — embed every collection into unit-length float32 vectors.

Embedding is the most expensive stage with a neural embedder (2Wiki with
all-MiniLM-L6-v2: ~5 minutes), so each finished collection's vectors are
kept in the build's work directory, keyed by the embedder and a hash of the
texts, and an interrupted build reuses them.

For static embedders the triples' token-sum norms are kept too:
``weights[i] * vectors[i]`` is row i's token-vector sum, which makes a
path's embedding exactly computable (:mod:`gearag.expand.scoring`).

The vectors are computed by the build's executor (:mod:`gearag.indexing.executor`):
here, or in batches on Ray workers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gearag.embed import Embedder, make_embedder
from gearag.indexing.executor import BatchExecutor, embed_texts
from gearag.indexing.stage import Build


def _texts_key(embedder: str, texts: Sequence[str]) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(embedder.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def load_or_embed(
    work: Path, embedder_name: str, embedder: Embedder | None, name: str, texts: Sequence[str], batch: int,
    *, executor: BatchExecutor | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Vectors (and static token-sum norms) of collection ``name``, from the build's work cache when there.

    The cache file is keyed by the embedder and the texts, so a stage that
    needs the passages' vectors before this stage runs (the SiReRAG trees)
    computes them once for both. With an ``executor`` the vectors are computed
    by it (e.g. on Ray workers; ``embedder`` may then be None), else here with ``embedder``.
    """
    saved = Path(work) / f"embed-{name}-{_texts_key(embedder_name, texts)}.npz"
    if saved.exists():
        with np.load(saved, allow_pickle=False) as npz:
            return npz["vectors"], npz.get("weights")
    if executor is not None:
        vectors, weights = executor.embed(embedder_name, texts, batch=batch, description=f"embedding {name}")
    else:
        vectors, weights = embed_texts(embedder or make_embedder(embedder_name), texts, f"embedding {name}", batch)
    saved.parent.mkdir(parents=True, exist_ok=True)
    tmp = saved.with_suffix(".tmp.npz")
    if weights is None:
        np.savez(tmp, vectors=vectors)
    else:
        np.savez(tmp, vectors=vectors, weights=weights)
    tmp.replace(saved)
    return vectors, weights


class EmbedStage:
    name = "embed"

    def run(self, build: Build) -> None:
        cfg = build.config.embed
        for name, coll in build.collections.items():
            if coll.vectors is not None:  # embedded by the stage that made the collection, with this embedder
                vectors, weights = np.asarray(coll.vectors, dtype=np.float32), None
            else:
                vectors, weights = load_or_embed(
                    build.work, cfg.embedder, None, name, coll.texts, cfg.batch, executor=build.executor
                )
            rel = f"vectors/{name}.npy"
            build.writer.write_array(rel, vectors)
            spec = replace(coll.spec, vectors=rel)
            if coll.weights and weights is not None:
                wrel = "vectors/triple_weights.npy" if name == "triples" else f"vectors/{name}_weights.npy"
                build.writer.write_array(wrel, weights)
                spec = replace(spec, weights=wrel)
            coll.spec = spec
            build.manifest["embedding_dim"] = int(vectors.shape[1])
