"""What the rest of gearag reads from a loaded index, whichever backend stores it.

:class:`IndexStore` is that interface; its implementations are :class:`gearag.store.index.Index` (an index
directory, plain or sharded) and :class:`gearag.store.lance.index.LanceIndex` (Lance tables). Neither
derives from the other: each holds its own parts, and :class:`IndexBase` (no state) gives both the
methods that follow from those parts. Code above storage annotates with :class:`IndexStore`
(and :class:`~gearag.store.collection.CollectionStore`, :class:`~gearag.store.graph.TripleGraphStore`), so
that every method runs unchanged on either backend; only code that writes or exports an index directory
needs the concrete :class:`~gearag.store.index.Index`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from gearag.config import IndexConfig
from gearag.errors import ConfigError
from gearag.model import Passage
from gearag.store.collection import CollectionStore
from gearag.store.graph import TripleGraphStore
from gearag.store.triples import TripleTable

T = TypeVar("T")

#: Variants of one cached object (per query-time config) an index keeps (:meth:`IndexStore.cached`).
VARIANTS = 16


@runtime_checkable
class IndexStore(Protocol):
    """A loaded index: passages ``C``, triples ``T``, the triple graph, the named collections, the stored
    passage graph, and a cache of what is built over them. Safe to share between threads."""

    @property
    def path(self) -> Path:
        """The index directory (a Lance index: its URI as a path; :attr:`location` says where it is)."""
        ...

    @property
    def location(self) -> str:
        """Where the index lives: a directory, or a URI."""
        ...

    @property
    def manifest(self) -> dict[str, Any]: ...

    @property
    def identity(self) -> str:
        """Which build this is (run files record it, to resume only against the same index)."""
        ...

    @property
    def config(self) -> IndexConfig:
        """The config it was built with (its embedder, extractor, ...)."""
        ...

    @property
    def passages(self) -> Sequence[Passage]: ...

    @property
    def triples(self) -> TripleTable: ...

    @property
    def graph(self) -> TripleGraphStore: ...

    @property
    def collections(self) -> Mapping[str, CollectionStore]: ...

    def collection(self, name: str) -> CollectionStore:
        """The collection called ``name`` (ConfigError: the index has none)."""
        ...

    def passage_triples(self, row: int) -> range:
        """Triple ids extracted from passage ``row``."""
        ...

    def passage_rows(self) -> dict[str, int]:
        """Each passage id's row."""
        ...

    def cached(self, key: str, build: Callable[[], T], *, variant: str | None = None) -> T:
        """``build()`` once per index and key (``variant``: one of a few kept per key)."""
        ...

    def read_prepared(self, open_: Callable[[dict[str, Any], Callable[[str], np.ndarray]], T | None]) -> T | None:
        """``open_(meta, read)`` of the stored prepared passage graph, None when the index has none."""
        ...

    def close(self) -> None:
        """Let go of what the index holds open for its reader (an index directory's read lease)."""
        ...


class IndexBase:
    """The methods of :class:`IndexStore` that follow from an index's parts, for both backends.

    No state of its own: an implementation holds the attributes below (and ``_cache``, ``_lock``).
    """

    path: Path
    manifest: dict[str, Any]
    passages: Sequence[Passage]
    passage_triple_indptr: np.ndarray
    collections: Mapping[str, CollectionStore]
    _cache: dict[str, Any]
    _lock: Any  #: a re-entrant lock (threading.RLock), so that builders may nest

    @property
    def config(self) -> IndexConfig:
        return IndexConfig.from_dict(self.manifest.get("config", {}))

    def passage_triples(self, row: int) -> range:
        """Triple ids extracted from passage ``row``."""
        return range(int(self.passage_triple_indptr[row]), int(self.passage_triple_indptr[row + 1]))

    def collection(self, name: str) -> CollectionStore:
        """The collection called ``name``; a ConfigError lists the index's collections otherwise."""
        try:
            return self.collections[name]
        except KeyError:
            raise ConfigError(
                f"{self.path}: no collection {name!r} in this index (it has {', '.join(self.collections)})"
            ) from None

    def cached(self, key: str, build: Callable[[], T], *, variant: str | None = None) -> T:
        """``build()`` once per index and key; thread-safe (re-entrant, so builders may nest).

        ``variant`` (a config's repr) keeps the last :data:`VARIANTS` variants of ``key`` only, least recently
        used first out: objects built per query-time config (a method, a retriever, a passage graph over the
        stored arrays) must not grow without bound when a service's clients send many option sets.
        """
        with self._lock:
            if variant is None:
                if key not in self._cache:
                    self._cache[key] = build()
                return self._cache[key]
            family: OrderedDict[str, Any] = self._cache.setdefault(key, OrderedDict())
            if variant in family:
                family.move_to_end(variant)
                return family[variant]
            value = family[variant] = build()
            while len(family) > VARIANTS:
                family.popitem(last=False)
            return value

    def passage_rows(self) -> dict[str, int]:
        """Each passage id's row: read once per index, on first use (every passage: 3.7 s at a million)."""
        return self.cached("passage_rows", lambda: {p.id: i for i, p in enumerate(self.passages)})
