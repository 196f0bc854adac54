"""Growing an index: ``add`` documents, ``delete`` them by id, ``compact`` the shards (docs/growing.md).

Every operation resolves the index's path (symlinks: the target is updated,
the link kept; :func:`~gearag.store.writer.index_location`), holds the index
lock (:class:`~gearag.store.writer.IndexLock`, the one ``gearag index``
takes) and ends with one atomic step: the root
manifest is written to a temporary file and renamed over ``manifest.json``.
What it writes before that — a new shard, a new generation — lives in
directories the current manifest does not list, so a crash leaves the
previous index loadable. Their names are derived from their contents, so
the next run of the same ``add`` finds the shard's extraction checkpoint (or
the finished shard, or generation) and resumes; whatever the manifest does
not list is removed once a run succeeds.

A plain index (format 1/2) is converted on its first ``add``/``delete``: it
becomes the first shard (its files hard-linked, not copied, plus BM25 token
ids computed once) with a generation hard-linked from its own graph files and
the union state a growable build kept (``graph.growable``), which that first
add extends; the new root replaces the plain directory by rename. ``compact``
makes the merged shard's state, so the add after it extends that too. Indices
with SiReRAG/RAPTOR tree pools are refused: a generation has none (the trees
cluster the whole corpus).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gearag import setops
from gearag.config import IndexConfig
from gearag.data.ids import numbered_after, read_ids
from gearag.derive.rekey import OldShard
from gearag.derive.union_files import cannot_grow, is_state_file
from gearag.errors import ConfigError, DataError, IndexFormatError
from gearag.extract import make_extractor
from gearag.hashing import stable_hashes
from gearag.indexing.bm25 import shard_tokens
from gearag.indexing.delta_generation import Declined, DeltaConfig, why_whole, write_delta_generation
from gearag.indexing.duplicates import NewDocuments, new_documents
from gearag.indexing.generation import (
    SHARD_STAGES,
    compact_generation,
    delta_base,
    link_generation,
    write_generation,
    write_merged_shard,
)
from gearag.indexing.pipeline import build_index
from gearag.model import Passage
from gearag.options import build_config
from gearag.store.checkpoint import text_key
from gearag.store.cleanup import RETAINED, keep_plain_files, remove_unlisted
from gearag.store.collection import PASSAGES, TRIPLES
from gearag.store.index import (
    FORMAT,
    MANIFEST,
    SHARDED,
    SHARDED_FORMAT_VERSION,
    Index,
    manifest_identity,
    passage_contents,
    read_manifest,
)
from gearag.store.lease import PLAIN, claimed
from gearag.store.passage_contents import CONTENT_HASHES, Content, content_hashes, find_contents
from gearag.store.passage_ids import ID_HASHES, find_rows, stored_passage_ids
from gearag.store.rows import JsonlRows, line_offsets, offsets_rel
from gearag.store.shards import (
    GENERATIONS_DIR,
    SHARDED_COLLECTIONS,
    SHARDS_DIR,
    ShardRef,
    Union,
    generation_ref,
    is_sharded,
    kept_state,
    load_sharded,
    load_shards,
    read_tombstones,
    shard_key,
    shard_refs,
    union_of,
    write_manifest_atomic,
)
from gearag.store.writer import (
    IndexLock,
    IndexWriter,
    _fsync_dir,
    check_unlocked,
    foreign_entries,
    index_location,
    swap_directory,
)
from gearag.version import __version__

Step = Callable[[str, float], None]
#: Root manifest key: the number of the next ``p<n>`` id an add gives a document without one (:func:`next_auto_id`).
NEXT_AUTO_ID = "next_auto_id"


@dataclass
class _State:
    """A sharded index as its manifest describes it, with its shards loaded."""

    root: Path
    manifest: dict[str, Any]
    config: IndexConfig
    refs: list[ShardRef]
    shards: list[Index]
    generation: str
    tombstones: dict[str, np.ndarray] = field(default_factory=dict)

    def union(self) -> Union:
        return union_of([r.name for r in self.refs], self.shards, self.tombstones)


def check_index_dir(root: Path) -> dict[str, Any]:
    """The manifest of the index at ``root`` (an IndexFormatError naming it otherwise); a BusyError if another
    process is writing it (checked again, for real, when the operation takes the lock)."""
    from gearag.store.backend import backend_of

    if backend_of(root) == "lance":
        raise ConfigError(f"{root}: a Lance export is read-only; update the index directory it was exported from "
                          "(gearag add/delete/compact), then gearag export it again")
    check_unlocked(Path(root))  # first: a running update's work files are not what the manifest check is about
    return read_manifest(index_location(root))


def _refuse_unextendable(root: Path, manifest: dict[str, Any], what: str) -> None:
    extra = [c for c in (manifest.get("collections") or {}) if c not in SHARDED_COLLECTIONS]
    config = IndexConfig.from_dict(manifest.get("config", {}))
    reason = f"tree pools ({', '.join(extra)})" if extra else cannot_grow(config)
    if reason:
        raise ConfigError(f"{root}: gearag {what} cannot update an index with {reason}: an update would drop "
                          "them; rebuild it with gearag index")


def _file_extractor(name: str) -> bool:
    """An extractor that reads given triples from a file (``openie:FILE``): the file is data, not a setting."""
    return name.startswith("openie:")


#: The index options an add may give its new shard differently from the stored config (:func:`shard_config`);
#: ``gearag add --help`` lists these, every other can only restate the stored settings.
SHARD_OPTIONS = ("extractor",)


def shard_config(config: IndexConfig, options: dict[str, Any] | None) -> IndexConfig:
    """The config the new documents are built with: the stored one, except a file extractor's file.

    An index built with ``--extractor openie:FILE`` takes the triples of the
    documents it adds from another ``openie:`` file (the stored one has no
    triples for them); every other setting must be the stored one.
    """
    wanted = (options or {}).get("extractor")
    if wanted and _file_extractor(wanted) and _file_extractor(config.extract.extractor):
        return replace(config, extract=replace(config.extract, extractor=wanted))
    return config


def check_options(root: Path, config: IndexConfig, options: dict[str, Any] | None) -> None:
    """Options given to ``add`` must agree with the index's stored config (the new documents use it).

    The one exception is the file of an ``openie:FILE`` extractor (:func:`shard_config`).
    """
    config = shard_config(config, options)
    for name, value in (options or {}).items():
        if value is None:
            continue
        changed = build_config(IndexConfig, {name: value}, what="gearag add", base=config)
        if changed != config:
            raise ConfigError(f"{root}: --{name.replace('_', '-')} {value} conflicts with the index's stored "
                              "config; gearag add uses the settings the index was built with (omit the option)")


def next_auto_id(root: str | Path) -> int:
    """The number ``n`` of the first ``p<n>`` id ``gearag add`` gives a document without one.

    Ids are unique within an index, and a corpus loaded without ids numbers its
    records ``p0, p1, …``; an add continues after every number an earlier build or
    add could have used (:data:`NEXT_AUTO_ID`, or for an index written before it was
    kept, the rows its shards hold), so adding a second id-less file does not clash
    with the first. A number an id the user gave already holds (in the corpus, or
    in the index: :func:`held_ids`) is skipped (:func:`gearag.data.ids.number_missing`).
    """
    root = index_location(root)
    manifest = read_manifest(root)
    if not is_sharded(manifest):
        return _auto_id_start(manifest, lambda: int((manifest.get("counts") or {}).get("passages") or 0))
    return _auto_id_start(manifest, lambda: sum(
        int((read_manifest(root / ref.rel).get("counts") or {}).get("passages") or 0)
        for ref in shard_refs(root, manifest)))


def _auto_id_start(manifest: dict[str, Any], rows: Callable[[], int]) -> int:
    kept = manifest.get(NEXT_AUTO_ID)
    return kept if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0 else rows()


def _root_manifest(state_config: IndexConfig, refs: list[ShardRef], shards: list[Index], generation: tuple[str, str],
                   counts: dict[str, int], seconds: dict[str, float], op: str, auto_id: int) -> dict[str, Any]:
    first = shards[0].manifest
    return {
        "format": FORMAT,
        "format_version": SHARDED_FORMAT_VERSION,
        "layout": SHARDED,
        "gearag_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": state_config.to_dict(),
        "extractor_key": first.get("extractor_key"),
        "embedding_dim": first.get("embedding_dim"),
        "counts": counts,
        "collections": {PASSAGES: {"rows": counts["passages"]}, TRIPLES: {"rows": counts["triples"]}},
        "shards": [r.to_dict() for r in refs],
        "generation": {"name": generation[0], "manifest_sha256": generation[1]},
        "last_update": {"op": op, "seconds": seconds},
        NEXT_AUTO_ID: auto_id,
        "files": {},
    }


def _load_state(root: Path, manifest: dict[str, Any]) -> _State:
    refs = shard_refs(root, manifest)
    shards = load_shards(root, refs)
    gname, _ = generation_ref(root, manifest)
    tombstones = read_tombstones(root / GENERATIONS_DIR / gname, {r.name: len(s.passages)
                                                                 for r, s in zip(refs, shards, strict=True)})
    config = IndexConfig.from_dict(manifest.get("config", {}))
    return _State(root, manifest, config, refs, shards, gname, tombstones)


def _remove_stale_roots(root: Path) -> None:
    """Temporary roots of conversions that were killed (only under the lock)."""
    for pattern in (f".{root.name}.tmp-*", f".{root.name}.old-*"):
        for stale in root.parent.glob(pattern):
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale, ignore_errors=True)


def _convert_plain(root: Path, manifest: dict[str, Any], on_step: Step | None) -> None:
    """Turn the plain index at ``root`` into a sharded one with one shard, atomically (by rename)."""
    started = time.perf_counter()
    foreign = foreign_entries(root, manifest)
    if foreign:
        raise IndexFormatError(f"{root}: holds files the index did not write ({', '.join(foreign[:3])}); "
                               "move them away before gearag add/delete converts it to a sharded index")
    plain = Index.load(root)
    config = plain.config
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}.tmp-"))
    try:
        state = kept_state(manifest)  # a growable build's union state, kept for its shard: the first add extends it
        name = state["shard"] if state is not None else f"s-{plain.identity[:16]}"
        with IndexWriter(tmp / SHARDS_DIR / name) as w:
            # The per-passage files only: BM25 models and graph arrays belong to generations.
            listed = manifest.get("files") or {}
            for rel in listed:
                if not rel.startswith(("bm25/", "graph/")) and not is_state_file(rel):
                    w.link(rel, root / rel, root)
            # Row offsets and id hashes, if its build did not keep them (before they were kept): once, here;
            # the offsets are the ones loading it just scanned for.
            for rel, rows in (("passages.jsonl", plain.passages), ("triples.jsonl", plain.triples.rows)):
                if offsets_rel(rel) not in listed:
                    scanned = rows.offsets if isinstance(rows, JsonlRows) else line_offsets(root / rel)
                    w.write_array(offsets_rel(rel), scanned)
            if ID_HASHES not in listed:
                w.write_array(ID_HASHES, stable_hashes(stored_passage_ids(root / "passages.jsonl")))
            if CONTENT_HASHES not in listed:
                w.write_array(CONTENT_HASHES, content_hashes(plain.passages))
            # The two collections' postings at once (array work that releases the GIL; ~2.5 s each at 1M).
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="gearag-postings") as pool:
                for done in [pool.submit(shard_tokens, w, root, listed, coll, texts)
                             for coll, texts in ((PASSAGES, passage_contents(plain.passages)),
                                                 (TRIPLES, plain.triples.texts()))]:
                    done.result()
            kept = {k: v for k, v in manifest.items()
                    if k not in ("format", "format_version", "gearag_version", "created", "files", "union")}
            kept["config"] = config.to_dict()
            kept["collections"] = {n: replace(c.spec, bm25=None).to_dict() for n, c in plain.collections.items()}
            w.commit(kept)
        shard_dir = tmp / SHARDS_DIR / name
        refs = [ShardRef(name, manifest_identity(shard_dir))]
        counts = {"passages": len(plain.passages), "triples": len(plain.triples), "entities": plain.graph.n_entities}
        gen = link_generation(root, tmp, refs, counts, state)
        seconds = {"convert": round(time.perf_counter() - started, 3)}
        shard = Index.load(shard_dir)
        converted = _root_manifest(config, refs, [shard], gen, counts, seconds, "convert",
                                   _auto_id_start(manifest, lambda: counts["passages"]))
        # A reader of the plain index (gearag serve) keeps reading its files where they are: they are linked
        # into the new root until it lets go; without one, none can lease it until the swap is done.
        with claimed(root, PLAIN, create=True) as free:
            if not free:
                converted[RETAINED] = keep_plain_files(root, tmp, listed)
            (tmp / MANIFEST).write_text(json.dumps(converted, indent=2, ensure_ascii=False), encoding="utf-8")
            _fsync_dir(tmp)
            swap_directory(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if on_step:
        on_step("convert", time.perf_counter() - started)


def _open(root: Path, what: str, on_step: Step | None) -> _State:
    """The sharded index at ``root`` (converting a plain one), under the caller's lock."""
    manifest = read_manifest(root)
    _refuse_unextendable(root, manifest, what)
    if not is_sharded(manifest):
        _convert_plain(root, manifest, on_step)
        manifest = read_manifest(root)
    return _load_state(root, manifest)


def _commit(state: _State, refs: list[ShardRef], shards: list[Index], gen: tuple[str, str], counts: dict[str, int],
            seconds: dict[str, float], op: str, union: Union | None = None, added: Sequence[Passage] = ()) -> Index:
    """Write the root manifest listing ``refs`` and generation ``gen`` (``added``: the passages an add stored,
    past which, and past every ``p<n>`` among them, later adds number the documents that have no id)."""
    start = _auto_id_start(state.manifest, lambda: sum(len(s.passages) for s in state.shards))
    auto_id = max(start + len(added), numbered_after(p.id for p in added))
    manifest = _root_manifest(state.config, refs, shards, gen, counts, seconds, op, auto_id)
    if state.manifest.get(RETAINED):  # a converted index's plain files, still leased by a reader
        manifest[RETAINED] = state.manifest[RETAINED]
    write_manifest_atomic(state.root, manifest)
    remove_unlisted(state.root, manifest)
    # The shards in memory are the ones just listed (same manifest hashes): not read again.
    index = load_sharded(state.root, read_manifest(state.root), loaded=shards, union=union)
    index.identity = manifest_identity(state.root)
    return index


class _Locked:
    """The index lock of ``root`` (symlinks resolved) for one operation, with leftovers of killed conversions
    removed."""

    def __init__(self, root: Path) -> None:
        self.root = index_location(root)
        check_unlocked(self.root)  # busy before anything else: mid-update, the directory may be mid-swap
        read_manifest(self.root)  # a non-index directory fails here, before the lock
        self.lock = IndexLock(self.root)

    def __enter__(self) -> None:
        self.lock.acquire()
        _remove_stale_roots(self.root)

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def add_documents(root: str | Path, passages: Sequence[Passage], *, options: dict[str, Any] | None = None,
                  on_step: Step | None = None, extractor_options: Mapping[str, object] | None = None,
                  delta: DeltaConfig | None = None,
                  keep_duplicates: bool = False,
                  on_new: Callable[[NewDocuments], None] | None = None) -> Index:
    """Add ``passages`` to the index at ``root`` as a new shard; returns the updated index.

    A document the index already holds (same title and text), or that repeats
    an earlier one, is skipped unless ``keep_duplicates``
    (:mod:`gearag.indexing.duplicates`); ``on_new`` is told what is added and
    what skipped, before any work. With nothing left to add the index is not
    touched (and returned as it is). ``options`` (CLI config options) must
    agree with the stored config. A passage id already in the index for
    other content is an error, raised before any work.
    ``extractor_options`` go to the new shard's extractor factory (an LLM
    extractor: ``llm_base_url``, ``llm_model``, ``llm_gguf``, ``llm_fallback``,
    ``llm_max_tokens``; default: the environment, as for ``gearag index``). ``delta``: when the generation is
    written as a delta over the last full one (default :class:`DeltaConfig`:
    while the passages added since it are within a bound; where no delta can
    say the union, in full; :mod:`gearag.indexing.delta_generation`).
    """
    root = index_location(root)
    if not passages:
        raise DataError("cannot add an empty corpus")
    with _Locked(root):
        manifest = read_manifest(root)
        _refuse_unextendable(root, manifest, "add")
        check_options(root, IndexConfig.from_dict(manifest.get("config", {})), options)
        loaded = _load_state(root, manifest) if is_sharded(manifest) else None
        new = new_documents(passages, lambda wanted: _held_contents(root, manifest, loaded, wanted),
                            keep_duplicates=keep_duplicates)
        if on_new is not None:
            on_new(new)
        if not new.passages:
            return Index.load(root)  # every document is there already: a no-op
        passages = new.passages
        _check_new_ids(root, manifest, loaded, passages)
        state = loaded or _open(root, "add", on_step)
        seconds: dict[str, float] = {}
        started = time.perf_counter()
        key = shard_key(passages)
        taken = {r.name for r in state.refs}
        name = f"s-{key}"
        n = 1
        while name in taken:
            n += 1
            name = f"s-{key}-{n}"
        shard_dir = root / SHARDS_DIR / name
        shard = _finished_shard(shard_dir, passages)
        if shard is None:
            cfg = shard_config(IndexConfig.from_dict(manifest.get("config", {})), options)
            extractor = make_extractor(cfg.extract.extractor, **(extractor_options or {}))
            try:
                shard = build_index(passages, shard_dir, cfg, extractor=extractor, overwrite=shard_dir.exists(),
                                    stages=SHARD_STAGES)
            finally:
                if hasattr(extractor, "close"):
                    extractor.close()
        seconds["shard"] = round(time.perf_counter() - started, 3)
        if on_step:
            on_step("shard", seconds["shard"])
        refs = [*state.refs, ShardRef(name, shard.identity)]
        shards = [*state.shards, shard]
        started = time.perf_counter()
        u = union_of([r.name for r in refs], shards, state.tombstones)
        why = why_whole(delta or DeltaConfig(), root, state.generation, len(u.passages), len(refs))
        # The add's derivation, written as a delta within the bound and whole (the next base) past it. A delta
        # that declines (the add moved the hub cut or the capitalisation fallback) is written whole, as past the
        # bound; where no delta can say the union at all, the union's generation is derived from nothing. The
        # full generation records why it is one.
        for flat in (False, True) if why is None else (True,):
            written = write_delta_generation(root, refs, shards, state.tombstones, state.config, state.generation,
                                             u, flat=flat, why=why)
            if not isinstance(written, Declined):
                break
            why = why or written.reason
        gname, gsha, counts = written if not isinstance(written, Declined) else write_generation(
            root, refs, shards, state.tombstones, state.config, state.generation, union=u, why=why)
        seconds["generation"] = round(time.perf_counter() - started, 3)
        if on_step:
            on_step("generation", seconds["generation"])
        return _commit(state, refs, shards, (gname, gsha), counts, seconds, "add", union=u, added=passages)


def _parts(root: Path, manifest: dict[str, Any], state: _State | None) -> list[tuple[Any, ...]]:
    """Per shard (a plain index: itself) its directory, listed files, deleted rows and loaded rows (if loaded)."""
    if state is None:
        return [(root, manifest.get("files") or {}, None, None)]
    return [(root / ref.rel, shard.manifest.get("files") or {}, state.tombstones.get(ref.name), shard.passages)
            for ref, shard in zip(state.refs, state.shards, strict=True)]


def _located(root: Path, manifest: dict[str, Any], state: _State | None, ids: Sequence[str]) -> list[dict[str, int]]:
    """Per shard (a plain index: itself), the live row of each of ``ids`` it holds (``state``: the loaded
    shards; None: a plain index); each shard's stored id hashes are compared, not every id read."""
    return [find_rows(path, listed, ids, dead, rows) for path, listed, dead, rows in _parts(root, manifest, state)]


def _held_contents(root: Path, manifest: dict[str, Any], state: _State | None,
                   wanted: Sequence[Passage]) -> dict[Content, str]:
    """The id of a live passage holding each content (title, text) of ``wanted`` the index holds; each shard's
    stored content hashes are compared, not every text read."""
    held: dict[Content, str] = {}
    for path, listed, dead, rows in _parts(root, manifest, state):
        for content, pid in find_contents(path, listed, wanted, dead, rows).items():
            held.setdefault(content, pid)
    return held


def held_ids(root: str | Path, ids: list[str]) -> set[str]:
    """Those of ``ids`` that passages of the index at ``root`` have (the ids ``gearag add`` must not give)."""
    root = index_location(root)
    manifest = read_manifest(root)
    state = _load_state(root, manifest) if is_sharded(manifest) else None
    return {pid for rows in _located(root, manifest, state, ids) for pid in rows}


def _check_new_ids(root: Path, manifest: dict[str, Any], state: _State | None, passages: Sequence[Passage]) -> None:
    seen: set[str] = set()
    dup_new = [p.id for p in passages if p.id in seen or seen.add(p.id)]  # type: ignore[func-returns-value]
    if dup_new:
        raise DataError(f"duplicate passage id {dup_new[0]!r} in the documents to add")
    held = {pid for rows in _located(root, manifest, state, [p.id for p in passages]) for pid in rows}
    clash = [p.id for p in passages if p.id in held]
    if clash:
        more = f" and {len(clash) - 5} more" if len(clash) > 5 else ""
        raise DataError(f"{root}: passage id {', '.join(map(repr, clash[:5]))}{more} already in the index "
                        "(ids must stay unique; delete the old passage first or give the new one another id)")


def _finished_shard(shard_dir: Path, passages: Sequence[Passage]) -> Index | None:
    """The shard a killed run of the same ``add`` already committed, if it holds exactly ``passages``."""
    if not (shard_dir / MANIFEST).exists():
        return None
    try:
        shard = Index.load(shard_dir)
    except IndexFormatError:
        return None
    return shard if shard.passages == list(passages) else None


def delete_documents(root: str | Path, ids: Sequence[str], *, on_step: Step | None = None) -> Index:
    """Delete the passages with ``ids`` (and their triples); unknown ids are an error, nothing is written."""
    root = index_location(root)
    with _Locked(root):
        manifest = read_manifest(root)
        _refuse_unextendable(root, manifest, "delete")
        loaded = _load_state(root, manifest) if is_sharded(manifest) else None
        located = _located(root, manifest, loaded, ids)
        found = {pid for rows in located for pid in rows}
        unknown = list(dict.fromkeys(i for i in ids if i not in found))
        if unknown:
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise DataError(f"{root}: no passage with id {', '.join(map(repr, unknown[:5]))}{more} in the index;"
                            " nothing deleted (an id is a corpus record's `id`, or the p<n> gearag gave a record"
                            " without one, as run files show)")
        total = (manifest.get("counts") or {}).get("passages")
        if isinstance(total, int) and len(found) >= total:
            raise DataError(f"{root}: deleting every passage would leave an empty index; nothing deleted")
        state = loaded or _open(root, "delete", on_step)  # converted: the plain index is its one shard, row for row
        tombstones = dict(state.tombstones)
        for ref, rows in zip(state.refs, located, strict=True):
            if rows:
                tombstones[ref.name] = setops.union(tombstones.get(ref.name, np.zeros(0, np.int64)),
                                                  sorted(rows.values()))
        started = time.perf_counter()
        u = union_of([r.name for r in state.refs], state.shards, tombstones)
        # The delete's delta over the generation it deletes from, written whole; else derived from the union.
        previous = _whole(state)
        written = write_delta_generation(root, state.refs, state.shards, tombstones, state.config, previous,
                                         u, flat=True)
        gname, gsha, counts = written if not isinstance(written, Declined) else write_generation(
            root, state.refs, state.shards, tombstones, state.config, previous, union=u)
        seconds = {"generation": round(time.perf_counter() - started, 3)}
        if on_step:
            on_step("generation", seconds["generation"])
        return _commit(state, state.refs, state.shards, (gname, gsha), counts, seconds, "delete", union=u)


def _whole(state: _State, union: Union | None = None) -> str:
    """The current generation written whole: itself, or a delta generation's add written as a full generation
    first (removed once the next generation is committed), which a delete or a compact then starts from.
    ``union``: the current union, when the caller has it."""
    gen = state.root / GENERATIONS_DIR / state.generation
    if delta_base(gen) == gen:
        return state.generation
    whole = write_delta_generation(state.root, state.refs, state.shards, state.tombstones, state.config,
                                   state.generation, union or state.union(), flat=True)
    return state.generation if isinstance(whole, Declined) else whole[0]


def compact(root: str | Path, *, on_step: Step | None = None) -> Index:
    """Merge every shard into one without the deleted rows (the union, and so every ranking, is unchanged).

    With nothing to merge, only what earlier updates kept for readers that have since let go is removed.
    """
    root = index_location(root)
    with _Locked(root):
        manifest = read_manifest(root)
        if not is_sharded(manifest):
            return Index.load(root)  # a plain index is one shard already
        state = _load_state(root, manifest)
        if len(state.refs) == 1 and not any(len(v) for v in state.tombstones.values()):
            remove_unlisted(root, manifest)
            return Index.load(root)
        started = time.perf_counter()
        u = state.union()
        name = f"c-{text_key(state.generation, size=8)}"
        shard_dir = root / SHARDS_DIR / name
        previous = _whole(state, u)
        with IndexWriter(shard_dir, overwrite=shard_dir.exists()) as w:
            write_merged_shard(w, u, root / GENERATIONS_DIR / previous, [root / r.rel for r in state.refs],
                               state.config, dict(state.manifest["counts"]))
        old = [OldShard(r.name, len(s.triples), u.union_rows(PASSAGES, i), u.triple_keep[i])
               for i, (r, s) in enumerate(zip(state.refs, state.shards, strict=True))]
        del u  # the generation reads the merged shard, not the old shards' rows
        shard = Index.load(shard_dir)
        refs = [ShardRef(name, shard.identity)]
        # The union is unchanged: the generation's graphs are kept and its state re-keyed to the merged shard (its
        # tables and indices composed from the old shards', so the next add extends them); else derived from it.
        gname, gsha, counts = compact_generation(root, refs[0], old, previous) or write_generation(
            root, refs, [shard], {}, state.config)
        seconds = {"compact": round(time.perf_counter() - started, 3)}
        if on_step:
            on_step("compact", seconds["compact"])
        return _commit(state, refs, [shard], (gname, gsha), counts, seconds, "compact")


__all__ = ["add_documents", "check_index_dir", "compact", "delete_documents", "held_ids", "next_auto_id", "read_ids"]
