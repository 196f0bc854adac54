"""The PPR transition with raw weights, normalised when a push reads them (docs/delta.md, issue 14).

Column ``j`` of the transition is node ``j``'s out-edge weights over their
sum (the adjacency of :func:`~gearag.graph.transition.relations` and
:mod:`gearag.graph.passage_graph`: passage → entity ``mention + about_weight ·
about``, entity → passage ``backlink_weight · mention + about_weight · about``,
entity → entity the relations). Stored that way, normalised, a title name
gaining a page changes every entry around it: its about terms are divided
by its total, and every column holding one is divided by its sum (31% of
the entries per add at a million passages, docs/delta.md).

:class:`Scaled` stores instead each column's entries *raw*: a mention's, a
backlink's or a relation's weight as it is, and each about term (one per
lexicon name a name is about a page through, :class:`AboutTerms`) as
``about_weight · share · w`` with its *scale id* ``1 + x`` (``x``: the
lexicon name; 0: not scaled). A push reads entry ``(i, j)`` as ``raw ·
scale[sid] · norm[j]``: ``scale[1 + x] = 1 / total(x)`` and ``norm[j]`` one
over column ``j``'s sum. A target may appear more than once in a column (a
mention and its about terms): the push adds its weights, as the adjacency
sums them. ``degree[j]`` counts the distinct targets, as the push's
threshold always has. The estimates are those of the normalised transition,
up to the order float sums are taken in.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from scipy import sparse

from gearag.graph.ranges import ranges
from gearag.graph.resolve import AboutTerms
from gearag.graph.transition import Csr, relations

if TYPE_CHECKING:
    from gearag.graph.passage_graph import GraphArrays, PassageGraphConfig

#: Entries whose float64 weights are summed at a time (a column's normaliser): bounds the transient.
CHUNK = 1 << 23


class Scaled(NamedTuple):
    """A transition by columns with raw entries (module docstring)."""

    columns: Csr  #: raw weights (float32) with their scale ids (``sids``, int32)
    scale: np.ndarray  #: float64 per scale id: 1 for id 0, one over a lexicon name's total for ``1 + x``
    norm: np.ndarray  #: float64 per node: one over its column's sum, 0 for a node without out-edges
    degree: np.ndarray  #: int32 per node: distinct targets of its out-edges


class Part(NamedTuple):
    """Some entries of some rows, by row: ``indptr`` over the rows, then targets, raw weights and scale ids."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    sids: np.ndarray | None  #: None: every entry unscaled (id 0)


def scale_of(totals: np.ndarray) -> np.ndarray:
    """The scale of each id: 1 for id 0, ``1 / totals[x]`` for ``1 + x``."""
    out = np.empty(len(totals) + 1)
    out[0] = 1.0
    np.divide(1.0, totals, out=out[1:], where=totals > 0)
    out[1:][totals <= 0] = 0.0
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
    return Csr(_by_row(rows, n), cols, raw, (names + 1).astype(np.int32)), scale_of(terms.totals)


def normalised(rows: sparse.csr_matrix, sids: np.ndarray | None, scale: np.ndarray | None) -> sparse.csr_matrix:
    """``rows`` (gathered from terms) with each weight times its scale and repeats summed: the about weights."""
    if sids is not None and scale is not None:
        rows = sparse.csr_matrix((rows.data * scale[sids], rows.indices, rows.indptr), shape=rows.shape)
    rows.sum_duplicates()
    return rows


def _by_row(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """The ``indptr`` of entries already in ascending ``rows``."""
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr


def _empty(n_rows: int) -> Part:
    return Part(np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), None)


def _block(out: Csr, first: int, parts: list[tuple[Part, int]]) -> None:
    """Rows ``first…`` of ``out``: each row's entries part after part, targets shifted by each part's shift."""
    assert out.sids is not None
    n = len(parts[0][0].indptr) - 1
    written = np.array(out.indptr[first : first + n], dtype=np.int64)  # where each row's next entry goes
    for part, shift in parts:
        counts = np.diff(part.indptr)
        at = ranges(written, counts)
        out.indices[at] = part.indices + shift if shift else part.indices
        out.data[at] = part.data
        out.sids[at] = 0 if part.sids is None else part.sids
        written += counts


def scaled_columns(arrays: GraphArrays, config: PassageGraphConfig, mentions: sparse.csr_matrix,
                   about: sparse.csr_matrix, terms: Csr, scale: np.ndarray,
                   threads: int = 1) -> tuple[Scaled, np.ndarray]:
    """The passage-node graph's transition by columns, raw (:class:`Scaled`), and its dangling nodes.

    ``about``: the summed about weights the graph uses (entity × passage; its
    pattern gives the distinct targets); ``terms``, ``scale``: the same as
    terms (:func:`about_terms`). ``threads=2`` fills the passages' and the
    entities' columns at once.
    """
    p, e = mentions.shape
    weight = config.about_weight
    by_entity, by_passage = _empty(e), _empty(p)
    if weight > 0:
        raw = np.asarray(terms.data)
        raw = (raw.astype(np.float64) * weight).astype(np.float32) if weight != 1.0 else raw
        sids = terms.sids
        assert sids is not None
        by_entity = Part(np.asarray(terms.indptr, dtype=np.int64), terms.indices, raw, sids)
        # The same terms by passage: a stable counting sort of their positions (scipy's transpose keeps repeats).
        where = sparse.csr_matrix((np.arange(len(raw), dtype=np.int64), terms.indices, terms.indptr),
                                  shape=(e, p)).T.tocsr()
        pos = where.data
        owner = np.repeat(np.arange(e, dtype=np.int32), np.diff(terms.indptr))
        by_passage = Part(where.indptr.astype(np.int64), owner[pos], raw[pos], sids[pos])
        del where, pos, owner
    mention = Part(mentions.indptr.astype(np.int64), mentions.indices, mentions.data.astype(np.float32), None)
    back = config.backlink_weight
    backlinks = _empty(e)
    if back > 0:
        m_t = mentions.T.tocsr()
        backlinks = Part(m_t.indptr.astype(np.int64), m_t.indices, (m_t.data * back).astype(np.float32), None)
        del m_t
    rel = relations(arrays, config).tocsr()
    rel.sum_duplicates()
    related = Part(rel.indptr.astype(np.int64), rel.indices, rel.data.astype(np.float32), None)
    passage_parts: list[tuple[Part, int]] = [(mention, p), (by_passage, p)]
    entity_parts: list[tuple[Part, int]] = [(backlinks, 0), (by_entity, 0), (related, p)]
    counts = np.concatenate([sum(np.diff(part.indptr) for part, _ in passage_parts),
                             sum(np.diff(part.indptr) for part, _ in entity_parts)])
    indptr = np.zeros(p + e + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    total = int(indptr[-1])
    out = Csr(indptr, np.empty(total, dtype=np.int32), np.empty(total, dtype=np.float32),
              np.empty(total, dtype=np.int32))
    if threads > 1:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gearag-entities") as pool:
            entities = pool.submit(_block, out, p, entity_parts)
            _block(out, 0, passage_parts)
            entities.result()
    else:
        _block(out, 0, passage_parts)
        _block(out, p, entity_parts)
    del passage_parts, entity_parts, mention, by_passage, by_entity, backlinks, related
    norm = _norms(out, scale)
    degree = _degrees(mentions, about if weight > 0 else None, back > 0, rel)
    return Scaled(out, np.asarray(scale, dtype=np.float64), norm, degree), norm <= 0


def _norms(columns: Csr, scale: np.ndarray) -> np.ndarray:
    """One over each column's sum of ``raw · scale[sid]`` (float64, in entry order; 0 for an empty sum)."""
    indptr = columns.indptr
    assert columns.sids is not None
    n = len(indptr) - 1
    sums = np.zeros(n)
    first = 0
    while first < n:  # rows in chunks of about CHUNK entries
        last = int(np.searchsorted(indptr, indptr[first] + CHUNK, side="right")) - 1
        last = min(max(last, first + 1), n)
        lo, hi = int(indptr[first]), int(indptr[last])
        w = columns.data[lo:hi].astype(np.float64) * scale[columns.sids[lo:hi]]
        rows = np.repeat(np.arange(first, last, dtype=np.int64), np.diff(indptr[first : last + 1]))
        sums[first:last] = np.bincount(rows - first, weights=w, minlength=last - first)
        first = last
    return np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)


def _degrees(mentions: sparse.csr_matrix, about: sparse.csr_matrix | None, backlinks: bool,
             rel: sparse.csr_matrix) -> np.ndarray:
    """Distinct targets per node: a passage's entities mentioned or about it, an entity's passages (by
    backlink or about) and related entities. A pair both mentioned and about counts once."""
    p, e = mentions.shape
    m_p = np.diff(mentions.indptr)  # per passage
    m_e = np.bincount(mentions.indices, minlength=e) if backlinks else np.zeros(e, dtype=np.int64)
    a_e = np.diff(about.indptr) if about is not None else np.zeros(e, dtype=np.int64)
    a_p = np.bincount(about.indices, minlength=p) if about is not None else np.zeros(p, dtype=np.int64)
    if about is not None and about.nnz and mentions.nnz:
        both = mentions.multiply(about.T.tocsr()).tocsr()  # pairs mentioned and about: one target, not two
        both.eliminate_zeros()
        o_p = np.diff(both.indptr)
        o_e = np.bincount(both.indices, minlength=e)
    else:
        o_p, o_e = np.zeros(p, dtype=np.int64), np.zeros(e, dtype=np.int64)
    passages = m_p + a_p - o_p
    entities = a_e + (m_e - o_e if backlinks else 0) + np.diff(rel.indptr)
    return np.concatenate([passages, entities]).astype(np.int32)
