"""Offline index construction (GEAR §3): passages C, triples T, triple graph, BM25 and dense indices.

Stages: extract triples (resumable, see :mod:`gearag.extract.run`) → tie
each triple to its passage and build the entity graph → BM25 over C and T →
embeddings of C and T → atomic write (:class:`gearag.store.index.IndexWriter`).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from gearag.config import IndexConfig
from gearag.embed import make_embedder
from gearag.errors import ConfigError, DataError
from gearag.extract import TripleExtractor, make_extractor
from gearag.extract.run import extract_with_checkpoint
from gearag.model import Passage, normalise_entity
from gearag.retrieve.bm25 import build_bm25, save_bm25
from gearag.store.graph import LINK_MODES, TripleGraph, is_named
from gearag.store.index import Index, IndexWriter

log = logging.getLogger(__name__)

#: Embedding batch size (texts); bounds memory for long passages.
EMBED_BATCH = 4096


def work_dir_for(out: Path) -> Path:
    """Where a build keeps resumable state (the extraction checkpoint) until it succeeds."""
    return out.parent / f".{out.name}.work"


def _clean(value: str) -> str:
    return " ".join(str(value).split())


def _embed(embedder: object, texts: Sequence[str], description: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit vectors for ``texts``; static embedders also give the token-sum norms."""
    from gearag.progress import track

    dim = embedder.dim  # type: ignore[attr-defined]
    vectors = np.zeros((len(texts), dim), dtype=np.float32)
    weights = np.zeros(len(texts), dtype=np.float32) if hasattr(embedder, "token_sums") else None
    starts = range(0, len(texts), EMBED_BATCH)
    for start in track(starts, total=len(starts), description=description):
        chunk = list(texts[start : start + EMBED_BATCH])
        if weights is not None:
            sums, _ = embedder.token_sums(chunk)  # type: ignore[attr-defined]
            norms = np.linalg.norm(sums, axis=1)
            weights[start : start + len(chunk)] = norms
            np.divide(sums, norms[:, None], out=sums, where=norms[:, None] > 0)
            vectors[start : start + len(chunk)] = sums
        else:
            vectors[start : start + len(chunk)] = embedder.encode(chunk)  # type: ignore[attr-defined]
    return vectors, weights


def linkable_for(
    config: IndexConfig, subjects: Sequence[str], objects: Sequence[str], owner: Sequence[int], n_passages: int
) -> Callable[[str], bool] | None:
    """The endpoint filter for ``link_entities`` and ``max_entity_share``.

    ``named`` falls back to ``all`` (with a warning) for a corpus with almost
    no capitalised endpoints, e.g. lower-cased text, where it would link nothing.
    """
    if config.link_entities not in LINK_MODES:
        raise ConfigError(f"unknown link_entities {config.link_entities!r} (choose from {', '.join(LINK_MODES)})")
    named: Callable[[str], bool] = is_named
    if config.link_entities == "all":
        named = bool
    else:
        sample = list(subjects[:5000]) + list(objects[:5000])
        if sample and sum(map(is_named, sample)) < 0.05 * len(sample):
            log.warning("few capitalised triple endpoints: linking every endpoint (link_entities=all)")
            named = bool
    if config.max_entity_share >= 1.0:
        return named
    cap = max(20, config.max_entity_share * n_passages)
    seen: dict[str, set[int]] = {}
    for s, o, p in zip(subjects, objects, owner, strict=True):
        for e in (s, o):
            if named(e):
                seen.setdefault(normalise_entity(e), set()).add(p)
    hubs = {e for e, rows in seen.items() if len(rows) > cap}
    return lambda e: named(e) and normalise_entity(e) not in hubs


def build_index(
    passages: Sequence[Passage],
    out: str | Path,
    config: IndexConfig | None = None,
    *,
    extractor: TripleExtractor | None = None,
    overwrite: bool = False,
    resume: bool = True,
    on_stage: Callable[[str, float], None] | None = None,
) -> Index:
    """Build an index of ``passages`` at ``out`` and return it loaded.

    ``extractor`` overrides ``config.extractor`` (for example an LLM
    extractor with a configured client). With ``resume`` (default) the
    extraction checkpoint in :func:`work_dir_for` is reused after an
    interruption and deleted after success. ``on_stage(name, seconds)`` is
    called after each stage (the CLI prints these).
    """
    config = config or IndexConfig()
    out = Path(out)
    if not passages:
        raise DataError("cannot index an empty corpus")
    timings: dict[str, float] = {}

    def stage(name: str, started: float) -> None:
        timings[name] = round(time.perf_counter() - started, 3)
        if on_stage:
            on_stage(name, timings[name])

    writer = IndexWriter(out, overwrite=overwrite)  # fail fast, before the expensive work
    with writer:
        t0 = time.perf_counter()
        extractor = extractor or make_extractor(config.extractor)
        work = work_dir_for(out)
        if not resume and work.exists():
            shutil.rmtree(work)
        per_passage = extract_with_checkpoint(passages, extractor, work)
        stage("extract", t0)

        t0 = time.perf_counter()
        subjects, predicates, objects, owner = [], [], [], []
        indptr = np.zeros(len(passages) + 1, dtype=np.int64)
        for row, triples in enumerate(per_passage):
            for s, p, o in triples:
                s, p, o = _clean(s), _clean(p), _clean(o)
                if s and p and o:
                    subjects.append(s)
                    predicates.append(p)
                    objects.append(o)
                    owner.append(row)
            indptr[row + 1] = len(subjects)
        graph = TripleGraph.build(subjects, objects, linkable_for(config, subjects, objects, owner, len(passages)))
        stage("graph", t0)

        entity_graph = None
        if config.entity_graph:
            t0 = time.perf_counter()
            from gearag.graph.passage_graph import GraphArrays

            entity_graph = GraphArrays.build([p.title for p in passages], [p.text for p in passages],
                                             subjects, objects, owner, is_named)
            stage("resolve", t0)

        t0 = time.perf_counter()
        passage_texts = [p.content for p in passages]
        triple_texts = [f"{s} {p} {o}" for s, p, o in zip(subjects, predicates, objects, strict=True)]
        save_bm25(build_bm25(passage_texts, config.bm25_k1, config.bm25_b), writer.path("bm25/passages"))
        # bm25s needs at least one document; an index with no triples gets a placeholder.
        save_bm25(build_bm25(triple_texts or [""], config.bm25_k1, config.bm25_b), writer.path("bm25/triples"))
        stage("bm25", t0)

        t0 = time.perf_counter()
        embedder = make_embedder(config.embedder)
        pvec, _ = _embed(embedder, passage_texts, "embedding passages")
        tvec, tweights = _embed(embedder, triple_texts, "embedding triples")
        stage("embed", t0)

        t0 = time.perf_counter()
        writer.write_jsonl("passages.jsonl", [{"id": p.id, "title": p.title, "text": p.text} for p in passages])
        writer.write_jsonl("triples.jsonl", [list(t) for t in zip(subjects, predicates, objects, strict=True)])
        writer.write_json("entities.json", graph.entities)
        writer.write_array("arrays/triple_passage.npy", np.asarray(owner, dtype=np.int32))
        writer.write_array("arrays/passage_triple_indptr.npy", indptr)
        writer.write_array("arrays/triple_head.npy", graph.head)
        writer.write_array("arrays/triple_tail.npy", graph.tail)
        writer.write_array("arrays/entity_indptr.npy", graph.indptr)
        writer.write_array("arrays/entity_indices.npy", graph.indices)
        if entity_graph is not None:
            from gearag.graph.passage_graph import write_graph_arrays

            write_graph_arrays(writer, entity_graph)
        writer.write_array("vectors/passages.npy", pvec)
        writer.write_array("vectors/triples.npy", tvec)
        if tweights is not None:
            writer.write_array("vectors/triple_weights.npy", tweights)
        ledger = getattr(extractor, "ledger", None)
        manifest = {
            "config": config.to_dict(),
            "extractor_key": extractor.key,
            "counts": {"passages": len(passages), "triples": len(subjects), "entities": graph.n_entities},
            "embedding_dim": int(pvec.shape[1]),
            "build_seconds": timings,
        }
        if ledger is not None:
            manifest["extraction_usage"] = ledger.snapshot(role="extract").to_dict()
        writer.commit(manifest)
        stage("write", t0)
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
    return Index.load(out)
