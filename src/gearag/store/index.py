"""The index directory: passages ``C``, triples ``T``, the triple graph, BM25 and dense indices.

Layout (all paths relative to the index directory)::

    manifest.json                 format version, config, counts, file checksums
    passages.jsonl                {"id", "title", "text"} per passage, row order
    triples.jsonl                 [subject, predicate, object] per triple, row order
    entities.json                 normalised entity names (graph nodes)
    arrays/*.npy                  triple→passage, head/tail entity ids, CSR adjacency
    vectors/passages.npy          unit-length passage embeddings (float32)
    vectors/triples.npy           unit-length triple embeddings (float32)
    vectors/triple_weights.npy    static embedders only: token-sum norms (see below)
    bm25/passages/, bm25/triples/ bm25s indices
    tokens/passages/, tokens/triples/  their BM25 token ids (what a shard keeps: gearag add reuses them)

Writing (atomic build-then-rename under an OS lock, safe overwrite) is
:mod:`gearag.store.writer`.

Loading checks that every file the index needs (its fixed layout plus each
collection's files) is listed in the manifest and present with its size;
files up to :data:`~gearag.store.checksum.SMALL_FILE_BYTES` are checksummed on every load,
larger ones by a digest of sampled blocks recorded at build time (``verify=True``
checksums everything; :mod:`gearag.store.checksum`). The graph arrays are checked for consistent shapes
and in-range ids. Any mismatch is an :class:`IndexFormatError` that says to
rebuild. Passages and triples are not parsed at load: they are read from
their JSONL files row by row when used (:mod:`gearag.store.rows`; a corrupt
row is an IndexFormatError when it is read), vectors and BM25 arrays are
memory-mapped.

For static embedders, ``triple_weights[i] * triples[i]`` is triple ``i``'s
token-vector sum, so a path's exact embedding direction is the weighted sum
of its triples' rows (see :class:`gearag.embed.static.StaticEmbedder`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gearag.data.jsonio import load_json
from gearag.errors import IndexFormatError
from gearag.model import Passage
from gearag.store import checksum
from gearag.store.checksum import file_digest
from gearag.store.collection import PASSAGES, TRIPLES, Collection, CollectionSpec, default_specs, load_array
from gearag.store.graph import LayeredTripleGraph, TripleGraph
from gearag.store.interface import VARIANTS as VARIANTS
from gearag.store.interface import IndexBase, IndexStore, T
from gearag.store.lease import lease_name, take
from gearag.store.npy import load_npy
from gearag.store.rows import JsonList, JsonlRows, Mapped, offsets_rel
from gearag.store.triples import TripleTable as TripleTable
from gearag.store.triples import triple_of_record as triple_of_record

FORMAT = "gearag-index"
#: 3 checksums files with XXH3-128 (:mod:`gearag.store.checksum`); 2 (SHA-256, and lists the index's
#: collections in the manifest) and 1 (no listing) still load.
FORMAT_VERSION = 3
MIN_FORMAT_VERSION = 1
#: A sharded index's root manifest (:mod:`gearag.store.shards`): shards plus one generation.
#: 4: BM25 is scored from the shards' postings (no bm25s model in the generation); 3 still loads.
SHARDED_FORMAT_VERSION = 4
SHARDED = "sharded"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Layout:
    """How to read an index whose manifest names a layout other than the plain one."""

    #: ``(path, manifest, verify=...)`` → the assembled :class:`Index`.
    load: Callable[..., Index]
    #: ``(path, manifest, checksums=...)``: verify its files without loading (``gearag info``).
    check: Callable[..., None]


#: The layouts besides the plain one, by the manifest's ``layout``. The module that owns a layout registers it
#: (:mod:`gearag.store.shards`: ``sharded``; importing :mod:`gearag.store` imports it), so this module, which
#: that one builds on, imports none of them.
LAYOUTS: dict[str, Layout] = {}


def _layout(path: Path, manifest: dict[str, Any]) -> Layout | None:
    name = manifest.get("layout")
    if name is None:
        return None
    layout = LAYOUTS.get(str(name))
    if layout is None:
        raise IndexFormatError(f"{path}: unknown index layout {name!r}; a newer gearag wrote it?")
    return layout
#: How often :meth:`Index.open` reads the manifest again when an update replaced it while it took its lease.
LEASE_ATTEMPTS = 5

#: The passage graph's directory in an index (a sharded index's is its generation's, ``manifest["graph_dir"]``),
#: the prepared graph's directory in it, and where a delta's prepared directory keeps the base's files.
GRAPH_DIR = "graph"
PREPARED = "prepared"
BASE_DIR = "base"

#: Files every index has besides its collections' files.
FIXED_FILES = (
    "passages.jsonl",
    "triples.jsonl",
    "entities.json",
    "arrays/triple_head.npy",
    "arrays/triple_tail.npy",
    "arrays/entity_indptr.npy",
    "arrays/entity_indices.npy",
    "arrays/triple_passage.npy",
    "arrays/passage_triple_indptr.npy",
)


def _sha256(path: Path) -> str:
    """SHA-256 of a file, as hex (an index's identity is its manifest's: :func:`manifest_identity`)."""
    return file_digest(path, "sha256")


def read_manifest(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise IndexFormatError(f"{path}: no such index directory")
    if not path.is_dir():
        raise IndexFormatError(f"{path}: is a file, not an index directory")
    mpath = path / MANIFEST
    if not mpath.exists():
        raise IndexFormatError(f"{path}: not a gearag index (no {MANIFEST}; an interrupted build leaves none)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"{mpath}: unreadable manifest ({exc})") from None
    except OSError as exc:
        raise IndexFormatError(f"{mpath}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexFormatError(f"{mpath}: not a gearag index manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise IndexFormatError(f"{mpath}: missing format_version")
    newest = SHARDED_FORMAT_VERSION if manifest.get("layout") == SHARDED else FORMAT_VERSION
    if version > newest:
        raise IndexFormatError(
            f"{path}: index format version {version} is newer than this gearag supports"
            f" ({newest}); upgrade gearag or rebuild the index"
        )
    if version < MIN_FORMAT_VERSION:
        raise IndexFormatError(f"{path}: index format version {version} is too old; rebuild the index")
    _check_manifest_fields(mpath, manifest)
    return manifest


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_manifest_fields(mpath: Path, manifest: dict[str, Any]) -> None:
    """The fields the loader relies on have the types it expects (they may have been edited by hand)."""

    def bad(field: str, expected: str) -> IndexFormatError:
        return IndexFormatError(f"{mpath}: field {field!r} is malformed (expected {expected}); rebuild the index")

    files = manifest.get("files")
    if not isinstance(files, dict):
        raise bad("files", "an object of file entries")
    for rel, meta in files.items():
        parts = Path(rel).parts
        if not rel or Path(rel).is_absolute() or ".." in parts:
            raise bad(f"files.{rel}", "a path inside the index")
        if checksum.algorithm(meta) is None or not _is_count(meta["bytes"]):
            raise bad(f"files.{rel}", '{"bytes": <size>, "xxh3_128" or "sha256": <hex>}')
        if "sample" in meta and not isinstance(meta["sample"], str):
            raise bad(f"files.{rel}.sample", "a hex digest")
    counts = manifest.get("counts", {})
    if not isinstance(counts, dict) or not all(_is_count(v) for v in counts.values()):
        raise bad("counts", "an object of non-negative integers")
    for key in ("config", "collections"):
        if key in manifest and not isinstance(manifest[key], dict):
            raise bad(key, "an object")


def required_files(path: Path, manifest: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What an index needs: (files, directories) relative to ``path`` — the fixed layout plus every collection's."""
    files = list(FIXED_FILES)
    dirs: list[str] = []
    for spec in collection_specs(path, manifest).values():
        if spec.bm25:
            dirs.append(spec.bm25)
        files.extend(f for f in spec.files() if f != spec.bm25)
    return list(dict.fromkeys(files)), list(dict.fromkeys(dirs))


def verify_files(path: Path, manifest: dict[str, Any], *, checksums: bool) -> None:
    """Check the files an index needs and every file its manifest lists.

    Every required file must be listed and present; every listed file must
    have its size. Files up to :data:`~gearag.store.checksum.SMALL_FILE_BYTES` are checksummed;
    larger ones by their sampled hash (indices of format 1 have none: size
    only). ``checksums=True`` (``--verify``) checksums every file in full.
    """
    listed: dict[str, dict[str, Any]] = manifest.get("files") or {}
    files, dirs = required_files(path, manifest)
    for rel in files:
        if rel not in listed:
            raise IndexFormatError(
                f"{path}: the manifest does not list {rel}, which the index needs; rebuild the index")
    for rel in dirs:
        if not (path / rel).is_dir() or not any(name.startswith(rel.rstrip("/") + "/") for name in listed):
            raise IndexFormatError(f"{path}: missing directory {rel}; rebuild the index")
    verify_listed(path, listed, checksums=checksums)


def verify_listed(path: Path, listed: dict[str, dict[str, Any]], *, checksums: bool) -> None:
    """Every file of ``listed`` (a manifest's ``files``) is present with its size and checksum."""
    for rel, meta in listed.items():
        f = path / rel
        if not f.is_file():
            raise IndexFormatError(f"{path}: missing file {rel}; rebuild the index")
        problem = checksum.mismatch(f, meta, full=checksums)
        if problem is not None:
            raise IndexFormatError(f"{path}: {rel} {problem} (corrupt); rebuild the index")


def check_index(path: str | Path, *, full: bool = False) -> dict[str, Any]:
    """Read and verify the index at ``path`` without loading it; returns its manifest."""
    path = Path(path)
    manifest = read_manifest(path)
    layout = _layout(path, manifest)
    if layout is not None:
        layout.check(path, manifest, checksums=full)
        return manifest
    verify_files(path, manifest, checksums=full)
    return manifest


def manifest_identity(path: Path) -> str:
    """SHA-256 of an index's manifest: changes whenever the index is rebuilt (it lists every file's checksum)."""
    try:
        return _sha256(Path(path) / MANIFEST)
    except OSError as exc:
        raise IndexFormatError(f"{path}: cannot read {MANIFEST} ({exc.strerror or exc})") from None


def _check_ids(path: Path, rel: str, array: np.ndarray, length: int | None, low: int, high: int) -> None:
    """``array`` is a 1-D integer array of ``length`` with values in ``[low, high)``."""
    if array.ndim != 1 or array.dtype.kind not in "iu" or (length is not None and len(array) != length):
        raise IndexFormatError(f"{path}: {rel} has the wrong shape or type (corrupt); rebuild the index")
    if len(array) and (int(array.min()) < low or int(array.max()) >= high):
        raise IndexFormatError(f"{path}: {rel} holds out-of-range ids (corrupt); rebuild the index")


def _check_indptr(path: Path, rel: str, indptr: np.ndarray, rows: int, total: int) -> None:
    _check_ids(path, rel, indptr, rows + 1, 0, total + 1)
    if int(indptr[0]) != 0 or int(indptr[-1]) != total or (len(indptr) > 1 and bool((np.diff(indptr) < 0).any())):
        raise IndexFormatError(f"{path}: {rel} is not a valid row index (corrupt); rebuild the index")


def passage_of_record(row: Any) -> Passage:
    """A ``passages.jsonl`` record as a :class:`Passage`."""
    return Passage(row["id"], row["title"], row["text"])


def stored_offsets(path: Path, listed: Container[str], rel: str) -> np.ndarray | None:
    """The row offsets of JSONL file ``rel`` that the index at ``path`` stored with it (``listed``: the files its
    manifest lists), memory-mapped; None for an index written before they were kept (then they are scanned for)."""
    return load_array(path, offsets_rel(rel)) if offsets_rel(rel) in listed else None


def read_entities(path: Path, n: Any) -> Sequence[str]:
    """The ``entities.json`` of the index (or generation) at ``path``: read on demand when its manifest counts
    them (``n``), else parsed now (an index whose manifest does not count them)."""
    if isinstance(n, int):
        return JsonList(path / "entities.json", n)
    entities = load_json(path / "entities.json")
    if not isinstance(entities, list):
        raise IndexFormatError(f"{path}: entities.json is not a list (corrupt); rebuild the index")
    return entities


def passage_contents(passages: Sequence[Passage]) -> Sequence[str]:
    """Each passage's ``content`` (title, newline, text), made when read: the passages collection's texts
    without a second copy of the corpus."""
    return Mapped(passages, attrgetter("content"))


@dataclass
class Index(IndexBase):
    """A loaded index directory: passages ``C``, triples ``T``, the triple graph and every named collection
    (the embedded :class:`~gearag.store.interface.IndexStore`).

    Large arrays are memory-mapped and BM25 models load on first use. An
    index may be shared between threads: :meth:`cached` builds each derived
    object (retrievers, readers, ...) once under a lock.
    """

    path: Path
    manifest: dict[str, Any]
    passages: Sequence[Passage]
    triples: TripleTable
    graph: TripleGraph | LayeredTripleGraph  #: a delta generation's is a base's and a delta's
    passage_triple_indptr: np.ndarray
    collections: dict[str, Collection]
    #: SHA-256 of the manifest: which build of ``path`` this is (run files record it to resume safely).
    identity: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    #: The read lease of an index opened by :meth:`open` (:mod:`gearag.store.lease`), else None.
    lease: Any = field(default=None, repr=False, compare=False)

    @property
    def location(self) -> str:
        """Where the index lives (a directory here; a URI for other backends)."""
        return str(self.path)

    def read_prepared(self, open_: Callable[[dict[str, Any], Callable[[str], np.ndarray]], T | None]) -> T | None:
        """``open_(meta, read)`` of the prepared passage graph stored under ``graph/prepared/`` (its
        ``prepared.json`` and ``read(name)``: an array, memory-mapped), None when the index has none;
        damaged arrays are an IndexFormatError (:func:`gearag.graph.prepared.stored_prepared`)."""
        try:
            return read_prepared(self.path / str(self.manifest.get("graph_dir", GRAPH_DIR)) / PREPARED, open_)
        except (OSError, ValueError, KeyError, TypeError):
            raise IndexFormatError(f"{self.path}: {GRAPH_DIR}/{PREPARED}/ arrays are corrupt; "
                                   "rebuild the index") from None

    def close(self) -> None:
        """Let go of the read lease (if any): a later update may then remove the files this index reads."""
        if self.lease is not None:
            self.lease.release()

    @classmethod
    def open(cls, path: str | Path, *, verify: bool = False) -> Index:
        """:meth:`load` for a reader that keeps using the index: it holds a read lease on what it loaded, so
        that ``gearag add``, ``delete`` or ``compact`` meanwhile keeps the files it reads
        (:mod:`gearag.store.lease`) until :meth:`close` or the index is dropped."""
        path = Path(path)
        for _ in range(LEASE_ATTEMPTS):
            name = lease_name(read_manifest(path))
            lease = take(path, name)
            if lease is not None and lease_name(read_manifest(path)) != name:
                lease.release()  # updated while we waited for the lease: lease what the manifest names now
                continue
            index = cls.load(path, verify=verify)
            if lease is not None and lease_name(index.manifest) != name:
                lease.release()
                continue
            index.lease = lease
            return index
        raise IndexFormatError(f"{path}: changed {LEASE_ATTEMPTS} times while being opened; try again")

    @classmethod
    def load(cls, path: str | Path, *, verify: bool = False) -> Index:
        path = Path(path)
        manifest = read_manifest(path)
        identity = manifest_identity(path)
        layout = _layout(path, manifest)
        if layout is not None:
            try:
                index = layout.load(path, manifest, verify=verify)
            except IndexFormatError:
                if manifest_identity(path) == identity:
                    raise
                return cls.load(path, verify=verify)  # updated (gearag add) while we read it: read the new one
            index.identity = identity
            return index
        verify_files(path, manifest, checksums=verify)
        try:
            index = cls._load(path, manifest)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            what = "a file is corrupt" if "pickle" in str(exc).lower() else str(exc)
            raise IndexFormatError(f"{path}: cannot read index ({what}); rebuild it") from None
        index.identity = identity
        return index

    @classmethod
    def _load(cls, path: Path, manifest: dict[str, Any]) -> Index:
        def arr(rel: str) -> np.ndarray:
            return load_array(path, rel)

        listed = manifest.get("files") or {}
        # Read on demand (row offsets only): not a Python object per passage and per triple.
        passages = JsonlRows(path / "passages.jsonl", passage_of_record, stored_offsets(path, listed, "passages.jsonl"))
        counts = manifest.get("counts", {})
        entities = read_entities(path, counts.get("entities"))
        graph = TripleGraph(
            entities=entities,
            head=np.asarray(arr("arrays/triple_head.npy")),
            tail=np.asarray(arr("arrays/triple_tail.npy")),
            indptr=np.asarray(arr("arrays/entity_indptr.npy")),
            indices=arr("arrays/entity_indices.npy"),
        )
        triples = TripleTable.read(path / "triples.jsonl", np.asarray(arr("arrays/triple_passage.npy")),
                                   stored_offsets(path, listed, "triples.jsonl"))
        if counts.get("passages") != len(passages) or counts.get("triples") != len(triples):
            raise IndexFormatError(f"{path}: contents do not match the manifest counts; rebuild the index")
        passage_triple_indptr = np.asarray(arr("arrays/passage_triple_indptr.npy"))
        n_p, n_t, n_e = len(passages), len(triples), len(entities)
        _check_ids(path, "arrays/triple_head.npy", graph.head, n_t, -1, n_e)
        _check_ids(path, "arrays/triple_tail.npy", graph.tail, n_t, -1, n_e)
        _check_ids(path, "arrays/entity_indices.npy", graph.indices, None, 0, n_t)
        _check_indptr(path, "arrays/entity_indptr.npy", graph.indptr, n_e, len(graph.indices))
        _check_ids(path, "arrays/triple_passage.npy", triples.passage, n_t, 0, max(n_p, 1))
        _check_indptr(path, "arrays/passage_triple_indptr.npy", passage_triple_indptr, n_p, n_t)
        texts: dict[str, Callable[[], Sequence[str]]] = {
            PASSAGES: lambda: passage_contents(passages),
            TRIPLES: triples.texts,
        }
        collections = {
            name: Collection(path, spec, texts.get(name) or _records_texts(path, spec))
            for name, spec in collection_specs(path, manifest).items()
        }
        return cls(
            path=path,
            manifest=manifest,
            passages=passages,
            triples=triples,
            graph=graph,
            passage_triple_indptr=passage_triple_indptr,
            collections=collections,
        )


def collection_specs(path: Path, manifest: dict[str, Any]) -> dict[str, CollectionSpec]:
    """The collections a manifest lists (format 1 manifests: the standard passages and triples)."""
    listed = manifest.get("collections")
    if listed is None:
        return default_specs(manifest.get("counts", {}), weights=(path / "vectors" / "triple_weights.npy").exists())
    if not isinstance(listed, dict):
        raise IndexFormatError(f"{path}: manifest 'collections' is not an object; rebuild the index")
    specs = {}
    for name, spec in listed.items():
        try:
            specs[name] = CollectionSpec.from_dict(name, spec)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise IndexFormatError(
                f"{path}: manifest field 'collections.{name}' is malformed; rebuild the index") from None
    return specs


def _records_texts(path: Path, spec: CollectionSpec) -> Callable[[], list[str]]:
    """Texts of a collection stored as JSONL records with a ``text`` field."""

    def load() -> list[str]:
        if spec.records is None:
            raise IndexFormatError(f"{path}: collection {spec.name!r} has no records; rebuild the index")
        with (path / spec.records).open(encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh]
        if spec.select is None:
            return texts
        select = load_array(path, spec.select)
        if len(select) != spec.rows or (len(select) and int(select.max()) >= len(texts)):
            raise IndexFormatError(f"{path}: {spec.select} does not select rows of {spec.records}; rebuild the index")
        return [texts[int(r)] for r in select]

    return load


if TYPE_CHECKING:  # mypy checks that an index directory is an IndexStore
    _INDEX_STORE: type[IndexStore] = Index


def read_prepared(directory: Path, open_: Callable[[dict[str, Any], Callable[[str], np.ndarray]], T | None],
                  mmap: bool = True) -> T | None:
    """``open_(meta, read)`` of the prepared passage graph stored in ``directory`` (its ``prepared.json``;
    ``read(name)``: an array, memory-mapped unless ``mmap`` is False), None when there is none."""
    try:
        meta = json.loads((directory / "prepared.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return open_(meta, lambda name: load_npy(directory / name, mmap=mmap)) if isinstance(meta, dict) else None
