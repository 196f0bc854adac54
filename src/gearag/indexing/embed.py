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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gearag.embed import Embedder, make_embedder
from gearag.indexing.executor import BatchExecutor, LocalExecutor, embed_texts
from gearag.indexing.stage import Build


def _texts_key(embedder: str, texts: Sequence[str]) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(embedder.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _cache_file(work: Path, embedder_name: str, name: str, texts: Sequence[str]) -> Path:
    return Path(work) / f"embed-{name}-{_texts_key(embedder_name, texts)}.npz"


def _save(saved: Path, vectors: np.ndarray, weights: np.ndarray | None) -> None:
    saved.parent.mkdir(parents=True, exist_ok=True)
    tmp = saved.with_suffix(".tmp.npz")
    if weights is None:
        np.savez(tmp, vectors=vectors)
    else:
        np.savez(tmp, vectors=vectors, weights=weights)
    tmp.replace(saved)


def load_or_embed_all(
    work: Path, embedder_name: str, collections: Mapping[str, Sequence[str]], batch: int, executor: BatchExecutor
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Vectors (and static token-sum norms) of each collection, from the build's work cache when there.

    The cache file is keyed by the embedder and the texts, so a stage that
    needs the passages' vectors before this stage runs (the SiReRAG trees)
    computes them once for both. The collections not in the cache are
    embedded by ``executor`` in one call (on Ray: one pool of workers for all).
    """
    out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    todo: dict[str, Sequence[str]] = {}
    for name, texts in collections.items():
        saved = _cache_file(work, embedder_name, name, texts)
        if saved.exists():
            with np.load(saved, allow_pickle=False) as npz:
                out[name] = (npz["vectors"], npz.get("weights"))
        else:
            todo[name] = texts
    if todo:
        done = executor.embed(embedder_name, todo, batch=batch, description="embedding")
        for name, (vectors, weights) in done.items():
            _save(_cache_file(work, embedder_name, name, todo[name]), vectors, weights)
            out[name] = (vectors, weights)
    return {name: out[name] for name in collections}


def load_or_embed(
    work: Path, embedder_name: str, embedder: Embedder | None, name: str, texts: Sequence[str], batch: int,
    *, executor: BatchExecutor | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """One collection's vectors, as :func:`load_or_embed_all`; without ``executor``, here with ``embedder``."""
    if executor is None:
        saved = _cache_file(work, embedder_name, name, texts)
        if saved.exists():
            with np.load(saved, allow_pickle=False) as npz:
                return npz["vectors"], npz.get("weights")
        vectors, weights = embed_texts(embedder or make_embedder(embedder_name), texts, f"embedding {name}", batch)
        _save(saved, vectors, weights)
        return vectors, weights
    return load_or_embed_all(work, embedder_name, {name: texts}, batch, executor)[name]


class EmbedStage:
    name = "embed"

    def run(self, build: Build) -> None:
        cfg = build.config.embed
        executor = build.executor
        # Collections embedded by the stage that made them (with this embedder) are stored as they are.
        wanted = {name: coll.texts for name, coll in build.collections.items()
                  if coll.vectors is None and coll.spec.vectors is None}
        # Here, one collection at a time (only its vectors in memory); a distributed executor gets them
        # all in one call, so that its workers start and load the embedder once.
        computed = {} if isinstance(executor, LocalExecutor) else load_or_embed_all(
            build.work, cfg.embedder, wanted, cfg.batch, executor)
        for name, coll in build.collections.items():
            if coll.spec.vectors is not None:  # stored by the stage that made it (the pools' shared table)
                continue
            if coll.vectors is not None:  # embedded by the stage that made the collection, with this embedder
                vectors, weights = np.asarray(coll.vectors, dtype=np.float32), None
            elif name in computed:
                vectors, weights = computed.pop(name)
            else:
                vectors, weights = load_or_embed_all(build.work, cfg.embedder, {name: coll.texts}, cfg.batch,
                                                     executor)[name]
            rel = f"vectors/{name}.npy"
            build.writer.write_array(rel, vectors)
            spec = replace(coll.spec, vectors=rel)
            if coll.weights and weights is not None:
                wrel = "vectors/triple_weights.npy" if name == "triples" else f"vectors/{name}_weights.npy"
                build.writer.write_array(wrel, weights)
                spec = replace(spec, weights=wrel)
            coll.spec = spec
            build.manifest["embedding_dim"] = int(vectors.shape[1])
