"""Checkpoints of finished tree levels, so an interrupted build resumes at the level it reached.

Building a level is the slow part of a SiReRAG build (UMAP and Gaussian
mixtures over thousands of nodes, then a summary and an embedding per
cluster). :class:`LevelStore` keeps each finished level of each tree in the
build's work directory — its clusters (the rows summarised), the carried
single-node clusters, the summaries and their embeddings — under a key that
chains the tree's inputs (leaf texts, embeddings, sources, token counts),
the tree config, the summariser and the embedder, and every level below.
A rerun of the same build finds the levels it finished and neither
clusters, summarises nor embeds them again; any change of input or setting
changes the key, so a stale level is never reused.

Files are ``<key>.npz`` written atomically (a temporary file, then
``os.replace``); a damaged or unreadable file is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

#: Bump when the meaning of a stored level changes (v2: the same clusters on every machine: gearag.sirerag.exact).
LEVEL_FORMAT = "levels-v2"


@dataclass(frozen=True)
class Level:
    """One finished level: clusters summarised (rows of the tree), rows carried up, summaries, embeddings."""

    clusters: list[list[int]]
    carried: list[int]
    texts: list[str]
    embeddings: np.ndarray
    log: dict[str, float]


def tree_key(salt: str, name: str, texts: Sequence[str], embeddings: np.ndarray,
             sources: Sequence[Sequence[int]], tokens: np.ndarray, config: object) -> str:
    """Key of a tree's leaves and settings (``salt``: summariser and embedder identity)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (LEVEL_FORMAT, salt, name, repr(config)):
        h.update(part.encode())
        h.update(b"\0")
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    h.update(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
    h.update(json.dumps([list(map(int, s)) for s in sources]).encode())
    h.update(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())
    return h.hexdigest()


def level_key(parent: str, level: int) -> str:
    """Key of level ``level`` given the key of what it is built on (the tree's or the level below's)."""
    return hashlib.blake2b(f"{parent}:{level}".encode(), digest_size=16).hexdigest()


class LevelStore:
    """Finished levels as files in one directory (created on first write)."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.hits = 0
        self.writes = 0

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.npz"

    def get(self, key: str) -> Level | None:
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                indptr, indices = z["indptr"], z["indices"]
                level = Level(
                    clusters=[indices[indptr[i]:indptr[i + 1]].tolist() for i in range(len(indptr) - 1)],
                    carried=z["carried"].tolist(), texts=list(meta["texts"]),
                    embeddings=np.asarray(z["embeddings"], dtype=np.float32), log=dict(meta["log"]))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unreadable tree-level checkpoint %s: %s", path, exc)
            return None
        if len(level.texts) != len(level.clusters) or level.embeddings.shape[0] != len(level.texts):
            log.warning("ignoring inconsistent tree-level checkpoint %s", path)
            return None
        self.hits += 1
        return level

    def put(self, key: str, level: Level) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        lengths = [len(c) for c in level.clusters]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = np.asarray([r for c in level.clusters for r in c], dtype=np.int64)
        meta = json.dumps({"texts": level.texts, "log": level.log}, ensure_ascii=False)
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, indptr=indptr, indices=indices, carried=np.asarray(level.carried, dtype=np.int64),
                     embeddings=np.asarray(level.embeddings, dtype=np.float32), meta=np.asarray(meta))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.writes += 1
