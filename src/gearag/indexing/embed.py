"""Stage 4 — embed every collection into unit-length float32 vectors.

Embedding is the most expensive stage with a neural embedder (2Wiki with
all-MiniLM-L6-v2: ~5 minutes), so each finished collection's vectors are
kept in the build's work directory, keyed by the embedder and a hash of the
texts, and an interrupted build reuses them.

For static embedders the triples' token-sum norms are kept too:
``weights[i] * vectors[i]`` is row i's token-vector sum, which makes a
path's embedding exactly computable (:mod:`gearag.expand.scoring`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gearag.embed import Embedder
from gearag.indexing.stage import Build
from gearag.progress import track


def embed_texts(
    embedder: Embedder, texts: Sequence[str], description: str, batch: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit vectors for ``texts``; static embedders also give the token-sum norms."""
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    token_sums = getattr(embedder, "token_sums", None)
    weights = np.zeros(len(texts), dtype=np.float32) if token_sums is not None else None
    starts = range(0, len(texts), batch)
    for start in track(starts, total=len(starts), description=description):
        chunk = list(texts[start : start + batch])
        if token_sums is not None and weights is not None:
            sums, _ = token_sums(chunk)
            norms = np.linalg.norm(sums, axis=1)
            weights[start : start + len(chunk)] = norms
            np.divide(sums, norms[:, None], out=sums, where=norms[:, None] > 0)
            vectors[start : start + len(chunk)] = sums
        else:
            vectors[start : start + len(chunk)] = embedder.encode(chunk)
    return vectors, weights


def _texts_key(embedder: str, texts: Sequence[str]) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(embedder.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def load_or_embed(
    work: Path, embedder_name: str, embedder: Embedder, name: str, texts: Sequence[str], batch: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Vectors (and static token-sum norms) of collection ``name``, from the build's work cache when there.

    The cache file is keyed by the embedder and the texts, so a stage that
    needs the passages' vectors before this stage runs (the SiReRAG trees)
    computes them once for both.
    """
    saved = Path(work) / f"embed-{name}-{_texts_key(embedder_name, texts)}.npz"
    if saved.exists():
        with np.load(saved, allow_pickle=False) as npz:
            return npz["vectors"], npz.get("weights")
    vectors, weights = embed_texts(embedder, texts, f"embedding {name}", batch)
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
        embedder = build.embedder()
        for name, coll in build.collections.items():
            if coll.spec.vectors is not None:  # stored by the stage that made it (the pools' shared table)
                continue
            if coll.vectors is not None:  # embedded by the stage that made the collection, with this embedder
                vectors, weights = np.asarray(coll.vectors, dtype=np.float32), None
            else:
                vectors, weights = load_or_embed(build.work, cfg.embedder, embedder, name, coll.texts, cfg.batch)
            rel = f"vectors/{name}.npy"
            build.writer.write_array(rel, vectors)
            spec = replace(coll.spec, vectors=rel)
            if coll.weights and weights is not None:
                wrel = "vectors/triple_weights.npy" if name == "triples" else f"vectors/{name}_weights.npy"
                build.writer.write_array(wrel, weights)
                spec = replace(spec, weights=wrel)
            coll.spec = spec
            build.manifest["embedding_dim"] = int(vectors.shape[1])
