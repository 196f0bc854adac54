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

Writes are atomic: :class:`IndexWriter` builds everything in a sibling
temporary directory, writes the manifest last and renames the directory into
place, so a crash never leaves a loadable half-index. Loading memory-maps the
large arrays and checks the manifest's file list and sizes (``verify=True``
also checks SHA-256 sums).

For static embedders, ``triple_weights[i] * triples[i]`` is triple ``i``'s
token-vector sum, so a path's exact embedding direction is the weighted sum
of its triples' rows (see :class:`gearag.embed.static.StaticEmbedder`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gearag.config import IndexConfig
from gearag.errors import ConfigError, IndexFormatError
from gearag.model import Passage, Triple
from gearag.store.collection import PASSAGES, TRIPLES, Collection, CollectionSpec, default_specs
from gearag.store.graph import TripleGraph
from gearag.version import __version__

FORMAT = "gearag-index"
#: 2 lists the index's collections in the manifest; 1 (no listing) still loads.
FORMAT_VERSION = 2
MIN_FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class IndexWriter:
    """Builds an index directory in a temporary sibling and renames it into place on commit."""

    def __init__(self, out: Path, *, overwrite: bool = False) -> None:
        self.out = Path(out)
        if self.out.exists() and not overwrite:
            raise IndexFormatError(f"{self.out}: already exists (pass --overwrite to replace it)")
        if self.out.exists() and not (self.out / MANIFEST).exists() and any(self.out.iterdir()):
            raise IndexFormatError(f"{self.out}: exists and is not a gearag index; refusing to replace it")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.out.parent / f".{self.out.name}.tmp-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()

    def path(self, rel: str) -> Path:
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_jsonl(self, rel: str, rows: list[Any]) -> None:
        with self.path(rel).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")

    def write_json(self, rel: str, value: Any) -> None:
        self.path(rel).write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")

    def write_array(self, rel: str, array: np.ndarray) -> None:
        np.save(self.path(rel), np.ascontiguousarray(array), allow_pickle=False)

    def commit(self, manifest: dict[str, Any]) -> Path:
        """Checksum every file, write the manifest, fsync, and swap the directory into place."""
        files = {}
        for p in sorted(self.tmp.rglob("*")):
            if p.is_file():
                with p.open("rb") as fh:
                    os.fsync(fh.fileno())
                files[p.relative_to(self.tmp).as_posix()] = {"bytes": p.stat().st_size, "sha256": _sha256(p)}
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "gearag_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **manifest,
            "files": files,
        }
        mpath = self.tmp / MANIFEST
        with mpath.open("w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(self.tmp)
        old = None
        if self.out.exists():
            old = self.out.parent / f".{self.out.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(self.out, old)
        os.replace(self.tmp, self.out)
        _fsync_dir(self.out.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        # Leftovers of builds that were killed (-9) before they could clean up.
        for stale in self.out.parent.glob(f".{self.out.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        return self.out

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None or self.tmp.exists():
            self.abort()


def read_manifest(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise IndexFormatError(f"{path}: no such index directory")
    mpath = path / MANIFEST
    if not mpath.exists():
        raise IndexFormatError(f"{path}: not a gearag index (no {MANIFEST}; an interrupted build leaves none)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"{mpath}: unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexFormatError(f"{mpath}: not a gearag index manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int):
        raise IndexFormatError(f"{mpath}: missing format_version")
    if version > FORMAT_VERSION:
        raise IndexFormatError(
            f"{path}: index format version {version} is newer than this gearag supports"
            f" ({FORMAT_VERSION}); upgrade gearag or rebuild the index"
        )
    if version < MIN_FORMAT_VERSION:
        raise IndexFormatError(f"{path}: index format version {version} is too old; rebuild the index")
    return manifest


def verify_files(path: Path, manifest: dict[str, Any], *, checksums: bool) -> None:
    """Check that every file the manifest lists exists with its size (and checksum)."""
    for rel, meta in manifest.get("files", {}).items():
        f = path / rel
        if not f.is_file():
            raise IndexFormatError(f"{path}: missing file {rel}; rebuild the index")
        if f.stat().st_size != meta["bytes"]:
            raise IndexFormatError(f"{path}: {rel} has the wrong size (corrupt); rebuild the index")
        if checksums and _sha256(f) != meta["sha256"]:
            raise IndexFormatError(f"{path}: {rel} fails its checksum (corrupt); rebuild the index")


@dataclass
class TripleTable:
    """The triples ``T`` as parallel columns; ``passage[i]`` is triple ``i``'s passage row."""

    subjects: list[str]
    predicates: list[str]
    objects: list[str]
    passage: np.ndarray

    def __len__(self) -> int:
        return len(self.subjects)

    def __getitem__(self, i: int) -> Triple:
        return Triple(self.subjects[i], self.predicates[i], self.objects[i], int(self.passage[i]))

    def text(self, i: int) -> str:
        return f"{self.subjects[i]} {self.predicates[i]} {self.objects[i]}"

    def texts(self) -> list[str]:
        """Each triple as the text retrievers and embedders see: ``"s p o"``."""
        return [f"{s} {p} {o}" for s, p, o in zip(self.subjects, self.predicates, self.objects, strict=True)]


@dataclass
class Index:
    """A loaded index: passages ``C``, triples ``T``, the triple graph and every named collection.

    Large arrays are memory-mapped and BM25 models load on first use. An
    index may be shared between threads: :meth:`cached` builds each derived
    object (retrievers, readers, ...) once under a lock.
    """

    path: Path
    manifest: dict[str, Any]
    passages: list[Passage]
    triples: TripleTable
    graph: TripleGraph
    passage_triple_indptr: np.ndarray
    collections: dict[str, Collection]
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def config(self) -> IndexConfig:
        return IndexConfig.from_dict(self.manifest.get("config", {}))

    def passage_triples(self, row: int) -> range:
        """Triple ids extracted from passage ``row``."""
        return range(int(self.passage_triple_indptr[row]), int(self.passage_triple_indptr[row + 1]))

    @property
    def embedder(self) -> Any:
        """The index's embedder, loaded once (under the index lock: threads never load it twice)."""
        from gearag.embed import make_embedder

        return self.cached("embedder", lambda: make_embedder(self.config.embed.embedder))

    def collection(self, name: str) -> Collection:
        """The collection called ``name``; a ConfigError lists the index's collections otherwise."""
        try:
            return self.collections[name]
        except KeyError:
            raise ConfigError(
                f"{self.path}: no collection {name!r} in this index (it has {', '.join(self.collections)})"
            ) from None

    def cached(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()`` once per index and key; thread-safe (re-entrant, so builders may nest)."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    @classmethod
    def load(cls, path: str | Path, *, verify: bool = False) -> Index:
        path = Path(path)
        manifest = read_manifest(path)
        verify_files(path, manifest, checksums=verify)
        try:
            return cls._load(path, manifest)
        except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
            raise IndexFormatError(f"{path}: cannot read index ({exc}); rebuild it") from None

    @classmethod
    def _load(cls, path: Path, manifest: dict[str, Any]) -> Index:
        def arr(rel: str) -> np.ndarray:
            return np.load(path / rel, mmap_mode="r", allow_pickle=False)

        passages = []
        with (path / "passages.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                passages.append(Passage(row["id"], row["title"], row["text"]))
        subjects, predicates, objects = [], [], []
        with (path / "triples.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                s, p, o = json.loads(line)
                subjects.append(s)
                predicates.append(p)
                objects.append(o)
        graph = TripleGraph(
            entities=json.loads((path / "entities.json").read_text(encoding="utf-8")),
            head=np.asarray(arr("arrays/triple_head.npy")),
            tail=np.asarray(arr("arrays/triple_tail.npy")),
            indptr=np.asarray(arr("arrays/entity_indptr.npy")),
            indices=arr("arrays/entity_indices.npy"),
        )
        triples = TripleTable(subjects, predicates, objects, np.asarray(arr("arrays/triple_passage.npy")))
        counts = manifest.get("counts", {})
        if counts.get("passages") != len(passages) or counts.get("triples") != len(subjects):
            raise IndexFormatError(f"{path}: contents do not match the manifest counts; rebuild the index")
        texts: dict[str, Callable[[], Sequence[str]]] = {
            PASSAGES: lambda: [p.content for p in passages],
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
            passage_triple_indptr=np.asarray(arr("arrays/passage_triple_indptr.npy")),
            collections=collections,
        )


def collection_specs(path: Path, manifest: dict[str, Any]) -> dict[str, CollectionSpec]:
    """The collections a manifest lists (format 1 manifests: the standard passages and triples)."""
    listed = manifest.get("collections")
    if listed is None:
        return default_specs(manifest.get("counts", {}), weights=(path / "vectors" / "triple_weights.npy").exists())
    if not isinstance(listed, dict):
        raise IndexFormatError(f"{path}: manifest 'collections' is not an object; rebuild the index")
    return {name: CollectionSpec.from_dict(name, spec) for name, spec in listed.items()}


def _records_texts(path: Path, spec: CollectionSpec) -> Callable[[], list[str]]:
    """Texts of a collection stored as JSONL records with a ``text`` field."""

    def load() -> list[str]:
        if spec.records is None:
            raise IndexFormatError(f"{path}: collection {spec.name!r} has no records; rebuild the index")
        with (path / spec.records).open(encoding="utf-8") as fh:
            return [json.loads(line)["text"] for line in fh]

    return load
