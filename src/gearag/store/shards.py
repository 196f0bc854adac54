"""A sharded index: shards of per-passage work, one generation of corpus-global data, one root manifest.

Layout (paths relative to the index directory)::

    manifest.json             format version 4, layout "sharded": config, shards, generation, counts
    shards/<name>/            one batch of documents: a plain index directory (its own manifest and
                              checksums) with passages, cleaned triples, vectors and BM25 token ids
                              and postings (tokens/<collection>/), but no BM25 model
    generations/<name>/       what depends on the whole corpus, for exactly the listed shards minus
                              the tombstones: the triple graph (entities.json, arrays/), the
                              passage-aware graph (graph/), tombstones.json, and what the next add
                              reuses: each shard's endpoint table (endpoints/<shard>/) and token
                              index (resolve/<shard>/), the lexicon and text mentions (resolve/),
                              the union's key and name vocabularies and statistics (union/)

A **shard** is written once and never changed: it holds the expensive
per-passage results (extraction, embedding, tokenisation, BM25 postings). A
**generation** is rebuilt by every ``add``/``delete``/``compact`` from the
shards' stored results and the previous generation's per-shard tables
(hard-linked), so entity ids, the hub cut (``max_entity_share`` of the
union's passage count), entity specificity and the resolution are those of
one index built from the union (:mod:`gearag.derive.triple_graph`,
:mod:`gearag.derive.union_resolve`, :mod:`gearag.derive.union_vocab`). BM25 has no global model: its
statistics are merged over the shards' postings when the index is first queried
(:mod:`gearag.store.postings`, scored by :class:`~gearag.retrieve.bm25_postings.PostingsBM25`), scores equal to a
bm25s model over the union. Format 3 (a bm25s model per generation) still
loads; the next add writes format 4.

The union is the shards' passages in shard order with deleted rows dropped
(``tombstones.json``: shard name → deleted passage rows), and their triples
in the same order. :func:`load_sharded` assembles an :class:`~gearag.store.index.Index`
equal to the one a plain build of that union loads, so every method works
unchanged. Passages and triples are views of the shards' files
(:mod:`gearag.store.rows`) and vectors of their memory maps
(:class:`~gearag.store.stacked.StackedRows`): nothing is copied per shard.

The root manifest records each shard's and the generation's manifest hash,
so a shard or generation replaced behind the manifest's back fails to load.
Writing (atomic manifest swap under the index lock) is
:mod:`gearag.indexing.incremental`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from gearag.arrays import offsets, row_offsets
from gearag.config import IndexConfig
from gearag.data.jsonio import load_json
from gearag.errors import IndexFormatError
from gearag.model import Passage
from gearag.store.checkpoint import passage_hash, text_key
from gearag.store.collection import PASSAGES, TRIPLES, Collection, CollectionSpec, load_array
from gearag.store.fsync import fsync_dir
from gearag.store.graph import DELTA_DIR, LayeredTripleGraph, TripleGraph, open_layered_graph
from gearag.store.index import (
    LAYOUTS,
    MANIFEST,
    SHARDED,
    Index,
    Layout,
    _check_ids,
    _check_indptr,
    manifest_identity,
    passage_contents,
    read_entities,
    read_manifest,
    verify_files,
    verify_listed,
)
from gearag.store.postings import POSTINGS_FILES, ShardPostings, read_postings
from gearag.store.rows import ConcatRows
from gearag.store.stacked import StackedRows
from gearag.store.triples import TripleTable

SHARDS_DIR = "shards"
GENERATIONS_DIR = "generations"
#: A shard's BM25 token ids: ``tokens/<collection>/{vocab.json, ids.npy, indptr.npy}``.
TOKENS_DIR = "tokens"
TOMBSTONES = "tombstones.json"
#: Root manifest key: the files of the plain index a converting update kept for its readers (gearag.store.cleanup).
RETAINED = "retained_plain_files"
#: The collections a sharded index has (tree pools are a global clustering: not supported).
SHARDED_COLLECTIONS = (PASSAGES, TRIPLES)
#: Files every generation has.
GENERATION_FILES = (
    "entities.json",
    TOMBSTONES,
    "arrays/triple_head.npy",
    "arrays/triple_tail.npy",
    "arrays/entity_indptr.npy",
    "arrays/entity_indices.npy",
)


def is_sharded(manifest: dict[str, Any]) -> bool:
    return manifest.get("layout") == SHARDED


def shard_key(passages: Sequence[Passage]) -> str:
    """A shard's name stem: a hash of its passages' ids and contents (``s-KEY``; a resumed add finds it)."""
    return text_key(*(f"{p.id}\x00{passage_hash(p)}" for p in passages), size=8)


@dataclass(frozen=True)
class ShardRef:
    """A shard as the root manifest lists it."""

    name: str
    manifest_sha256: str

    @property
    def rel(self) -> str:
        return f"{SHARDS_DIR}/{self.name}"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "manifest_sha256": self.manifest_sha256}


def _safe_name(value: Any, where: str, path: Path) -> str:
    if not isinstance(value, str) or not value or "/" in value or value.startswith(".") or value in ("..",):
        raise IndexFormatError(f"{path}: manifest field {where!r} is malformed; rebuild the index")
    return value


def shard_refs(path: Path, manifest: dict[str, Any]) -> list[ShardRef]:
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise IndexFormatError(f"{path}: manifest field 'shards' is malformed; rebuild the index")
    refs = []
    for i, entry in enumerate(shards):
        if not isinstance(entry, dict) or not isinstance(entry.get("manifest_sha256"), str):
            raise IndexFormatError(f"{path}: manifest field 'shards[{i}]' is malformed; rebuild the index")
        refs.append(ShardRef(_safe_name(entry.get("name"), f"shards[{i}].name", path), entry["manifest_sha256"]))
    if len({r.name for r in refs}) != len(refs):
        raise IndexFormatError(f"{path}: manifest lists a shard twice; rebuild the index")
    return refs


def generation_ref(path: Path, manifest: dict[str, Any]) -> tuple[str, str]:
    """(name, manifest SHA-256) of the index's current generation."""
    gen = manifest.get("generation")
    if not isinstance(gen, dict) or not isinstance(gen.get("manifest_sha256"), str):
        raise IndexFormatError(f"{path}: manifest field 'generation' is malformed; rebuild the index")
    return _safe_name(gen.get("name"), "generation.name", path), gen["manifest_sha256"]


def _check_identity(path: Path, rel: str, expected: str) -> None:
    if manifest_identity(path / rel) != expected:
        raise IndexFormatError(f"{path}: {rel} is not the one the manifest lists (replaced or corrupt); "
                               "rebuild the index")


#: A generation manifest's key that makes it a delta generation (:mod:`gearag.indexing.delta_generation`):
#: ``{"base": DELTA_BASE, "shards": [...]}``, the base generation's files linked under ``DELTA_BASE/``.
DELTA = "delta"
DELTA_BASE = "base"
#: The files of a delta generation's triple graph besides its base's.
DELTA_GRAPH_FILES = (f"{DELTA_DIR}/triple_head.npy", f"{DELTA_DIR}/triple_tail.npy", f"{DELTA_DIR}/entities.json",
                     f"{DELTA_DIR}/postings_where.npy", f"{DELTA_DIR}/postings_appends.npy",
                     f"{DELTA_DIR}/postings_indptr.npy", f"{DELTA_DIR}/postings_indices.npy")


def is_delta(gman: dict[str, Any]) -> bool:
    """Whether a generation's manifest is a delta generation's."""
    return isinstance(gman.get(DELTA), dict)


def check_generation(path: Path, name: str, sha: str, *, checksums: bool) -> dict[str, Any]:
    """Verify generation ``name`` of the sharded index at ``path``; returns its manifest."""
    rel = f"{GENERATIONS_DIR}/{name}"
    gpath = path / rel
    gman = read_manifest(gpath)
    _check_identity(path, rel, sha)
    listed = gman.get("files") or {}
    required = GENERATION_FILES if not is_delta(gman) else (
        TOMBSTONES, *(f"{DELTA_BASE}/{f}" for f in GENERATION_FILES), *DELTA_GRAPH_FILES)
    for f in required:
        if f not in listed:
            raise IndexFormatError(f"{gpath}: the manifest does not list {f}; rebuild the index")
    verify_listed(gpath, listed, checksums=checksums)
    return gman


def check_sharded(path: Path, manifest: dict[str, Any], *, checksums: bool) -> None:
    """Verify every shard and the generation of a sharded index (``gearag info``)."""
    for ref in shard_refs(path, manifest):
        spath = path / ref.rel
        verify_files(spath, read_manifest(spath), checksums=checksums)
        _check_identity(path, ref.rel, ref.manifest_sha256)
    check_generation(path, *generation_ref(path, manifest), checksums=checksums)


def owned_entries(path: Path, manifest: dict[str, Any]) -> set[str]:
    """Every file a sharded index's manifests list, relative to its root (for ``--overwrite`` checks)."""
    owned = set(manifest.get("files") or {})
    owned.update(str(f) for f in manifest.get(RETAINED) or [])
    dirs = [f"{SHARDS_DIR}/{r.name}" for r in shard_refs(path, manifest)]
    dirs.append(f"{GENERATIONS_DIR}/{generation_ref(path, manifest)[0]}")
    # Generations and shards a reader's lease keeps past the manifest (gearag.store.lease) are gearag's too.
    for kind in (SHARDS_DIR, GENERATIONS_DIR):
        if (path / kind).is_dir():
            dirs.extend(f"{kind}/{p.name}" for p in sorted((path / kind).iterdir())
                        if f"{kind}/{p.name}" not in dirs and (p / MANIFEST).is_file())
    for rel in dirs:
        try:
            sub = read_manifest(path / rel)
        except IndexFormatError:
            continue
        owned.add(f"{rel}/{MANIFEST}")
        owned.update(f"{rel}/{f}" for f in sub.get("files") or {})
    return owned


# -- tombstones ---------------------------------------------------------------
def read_tombstones(gpath: Path, shards: dict[str, int]) -> dict[str, np.ndarray]:
    """Deleted passage rows per shard name (``shards``: name → passage count), validated."""
    try:
        raw = json.loads((gpath / TOMBSTONES).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"{gpath}: {TOMBSTONES} is unreadable ({exc}); rebuild the index") from None
    if not isinstance(raw, dict):
        raise IndexFormatError(f"{gpath}: {TOMBSTONES} is not an object; rebuild the index")
    out: dict[str, np.ndarray] = {}
    for name, rows in raw.items():
        n = shards.get(name)
        if n is None or not isinstance(rows, list) or not all(
                isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n for r in rows):
            raise IndexFormatError(f"{gpath}: {TOMBSTONES} entry {name!r} is malformed; rebuild the index")
        out[name] = np.asarray(sorted(set(rows)), dtype=np.int64)
    return out


# -- BM25 token ids -------------------------------------------------------------
@dataclass
class Tokens:
    """One collection's BM25 token ids in a shard: document i is ``ids[indptr[i]:indptr[i+1]]``."""

    vocab: list[str]
    ids: np.ndarray
    indptr: np.ndarray

    def doc(self, i: int) -> np.ndarray:
        return self.ids[self.indptr[i] : self.indptr[i + 1]]


def tokens_rel(collection: str) -> str:
    return f"{TOKENS_DIR}/{collection}"


def read_tokens(shard: Path, collection: str, rows: int, *, check_ids: bool = True) -> Tokens:
    """A shard's token lists, memory-mapped; ``check_ids``: read every id once to check its range (a reader that
    never indexes with them, such as BM25 from stored postings, skips that read of the whole file)."""
    rel = tokens_rel(collection)
    try:
        vocab = load_json(shard / rel / "vocab.json")
    except (OSError, ValueError):
        raise IndexFormatError(f"{shard}: {rel}/vocab.json is unreadable; rebuild the index") from None
    ids = np.asarray(load_array(shard, f"{rel}/ids.npy"))
    indptr = np.asarray(load_array(shard, f"{rel}/indptr.npy"))
    if not isinstance(vocab, list):
        raise IndexFormatError(f"{shard}: {rel}/vocab.json is not a list; rebuild the index")
    _check_indptr(shard, f"{rel}/indptr.npy", indptr, rows, len(ids))
    if check_ids:
        _check_ids(shard, f"{rel}/ids.npy", ids, None, 0, max(len(vocab), 1))
    return Tokens(vocab, ids, indptr)


# -- the union of the shards ------------------------------------------------------
@dataclass
class Union:
    """The live rows of a list of shards, in shard order: what a plain build of them would hold."""

    names: list[str]
    shards: list[Index]
    #: Per shard: which passage rows and triple rows are live.
    passage_keep: list[np.ndarray]
    triple_keep: list[np.ndarray]
    passages: Sequence[Passage] = field(default_factory=list)
    triples: TripleTable = field(default_factory=lambda: TripleTable([], [], [], np.zeros(0, np.int32)))
    passage_triple_indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))

    def matches(self, refs: list[ShardRef], shards: list[Index], tombstones: dict[str, np.ndarray]) -> bool:
        """Whether this is the union of ``shards`` (named by ``refs``) minus ``tombstones``."""
        if self.names != [r.name for r in refs] or len(self.shards) != len(shards):
            return False
        if any(a is not b for a, b in zip(self.shards, shards, strict=True)):
            return False
        for name, keep in zip(self.names, self.passage_keep, strict=True):
            dead = tombstones.get(name, np.zeros(0, np.int64))
            if int((~keep).sum()) != len(dead) or (len(dead) and keep[dead].any()):
                return False
        return True

    @property
    def clean(self) -> bool:
        """One shard and no deletions: the union is that shard as it is."""
        return len(self.shards) == 1 and bool(self.passage_keep[0].all())

    def rows(self, collection: str, i: int) -> np.ndarray:
        return self.passage_keep[i] if collection == PASSAGES else self.triple_keep[i]

    def union_rows(self, collection: str, i: int) -> np.ndarray:
        """Shard ``i``'s rows of ``collection`` → their rows in the union (-1: deleted)."""
        keeps = self.passage_keep if collection == PASSAGES else self.triple_keep
        offset = sum(int(k.sum()) for k in keeps[:i])
        return np.where(keeps[i], offset + np.cumsum(keeps[i]) - 1, -1)

    def concat(self, collection: str, get: Any) -> np.ndarray:
        """``get(shard collection)`` of every shard, live rows only, concatenated (materialised)."""
        return np.asarray(self.stacked(collection, get))

    def stacked(self, collection: str, get: Any) -> StackedRows:
        """``get(shard collection)`` of every shard, live rows only, addressed as one array without copying."""
        return StackedRows([get(s.collections[collection]) for s in self.shards],
                           [self.rows(collection, i) for i in range(len(self.shards))])

    def tokens(self, collection: str, paths: list[Path]) -> Tokens:
        """Live documents' BM25 token ids over one merged vocabulary (the shards' words in first-seen order), as
        whole arrays: no array per document (17M of them for a million passages' triples)."""
        vocab: dict[str, int] = {}
        ids: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        for i, (shard, spath) in enumerate(zip(self.shards, paths, strict=True)):
            n = len(shard.passages) if collection == PASSAGES else len(shard.triples)
            toks = read_tokens(spath, collection, n)
            remap = np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks.vocab), dtype=np.int32,
                                count=len(toks.vocab))
            keep, counts = self.rows(collection, i), np.diff(toks.indptr)
            ids.append(remap[toks.ids if keep.all() else toks.ids[np.repeat(keep, counts)]])
            lengths.append(counts[keep])
        return Tokens(list(vocab), np.concatenate(ids) if ids else np.zeros(0, np.int32),
                      offsets(np.concatenate(lengths) if lengths else np.zeros(0, np.int64)))


def union_of(names: list[str], shards: list[Index], tombstones: dict[str, np.ndarray]) -> Union:
    """The live rows of ``shards`` (in order) without the ``tombstones``."""
    u = Union(names, shards, [], [])
    for name, shard in zip(names, shards, strict=True):
        keep = np.ones(len(shard.passages), dtype=bool)
        keep[tombstones.get(name, np.zeros(0, np.int64))] = False
        owner = np.asarray(shard.triples.passage, dtype=np.int64)
        u.passage_keep.append(keep)
        u.triple_keep.append(keep[owner] if len(owner) else np.zeros(0, dtype=bool))
    owners = [u.union_rows(PASSAGES, i)[np.asarray(s.triples.passage, dtype=np.int64)[u.triple_keep[i]]]
              for i, s in enumerate(shards)]
    # Views of the shards' rows (read on demand), not copies: the union of a large index is not held twice.
    u.passages = ConcatRows([s.passages for s in shards], u.passage_keep)
    rows = [s.triples.rows if s.triples.rows is not None else
            list(zip(s.triples.subjects, s.triples.predicates, s.triples.objects, strict=True)) for s in shards]
    owner_all = np.concatenate(owners).astype(np.int32) if owners else np.zeros(0, np.int32)
    u.triples = TripleTable.of_rows(ConcatRows(rows, u.triple_keep), owner_all)
    indptr = row_offsets(owner_all, len(u.passages))
    u.passage_triple_indptr = indptr
    return u


def load_shards(path: Path, refs: list[ShardRef], *, verify: bool = False) -> list[Index]:
    shards = []
    for ref in refs:
        shard = Index.load(path / ref.rel, verify=verify)
        if shard.identity != ref.manifest_sha256:
            raise IndexFormatError(f"{path}: {ref.rel} is not the one the manifest lists (replaced or corrupt); "
                                   "rebuild the index")
        shards.append(shard)
    return shards


def _delta_file(gpath: Path, rel: str) -> Any:
    """A delta generation's file: JSON strings read, arrays memory-mapped."""
    if rel.endswith(".json"):
        strings = load_json(gpath / rel)
        if not isinstance(strings, list):
            raise IndexFormatError(f"{gpath / rel}: not a list (corrupt); rebuild the index")
        return strings
    return load_array(gpath, rel)


def read_triple_graph(gpath: Path, n_entities: int | None) -> TripleGraph:
    """The triple graph a generation stores (its entity keys and arrays, memory-mapped; ``n_entities``: the count
    its manifest gives, which the keys must have)."""
    return TripleGraph(
        entities=read_entities(gpath, n_entities),
        head=np.asarray(load_array(gpath, "arrays/triple_head.npy")),
        tail=np.asarray(load_array(gpath, "arrays/triple_tail.npy")),
        indptr=np.asarray(load_array(gpath, "arrays/entity_indptr.npy")),
        indices=load_array(gpath, "arrays/entity_indices.npy"),
    )


def load_sharded(path: Path, manifest: dict[str, Any], *, verify: bool = False,
                 loaded: list[Index] | None = None, union: Union | None = None) -> Index:
    """The :class:`Index` of a sharded index: the union of its shards with its generation's global data.

    ``loaded``: the shards already in memory (``gearag add`` just read them), in manifest order;
    ``union``: their union, when the caller built it with the generation's tombstones.
    """
    refs = shard_refs(path, manifest)
    gname, gsha = generation_ref(path, manifest)
    grel = f"{GENERATIONS_DIR}/{gname}"
    gpath = path / grel
    gman = check_generation(path, gname, gsha, checksums=verify)
    if loaded is not None and [s.identity for s in loaded] == [r.manifest_sha256 for r in refs]:
        shards = loaded
    else:
        shards = load_shards(path, refs, verify=verify)
    try:
        tombstones = read_tombstones(gpath, {r.name: len(s.passages) for r, s in zip(refs, shards, strict=True)})
        u = union if union is not None and union.matches(refs, shards, tombstones) else union_of(
            [r.name for r in refs], shards, tombstones)
        graph: TripleGraph | LayeredTripleGraph
        if is_delta(gman):
            base_path = gpath / DELTA_BASE
            graph = open_layered_graph(read_triple_graph(base_path, read_manifest(base_path)["counts"]["entities"]),
                                       lambda rel: _delta_file(gpath, rel))
        else:
            graph = read_triple_graph(gpath, manifest.get("counts", {}).get("entities"))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise IndexFormatError(f"{path}: cannot read index ({exc}); rebuild it") from None
    n_p, n_t, n_e = len(u.passages), len(u.triples), len(graph.entities)
    counts = manifest.get("counts", {})
    if counts.get("passages") != n_p or counts.get("triples") != n_t or counts.get("entities") != n_e:
        raise IndexFormatError(f"{path}: contents do not match the manifest counts; rebuild the index")
    if isinstance(graph, TripleGraph):
        _check_ids(gpath, "arrays/triple_head.npy", graph.head, n_t, -1, n_e)
        _check_ids(gpath, "arrays/triple_tail.npy", graph.tail, n_t, -1, n_e)
        _check_ids(gpath, "arrays/entity_indices.npy", graph.indices, None, 0, n_t)
        _check_indptr(gpath, "arrays/entity_indptr.npy", graph.indptr, n_e, len(graph.indices))
    else:  # the delta's arrays (the base's were checked when it was the current generation, and are its files)
        _check_ids(gpath, DELTA_GRAPH_FILES[0], graph.head.tail, len(graph.head.tail), -1, n_e)
        _check_ids(gpath, DELTA_GRAPH_FILES[1], graph.tail.tail, len(graph.tail.tail), -1, n_e)
        _check_ids(gpath, DELTA_GRAPH_FILES[6], graph.postings.delta.indices, None, 0, n_t)
    bm25 = IndexConfig.from_dict(manifest.get("config", {})).bm25
    listed = gman.get("files") or {}
    collections = {}
    for name in SHARDED_COLLECTIONS:
        if any(f.startswith(f"bm25/{name}/") for f in listed):  # format 3: a bm25s model over the union
            collections[name] = _collection(path, grel, refs, u, name, f"{grel}/bm25/{name}", None)
        else:
            postings = partial(shard_postings, path, refs, u, name, bm25.k1, bm25.b)
            collections[name] = _collection(path, grel, refs, u, name, None, postings)
    index_manifest = {**manifest, "graph_dir": f"{grel}/graph"}
    return Index(path=path, manifest=index_manifest, passages=u.passages, triples=u.triples, graph=graph,
                 passage_triple_indptr=u.passage_triple_indptr, collections=collections)


def shard_postings(path: Path, refs: list[ShardRef], u: Union, name: str, k1: float, b: float) -> ShardPostings:
    """Each shard's postings of collection ``name`` and its rows in the union: what BM25 over the union is
    scored from (format 4, :class:`gearag.retrieve.bm25_postings.PostingsBM25`)."""
    parts = []
    for i, (ref, shard) in enumerate(zip(refs, u.shards, strict=True)):
        n = len(shard.passages) if name == PASSAGES else len(shard.triples)
        stored = all((path / ref.rel / tokens_rel(name) / f).exists() for f in POSTINGS_FILES)
        toks = read_tokens(path / ref.rel, name, n, check_ids=not stored)  # stored postings never read the ids
        parts.append((read_postings(path / ref.rel, tokens_rel(name), toks.vocab, partial(getattr, toks, "ids"),
                                    toks.indptr), u.union_rows(name, i)))
    return ShardPostings(parts, k1, b)


def _collection(path: Path, grel: str, refs: list[ShardRef], u: Union, name: str, bm25: str | None,
                bm25_postings: Callable[[], ShardPostings] | None) -> Collection:
    """Collection ``name`` of the union: its BM25 (a format-3 generation's model, else the shards' postings)
    and the shards' vectors (and weights, sources)."""
    passages, triples = u.passages, u.triples
    texts = (lambda: passage_contents(passages)) if name == PASSAGES else triples.texts
    rows = len(passages) if name == PASSAGES else len(triples)
    first = u.shards[0].collections[name].spec
    if u.clean:  # keep the shard's memory maps: its files, addressed from the root
        prefix = f"{refs[0].rel}/"
        spec = CollectionSpec(name, rows, bm25, prefix + str(first.vectors),
                              prefix + first.weights if first.weights else None,
                              prefix + first.sources if isinstance(first.sources, str) else None)
        return Collection(path, spec, texts, bm25_postings)
    weights = all(s.collections[name].spec.weights for s in u.shards)
    spec = CollectionSpec(name, rows, bm25, f"{SHARDS_DIR}/*/{first.vectors}",
                          f"{SHARDS_DIR}/*/{first.weights}" if weights else None,
                          "<union>" if name == TRIPLES else None)
    # The shards' memory maps addressed as one array (never concatenated: 17 GB of triple vectors at 1M
    # passages); the small per-row weights are concatenated on first use.
    arrays: dict[str, Callable[[], Any]] = {"vectors": lambda: u.stacked(name, lambda c: c.vectors)}
    if weights:
        arrays["weights"] = lambda: u.concat(name, lambda c: c.weights)
    if name == TRIPLES:
        arrays["sources"] = lambda: (np.asarray(triples.passage), None)
    return Collection.preloaded(path, spec, texts, arrays, bm25_postings)


def write_manifest_atomic(path: Path, manifest: dict[str, Any]) -> None:
    """Replace ``path/manifest.json`` atomically: write a temporary file, fsync, rename, fsync the directory.

    A write that fails (a full disk) removes its temporary file: the index is as it was, and
    ``--overwrite`` does not find a file the index did not list in it.
    """
    tmp = path / f".{MANIFEST}.tmp-{os.getpid()}"
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path / MANIFEST)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path)


#: Version of the per-shard tables and resolution state a generation keeps for the next add: bump it when
#: what they hold changes (is_named, normalise_entity, name_key, the lexicon's rules, the trie's tokens), so
#: a newer gearag recomputes them instead of trusting tables an older rule wrote.
TABLES_VERSION = 1
#: Version of the union's state (``union/``: vocabularies, key and name statistics) a generation keeps.
UNION_VERSION = 1


def kept_state(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The union state a plain index's ``manifest`` says its build kept (``{"shard", "tables", "union"}``), when
    this gearag's rules wrote it; else None (its first add computes the state)."""
    state = manifest.get("union")
    if not isinstance(state, dict) or not isinstance(state.get("shard"), str):
        return None
    if state.get("tables") != TABLES_VERSION or state.get("union") != UNION_VERSION:
        return None
    return state


LAYOUTS[SHARDED] = Layout(load=load_sharded, check=check_sharded)
