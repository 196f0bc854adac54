"""Shards and generations of a sharded index (:mod:`gearag.store.shards`): how each is built (docs/delta.md).

A shard is built by the ordinary pipeline with :data:`SHARD_STAGES`, the per-passage work only. A generation
is the union of the shards minus the deleted rows: an add or a delete writes it as a delta over the last
generation written whole (:func:`generation_delta`, :mod:`gearag.indexing.delta_generation`), a compact keeps the
graphs and re-keys the state (:func:`write_merged_shard`, :func:`compact_generation`), and where none of them can
say it :func:`write_generation` derives it as a build does. A converted plain index's first generation is
hard-linked from it (:func:`link_generation`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from gearag.config import IndexConfig
from gearag.derive import union_files
from gearag.derive.rekey import OldShard, rekeyed_state
from gearag.derive.union_files import (
    ShardColumns,
    UnionDelta,
    UnionRows,
    write_from_nothing,
)
from gearag.derive.union_resolve import Prior, Removal, ResolveState
from gearag.errors import GearagError
from gearag.graph.passage_graph import GRAPH_DIR
from gearag.graph.prepared import PREPARED, PreparedGraph, load_prepared
from gearag.indexing.bm25 import write_token_ids, write_tokens
from gearag.indexing.embed import EmbedStage
from gearag.indexing.extract import ExtractStage
from gearag.indexing.graph import GraphStage, write_triples
from gearag.indexing.ner import NER_SPANS, NerStage, keeps_ner_spans, stored_ner_spans
from gearag.indexing.stage import Build, Stage
from gearag.store import shards as shard_store
from gearag.store.collection import PASSAGES, TRIPLES
from gearag.store.index import MANIFEST, Index, manifest_identity, read_manifest
from gearag.store.npy import write_blocks
from gearag.store.passage_ids import write_passages
from gearag.store.rows import Mapped
from gearag.store.shards import (
    DELTA_BASE,
    GENERATION_FILES,
    GENERATIONS_DIR,
    SHARDED_COLLECTIONS,
    TOMBSTONES,
    ShardRef,
    Union,
    check_generation,
    is_delta,
    read_triple_graph,
    union_of,
)
from gearag.store.writer import IndexWriter

#: The manifest entry of an add's full generation that says why it is not a delta (a clause: "because ...").
WHOLE_BECAUSE = "whole_because"
#: Why no delta can say an add, where the last full generation keeps no state it extends or no prepared graph.
NO_STATE = ("the last full generation keeps no state an add extends (built with --no-growable, or by another "
            "version of gearag)")
NO_PREPARED = "the index stores no prepared passage graph (--no-prepared-graph or --no-entity-graph)"

#: A generation written: its name, manifest hash and counts.
Written = tuple[str, str, dict[str, int]]


class TokensStage:
    """BM25 token ids of the passages and triples (a shard keeps these instead of a BM25 model)."""

    name = "tokens"

    def run(self, build: Build) -> None:
        for name in SHARDED_COLLECTIONS:
            write_tokens(build.writer, name, build.collections[name].texts)


#: A shard: the per-passage work only (no corpus-global graph resolution, BM25 model or trees).
SHARD_STAGES: tuple[Stage, ...] = (ExtractStage(), NerStage(), GraphStage(union=False), TokensStage(), EmbedStage())


def generation_name(refs: list[ShardRef], tombstones: dict[str, np.ndarray]) -> str:
    """A generation's name: a hash of its shards and tombstones (a resumed add finds it already written)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(json.dumps([[r.name, r.manifest_sha256] for r in refs]).encode())
    digest.update(json.dumps({k: v.tolist() for k, v in sorted(tombstones.items()) if len(v)}).encode())
    return f"g-{digest.hexdigest()}"


def finished_generation(root: Path, name: str, refs: list[ShardRef]) -> Written | None:
    """Generation ``name`` of ``refs``, when an interrupted run wrote it whole (its name, manifest hash and
    counts); None: absent, damaged or of other shards (written again)."""
    out = root / GENERATIONS_DIR / name
    if not (out / MANIFEST).exists():
        return None
    try:
        sha = manifest_identity(out)
        check_generation(root, name, sha, checksums=False)
        done = read_manifest(out)
        if done.get("shards") == [r.name for r in refs]:
            return name, sha, dict(done["counts"])
    except (GearagError, OSError, ValueError, KeyError, TypeError):
        pass
    return None


def write_generation(
    root: Path, refs: list[ShardRef], shards: list[Index], tombstones: dict[str, np.ndarray], config: IndexConfig,
    previous: str | None = None, union: Union | None = None, why: str | None = None,
) -> Written:
    """Build (or find, after an interrupted run) the generation of ``shards`` minus ``tombstones``.

    ``previous``: the current generation's name, whose shards' endpoint tables
    are hard-linked instead of recomputed; ``union``: the union of ``shards``
    minus ``tombstones`` when the caller has it; ``why``: why an add's generation is
    written in full (recorded as :data:`WHOLE_BECAUSE`). Returns its name, manifest hash and counts.
    """
    name = generation_name(refs, tombstones)
    out = root / GENERATIONS_DIR / name
    found = finished_generation(root, name, refs)
    if found is not None:
        return found
    u = union or union_of([r.name for r in refs], shards, tombstones)
    with IndexWriter(out, overwrite=out.exists()) as w:
        columns, rows = shard_columns(u)
        tables_from = _reusable(root / GENERATIONS_DIR / previous) if previous else None
        # From nothing, as a build (the tables and indices of the shards the previous generation has hard-linked).
        n_entities, timings, meta = write_from_nothing(w, config, columns, rows, tables_from)
        counts = {"passages": len(u.passages), "triples": len(u.triples), "entities": n_entities}
        commit_generation(w, refs, tombstones, counts, timings, {"union": shard_store.UNION_VERSION, **meta}, why)
    return name, manifest_identity(out), counts


def commit_generation(w: IndexWriter, refs: list[ShardRef], tombstones: dict[str, np.ndarray],
                      counts: dict[str, int], timings: dict[str, float], meta: dict[str, Any],
                      why: str | None) -> None:
    """Write a generation's tombstones and commit its manifest: its shards, counts, tables' version, timings and
    ``meta``, and, where ``why`` is given, why an add's generation is written whole (:data:`WHOLE_BECAUSE`)."""
    w.write_json(TOMBSTONES, {k: v.tolist() for k, v in tombstones.items() if len(v)})
    w.commit({"kind": "generation", "shards": [r.name for r in refs], "counts": counts,
              "tables": shard_store.TABLES_VERSION, "build_seconds": timings, **meta}
             | ({WHOLE_BECAUSE: why} if why is not None else {}))


def generation_delta(w: IndexWriter, refs: list[ShardRef], shards: list[Index], tombstones: dict[str, np.ndarray],
                     config: IndexConfig, before: Path, base: PreparedGraph | None = None,
                     union: Union | None = None, previous: Path | None = None,
                     keep_state: bool = False) -> UnionDelta:
    """What adding the shards after those of generation ``before`` (or deleting rows of its shards) changed in
    it, as deltas over it (:func:`~gearag.derive.union_files.union_delta`), with the per-shard tables they read
    written into ``w``; declined (:attr:`~gearag.derive.union_files.UnionDelta.declined`) where neither (a delete
    is kept whole only), or it kept no state or prepared graph.
    ``base``: ``before``'s prepared graph, when the caller has it open (the delta's rows are over its arrays, which
    :func:`~gearag.graph.delta_apply.apply_delta` checks); ``union``: the shards' union, when the caller has it;
    ``previous``: the generation the add follows (a delta one over ``before``), whose per-shard tables are
    hard-linked (default ``before``); ``keep_state``: the state after the add is written too (a generation
    that keeps the add whole: :func:`~gearag.derive.union_files.union_delta`)."""
    u = union or union_of([r.name for r in refs], shards, tombstones)
    done = read_manifest(before)
    prior = _prior_resolution(_reusable(before), done, refs, shards, tombstones, u)
    base = base if base is not None else load_prepared(before / GRAPH_DIR / PREPARED)
    if prior is None or base is None or (prior.removal is not None and not keep_state):
        return UnionDelta(None, None, declined=NO_PREPARED if base is None else NO_STATE if prior is None else
                          "a delete is written whole")
    columns, rows = shard_columns(u)
    graph = read_triple_graph(before, done.get("counts", {}).get("entities"))
    return union_files.union_delta(w, config, columns, rows, before, done, prior, base, graph,
                                   _reusable(previous) if previous is not None else None, keep_state)


def shard_columns(u: Union) -> tuple[list[ShardColumns], UnionRows]:
    """What a generation reads of each shard of ``u`` and of its live rows (as
    :func:`~gearag.derive.union_files.corpus_as_shard` gives them for one corpus)."""

    def columns(i: int, name: str, s: Index) -> ShardColumns:
        texts = Mapped(s.passages, attrgetter("text"))
        return ShardColumns(name, s.triples.subjects, s.triples.objects, texts, u.union_rows(PASSAGES, i),
                            lambda: stored_ner_spans(s.path, texts))

    return ([columns(i, name, s) for i, (name, s) in enumerate(zip(u.names, u.shards, strict=True))],
            UnionRows(u.passages, u.triple_keep, np.asarray(u.triples.passage)))


def delta_base(generation: Path) -> Path:
    """The full generation whose state ``generation`` keeps: itself, or a delta generation's base
    (:mod:`gearag.indexing.delta_generation`)."""
    try:
        gman = read_manifest(generation)
    except GearagError:
        return generation
    return generation / DELTA_BASE if is_delta(gman) else generation


def _reusable(previous: Path) -> Path | None:
    """``previous`` when its tables were written by this version of the rules, else None (recompute)."""
    try:
        return previous if read_manifest(previous).get("tables") == shard_store.TABLES_VERSION else None
    except GearagError:
        return None


def _prior_resolution(before: Path | None, done: dict[str, Any], refs: list[ShardRef], shards: list[Index],
                      tombstones: dict[str, np.ndarray], u: Union) -> Prior | None:
    """The previous generation's resolution (``done``: its manifest) when this generation only appends shards
    to it (same tombstones), or only deletes rows of its shards (more tombstones: a :class:`Removal`).

    None: resolve from scratch.
    """
    if before is None:
        return None
    try:
        old = json.loads((before / TOMBSTONES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(old, dict):
        return None
    now = {k: v.tolist() for k, v in tombstones.items() if len(v)}
    p = len(done.get("shards") or [])
    if not p or done.get("shards") != [r.name for r in refs[:p]]:
        return None
    if p < len(refs) and old == now:  # an add
        new_from = sum(len(s.passages) - len(tombstones.get(r.name, ())) for r, s in zip(refs[:p], shards,
                                                                                         strict=False))
        state = ResolveState.read(before, new_from)
        return Prior(state, new_from, p) if state is not None else None
    if p == len(refs) and old != now:  # a delete
        removal = _removal(u, {k: np.asarray(v, dtype=np.int64) for k, v in old.items()})
        if removal is None:
            return None
        state = ResolveState.read(before, len(removal.rows))
        return Prior(state, len(u.passages), p, removal=removal) if state is not None else None
    return None


def _removal(u: Union, old: dict[str, np.ndarray]) -> Removal | None:
    """Where the rows of the union minus the ``old`` tombstones are in ``u`` (None: ``u`` is not that union
    minus more rows)."""
    rows, triples = [], []
    for i, (name, shard) in enumerate(zip(u.names, u.shards, strict=True)):
        keep = np.ones(len(shard.passages), dtype=bool)
        dead = old.get(name, np.zeros(0, np.int64))
        if len(dead) and (int(dead.min()) < 0 or int(dead.max()) >= len(keep)):
            return None
        keep[dead] = False
        if np.any(u.passage_keep[i] & ~keep):  # a row live now that was deleted before: not a delete
            return None
        rows.append(u.union_rows(PASSAGES, i)[keep])
        owner = np.asarray(shard.triples.passage, dtype=np.int64)
        triples.append(u.union_rows(TRIPLES, i)[keep[owner] if len(owner) else np.zeros(0, dtype=bool)])
    return Removal(np.concatenate(rows), np.concatenate(triples))


def compact_generation(root: Path, ref: ShardRef, old: list[OldShard],
                       previous: str) -> Written | None:
    """The generation of the shard ``ref``, the merge of generation ``previous``'s shards ``old`` into one without
    their deleted rows: ``previous``'s graph files hard-linked and its state re-keyed to the one shard
    (:mod:`gearag.derive.rekey`: nothing is derived again). None: ``previous`` is not written whole with a state
    this can read (the caller derives the generation from the shard)."""
    name = generation_name([ref], {})
    found = finished_generation(root, name, [ref])
    if found is not None:
        return found
    before = _reusable(root / GENERATIONS_DIR / previous)
    if before is None or delta_base(before) != before:
        return None
    done = read_manifest(before)
    out = root / GENERATIONS_DIR / name
    with IndexWriter(out, overwrite=out.exists()) as w:
        if not rekeyed_state(w, ref.name, before, done, old):
            return None  # not committed: the writer removes what it wrote
        for rel in sorted(done.get("files") or {}):
            if rel != TOMBSTONES and not union_files.is_state_file(rel):
                w.link(rel, before / rel, before)  # the union's graphs, unchanged
        w.write_json(TOMBSTONES, {})
        kept = {k: v for k, v in done.items() if k not in ("format", "format_version", "gearag_version", "created",
                                                            "files", "shards", "build_seconds", WHOLE_BECAUSE)}
        w.commit({**kept, "shards": [ref.name]})
    return name, manifest_identity(out), dict(done["counts"])


def write_merged_shard(w: IndexWriter, u: Union, gdir: Path, paths: list[Path], config: IndexConfig,
                       counts: dict[str, int]) -> None:
    """One shard holding the live rows of the union ``u`` of the shards at ``paths``: a plain index
    whose graph is generation ``gdir``'s (a compact's; ``counts``: the index's)."""
    write_passages(w, u.passages)
    tt = u.triples
    write_triples(w, tt.subjects, tt.predicates, tt.objects, tt.passage, u.passage_triple_indptr)
    for rel in GENERATION_FILES:  # the generation's triple graph
        if rel != TOMBSTONES:
            w.link(rel, gdir / rel, gdir)
    collections: dict[str, Any] = {}
    for coll in SHARDED_COLLECTIONS:
        rows = len(u.passages) if coll == PASSAGES else len(tt)
        spec: dict[str, Any] = {"rows": rows, "vectors": f"vectors/{coll}.npy"}
        vectors = u.stacked(coll, lambda c: c.vectors)
        write_blocks(w.path(spec["vectors"]), vectors.shape, vectors.dtype, vectors.chunks(1 << 16))
        if all(s.collections[coll].spec.weights for s in u.shards):
            spec["weights"] = "vectors/triple_weights.npy" if coll == TRIPLES else f"vectors/{coll}_weights.npy"
            w.write_array(spec["weights"], u.concat(coll, lambda c: c.weights))
        if coll == TRIPLES:
            spec["sources"] = "arrays/triple_passage.npy"
        collections[coll] = spec
        toks = u.tokens(coll, paths)
        write_token_ids(w, coll, toks.vocab, toks.ids, toks.indptr)
    if keeps_ner_spans(config.resolve):  # the live rows' spans
        w.write_jsonl(NER_SPANS, _union_spans(shard_columns(u)[0], len(u.passages)))
    first = u.shards[0].manifest
    w.commit({"config": config.to_dict(), "extractor_key": first.get("extractor_key"),
              "embedding_dim": first.get("embedding_dim"), "counts": counts,
              "collections": collections})


def _union_spans(shards: Sequence[ShardColumns], n_passages: int) -> list[Sequence[str]]:
    """Per union passage row, its named-entity spans, from the shards'."""
    out: list[Sequence[str]] = [()] * n_passages
    for shard in shards:
        spans = shard.ner_spans()
        for row, at in enumerate(np.asarray(shard.union_rows).tolist()):
            if at >= 0:
                out[at] = spans[row]
    return out


def link_generation(src: Path, root: Path, refs: list[ShardRef], counts: dict[str, int],
                    state: dict[str, Any] | None = None) -> tuple[str, str]:
    """The first generation of a converted plain index ``src`` (its one shard ``refs[0]``): its graph files
    hard-linked (a generation build would reproduce them exactly), no tombstones.

    ``state``: the union state a growable build kept for that shard
    (:func:`~gearag.store.shards.kept_state`), linked too, so the
    first add extends it instead of computing it for the whole corpus.
    """
    name = generation_name(refs, {})
    out = root / GENERATIONS_DIR / name
    with IndexWriter(out, overwrite=out.exists()) as w:
        for f in sorted(src.rglob("*")):
            rel = f.relative_to(src).as_posix()
            kept = rel in GENERATION_FILES or rel.startswith(f"{GRAPH_DIR}/") or (
                state is not None and union_files.is_state_file(rel))
            if f.is_file() and kept:
                w.link(rel, f, src)
        w.write_json(TOMBSTONES, {})
        meta: dict[str, Any] = {"kind": "generation", "shards": [r.name for r in refs], "counts": counts}
        if state is not None:
            meta["tables"], meta["union"] = state["tables"], state["union"]
        w.commit(meta)
    return name, manifest_identity(out)
