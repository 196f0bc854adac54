"""Stage 4 — embed every collection into unit-length float32 vectors.

Embedding is the most expensive stage with a neural embedder (2Wiki with
all-MiniLM-L6-v2: ~5 minutes), so each finished collection's vectors are
kept in the build's work directory, keyed by the embedder and a hash of the
texts, and an interrupted build reuses them.

For static embedders the triples' token-sum norms are kept too:
``weights[i] * vectors[i]`` is row i's token-vector sum, which makes a
path's embedding exactly computable (:mod:`gearag.expand.scoring`).

The vectors are computed by the build's executor (:mod:`gearag.indexing.executor`):
here, or in batches on Ray workers. Here (the default), each chunk of ``--embed-batch``
vectors is written to a ``.npy`` file in the work directory as it is computed
(:func:`embed_to_file`) and that file is then hard-linked into the index, so the
build never holds a collection's vectors in memory (1M passages have ~17M triples:
17 GB of 256-d float32 vectors). The file is the one ``np.save`` would write.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gearag.embed import Embedder, make_embedder
from gearag.indexing.executor import BatchExecutor, LocalExecutor, embed_chunk, embed_texts
from gearag.indexing.stage import Build
from gearag.progress import track
from gearag.store.npy import load_npy, save_npy, write_blocks


def _texts_key(embedder: str, texts: Sequence[str]) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(embedder.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _cache_file(work: Path, embedder_name: str, name: str, texts: Sequence[str], key: str | None = None) -> Path:
    return Path(work) / f"embed-{name}-{key or _texts_key(embedder_name, texts)}.npz"


def _save(saved: Path, vectors: np.ndarray, weights: np.ndarray | None) -> None:
    saved.parent.mkdir(parents=True, exist_ok=True)
    tmp = saved.with_suffix(".tmp.npz")
    if weights is None:
        np.savez(tmp, vectors=vectors)
    else:
        np.savez(tmp, vectors=vectors, weights=weights)
    tmp.replace(saved)


def _streamed_files(work: Path, embedder_name: str, name: str, texts: Sequence[str],
                    key: str | None = None) -> tuple[Path, Path]:
    """The work directory's streamed vectors file of a collection and its token-sum norms file."""
    key = key or _texts_key(embedder_name, texts)
    return Path(work) / f"embed-{name}-{key}.npy", Path(work) / f"embed-{name}-{key}.weights.npy"


def embed_to_file(
    work: Path, embedder_name: str, embedder: Embedder | None, name: str, texts: Sequence[str], batch: int,
    *, key: str | None = None,
) -> tuple[Path, Path | None, int]:
    """Embed ``texts`` chunk by chunk into ``.npy`` files in ``work``; ``(vectors, norms or None, dim)``.

    Only one chunk of ``batch`` vectors is in memory at a time; rows are
    computed exactly as :func:`~gearag.indexing.executor.embed_texts` does (the
    same chunks), so the file holds the array it would return. A finished file
    (renamed into place last, after its norms) is reused by a resumed build.
    ``key``: the texts' cache key when the caller has it (hashing every text once is enough).
    """
    vec_path, weights_path = _streamed_files(work, embedder_name, name, texts, key)
    if vec_path.exists():
        header = load_npy(vec_path)
        return vec_path, weights_path if weights_path.exists() else None, int(header.shape[1])
    model = embedder or make_embedder(embedder_name)
    vec_path.parent.mkdir(parents=True, exist_ok=True)
    n, dim = len(texts), int(model.dim)
    weights = np.zeros(n, dtype=np.float32) if hasattr(model, "token_sums") else None
    tmp = vec_path.with_name(vec_path.name + ".tmp")

    def chunks() -> Iterator[np.ndarray]:
        starts = range(0, n, batch)
        for start in track(starts, total=len(starts), description=f"embedding {name}"):
            chunk_vectors, chunk_weights = embed_chunk(model, texts[start : start + batch])
            if weights is not None and chunk_weights is not None:
                weights[start : start + len(chunk_weights)] = chunk_weights
            yield chunk_vectors

    write_blocks(tmp, (n, dim), np.float32, chunks())
    if weights is not None:
        wtmp = weights_path.with_name(weights_path.name + ".tmp.npy")
        save_npy(wtmp, weights)  # a full disk is an OSError with its errno
        os.replace(wtmp, weights_path)
    os.replace(tmp, vec_path)
    return vec_path, weights_path if weights is not None else None, dim


def link_or_copy(src: Path, dest: Path) -> None:
    """Put ``src``'s bytes at ``dest``: a hard link (no copy, same file system), else a streamed copy."""
    dest.unlink(missing_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


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
        streamed, streamed_weights = _streamed_files(work, embedder_name, name, texts)
        if streamed.exists():  # streamed by the embed stage of an interrupted build
            weights = load_npy(streamed_weights, mmap=False) if streamed_weights.exists() else None
            return load_npy(streamed, mmap=False), weights
        vectors, weights = embed_texts(embedder or make_embedder(embedder_name), texts, f"embedding {name}", batch)
        _save(saved, vectors, weights)
        return vectors, weights
    return load_or_embed_all(work, embedder_name, {name: texts}, batch, executor)[name]


class EmbedStage:
    name = "embed"

    def run(self, build: Build) -> None:
        cfg = build.config.embed
        executor = build.executor
        local = isinstance(executor, LocalExecutor)
        # Collections embedded by the stage that made them (with this embedder) are stored as they are.
        wanted = {name: coll.texts for name, coll in build.collections.items()
                  if coll.vectors is None and coll.spec.vectors is None}
        # Here, one collection at a time, streamed to disk chunk by chunk (embed_to_file); a distributed
        # executor gets them all in one call, so that its workers start and load the embedder once.
        computed = {} if local else load_or_embed_all(build.work, cfg.embedder, wanted, cfg.batch, executor)
        for name, coll in build.collections.items():
            if coll.spec.vectors is not None:  # stored by the stage that made it (the pools' shared table)
                continue
            rel = f"vectors/{name}.npy"
            wrel = "vectors/triple_weights.npy" if name == "triples" else f"vectors/{name}_weights.npy"
            spec = replace(coll.spec, vectors=rel)
            weights: np.ndarray | None
            if coll.vectors is not None:  # embedded by the stage that made the collection, with this embedder
                vectors, weights = np.asarray(coll.vectors, dtype=np.float32), None
            elif name in computed:
                vectors, weights = computed.pop(name)
            elif local and not _cache_file(build.work, cfg.embedder, name, coll.texts,
                                           key := _texts_key(cfg.embedder, coll.texts)).exists():
                vec_path, weights_path, dim = embed_to_file(build.work, cfg.embedder, build.embedder(), name,
                                                            coll.texts, cfg.batch, key=key)
                link_or_copy(vec_path, build.writer.path(rel))
                if coll.weights and weights_path is not None:
                    link_or_copy(weights_path, build.writer.path(wrel))
                    spec = replace(spec, weights=wrel)
                coll.spec = spec
                build.manifest["embedding_dim"] = dim
                continue
            else:  # vectors another stage already cached (the SiReRAG trees' passages): read back whole
                vectors, weights = load_or_embed_all(build.work, cfg.embedder, {name: coll.texts}, cfg.batch,
                                                     executor)[name]
            build.writer.write_array(rel, vectors)
            if coll.weights and weights is not None:
                build.writer.write_array(wrel, weights)
                spec = replace(spec, weights=wrel)
            coll.spec = spec
            build.manifest["embedding_dim"] = int(vectors.shape[1])
