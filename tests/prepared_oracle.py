"""The graph arrays an older gearag stored, and the passage graph prepared from them: the reference a build's equals.

gearag once stored the entity resolution and the entity relations as *graph
arrays* under ``graph/`` (``entities.json``, ``about_*``, ``mentions_*``,
``relations_*``, …: :class:`GraphArrays`) and prepared the passage graph a
query reads from them (:func:`prepare`, once ``PreparedGraph.build``). A build
now writes the prepared graph directly, through the delta derivation
(:func:`gearag.derive.union_files.write_from_nothing`), and an index that stores
only graph arrays is served like one without a prepared graph
(:func:`gearag.derive.graph_for.derived_prepared`). The plain whole-corpus
computation stays here, as the tests' oracle: :func:`prepare` over the arrays
of ``resolve_corpus`` (``tests/oracles.py``) is what a build's prepared graph is
compared with, and :func:`stored_graph_arrays` reads the arrays a reference
build (``reference_build``) stores.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy import sparse

from gearag.arrays import ascending, row_offsets
from gearag.data.jsonio import parse_json
from gearag.data.jsonstrings import strings_at
from gearag.graph.config import PassageGraphConfig
from gearag.graph.edge_kinds import transition_sources
from gearag.graph.layered import NodeLayout
from gearag.graph.passage_graph import PassageGraph
from gearag.graph.prepared import PreparedGraph, settings_of, usable_keys
from gearag.graph.scaled import ABOUT_SOURCE, Scaled, Source, _csr, _row_sums, transposed
from gearag.graph.transition import Csr, Normalised, entity_relations, relation_pairs
from gearag.graph.trie import HashedNames
from gearag.store.index import GRAPH_DIR, Index
from gearag.store.npy import load_npy

# -- the resolution, as one plain pass over the corpus gives it ---------------------------------------------


class AboutTerms(NamedTuple):
    """The about weights before their normalisation: entry ``i`` is the term ``raw[i] / totals[names[i]]`` of
    entity ``rows[i]`` about passage ``cols[i]`` (``raw``: a lexicon name's tier weight ``w``, or ``share · w``
    for a name containing it; ``names``: that lexicon name). An (entity, passage) pair's about weight is the
    sum of its terms (docs/delta.md)."""

    rows: np.ndarray  #: int32 entity per term, ascending
    cols: np.ndarray  #: int32 passage per term
    raw: np.ndarray  #: float32 per term
    names: np.ndarray  #: int32 lexicon name per term
    totals: np.ndarray  #: float64 per lexicon name: its tier weights' sum

    def normalised(self) -> np.ndarray:
        """Each term's weight, ``raw / totals[name]`` in float64."""
        return self.raw.astype(np.float64) / self.totals[self.names]


@dataclass
class Resolution:
    """Entities (name keys) and their links to passages, as CSR arrays (:mod:`gearag.graph.resolve`'s rules).

    ``keys[:n_names]`` come from the lexicon (titles and openings); the rest
    are triple endpoints that no lexicon name equals.
    """

    keys: Sequence[str]
    n_names: int
    #: entity → passages it is about (weights sum to 1 per resolved entity).
    about: sparse.csr_matrix
    #: passage → entities it mentions (1.0 per distinct pair).
    mentions: sparse.csr_matrix
    #: int32 (T, 2): entity ids of each triple's subject and object, -1 if not a name.
    triple_ends: np.ndarray
    #: passage → entities its NER spans name (1.0 per distinct pair); None when not computed.
    ner_mentions: sparse.csr_matrix | None = None
    #: ``about`` as its terms before normalisation (what the prepared graph stores); None when not kept
    #: (a resolution read back from an index's files).
    about_terms: AboutTerms | None = None

    @property
    def n_mention_keys(self) -> int:
        """Entities that exist without the NER spans: the lexicon's names and the triple endpoints.

        Endpoint ids are given in triple order after the names, and NER spans come last, so the
        entities at and after this id are the ones only NER found.
        """
        ends = self.triple_ends
        return max(self.n_names, int(ends.max()) + 1 if ends.size else 0)

    def passage_links(self) -> sparse.csr_matrix:
        """passage → passage: "passage i mentions a name that is about passage j" (self-links dropped)."""
        links = (self.mentions @ self.about).tocsr()
        links.setdiag(0)
        links.eliminate_zeros()
        return links

    def key_index(self) -> dict[str, int]:
        return {k: i for i, k in enumerate(self.keys)}


def summed_csr(values: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> sparse.csr_matrix:
    """``csr_matrix((values, (rows, cols)), shape)`` with repeated entries summed, array for array.

    scipy's COO → CSR conversion is a stable counting sort by row; when
    ``rows`` are already in order (about edges are made name by name) the
    entries are its result as they stand, so the sort and the COO copies
    are skipped. Duplicates are then summed the same way (``sum_duplicates``).
    """
    rows = np.asarray(rows)
    if len(rows) and ascending(rows) and int(rows[0]) >= 0 and int(rows[-1]) < shape[0]:
        indptr = row_offsets(rows, shape[0])
        m = sparse.csr_matrix((values, cols, indptr), shape=shape, copy=True)  # sorted in place below
    else:
        m = sparse.csr_matrix((values, (rows, np.asarray(cols))), shape=shape)
    m.sum_duplicates()
    return m


def incidence(rows: Sequence[int] | np.ndarray, cols: Sequence[int] | np.ndarray,
              shape: tuple[int, int]) -> sparse.csr_matrix:
    """A 0/1 matrix with a 1 at every (row, col) pair given (repeats count once)."""
    m = summed_csr(np.ones(len(rows), dtype=np.float32), np.asarray(rows, dtype=np.int64),
                   np.asarray(cols, dtype=np.int64), shape)
    m.data[:] = 1.0
    return m


def relation_counts(triple_ends: np.ndarray, n_entities: int) -> sparse.csr_matrix:
    """Entity × entity triple counts (:func:`~gearag.graph.transition.relation_pairs`, summed): the relations of a
    resolution of ``n_entities`` entities."""
    rows, cols = relation_pairs(triple_ends)
    rel = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n_entities, n_entities))
    rel.sum_duplicates()
    return rel


# -- the graph arrays, as an older gearag stored them ---------------------------------------------------------


@dataclass
class GraphArrays:
    """What an older gearag's index stored under ``graph/``: the resolution plus the entity–entity relation
    counts."""

    resolution: Resolution
    relations: sparse.csr_matrix  #: entity × entity, triple counts (upper and lower both filled)
    #: The entity × entity matrices of the optional edge kinds, by transition source name
    #: (:mod:`gearag.graph.edge_kinds`): the synonym weights (cosine, symmetric) as ``synonyms``, …
    entity_edges: dict[str, sparse.csr_matrix] = field(default_factory=dict)

    @property
    def synonyms(self) -> sparse.csr_matrix | None:
        """The synonym edges (None: not stored)."""
        return self.entity_edges.get("synonyms")

    def matrix(self, source: str) -> sparse.csr_matrix | None:
        """The stored matrix a transition source of that name reads (None: these arrays hold none)."""
        return self.relations if source == "relations" else self.entity_edges.get(source)

    @classmethod
    def from_resolution(cls, res: Resolution, *, relations: sparse.csr_matrix | None = None) -> GraphArrays:
        """The arrays of a resolution: its relation counts (``relations``: already made, by
        :func:`relation_counts`; else made here)."""
        return cls(res, relations if relations is not None else relation_counts(res.triple_ends, len(res.keys)))

    def files(self) -> dict[str, np.ndarray]:
        r = self.resolution
        out: dict[str, np.ndarray] = {}
        optional = (("ner_mentions", r.ner_mentions), *self.entity_edges.items())
        for name, m in (("about", r.about), ("mentions", r.mentions), ("relations", self.relations), *optional):
            if m is None:
                continue
            out[f"{name}_indptr.npy"] = np.asarray(m.indptr, dtype=np.int64)
            out[f"{name}_indices.npy"] = np.asarray(m.indices, dtype=np.int32)
            out[f"{name}_data.npy"] = np.asarray(m.data, dtype=np.float32)
        out["triple_ends.npy"] = r.triple_ends
        return out

    def meta(self) -> dict:
        r = self.resolution
        out = {"keys": r.keys, "n_names": r.n_names, "n_passages": int(r.mentions.shape[0])}
        return out | {"entity_edges": list(self.entity_edges)} if self.entity_edges else out

    @classmethod
    def load(cls, directory: Path) -> GraphArrays:
        return cls.from_files(lambda name: (directory / name).read_bytes())

    @classmethod
    def from_files(cls, read: Callable[[str], bytes]) -> GraphArrays:
        """The arrays from their files' bytes, ``read(name)`` for each name of :meth:`files`."""
        meta = parse_json(read("entities.json"))
        n_e, n_p = len(meta["keys"]), meta["n_passages"]

        def npy(name: str) -> np.ndarray:
            return load_npy(io.BytesIO(read(name)), mmap=False)

        def csr(name: str, shape: tuple[int, int]) -> sparse.csr_matrix:
            arr = {part: npy(f"{name}_{part}.npy") for part in ("indptr", "indices", "data")}
            return sparse.csr_matrix((arr["data"], arr["indices"], arr["indptr"]), shape=shape)

        def optional(name: str, shape: tuple[int, int]) -> sparse.csr_matrix | None:
            """Arrays only some indices store (synonym edges, NER mentions): None when absent."""
            try:
                return csr(name, shape)
            except (FileNotFoundError, KeyError):
                return None

        res = Resolution(meta["keys"], meta["n_names"], csr("about", (n_e, n_p)), csr("mentions", (n_p, n_e)),
                         npy("triple_ends.npy"), optional("ner_mentions", (n_p, n_e)))
        edges = {str(name): csr(str(name), (n_e, n_e)) for name in meta.get("entity_edges", [])}
        if "entity_edges" not in meta:  # none listed (or written before the listing): at most the synonym edges
            synonyms = optional("synonyms", (n_e, n_e))
            edges = {"synonyms": synonyms} if synonyms is not None else {}
        return cls(res, csr("relations", (n_e, n_e)), edges)


def stored_graph_arrays(index: Index) -> GraphArrays | None:
    """The graph arrays the index directory ``index`` stores under ``graph/`` (a sharded index: its current
    generation's), None when it stores none (every index a current gearag builds)."""
    directory = index.path / str(index.manifest.get("graph_dir", GRAPH_DIR))
    return GraphArrays.load(directory) if (directory / "entities.json").exists() else None


# -- the passage graph prepared from them ------------------------------------------------------------------


def prepare(arrays: GraphArrays, config: PassageGraphConfig) -> PreparedGraph:
    """The passage graph ``config`` reads, prepared from graph arrays (the edges of
    :mod:`gearag.graph.passage_graph`'s module docstring); the passage-node transition kept as its sources
    (:func:`scaled_columns`), the entity-only graph's normalised."""
    res = arrays.resolution
    n_passages, n_entities = res.mentions.shape
    mentions, about = res.mentions, res.about
    if config.ner_mentions and res.ner_mentions is not None:
        mentions = (res.mentions + res.ner_mentions).tocsr()
        mentions.data[:] = 1.0
    elif res.ner_mentions is not None:
        # Without NER mentions, the about edges of NER-only entities are dropped (such an entity may
        # contain a title: it would otherwise join that page to nothing else).
        keep = np.zeros(n_entities)
        keep[: res.n_mention_keys] = 1.0
        about = (sparse.diags(keep) @ res.about).tocsr()
        about.eliminate_zeros()
    df = np.asarray((mentions > 0).sum(axis=0)).ravel()
    specificity = 1.0 / np.maximum(df, 1)  # entities in no passage count as in one
    # An entity only NER found (unused here: NER mentions off) is in no passage and about none.
    counted = (np.arange(n_entities) < res.n_names) | (df > 0)
    only = res.n_mention_keys if res.ner_mentions is not None and not config.ner_mentions else None
    terms, scale = about_terms(about, res.about_terms, only)
    columns: Scaled | Normalised
    if config.passage_nodes:
        columns = scaled_columns(arrays, config, mentions, about, terms, scale)
    else:  # the entity-only graph: small (entities only), made the plain way
        columns = Normalised.of(relations(arrays, config))
    ids = np.flatnonzero(usable_keys(res.keys) & counted)
    names = HashedNames.from_keys(strings_at(res.keys, ids), ids)
    return PreparedGraph(n_passages, n_entities, settings_of(config), columns, specificity,
                         terms, res.triple_ends, names, np.arange(res.n_mention_keys, n_entities), len(ids),
                         mentions if not config.passage_nodes else None,
                         holds_ner=res.ner_mentions is not None)


def graph_of(arrays: GraphArrays, config: PassageGraphConfig = PassageGraphConfig()) -> PassageGraph:
    """The passage graph ``config`` ranks with, prepared from ``arrays`` (:func:`prepare`)."""
    return PassageGraph(prepare(arrays, config), config)


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights of ``arrays`` under ``config`` (:func:`entity_relations` of its stored
    matrices)."""
    return entity_relations((src.name for src in transition_sources()), arrays.matrix, config)


def scale_of(totals: np.ndarray) -> np.ndarray:
    """The scale of each id: 1 for id 0, ``1 / totals[x]`` for ``1 + x`` (0 where a total is 0)."""
    out = np.zeros(len(totals) + 1)
    out[0] = 1.0
    np.divide(1.0, totals, out=out[1:], where=totals > 0)
    return out


def about_terms(about: sparse.csr_matrix, terms: AboutTerms | None,
                keep_entities: int | None = None) -> tuple[Csr, np.ndarray]:
    """The about terms by entity (entity × passage, raw weights with scale ids) and the scale: ``terms`` (the
    resolution's), or ``about``'s normalised entries as unscaled terms when it kept none; only of entities
    below ``keep_entities`` when given (NER-only entities are about nothing without NER mentions)."""
    n = about.shape[0]
    if terms is None:
        return Csr(about.indptr.astype(np.int64), about.indices.astype(np.int32), about.data.astype(np.float32),
                   np.zeros(about.nnz, dtype=np.int32)), np.ones(1)
    rows, cols, raw, names = terms.rows, terms.cols, terms.raw, terms.names
    if keep_entities is not None and len(rows) and int(rows[-1]) >= keep_entities:
        keep = rows < keep_entities
        rows, cols, raw, names = rows[keep], cols[keep], raw[keep], names[keep]
    indptr = row_offsets(rows, n)
    return Csr(indptr, cols, raw, (names + 1).astype(np.int32)), scale_of(terms.totals)


def scaled_columns(arrays: GraphArrays, config: PassageGraphConfig, mentions: sparse.csr_matrix,
                   about: sparse.csr_matrix, terms: Csr, scale: np.ndarray) -> Scaled:
    """The passage-node graph's transition as its sources (:class:`~gearag.graph.scaled.Scaled`): one per
    registered transition source the graph holds and weighs above 0, in registry order, its column sums added
    in that order.

    ``mentions``: passage × entity, as the graph uses them; ``about``: the
    summed about weights (entity × passage: its pattern gives the distinct
    targets); ``terms``, ``scale``: the same as terms (:func:`about_terms`).
    """
    p, e = mentions.shape
    # The resolution's sources as the graph uses them; every other source reads its stored matrix.
    mention_rows = _csr(mentions)
    held: dict[str, Csr | None] = {"mentions": mention_rows, ABOUT_SOURCE: terms if len(terms.data) else None}
    between: list[sparse.csr_matrix] = []  # the entity → entity matrices kept, for the degrees
    sources: list[Source] = []
    p_sum, e_sum = np.zeros(p), np.zeros(e)
    for kind in transition_sources():
        weight = kind.weight_in(config)
        if kind.transpose_of is not None:
            rows = held.get(kind.transpose_of)
        elif kind.name in held:
            rows = held[kind.name]
        else:
            m = arrays.matrix(kind.name)
            rows = _csr(m) if m is not None else None
            if m is not None and weight > 0 and not kind.of_passages and not kind.to_passages:
                between.append(m)
        if weight <= 0 or rows is None:
            continue
        if kind.transpose_of is not None:
            rows = held[kind.name] = transposed(rows, p if kind.of_passages else e)
        else:
            held[kind.name] = rows
        sources.append(Source(kind.name, rows, kind.of_passages, kind.to_passages, weight))
        row_sums = _row_sums(rows, scale if kind.scaled else None)
        col_sums = p_sum if kind.of_passages else e_sum
        col_sums += row_sums if kind.weight is None else weight * row_sums
    by_name = {src.name: src for src in sources}
    m_t = held.get("backlinks")
    m_t = m_t if m_t is not None else transposed(mention_rows, e)
    degree = _degrees(mentions, sparse.csr_matrix((m_t.data, m_t.indices, m_t.indptr), shape=(e, p)),
                      about if ABOUT_SOURCE in by_name else None, "backlinks" in by_name, between)
    return Scaled(NodeLayout.plain(p, e), tuple(sources), np.asarray(scale, dtype=np.float64),
                  np.concatenate([p_sum, e_sum]), degree)


def _pattern(m: sparse.csr_matrix) -> sparse.csr_matrix:
    """``m``'s non-zero pattern (1.0 each)."""
    out = sparse.csr_matrix((np.ones(m.nnz, dtype=np.float32), m.indices, m.indptr), shape=m.shape)
    out.eliminate_zeros()
    return out


def _degrees(mentions: sparse.csr_matrix, m_t: sparse.csr_matrix, about: sparse.csr_matrix | None,
             backlinks: bool, between: list[sparse.csr_matrix]) -> np.ndarray:
    """Distinct targets per node: a passage's entities mentioned or about it; an entity's passages (by
    backlink or about) and its related entities (by any entity → entity source kept: ``between``, the relations
    first). A pair reached both ways counts once."""
    p, e = mentions.shape
    passages = np.diff(mentions.indptr).astype(np.int64)
    entities = np.diff(m_t.indptr).astype(np.int64) if backlinks else np.zeros(e, dtype=np.int64)
    if about is not None:
        passages += np.bincount(about.indices, minlength=p)
        entities += np.diff(about.indptr)
        both = _pattern(m_t).multiply(_pattern(about)).tocsr()  # entity–passage pairs mentioned and about
        both.eliminate_zeros()
        passages -= np.bincount(both.indices, minlength=p)
        if backlinks:
            entities -= np.diff(both.indptr)
    related = _pattern(between[0])
    for m in between[1:]:
        related = _pattern(related + _pattern(m))
    entities += np.diff(related.indptr)
    return np.concatenate([passages, entities]).astype(np.int32)
