"""The passage graph as a query reads it, prepared once and stored with the index under ``graph/prepared/``.

This module owns :class:`PreparedGraph` (the transition by columns, :mod:`gearag.graph.scaled`; the dangling
nodes; each entity's specificity; the about edges; each triple's entity ends; the entity names as sorted stable
hashes, :class:`~gearag.graph.trie.HashedNames`), its files (a full generation's, or a delta's over its base's),
how they are opened (memory-mapped: a query process keeps what its queries touched; deriving them per process
cost ~1 GB kept and an 8.5 GB peak at 1M, docs/benchmarks-log.md, "Queries at 1M") and the graphs of other
query settings derived from the stored sources (:meth:`PreparedGraph.derived`). Where a query gets its graph:
:mod:`gearag.derive.graph_for`; how a build and an add make it: docs/delta.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from gearag import setops
from gearag.data.jsonstrings import JsonStrings
from gearag.graph.config import PassageGraphConfig
from gearag.graph.edge_kinds import EDGE_KINDS, transition_sources
from gearag.graph.layered import AppendedRows, LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.resolve import MIN_KEY_CHARS, stop_words, usable_key
from gearag.graph.scaled import ABOUT_SOURCE, SCALED_SOURCES, Scaled, Source, reweighted
from gearag.graph.transition import Csr, Normalised, entity_relations, rows_matrix
from gearag.graph.trie import HashedNames, key_hashes
from gearag.store.index import BASE_DIR, read_prepared
from gearag.store.index import PREPARED as PREPARED
from gearag.store.npy import unwrapped

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore

#: Version of the stored arrays: bump when what they hold, or the hash of the names, changes. Version 2 stores the
#: passage-node transition raw, with scale ids and per-node column sums (:mod:`gearag.graph.scaled`).
PREPARED_VERSION = 2
#: The version that stores the transition normalised: the entity-only graph's, and what gearag stored before 2.
NORMALISED_VERSION = 1
#: The :class:`PassageGraphConfig` fields the prepared arrays depend on; the others act per query.
SETTINGS = ("about_weight", "backlink_weight", "synonym_weight", "ner_mentions", "passage_nodes")
#: Those of :data:`SETTINGS` that weigh edges, the edge-kind registry's (a stored graph kept as its sources serves
#: other values of them, 0 dropping the edges, if it holds them: :meth:`PreparedGraph.derived`).
WEIGHTS = tuple(dict.fromkeys(src.weight for src in transition_sources() if src.weight is not None))
_NAMES = ("nodes", "name_hashes", "name_ids")


def settings_of(config: PassageGraphConfig) -> dict[str, Any]:
    """The settings of ``config`` that shape the prepared arrays."""
    return {name: getattr(config, name) for name in SETTINGS}


@dataclass
class PreparedGraph:
    """What a passage-graph query reads (module docstring); arrays in memory or memory-mapped."""

    n_passages: int
    n_entities: int
    settings: dict[str, Any]
    #: The PPR transition by columns: node j's out-edges. The passage-node graph keeps it as its sources, read
    #: normalised (:class:`~gearag.graph.scaled.Scaled`); the entity-only graph, and graphs an older gearag
    #: stored, keep it normalised (:class:`~gearag.graph.transition.Normalised`, float32).
    columns: Scaled | Normalised
    specificity: np.ndarray  #: float64 per entity: 1 / |passages mentioning it| (HippoRAG §3.2)
    #: entity × passage about edges as the graph uses them: raw terms with scale ids when the columns are Scaled
    about: Csr | LayeredCsr
    triple_ends: np.ndarray | AppendedRows  #: int32 (T, 2): each triple's subject and object entity (-1: none)
    names: HashedNames  #: the usable entity keys → entity ids
    #: The entities only NER spans name (sorted ids; the others are lexicon names and triple endpoints). A
    #: build numbers them last; an add appends entities after them.
    ner_keys: np.ndarray
    #: How many keys were hashed into ``names`` (more than ``names.size`` only if two shared a hash); None: not
    #: recorded (an older gearag's stored graph).
    n_usable: int | None = None
    #: passage × entity mention edges: only the entity-only graph's scores read them (never stored).
    mentions: sparse.csr_matrix | None = field(default=None, repr=False)
    #: The node numbering when these arrays are a base's and a delta's (docs/delta.md); None: the build's,
    #: passages then entities.
    delta_layout: NodeLayout | None = None
    #: With ``delta_layout``: what the base's own ``prepared.json`` says (its files are under ``base/``).
    base_meta: dict[str, Any] | None = field(default=None, repr=False)
    #: Whether the index's resolution holds NER mentions (None: not recorded, an older gearag's stored graph).
    #: Without them the ``ner_mentions`` setting changes nothing.
    holds_ner: bool | None = None

    @property
    def dangling(self) -> np.ndarray:
        """Bool per node: no out-edges (its walk restarts at the seeds): the transition's."""
        return self.columns.dangling

    @property
    def scale(self) -> np.ndarray | None:
        """The about terms' scale (:class:`~gearag.graph.scaled.Scaled`), None where ``about`` is normalised."""
        return self.columns.scale

    def about_rows(self, entities: np.ndarray) -> sparse.csr_matrix:
        """The about weights of ``entities`` (rows: entities as given, columns: passages), normalised."""
        counts, indices, data, sids = self.about.gather(np.asarray(entities, dtype=np.int64))
        rows = rows_matrix(counts, indices, np.asarray(data, dtype=np.float64), self.n_passages)
        scale = self.scale
        if sids is not None and scale is not None:  # each weight times its scale, repeats summed
            rows = sparse.csr_matrix((rows.data * scale[sids], rows.indices, rows.indptr), shape=rows.shape)
        rows.sum_duplicates()
        return rows

    def whole_sources(self) -> dict[str, Csr] | None:
        """The transition's sources by name as a generation written whole keeps them (one matrix each, in the
        build's numbering, its triple ends one array): what an add's or a delete's delta is said over
        (docs/delta.md). None for a graph kept another way (normalised, a base's and a delta's, or with no
        count of its usable keys: an older gearag's)."""
        cols = self.columns
        if (not isinstance(cols, Scaled) or not cols.layout.plain_layout or self.n_usable is None
                or not isinstance(self.triple_ends, np.ndarray)):
            return None
        rows = {s.name: s.rows for s in cols.sources if isinstance(s.rows, Csr)}
        return rows if len(rows) == len(cols.sources) else None

    @property
    def layout(self) -> NodeLayout:
        """The passage graph's node numbering (:class:`~gearag.graph.layered.NodeLayout`)."""
        return self.delta_layout or NodeLayout.plain(self.n_passages, self.n_entities)

    def serves(self, config: PassageGraphConfig) -> bool:
        """Whether these arrays are the ones ``config`` would prepare."""
        return self._effective(self.settings) == self._effective(settings_of(config))

    def derived(self, config: PassageGraphConfig) -> PreparedGraph | None:
        """These arrays as ``config`` would prepare them, derived from their sources, not from the corpus
        (preparing a graph from the resolution's arrays took 371 s and 9.3 GB at 1M); None where they
        cannot be (not kept as sources, a source ``config`` wants that was left out, other NER mentions).

        - Other edge weights: the sources take them and the column sums are made again; a weight of 0 drops
          its sources and the degrees are counted again (:func:`~gearag.graph.scaled.reweighted`).
        - ``passage_nodes=False`` (HippoRAG 1's entity-only graph): its transition is the relations (and
          synonym edges) source, its passage scores read the mentions source.
        - ``ner_mentions`` does not matter to a graph that holds none (an index built without NER mentions).
        """
        if not isinstance(self.columns, Scaled) or self.serves(config):
            return None
        want, held = settings_of(config), self._effective(self.settings)
        if want["ner_mentions"] != held.get("ner_mentions") and self.holds_ner is not False:
            return None
        if any(want[k] > 0 and held.get(k, 0) <= 0 for k in WEIGHTS) or not held.get("passage_nodes", True):
            return None  # a source left out at preparation (or no passage nodes) cannot be brought back
        if want["passage_nodes"]:
            columns = reweighted(self.columns, {k: want[k] for k in WEIGHTS})
            return replace(self, settings=want, columns=columns)
        by_name = {src.name: src for src in self.columns.sources}
        rel = entity_relations(by_name, lambda name: _joined(by_name[name], self.n_entities), config)
        entity_only = Normalised.of(rel)
        return replace(self, settings=want, columns=entity_only,
                       mentions=_joined(by_name["mentions"], self.n_entities))

    def _effective(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` with ``ner_mentions`` as if asked when the graph holds none (it changes nothing)."""
        return settings if self.holds_ner is not False else {**settings, "ner_mentions": True}

    # -- persistence -------------------------------------------------------
    def files(self) -> dict[str, np.ndarray]:
        """The arrays :meth:`open` reads, by file name. A base's and a delta's: the delta's alone (the base's files are
        hard-linked under ``base/``, its ``prepared.json`` kept as ``delta.base``): per transition source its delta
        rows (``delta_<source>_*``), which row each layered row reads there (``where_<source>``, -1: the base's
        alone) and whether it follows the base's row or replaces it (``appends_<source>``); the names it adds; the
        triple ends it appends; the per-node and per-entity vectors, written whole."""
        columns, about, names, ends = self.columns, self.about, self.names, self.triple_ends
        if self.delta_layout is not None:
            assert isinstance(columns, Scaled) and isinstance(names, LayeredNames) and isinstance(ends, AppendedRows)
            out: dict[str, np.ndarray] = {}
            layers = [*((s.name, s.rows) for s in columns.sources if s.name != ABOUT_SOURCE), ("about", about)]
            for name, rows in layers:
                assert isinstance(rows, LayeredCsr)  # the about terms: stored once, as the about rows
                out |= {f"delta_{name}_{k}.npy": v for k, v in rows.delta.arrays().items()}
                appends = rows.appends if rows.appends is not None else np.zeros(rows.n_rows, dtype=bool)
                out |= {f"where_{name}.npy": np.asarray(rows.where, dtype=np.int32),
                        f"appends_{name}.npy": np.asarray(appends, dtype=bool)}
            out |= {f"names_{k}.npy": v for k, v in names.delta.arrays().items()}
            out |= {"scale.npy": columns.scale, "sums.npy": columns.sums, "degree.npy": columns.degree,
                    "dangling.npy": self.dangling, "specificity.npy": self.specificity,
                    "triple_ends_tail.npy": ends.tail}
            return out | _ner_keys_file(self.ner_keys, self.n_entities)
        assert isinstance(about, Csr) and isinstance(ends, np.ndarray)  # a plain graph's: each kept whole
        out = {f"about_{k}.npy": v for k, v in about.arrays().items()}
        if isinstance(columns, Scaled):
            for src in columns.sources:
                assert isinstance(src.rows, Csr)
                if src.name != ABOUT_SOURCE:  # the about terms by entity: stored once, as about_*
                    out |= {f"source_{src.name}_{k}.npy": v for k, v in src.rows.arrays().items()}
            out |= {"scale.npy": columns.scale, "sums.npy": columns.sums, "degree.npy": columns.degree}
        else:
            out |= {f"columns_{k}.npy": v for k, v in columns.rows.arrays().items()}
        out |= {f"names_{k}.npy": v for k, v in names.arrays().items()}
        out |= {"dangling.npy": self.dangling, "specificity.npy": self.specificity, "triple_ends.npy": ends}
        return out | _ner_keys_file(self.ner_keys, self.n_entities)

    def meta(self) -> dict[str, Any]:
        columns = self.columns
        out: dict[str, Any] = {"version": PREPARED_VERSION if isinstance(columns, Scaled) else NORMALISED_VERSION,
               "n_passages": self.n_passages, "n_entities": self.n_entities,
               **_ner_keys_meta(self.ner_keys, self.n_entities), "usable_keys": self.n_usable,
               "settings": self.settings, "names_hash": "fnv1a-64"}
        if self.holds_ner is not None:
            out["holds_ner"] = self.holds_ner
        if isinstance(columns, Scaled):
            out["sources"] = [src.meta() for src in columns.sources]
        if self.delta_layout is not None:
            lay = self.delta_layout
            out["delta"] = {"base_passages": lay.base_passages, "base_entities": lay.base_entities,
                            "base": self.base_meta}
        return out

    @classmethod
    def open(cls, meta: dict[str, Any], array: Callable[[str], np.ndarray]) -> PreparedGraph:
        """The stored arrays, ``array(name)`` giving each file of :meth:`files` (memory-mapped where it can;
        kept as plain views of the maps: :func:`~gearag.store.npy.unwrapped`); a delta's base's under ``base/``."""

        def read(name: str) -> np.ndarray:
            return unwrapped(array(name))

        def csr(prefix: str, scaled: bool) -> Csr:
            return Csr(*(read(f"{prefix}_{part}.npy") for part in Csr._fields[: 4 if scaled else 3]))

        n_p, n_e, delta, usable = (int(meta["n_passages"]), int(meta["n_entities"]), meta.get("delta"),
                                   meta.get("usable_keys"))
        raw = isinstance(delta, dict) or meta.get("version") == PREPARED_VERSION  # as its sources, else normalised
        names = HashedNames.from_arrays(*(read(f"names_{k}.npy") for k in _NAMES))
        layout, base_meta, held = NodeLayout.plain(n_p, n_e), None, meta.get("holds_ner")
        if isinstance(delta, dict):  # a base's and a delta's (:meth:`files`)
            base = cls.open(delta["base"], lambda name: array(f"{BASE_DIR}/{name}"))
            if not (isinstance(base.columns, Scaled) and isinstance(base.about, Csr)):
                raise ValueError("a delta's base must be kept as its sources")
            layout = NodeLayout(n_p, n_e, int(delta["base_passages"]), int(delta["base_entities"]))

            def layered(prefix: str, on: Csr | LayeredCsr) -> LayeredCsr:
                assert isinstance(on, Csr)
                return LayeredCsr(on, csr(f"delta_{prefix}", on.sids is not None), read(f"where_{prefix}.npy"),
                                  read(f"appends_{prefix}.npy"))

            about: Csr | LayeredCsr = layered("about", base.about)
            sources = tuple(s._replace(rows=about if s.name == ABOUT_SOURCE else layered(s.name, s.rows))
                            for s in base.columns.sources)
            ends: np.ndarray | AppendedRows = AppendedRows(np.asarray(base.triple_ends), read("triple_ends_tail.npy"))
            names, base_meta, held = LayeredNames(base.names, names), dict(delta["base"]), base.holds_ner
        else:
            about = csr("about", raw)
            sources = tuple(Source(str(m["name"]), about if m["name"] == ABOUT_SOURCE else
                                   csr(f"source_{m['name']}", str(m["name"]) in SCALED_SOURCES),
                                   bool(m["of_passages"]), bool(m["to_passages"]), float(m["weight"]))
                            for m in meta["sources"]) if raw else ()
            ends = read("triple_ends.npy")
        columns = (Scaled(layout, sources, read("scale.npy"), read("sums.npy"), read("degree.npy")) if raw
                   else Normalised(csr("columns", False), read("dangling.npy")))
        return cls(n_p, n_e, dict(meta["settings"]), columns, read("specificity.npy"), about, ends, names,
                   _read_ner_keys(meta, read), usable if isinstance(usable, int) else None,
                   delta_layout=None if base_meta is None else layout, base_meta=base_meta,
                   holds_ner=held if isinstance(held, bool) else None)


def empty_prepared(stored: Sequence[str]) -> PreparedGraph:
    """The prepared graph of an index of no passage (what a build adds onto, docs/delta.md):
    every core source and the optional sources ``stored`` (by name) empty, weighed as a build prepares them
    (the default query settings), no entity and no name."""
    config = PassageGraphConfig()
    empty = Csr(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    sources = tuple(Source(src.name, empty._replace(sids=np.zeros(0, np.int32)) if src.scaled else empty,
                           src.of_passages, src.to_passages, src.weight_in(config))
                    for kind in EDGE_KINDS.values() if kind.setting is None or kind.name in stored
                    for src in kind.sources if src.weight_in(config) > 0)
    columns = Scaled(NodeLayout.plain(0, 0), sources, np.ones(1), np.zeros(0), np.zeros(0, np.int32))
    about = next(s.rows for s in sources if s.name == ABOUT_SOURCE)
    assert isinstance(about, Csr)
    return PreparedGraph(0, 0, settings_of(config), columns, np.zeros(0), about,
                         np.zeros((0, 2), np.int32), HashedNames.from_keys([], np.zeros(0, np.int64)),
                         np.zeros(0, np.int64), 0, holds_ner=False)


def names_beside(old: HashedNames, keys: Sequence[str], ids: np.ndarray) -> tuple[HashedNames, int] | None:
    """The usable ``keys`` (of entities ``ids``) hashed beside ``old``'s names, as :meth:`HashedNames.from_keys`
    hashes all of them at once: their hashes sorted with their ids, and the hashed prefixes ``old`` lacks; with
    how many usable keys they are (keys that share a hash count apart, as a build counts them).
    None where a hash is shared (by two of the keys, or by a key and one of ``old``'s names): the full build's
    rule (the last key wins) decides. Beside no name (a build, an add onto nothing) that rule is applied here."""
    usable = usable_keys(keys)
    ids = np.asarray(ids, dtype=np.int64)[usable]
    picked = [k for k, u in zip(keys, usable.tolist(), strict=True) if u]
    if not old.size and not len(old.nodes):
        return HashedNames.from_keys(picked, ids), len(picked)
    hashes, prefixes = key_hashes(picked)
    order = np.argsort(hashes, kind="stable")
    hashes, ids = hashes[order], ids[order]
    old_hashes, old_nodes = np.asarray(old.name_hashes), np.asarray(old.nodes)
    if np.any(hashes[1:] == hashes[:-1]) or np.any(
            setops.present(old_hashes, hashes, np.searchsorted(old_hashes, hashes))):
        return None
    extra = setops.unique(np.concatenate([hashes, prefixes]))
    return HashedNames.from_arrays(extra[~setops.present(old_nodes, extra, np.searchsorted(old_nodes, extra))],
                                   hashes, ids), len(picked)


def _ner_keys_meta(keys: np.ndarray, n_entities: int) -> dict[str, int]:
    """What ``prepared.json`` says of the entities only NER spans name: ``n_mention_keys`` where they are the
    last ids (a build's numbering, and every index without NER mentions), else their count (``ner_keys.npy``)."""
    first = n_entities - len(keys)
    if not len(keys) or (int(keys[0]) == first and int(keys[-1]) == n_entities - 1):  # sorted, distinct: a suffix
        return {"n_mention_keys": first}
    return {"ner_keys": len(keys)}


def _ner_keys_file(keys: np.ndarray, n_entities: int) -> dict[str, np.ndarray]:
    """``ner_keys.npy`` where ``prepared.json`` cannot say the NER-only entities as a count (:func:`_ner_keys_meta`)."""
    return {"ner_keys.npy": np.asarray(keys, dtype=np.int32)} if "ner_keys" in _ner_keys_meta(keys, n_entities) else {}


def _read_ner_keys(meta: dict[str, Any], read: Callable[[str], np.ndarray]) -> np.ndarray:
    """The NER-only entities a ``prepared.json`` and its files say (:func:`_ner_keys_meta`)."""
    if "ner_keys" in meta:
        return np.asarray(read("ner_keys.npy"), dtype=np.int64)
    return np.arange(int(meta["n_mention_keys"]), int(meta["n_entities"]), dtype=np.int64)


def _joined(src: Source, n_targets: int) -> sparse.csr_matrix:
    """Every row of ``src`` as a push reads it (a base's row and its delta's joined), as one float64 matrix."""
    counts, indices, data, _ = src.rows.gather(np.arange(src.rows.n_rows, dtype=np.int64))
    m = rows_matrix(counts, np.asarray(indices), np.asarray(data, dtype=np.float64), n_targets)
    m.sum_duplicates()
    return m


def usable_keys(keys: Sequence[str]) -> np.ndarray:
    """:func:`usable_key` of every key, as a mask (only keys as short as a stop word are looked up)."""
    keys = keys.strings() if isinstance(keys, JsonStrings) else keys  # decoded once, not one by one below
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    out = lengths >= MIN_KEY_CHARS
    longest_stop = max(map(len, stop_words()), default=0)
    for i in np.flatnonzero(out & (lengths <= longest_stop)).tolist():
        out[i] = usable_key(keys[i])
    return out


def open_stored(meta: dict[str, Any], read: Callable[[str], np.ndarray]) -> PreparedGraph | None:
    """The prepared graph stored under ``meta`` (``read(name)``: one of its arrays), None when ``meta`` is of another
    version or lacks a field this gearag reads (the query derives its own: :mod:`gearag.derive.graph_for`)."""
    version = meta.get("version")
    if (version not in (NORMALISED_VERSION, PREPARED_VERSION) or not isinstance(meta.get("settings"), dict)
            or (version == PREPARED_VERSION and not isinstance(meta.get("sources"), list))
            or not all(isinstance(meta.get(k), int) for k in ("n_passages", "n_entities"))
            or not any(isinstance(meta.get(k), int) for k in ("n_mention_keys", "ner_keys"))):
        return None
    return PreparedGraph.open(meta, read)


def stored_prepared(index: IndexStore) -> PreparedGraph | None:
    """The prepared passage graph ``index`` stores (memory-mapped), None when it has none or one of another
    version."""
    return index.read_prepared(open_stored)


def load_prepared(directory: Path, mmap: bool = True) -> PreparedGraph | None:
    """The prepared graph stored in ``directory`` (``<graph dir>/prepared``), memory-mapped (``mmap=False``: read
    into memory); None when there is none or it is of another version (the query derives its own)."""
    return read_prepared(directory, open_stored, mmap)

