"""Stage 3 (optional) — SiReRAG's similarity and relatedness trees as retrieval pools (SiReRAG §4).

Runs when ``config.trees.sirerag`` or ``config.trees.raptor`` is set, after
the graph stage (which adds the passages collection) and before BM25 and
embedding, which index the pools it adds like any other collection:

1. leaves: the passages' ``title + "\\n" + text`` embedded with the build's
   embedder — through the embed stage's work cache, so the passages are
   embedded once for both stages;
2. propositions per passage (``sirerag`` only): offline (spaCy sentences) or
   with the LLM's three SiReRAG steps, checkpointed per passage;
3. both trees (:func:`gearag.sirerag.pipeline.build_sirerag_trees`) with
   extractive summaries (offline) or LLM summaries checkpointed per cluster;
4. one collection per pool (:data:`gearag.sirerag.pool.VARIANTS` minus
   ``chunks``, which is the passages collection). Every node is stored once
   in a table shared by the pools (records ``{"text", "level", "tree",
   "kind"}``, the CSR map node → source passages, the vectors from the tree
   build as they are); each pool selects its rows from it (``select``) and
   has its own BM25 index.

Never redone: every finished tree level (clusters, summaries, their
embeddings) is checkpointed in the work directory (:mod:`gearag.sirerag.levels`),
so a killed build resumes at the level it reached. Never paid twice: LLM propositions and summaries are appended to
checkpoints in the build's work directory as they arrive (a ``kill -9``
loses at most the requests in flight, and those are in the LLM client's
response cache when it is on); a rerun rebuilds the same clusters
(the trees are deterministic given their inputs) and finds them there.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gearag.config import TreesConfig
from gearag.errors import ConfigError
from gearag.indexing.embed import load_or_embed
from gearag.indexing.stage import Build, CollectionBuild
from gearag.llm.usage import usage_scope
from gearag.store.checkpoint import KeyedCheckpoint, passage_hash
from gearag.store.collection import CollectionSpec

log = logging.getLogger(__name__)

#: Pools built by ``--raptor`` and ``--sirerag``; the Table-5 ablations with ``--sirerag-ablations``.
RAPTOR_POOLS = ("raptor",)
SIRERAG_POOLS = ("raptor", "sirerag")
ABLATION_POOLS = ("no_relatedness_summaries", "plus_propositions", "propositions_no_aggregates",
                  "propositions_only")
#: The pools' shared node table (every node of every pool once; the pools select rows of it).
NODE_RECORDS = "pools/nodes.jsonl"
NODE_VECTORS = "vectors/pool_nodes.npy"
NODE_SOURCES = {"indptr": "arrays/pool_nodes_sources_indptr.npy", "indices": "arrays/pool_nodes_sources_indices.npy"}
#: Bump when the offline propositions change for the same passage.
OFFLINE_PROPOSITIONS_VERSION = "offline-v1"


def pool_names(cfg: TreesConfig) -> tuple[str, ...]:
    """The pool collections a config builds, in order."""
    if cfg.sirerag:
        return SIRERAG_POOLS + (ABLATION_POOLS if cfg.ablations else ())
    if cfg.raptor:
        if cfg.ablations:
            raise ConfigError("--sirerag-ablations needs --sirerag (the ablations vary the relatedness side)")
        return RAPTOR_POOLS
    return ()


def _short(key: str) -> str:
    safe = "".join(c if c.isalnum() else "-" for c in key)[:32].strip("-")
    return f"{safe}-{hashlib.blake2b(key.encode(), digest_size=6).hexdigest()}"


def _llm_key(roles: Any, prompt_names: Sequence[str], role_names: Sequence[str]) -> str:
    """Identity of an LLM, the prompts it is asked and the reply bounds set for those roles (a change starts a
    fresh checkpoint)."""
    from gearag.llm.bounds import bounds_fingerprint
    from gearag.llm.parse import PARSER_VERSION

    llm = roles.llm
    prompts = "|".join(roles.prompts[name].fingerprint() for name in prompt_names)
    return (f"llm:{getattr(llm, 'model', '?')}:{getattr(llm, 'fingerprint', '')}|{prompts}|{PARSER_VERSION}"
            + bounds_fingerprint(llm, role_names))


class TreesStage:
    name = "trees"

    def run(self, build: Build) -> None:
        if not pool_names(build.config.trees):
            return
        with usage_scope() as scope:
            self._run(build)
        fallbacks = scope.fallbacks()
        if fallbacks:  # an LLM engine's replies per role, and how many the offline engine played (this run's)
            build.manifest["trees"]["llm_fallbacks"] = fallbacks

    def _run(self, build: Build) -> None:
        cfg = build.config.trees
        pools = pool_names(cfg)
        if cfg.engine == "offline" and build.llm_roles is not None:
            log.info("LLM roles given but --engine offline: the trees use no LLM")
        started = time.perf_counter()
        timings: dict[str, float] = {}
        embedder = build.embedder()
        passages = build.passages
        leaves = [p.content for p in passages]
        t = time.perf_counter()
        leaf_vectors, _ = load_or_embed(build.work, build.config.embed.embedder, embedder, "passages", leaves,
                                        build.config.embed.batch, executor=build.executor)
        timings["embed_leaves_s"] = time.perf_counter() - t

        roles = self._roles(build, cfg.engine) if cfg.engine != "offline" else None
        t = time.perf_counter()
        facts = self._propositions(build, roles) if cfg.sirerag else [[] for _ in passages]
        timings["propositions_s"] = time.perf_counter() - t

        from gearag.sirerag.aggregates import AggregateConfig
        from gearag.sirerag.levels import LevelStore
        from gearag.sirerag.pipeline import SiReRAGConfig, build_sirerag_trees, single_propositions
        from gearag.sirerag.pool import build_pool
        from gearag.sirerag.tree import TreeConfig

        tree_cfg = TreeConfig(levels=cfg.levels)
        sire_cfg = SiReRAGConfig(similarity=tree_cfg, relatedness=tree_cfg, cross_tree=cfg.cross_tree,
                                 aggregates=AggregateConfig(titled=cfg.aggregate_text == "titled"))
        summariser, checkpoint = self._summariser(build, roles, embedder)
        t = time.perf_counter()
        store = LevelStore(Path(build.work) / "sirerag-levels")
        try:
            salt = f"{summariser.key}|embedder:{build.config.embed.embedder}"
            trees = build_sirerag_trees(passages, leaf_vectors, facts, encode=embedder.encode, summariser=summariser,
                                        config=sire_cfg, build_relatedness=cfg.sirerag, store=store, salt=salt)
        finally:
            if checkpoint is not None:
                checkpoint.close()
        timings["trees_s"] = time.perf_counter() - t
        singles = single_propositions(facts, embedder.encode) if cfg.ablations else None

        counts: dict[str, dict[str, int]] = {}
        cross_passage = cfg.pool_aggregates == "cross-passage"
        built = [build_pool(trees.similarity, trees.relatedness, variant=name, propositions=singles,
                            cross_passage_aggregates=cross_passage) for name in pools]
        for name, spec, texts in self._collections(build, built):
            build.collections[name] = CollectionBuild(spec, texts)
        for name, pool in zip(pools, built, strict=True):
            counts[name] = {"nodes": len(pool), **pool.counts()}
        stats = trees.aggregate_stats
        build.manifest["trees"] = {
            "engine": cfg.engine,
            "pool_aggregates": cfg.pool_aggregates,
            "aggregate_text": cfg.aggregate_text,
            "pools": counts,
            "similarity_levels": {str(k): v for k, v in trees.similarity.level_sizes().items()},
            "relatedness_levels": {str(k): v for k, v in trees.relatedness.level_sizes().items()},
            "propositions": stats.facts_in,
            "propositions_without_entities": stats.facts_without_entities,
            "aggregates": len(trees.aggregates),
            "summariser": summariser.key,
            #: Tree levels taken from an interrupted build's checkpoints rather than built again.
            "levels_resumed": store.hits,
            "seconds": {k: round(v, 3) for k, v in {**timings, **trees.timings,
                                                      "total_s": time.perf_counter() - started}.items()},
        }
        if roles is not None:
            build.manifest["trees"]["llm_usage"] = roles.llm.ledger.snapshot().to_dict()

    # ------------------------------------------------------------------ parts

    @staticmethod
    def _roles(build: Build, engine: str) -> Any:
        if build.llm_roles is not None:
            return build.llm_roles
        from gearag.engine import EngineConfig, llm_settings
        from gearag.llm import LLMRoles, make_llm

        build.llm_roles = LLMRoles(make_llm(**llm_settings(EngineConfig(engine))))
        return build.llm_roles

    @staticmethod
    def _propositions(build: Build, roles: Any) -> list[list[Any]]:
        """Propositions per passage row, from the checkpoint where already there."""
        from gearag.sirerag.aggregates import Proposition
        from gearag.sirerag.propositions import OfflinePropositionConfig, llm_propositions, offline_propositions

        if roles is None:
            key = OFFLINE_PROPOSITIONS_VERSION
        else:
            key = _llm_key(roles, ("coref_rewrite", "extract_entities", "extract_propositions"),
                           ("coref", "entities", "propositions"))
        path = Path(build.work) / f"sirerag-propositions-{_short(key)}.jsonl"
        passages = build.passages
        hashes = [passage_hash(p) for p in passages]

        def encode(props: list[Proposition]) -> list[list[Any]]:
            return [[p.text, list(p.entities)] for p in props]

        with KeyedCheckpoint(path) as ckpt:
            done = {row: [Proposition(t, tuple(e)) for t, e in ckpt.get(h)]
                    for row, h in enumerate(hashes) if h in ckpt}
            if roles is None:
                todo = [row for row in range(len(passages)) if row not in done]
                if todo:
                    cfg = OfflinePropositionConfig(processes=2 if len(todo) >= 1000 else 1)
                    new = offline_propositions([passages[r] for r in todo], cfg)
                    for row, props in zip(todo, new, strict=True):
                        ckpt.add(hashes[row], encode(props))
                        done[row] = props
                return [done[row] for row in range(len(passages))]
            concurrency = int(getattr(roles.llm, "concurrency", 1) or 1)
            return llm_propositions(roles, passages, done=done, concurrency=concurrency,
                                    on_passage=lambda row, props: ckpt.add(hashes[row], encode(props)))

    @staticmethod
    def _summariser(build: Build, roles: Any, embedder: Any) -> tuple[Any, KeyedCheckpoint | None]:
        from gearag.sirerag.summarise import ExtractiveConfig, ExtractiveSummariser, LLMSummariser

        config = ExtractiveConfig(max_words=build.config.trees.summary_words)  # offline, or an LLM's fallback
        if roles is None:
            return ExtractiveSummariser(embedder.encode, config), None
        key = _llm_key(roles, ("summarize",), ("summarize",))
        checkpoint = KeyedCheckpoint(Path(build.work) / f"sirerag-summaries-{_short(key)}.jsonl")
        concurrency = int(getattr(roles.llm, "concurrency", 1) or 1)
        return LLMSummariser(roles, key, checkpoint=checkpoint, concurrency=concurrency, encode=embedder.encode,
                             offline=config), checkpoint

    @staticmethod
    def _collections(build: Build, pools: Sequence[Any]) -> list[tuple[str, CollectionSpec, list[str]]]:
        """One shared node table for every pool; each pool a collection selecting its rows from it.

        A node (a passage, a summary, an aggregate, a proposition) that several pools hold — every
        passage is in all of them — is stored once: its record, its vector and its sources.
        Each pool keeps its own BM25 index (the BM25 stage; its statistics depend on the rows).
        """
        table: dict[tuple[str, int], int] = {}
        owner: list[tuple[Any, int]] = []  # (pool, row) holding each table row's data
        selects = []
        for pool in pools:
            select = np.empty(len(pool), dtype=np.int64)
            for row, key in enumerate(pool.keys):
                at = table.get(key)
                if at is None:
                    at = table[key] = len(owner)
                    owner.append((pool, row))
                select[row] = at
            selects.append(select)
        w = build.writer
        w.write_jsonl(NODE_RECORDS, [{"text": p.texts[r], "level": int(p.levels[r]), "tree": p.trees[r],
                                      "kind": p.kinds[r]} for p, r in owner])
        sources = [p.sources(r) for p, r in owner]
        indptr = np.concatenate([[0], np.cumsum([len(x) for x in sources])]).astype(np.int64)
        w.write_array(NODE_SOURCES["indptr"], indptr)
        w.write_array(NODE_SOURCES["indices"], np.concatenate(sources).astype(np.int32) if sources
                      else np.zeros(0, dtype=np.int32))
        dim = int(pools[0].embeddings.shape[1])
        vectors = np.zeros((len(owner), dim), dtype=np.float32)
        for pool, select in zip(pools, selects, strict=True):
            vectors[select] = pool.embeddings
        w.write_array(NODE_VECTORS, vectors)
        out = []
        for pool, select in zip(pools, selects, strict=True):
            name = pool.variant
            identity = len(select) == len(owner) and bool(np.all(select == np.arange(len(owner))))
            rel = None
            if not identity:
                rel = f"arrays/{name}_rows.npy"
                w.write_array(rel, select)
            spec = CollectionSpec(name, len(pool), vectors=NODE_VECTORS, sources=dict(NODE_SOURCES),
                                  records=NODE_RECORDS, select=rel)
            out.append((name, spec, list(pool.texts)))
        return out
