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

from gearag.embed import Embedder, make_embedder
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


class EmbedStage:
    name = "embed"

    def run(self, build: Build) -> None:
        cfg = build.config.embed
        embedder = make_embedder(cfg.embedder)
        for name, coll in build.collections.items():
            saved = Path(build.work) / f"embed-{name}-{_texts_key(cfg.embedder, coll.texts)}.npz"
            if saved.exists():
                with np.load(saved, allow_pickle=False) as npz:
                    vectors = npz["vectors"]
                    weights = npz.get("weights")
            else:
                vectors, weights = embed_texts(embedder, coll.texts, f"embedding {name}", cfg.batch)
                saved.parent.mkdir(parents=True, exist_ok=True)
                tmp = saved.with_suffix(".tmp.npz")
                if weights is None:
                    np.savez(tmp, vectors=vectors)
                else:
                    np.savez(tmp, vectors=vectors, weights=weights)
                tmp.replace(saved)
            rel = f"vectors/{name}.npy"
            build.writer.write_array(rel, vectors)
            spec = replace(coll.spec, vectors=rel)
            if coll.weights and weights is not None:
                wrel = "vectors/triple_weights.npy" if name == "triples" else f"vectors/{name}_weights.npy"
                build.writer.write_array(wrel, weights)
                spec = replace(spec, weights=wrel)
            coll.spec = spec
            build.manifest["embedding_dim"] = int(vectors.shape[1])
