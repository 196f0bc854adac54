"""One recursive-summary tree (RAPTOR §3; SiReRAG §4.1 and §4.3).

Level 0 holds the leaves (for the similarity tree: one ``title + "\\n" + text``
per passage; for the relatedness tree: the proposition aggregates). Each
higher level holds one summary per cluster of the level below
(:func:`gearag.sirerag.clustering.cluster`), up to :attr:`TreeConfig.levels`
levels in total (the paper: 4, i.e. the released ``tree_depth=3`` summary
levels above the leaves).

Every node records its level, the tree it belongs to, its text, its
children (node rows of the tree) and the **passages it covers** — the union
of its children's sources — so that any node can be expanded back to the
corpus.

Deviations from the released code, and why:

* A level is built only while it makes progress: building stops when the
  current level has at most :attr:`TreeConfig.min_nodes` nodes (RAPTOR stops
  at ``reduction_dimension + 1 = 11``) or when clustering would not shrink it
  below :attr:`TreeConfig.max_level_ratio` of its size (users reported upper
  levels shrinking one node at a time).
* A cluster of a single node is not summarised (the summary would repeat its
  child); that node is carried up to take part in the next level's clustering
  (:attr:`TreeConfig.carry_singletons`).
* Cross-tree clustering (Appendix A) is :func:`build_cross_tree`: both trees'
  nodes are clustered together at every level above the leaves; the paper
  found it no better and it is off by default.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gearag.sirerag.clustering import ClusterConfig, ClusterStats, cluster
from gearag.sirerag.levels import Level, LevelStore, level_key, tree_key
from gearag.sirerag.summarise import Summariser

Encode = Callable[[Sequence[str]], np.ndarray]

SIMILARITY = "similarity"
RELATEDNESS = "relatedness"
CROSS = "cross"

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(texts: Sequence[str]) -> np.ndarray:
    """Approximate token counts (words and punctuation marks).

    The released code counts tiktoken tokens for its 10,000-token recluster
    limit; this regex count is within ~15% of cl100k on English prose and
    needs no tokenizer.
    """
    return np.fromiter((len(_TOKEN.findall(t)) for t in texts), dtype=np.int64, count=len(texts))


@dataclass(frozen=True, slots=True)
class TreeConfig:
    """Options of :func:`build_tree`."""

    #: Levels in total, leaves included (SiReRAG §4.1: "4 levels in total").
    levels: int = 4
    #: Stop when a level has at most this many nodes (RAPTOR: 11).
    min_nodes: int = 11
    #: Stop when the next level would have more than this fraction of the current level's nodes (ours).
    max_level_ratio: float = 0.9
    #: Carry single-node clusters up instead of summarising them (ours).
    carry_singletons: bool = True
    cluster: ClusterConfig = field(default_factory=ClusterConfig)


@dataclass
class Tree:
    """Nodes of one or more trees in parallel lists; rows ``0 … n_leaves-1`` are the leaves."""

    texts: list[str]
    levels: np.ndarray  # int16, one per node
    trees: list[str]  # tree name per node
    embeddings: np.ndarray  # float32 unit rows
    children: list[tuple[int, ...]]  # node rows; () for leaves
    sources: list[tuple[int, ...]]  # sorted passage rows covered
    n_leaves: int
    #: Per built level: timings and counts (for benchmarks).
    log: list[dict[str, float]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def summary_rows(self) -> np.ndarray:
        return np.arange(self.n_leaves, len(self.texts), dtype=np.int64)

    def level_sizes(self) -> dict[int, int]:
        values, counts = np.unique(self.levels, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def _check_leaves(texts: Sequence[str], embeddings: np.ndarray, sources: Sequence[Sequence[int]]) -> None:
    n = len(texts)
    if embeddings.ndim != 2 or embeddings.shape[0] != n:
        raise ValueError(f"need one embedding row per leaf ({n}), got shape {embeddings.shape}")
    if len(sources) != n:
        raise ValueError(f"need one source list per leaf ({n}), got {len(sources)}")


def _grow(
    tree: Tree,
    *,
    summary_tree: str,
    encode: Encode,
    summariser: Summariser,
    config: TreeConfig,
    tokens: np.ndarray,
    store: LevelStore | None = None,
    salt: str = "",
) -> Tree:
    """Add summary levels on top of the leaves already in ``tree``.

    With a ``store``, each finished level is checkpointed and a level found
    there (same leaves, settings, ``salt`` and levels below) is reused without
    clustering, summarising or embedding it again.
    """
    cfg = config
    current = np.arange(tree.n_leaves, dtype=np.int64)
    emb_blocks = [tree.embeddings]
    all_emb = tree.embeddings
    parent = tree_key(salt, summary_tree, tree.texts, tree.embeddings, tree.sources, tokens, cfg) if store else ""
    for level in range(1, cfg.levels):
        if current.size <= cfg.min_nodes:
            break
        key = level_key(parent, level) if store is not None else ""
        parent = key
        done = store.get(key) if store is not None else None
        if done is not None:
            if done.log.get("stopped"):
                tree.log.append({**done.log, "resumed": 1.0})
                break
            multi = [np.asarray(c, dtype=np.int64) for c in done.clusters]
            carried, texts, new_emb = done.carried, done.texts, done.embeddings
            entry = {**done.log, "resumed": 1.0}
        else:
            start = time.perf_counter()
            below = float(current.size)
            stats = ClusterStats()
            local = cluster(all_emb[current], tokens[current], cfg.cluster, stats)
            groups = [current[c] for c in local]
            multi = [g for g in groups if g.size > 1]
            carried = sorted({int(g[0]) for g in groups if g.size == 1}) if cfg.carry_singletons else []
            if not cfg.carry_singletons:
                multi = groups
            next_size = len(multi) + len(carried)
            if not multi or next_size > cfg.max_level_ratio * current.size:
                entry = {"level": level, "stopped": 1.0, "clusters": float(len(groups)),
                         "nodes_below": float(current.size)}
                tree.log.append(entry)
                if store is not None:
                    store.put(key, Level([], [], [], np.zeros((0, all_emb.shape[1]), dtype=np.float32), entry))
                break
            clustered = time.perf_counter()
            texts = summariser.summarise([g.tolist() for g in multi], tree.texts, all_emb)
            summarised = time.perf_counter()
            new_emb = np.asarray(encode(texts), dtype=np.float32)
            entry = {
                "level": level, "nodes_below": below,
                "clusters": float(len(groups)), "summaries": float(len(multi)), "carried": float(len(carried)),
                "cluster_s": clustered - start, "summarise_s": summarised - clustered,
                "embed_s": time.perf_counter() - summarised, "umap_s": stats.umap_seconds,
                "gmm_s": stats.gmm_seconds, "umap_runs": float(stats.umap_runs), "gmm_fits": float(stats.gmm_fits),
            }
            if store is not None:
                store.put(key, Level([g.tolist() for g in multi], list(carried), list(texts), new_emb, entry))
        base = len(tree.texts)
        for g, text in zip(multi, texts, strict=True):
            tree.texts.append(text)
            tree.trees.append(summary_tree)
            kids = tuple(int(r) for r in g)
            tree.children.append(kids)
            tree.sources.append(tuple(sorted(set().union(*(tree.sources[k] for k in kids)))))
        tree.levels = np.concatenate([tree.levels, np.full(len(multi), level, dtype=np.int16)])
        emb_blocks.append(new_emb)
        all_emb = np.concatenate(emb_blocks, axis=0) if len(emb_blocks) > 1 else emb_blocks[0]
        emb_blocks = [all_emb]
        tokens = np.concatenate([tokens, count_tokens(texts)])
        current = np.concatenate([np.arange(base, base + len(multi), dtype=np.int64),
                                  np.asarray(carried, dtype=np.int64)])
        tree.log.append(entry)
    tree.embeddings = all_emb
    return tree


def build_tree(
    name: str,
    texts: Sequence[str],
    embeddings: np.ndarray,
    sources: Sequence[Sequence[int]],
    *,
    encode: Encode,
    summariser: Summariser,
    config: TreeConfig | None = None,
    tokens: Sequence[int] | np.ndarray | None = None,
    store: LevelStore | None = None,
    salt: str = "",
) -> Tree:
    """Build one tree over leaves ``texts`` (with their unit ``embeddings`` and source passage rows).

    ``encode`` embeds summary texts (the same embedder as the leaves');
    ``tokens`` are the leaves' token counts (default: :func:`count_tokens`);
    ``store`` checkpoints finished levels (:mod:`gearag.sirerag.levels`), ``salt``
    names what the key cannot see (the summariser's and embedder's identity).
    """
    cfg = config or TreeConfig()
    emb = np.asarray(embeddings, dtype=np.float32)
    _check_leaves(texts, emb, sources)
    n = len(texts)
    tree = Tree(
        texts=list(texts), levels=np.zeros(n, dtype=np.int16), trees=[name] * n, embeddings=emb,
        children=[()] * n, sources=[tuple(sorted({int(s) for s in src})) for src in sources], n_leaves=n,
    )
    tok = count_tokens(texts) if tokens is None else np.asarray(tokens, dtype=np.int64)
    return _grow(tree, summary_tree=name, encode=encode, summariser=summariser, config=cfg, tokens=tok,
                 store=store, salt=salt)


def build_cross_tree(
    similarity_leaves: tuple[Sequence[str], np.ndarray, Sequence[Sequence[int]]],
    relatedness_leaves: tuple[Sequence[str], np.ndarray, Sequence[Sequence[int]]],
    *,
    encode: Encode,
    summariser: Summariser,
    config: TreeConfig | None = None,
    store: LevelStore | None = None,
    salt: str = "",
) -> Tree:
    """Appendix A: one tree whose summaries cluster both trees' nodes together at every level.

    Leaves keep their tree name (``similarity`` first, then ``relatedness``);
    summaries are named ``cross``.
    """
    cfg = config or TreeConfig()
    (st, se, ss), (rt, re_, rs) = similarity_leaves, relatedness_leaves
    texts = list(st) + list(rt)
    emb = np.concatenate([np.asarray(se, dtype=np.float32), np.asarray(re_, dtype=np.float32)], axis=0)
    sources = list(ss) + list(rs)
    _check_leaves(texts, emb, sources)
    n = len(texts)
    tree = Tree(
        texts=texts, levels=np.zeros(n, dtype=np.int16), trees=[SIMILARITY] * len(st) + [RELATEDNESS] * len(rt),
        embeddings=emb, children=[()] * n, sources=[tuple(sorted({int(s) for s in src})) for src in sources],
        n_leaves=n,
    )
    return _grow(tree, summary_tree=CROSS, encode=encode, summariser=summariser, config=cfg,
                 tokens=count_tokens(texts), store=store, salt=salt)
