"""The build state that index stages share, and the stage protocol.

A build runs stages in order over one :class:`Build`. Each stage reads what
earlier stages left in it, writes its files through the build's
:class:`~gearag.store.writer.IndexWriter` (into the temporary directory that
becomes the index on commit) and records its results: the collections it
adds, the texts later stages index, manifest entries. A stage whose work is
expensive keeps resumable output in the build's work directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from gearag.config import IndexConfig
from gearag.embed import Embedder, make_embedder
from gearag.extract.base import TripleExtractor
from gearag.indexing.executor import LOCAL, BatchExecutor
from gearag.model import Fact, Passage
from gearag.store.collection import CollectionSpec
from gearag.store.index import TripleTable
from gearag.store.rows import Mapped
from gearag.store.writer import IndexWriter


@dataclass
class CollectionBuild:
    """A collection being built: its rows' texts and what the BM25 and embedding stages add to it."""

    spec: CollectionSpec
    texts: Sequence[str]
    #: Keep a static embedder's token-sum norms (exact path scores over triples, expand.scoring).
    weights: bool = False
    #: Unit row vectors already computed with the build's embedder (the embed stage then stores them as is).
    vectors: np.ndarray | None = None


@dataclass
class TripleColumns:
    """The cleaned triples as parallel columns, ``owner[i]`` = passage row of triple i."""

    subjects: Sequence[str] = field(default_factory=list)
    predicates: Sequence[str] = field(default_factory=list)
    objects: Sequence[str] = field(default_factory=list)
    owner: Sequence[int] | np.ndarray = field(default_factory=list)
    #: Triples of passage r are ``indptr[r]:indptr[r + 1]``.
    indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    #: ``[s, p, o]`` rows the columns are views of (:meth:`read`), else None.
    rows: Sequence[Sequence[str]] | None = None

    @classmethod
    def read(cls, path: Path, owner: np.ndarray, indptr: np.ndarray) -> TripleColumns:
        """The columns of the ``triples.jsonl`` at ``path``, read from it on demand (not held as strings)."""
        table = TripleTable.read(path, owner)
        return cls(table.subjects, table.predicates, table.objects, owner, indptr, table.rows)

    def _text(self, i: int) -> str:
        return f"{self.subjects[i]} {self.predicates[i]} {self.objects[i]}"

    def texts(self) -> list[str]:
        return [f"{s} {p} {o}" for s, p, o in zip(self.subjects, self.predicates, self.objects, strict=True)]

    def lazy_texts(self) -> Sequence[str]:
        """The same texts, made when read (a build does not keep a second string per triple)."""
        if self.rows is not None:
            return Mapped(self.rows, " ".join)
        return Mapped(range(len(self.subjects)), self._text)


@dataclass
class Build:
    """Everything one index build knows; stages fill it in."""

    passages: Sequence[Passage]
    config: IndexConfig
    writer: IndexWriter
    #: Where expensive stages keep resumable state until the build succeeds.
    work: Path
    extractor: TripleExtractor | None = None
    #: Ready LLM roles for stages that call an LLM (the SiReRAG trees with ``engine=openai``);
    #: None = made from the environment when needed.
    llm_roles: Any = None
    #: Runs the per-row work of the extract and embed stages (:mod:`gearag.indexing.executor`).
    executor: BatchExecutor = LOCAL
    #: Stage outputs.
    extracted: list[list[Fact]] | None = None
    triples: TripleColumns | None = None
    #: Per passage, its named-entity span texts (the ner stage; only for an index that stores NER mentions).
    ner_spans: list[list[str]] | None = None
    collections: dict[str, CollectionBuild] = field(default_factory=dict)
    #: Extra manifest entries (extractor key, counts, usage, ...).
    manifest: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _embedder: Embedder | None = field(default=None, repr=False)

    def embedder(self) -> Embedder:
        """The build's embedder (``config.embed.embedder``), loaded once for every stage."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embed.embedder)
        return self._embedder


class Stage(Protocol):
    """One step of an index build."""

    name: str

    def run(self, build: Build) -> None: ...
