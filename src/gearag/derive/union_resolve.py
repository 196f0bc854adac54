"""The entity resolution's kept state and the steps an add's and a delete's deltas share (docs/delta.md).

What a generation keeps for the next (:class:`ResolveState`, :class:`NameStats`), what the previous one resolved
(:class:`Prior`, renumbered for a delete by :func:`shrunk`), and the steps :mod:`~gearag.derive.delta_resolve` and
:mod:`~gearag.derive.delta_delete` both take (:func:`grown_lexicon`, :func:`endpoint_name_stats`). The rules are
:mod:`gearag.graph.resolve`'s; every resolution equals the tests' oracle ``resolve_corpus``.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import tee
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.arrays import offsets, ranges
from gearag.data.jsonio import load_json
from gearag.data.jsonstrings import strings_at
from gearag.derive.endpoints import SPAN_SLOTS, UnionTriples, first_seen, union_ends
from gearag.derive.token_index import RESOLVE_DIR, TokenIndex, TokenQuery
from gearag.derive.union_vocab import UNION_DIR, UnionVocab
from gearag.graph.resolve import (
    MIN_CONTAINED_SHARE,
    build_lexicon,
)
from gearag.graph.trie import NameLookup
from gearag.model import Passage
from gearag.store.npy import kept_arrays
from gearag.store.writer import IndexWriter

STATE_FILES = ("names.json", "lex_names.npy", "lex_rows.npy", "lex_weights.npy", "text_rows.npy", "text_names.npy")
#: The lexicon names' first tokens → most tokens in a name starting with each (:class:`ResolveState`).
LONGEST = "longest.json"
#: Each lexicon name's entity id, kept where it is not its lexicon id (:attr:`ResolveState.lex_entity`).
LEX_ENTITY = "lex_entity.npy"


class ResolveState:
    """What a generation keeps for the next add: the lexicon's entries and the text mentions."""

    def __init__(self, names: list[str], lex: tuple[np.ndarray, np.ndarray, np.ndarray],
                 text: tuple[np.ndarray, np.ndarray], longest: dict[str, int] | None = None,
                 lex_entity: np.ndarray | None = None) -> None:
        self.names = names  #: lexicon names in id order
        self.lex = lex  #: (name id, passage row, tier weight) per entry, in insertion order
        self.text = text  #: (passage row, name id) per text mention
        #: :attr:`NameLookup.longest` of the names (None: not kept, computed again): extended by the next add
        #: instead of made from every name (~1.5 s at a million passages)
        self.longest = longest
        #: Each lexicon name's entity id, where an add appended entities (None: its lexicon id, as the union's
        #: resolution numbers them: lexicon names first)
        self.lex_entity = lex_entity

    def write(self, w: IndexWriter) -> None:
        w.write_json(f"{RESOLVE_DIR}/names.json", self.names)
        for name, values in zip(STATE_FILES[1:], (*self.lex, *self.text), strict=True):
            w.write_array(f"{RESOLVE_DIR}/{name}", values)
        if self.longest is not None:
            w.write_json(f"{RESOLVE_DIR}/{LONGEST}", self.longest)
        if self.lex_entity is not None:
            w.write_array(f"{RESOLVE_DIR}/{LEX_ENTITY}", self.lex_entity)

    @classmethod
    def read(cls, directory: Path, n_passages: int) -> ResolveState | None:
        try:
            names = load_json(directory / RESOLVE_DIR / "names.json")
        except (OSError, ValueError):
            return None
        arrays = kept_arrays(directory, *(f"{RESOLVE_DIR}/{f}" for f in STATE_FILES[1:]))
        if arrays is None:
            return None
        lk, lr, lw, tr, tn = arrays
        if (not isinstance(names, list) or not len(lk) == len(lr) == len(lw) or len(tr) != len(tn)
                or any(len(a) and (int(a.min()) < 0 or int(a.max()) >= n) for a, n in
                       ((lk, len(names)), (tn, len(names)), (lr, n_passages), (tr, n_passages)))):
            return None
        try:  # optional (an older gearag's generation has none): then computed from the names
            longest = load_json(directory / RESOLVE_DIR / LONGEST)
        except (OSError, ValueError):
            longest = None
        if not isinstance(longest, dict) or not all(type(v) is int and v > 0 for v in longest.values()):
            longest = None  # not a table of spans: computed again
        lex_entity = None
        if (directory / RESOLVE_DIR / LEX_ENTITY).is_file():
            kept = kept_arrays(directory, f"{RESOLVE_DIR}/{LEX_ENTITY}")
            if kept is None or kept[0].shape != (len(names),):
                return None
            lex_entity = kept[0].astype(np.int64, copy=False)
        return cls(names, (lk, lr, lw), (tr, tn), longest, lex_entity)


class NameStats:
    """Per union endpoint name, over the live triples of the shards it covers (kept as ``union/name_*``):

    where it first appears (slot ``2 * triple + side``, -1: never) and, with NER mentions, where it first
    appears among the passages' spans (:attr:`first_span`), its
    lexicon id (-1: none) and the lexicon names its tokens contain
    (``trie.scan`` matches with at least :data:`MIN_CONTAINED_SHARE` of its
    tokens, as CSR rows; ``scanned`` says which rows are current). The next
    generation that appends shards keeps every row no new lexicon name can
    change and scans the rest: the new names and the old ones holding every
    token of a new lexicon name (per-shard token indices of the names).
    """

    FILES = ("first", "lex", "scanned", "cont_ptr", "cont_name", "cont_share")

    def __init__(self, first: np.ndarray, lex: np.ndarray, scanned: np.ndarray, cont_ptr: np.ndarray,
                 cont_name: np.ndarray, cont_share: np.ndarray, entity: np.ndarray | None = None,
                 first_span: np.ndarray | None = None) -> None:
        self.first, self.lex, self.scanned = first, lex, scanned
        #: Per name, its first span's slot (:data:`~gearag.derive.endpoints.SPAN_SLOTS`; -1: in no span); None:
        #: the index keeps no NER mentions
        self.first_span = first_span
        self.cont_ptr, self.cont_name, self.cont_share = cont_ptr, cont_name, cont_share
        #: int32 per name: its entity id in the resolution (-1: none), when known: what a delta's add reads
        #: instead of ordering every endpoint-only name again (docs/delta.md)
        self.entity = entity

    @classmethod
    def grown(cls, prior: NameStats, n: int, spans: bool = False) -> NameStats:
        """``prior`` with rows for names up to ``n`` (new rows: unseen, unscanned); ``spans``: with
        :attr:`first_span`."""
        k = len(prior.lex)
        first, lex = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        first_span = np.full(n, -1, dtype=np.int64) if spans else None
        scanned = np.zeros(n, dtype=bool)
        ptr = np.zeros(n + 1, dtype=np.int64)
        first[:k], lex[:k], scanned[:k] = prior.first, prior.lex, prior.scanned
        if first_span is not None and prior.first_span is not None:
            first_span[:k] = prior.first_span
        ptr[: k + 1] = prior.cont_ptr
        ptr[k + 1 :] = prior.cont_ptr[-1]
        return cls(first, lex, scanned, ptr, np.asarray(prior.cont_name), np.asarray(prior.cont_share),
                   first_span=first_span)

    def live(self) -> np.ndarray:
        """Whether each name occurs in a live triple end or span."""
        return (self.first >= 0) | (self.first_span >= 0) if self.first_span is not None else self.first >= 0

    def span_only(self) -> np.ndarray:
        """Whether each name occurs only in spans and is no lexicon name: an entity only NER found."""
        if self.first_span is None:
            return np.zeros(len(self.first), dtype=bool)
        return (self.first < 0) & (self.first_span >= 0) & (self.lex < 0)

    def rescanned(self, rows: np.ndarray, sizes: np.ndarray, found_names: np.ndarray,
                  found_shares: np.ndarray) -> None:
        """Replace the containment rows ``rows`` (ascending) by what was found: ``sizes[i]`` entries per row,
        flat (``found_names``, ``found_shares``) in row order."""
        n = len(self.lex)
        rows = np.asarray(rows, dtype=np.int64)
        old_ptr = self.cont_ptr
        counts = np.diff(old_ptr)
        new_counts = counts.copy()
        new_counts[rows] = np.asarray(sizes, dtype=np.int64)
        ptr = offsets(new_counts)
        # Each kept entry moves by its row's shift; the rows scanned again get what was found: no sort.
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
        drop = np.zeros(n, dtype=bool)
        drop[rows] = True
        kept = np.flatnonzero(~drop[owner])
        at = kept + (ptr[:-1] - old_ptr[:-1])[owner[kept]]
        fresh = ranges(ptr[rows], new_counts[rows])
        names = np.empty(int(ptr[-1]), dtype=np.int64)
        shares = np.empty(int(ptr[-1]), dtype=np.float64)
        names[at], shares[at] = np.asarray(self.cont_name)[kept], np.asarray(self.cont_share)[kept]
        names[fresh], shares[fresh] = found_names, found_shares
        self.cont_name, self.cont_share, self.cont_ptr = names, shares, ptr
        self.scanned[rows] = True

    def taken(self, rows: np.ndarray) -> NameStats:
        """The statistics of names ``rows`` (per new name id, its id here), in that order."""
        spans = np.diff(self.cont_ptr)[rows]
        ptr = offsets(spans)
        at = ranges(self.cont_ptr[rows], spans)
        return NameStats(self.first[rows], self.lex[rows], self.scanned[rows], ptr, np.asarray(self.cont_name)[at],
                         np.asarray(self.cont_share)[at], np.asarray(self.entity)[rows] if self.entity is not None
                         else None, None if self.first_span is None else np.asarray(self.first_span)[rows])

    def contained(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Containment rows ``rows`` flat: (row, contained lexicon name, share) per entry, in row order."""
        spans = self.cont_ptr[rows + 1] - self.cont_ptr[rows]
        at = ranges(self.cont_ptr[rows], spans)
        return np.repeat(rows, spans), np.asarray(self.cont_name)[at], np.asarray(self.cont_share)[at]

    def endpoint_only(self, among: np.ndarray | bool = True) -> np.ndarray:
        """The live names no lexicon name is (of the rows ``among`` holds), in first-appearance order (those in a
        triple end first, then those only in spans, by their first span): the order their entity ids follow
        the lexicon's."""
        ep = np.flatnonzero(self.live() & (self.lex < 0) & among)
        first = self.first[ep]
        if self.first_span is not None:  # a span's slot after every triple end's
            first = np.where(first >= 0, first, np.iinfo(np.int64).max // 2 + self.first_span[ep])
        return ep[np.argsort(first, kind="stable")]

    def entities(self, n_names: int) -> np.ndarray:
        """Each name's entity id in a resolution of ``n_names`` lexicon names (its lexicon id, or for an
        endpoint-only name ``n_names +`` its rank by first appearance; -1: not live), with -1 appended (read
        for -1)."""
        live = self.live()
        ep = self.endpoint_only()
        entity = np.full(len(self.lex) + 1, -1, dtype=np.int64)
        named = live & (self.lex >= 0)
        entity[:-1][named] = self.lex[named]
        entity[ep] = n_names + np.arange(len(ep), dtype=np.int64)
        return entity

    def write(self, w: IndexWriter) -> None:
        for name in self.FILES:
            w.write_array(f"{UNION_DIR}/name_{name}.npy", getattr(self, name))
        if self.entity is not None:
            w.write_array(f"{UNION_DIR}/name_entity.npy", self.entity)
        if self.first_span is not None:
            w.write_array(f"{UNION_DIR}/name_first_span.npy", self.first_span)

    @classmethod
    def read(cls, directory: Path, n_names: int, spans: bool = False) -> NameStats | None:
        """The statistics kept in ``directory`` for ``n_names`` names (``spans``: with :attr:`first_span`); None
        if absent or malformed."""
        arrays = kept_arrays(directory, *(f"{UNION_DIR}/name_{f}.npy" for f in cls.FILES))
        if arrays is None:
            return None
        first, lex, scanned, ptr, name, share = arrays
        if (any(len(a) != n_names for a in (first, lex, scanned)) or len(ptr) != n_names + 1
                or int(ptr[-1]) != len(name) or len(name) != len(share)):
            return None
        entity = kept_arrays(directory, f"{UNION_DIR}/name_entity.npy")  # optional: an older generation has none
        first_span = None
        if spans:  # required: a generation from before the span stream is derived again
            kept = kept_arrays(directory, f"{UNION_DIR}/name_first_span.npy")
            if kept is None or len(kept[0]) != n_names:
                return None
            first_span = kept[0].astype(np.int64, copy=False)
        return cls(first, lex, scanned, ptr, name, share,
                   entity=entity[0] if entity is not None and len(entity[0]) == n_names else None,
                   first_span=first_span)


@dataclass(frozen=True)
class Removal:
    """How a delete renumbers the previous generation's rows: per prior passage row and per prior live triple,
    its index in the union now (-1: deleted)."""

    rows: np.ndarray
    triples: np.ndarray


@dataclass
class Prior:
    """What the previous generation resolved for the union's leading ``shards`` shards: the same tombstones
    (an add), or more (a delete: ``removal``)."""

    state: ResolveState  #: its lexicon and text mentions
    new_from: int  #: the union row the later shards' passages start at
    shards: int = 0  #: how many leading shards ``names`` covers
    names: NameStats | None = None  #: None: every endpoint name is resolved again
    removal: Removal | None = None  #: set when the union lost rows the prior resolved (its rows are renumbered)

    @classmethod
    def nothing(cls) -> Prior:
        """What an empty index resolved (a build is an add onto it): no lexicon name, text mention or endpoint
        name."""
        state = ResolveState([], (np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0)),
                             (np.zeros(0, np.int64), np.zeros(0, np.int32)))
        empty = np.zeros(0, np.int64)
        return cls(state, 0, 0, NameStats(empty, empty, np.zeros(0, bool), np.zeros(1, np.int64), empty, np.zeros(0)))


class GrownLexicon(NamedTuple):
    """The lexicon after an add (:func:`grown_lexicon`)."""

    names: list[str]  #: every lexicon name, in id order (the prior's first)
    ids: dict[str, int]  #: name → id
    n_prior: int  #: how many names the prior had
    added: tuple[np.ndarray, np.ndarray, np.ndarray]  #: the new passages' entries: name id, union row, tier weight

    def entries(self, old: ResolveState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every entry of the grown lexicon: ``old``'s (the state it grew from), then :attr:`added`."""
        k, r, w = (np.concatenate([o, a]) for o, a in zip(old.lex, self.added, strict=True))
        return k, r, w


class LexiconSince(NamedTuple):
    """What :func:`grown_lexicon` found over the passages from its ``new_from`` up to ``passages``."""

    names: list[str]  #: the names new to the old lexicon, in id order
    added: tuple[np.ndarray, np.ndarray, np.ndarray]  #: :attr:`GrownLexicon.added`
    passages: int  #: rows read (every passage before this row)


def grown_lexicon(passages: Sequence[Passage], old: ResolveState | None, new_from: int,
                  since: LexiconSince | None = None) -> GrownLexicon:
    """``old``'s lexicon with the entries of the passages from ``new_from`` on (:func:`build_lexicon` over them):
    names new to it get the next ids, in insertion order, as a build of the union numbers them. ``since``: what
    an earlier call over fewer passages found: only the passages after those are read (the lexicon grows
    passage by passage, so those passages' names come first, in the same order)."""
    names = list(old.names) if old else []
    n_prior = len(names)
    start, kept = new_from, None
    if since is not None:
        names += since.names
        start, kept = since.passages, since.added
    ids = dict(zip(names, range(len(names)), strict=True))  # the caller's ``since`` repeats none of ``old``'s
    # Read once, as the lexicon is built, not listed: the first add after a conversion has every passage "new".
    for_titles, for_texts = tee(passages[i] for i in range(start, len(passages)))
    added = build_lexicon((p.title for p in for_titles), (p.text for p in for_texts))
    keys_new, rows_new, weights_new = array("q"), array("q"), array("d")
    for key, cands in added.items():
        i = ids.get(key)
        if i is None:
            i = ids[key] = len(names)
            names.append(key)
        for row, weight in cands.items():
            keys_new.append(i)
            rows_new.append(row + start)
            weights_new.append(weight)
    entries = (np.asarray(keys_new, dtype=np.int32), np.asarray(rows_new, dtype=np.int64),
               np.asarray(weights_new, dtype=np.float64))
    if kept is not None:
        entries = (np.concatenate([kept[0].astype(np.int32), entries[0]]), np.concatenate([kept[1], entries[1]]),
                   np.concatenate([kept[2], entries[2]]))
    return GrownLexicon(names, ids, n_prior, entries)


class ResolveInputs(NamedTuple):
    """What the resolution reads of the union, as a delta over its base or over nothing
    (:func:`~gearag.derive.delta_resolve.resolve_delta`)."""

    passages: Sequence[Passage]
    live: UnionTriples
    vocab: UnionVocab  #: the union's endpoint names (the tables' ``names``)
    prior: Prior  #: the resolution of the union's first ``prior.new_from`` passages
    #: Per shard: its token index of texts and shard row → union row map (-1: deleted). Read with a prior.
    indices: Sequence[tuple[TokenIndex, np.ndarray]] = ()
    #: Per shard ``prior.names`` covers: the token index of its table's names. Read with a prior.
    name_indices: Sequence[TokenIndex] = ()


def endpoint_name_stats(inputs: ResolveInputs, lexicon: GrownLexicon, matcher: NameLookup, touched: list[str],
                        lost: np.ndarray) -> tuple[NameStats, np.ndarray]:
    """The union's :class:`NameStats`: ``inputs.prior``'s (when it has them) with the later shards' triples
    counted, ``lexicon``'s new names given their ids, and the names a new or deleted (``touched``) lexicon name
    may occur in scanned again; ``lost``: names whose first appearance a delete removed (found again here). With
    the names whose containment rows were scanned (again)."""
    (tables, triple_keep, _, _), vocab = inputs.live, inputs.vocab
    known, counted = inputs.prior.names, inputs.prior.shards
    assert known is not None, "a resolution over the prior's names' statistics"
    name_ends = [t.name_ends for t in tables]
    names, ids, n_prior_names = lexicon.names, lexicon.ids, lexicon.n_prior
    items = vocab.items
    stats = NameStats.grown(known, len(items), spans=inputs.live.spanned)
    start = inputs.live.live_before(counted)
    # Only the later shards' ends (their union name ids) are read: the earlier ones' were counted.
    seq = union_ends(vocab.remaps[counted:], name_ends[counted:], triple_keep[counted:]).ravel()  # subject, object…
    valid = seq >= 0
    first_seen(stats.first, seq[valid], np.arange(2 * start, 2 * start + len(seq), dtype=np.int64)[valid])
    if stats.first_span is not None:  # and their spans
        first_seen(stats.first_span, *inputs.live.spans(vocab.remaps, counted)[1:])
    if len(lost):
        flat = union_ends(vocab.remaps, name_ends, triple_keep).ravel()
        at = np.flatnonzero(setops.isin(flat, lost))
        first_seen(stats.first, flat[at], at)
        if stats.first_span is not None:
            _, span_names, slots = inputs.live.spans(vocab.remaps)
            at = np.flatnonzero(setops.isin(span_names, lost))
            first_seen(stats.first_span, span_names[at], slots[at])
    n_known = len(known.lex)
    if n_known:
        held = vocab.find(names[n_prior_names:])  # names new to the lexicon that some endpoint already had
        stats.lex[held[held >= 0]] = np.flatnonzero(held >= 0) + n_prior_names
        # Old names holding every token of a new (or deleted) lexicon name may contain it now: scanned again.
        if touched:
            query = TokenQuery.of(touched)
            for index, remap in zip(inputs.name_indices, vocab.remaps[:counted], strict=True):
                stats.scanned[remap[index.holding_any(query)]] = False
    stats.lex[n_known:] = np.fromiter((ids.get(k, -1) for k in strings_at(items, np.arange(n_known, len(items)))),
                                      dtype=np.int64, count=len(items) - n_known)
    todo = np.flatnonzero(stats.live() & (stats.lex < 0) & ~stats.scanned)
    sizes, found_names, found_shares = array("q"), array("q"), array("d")  # flat: no object per name
    for name in strings_at(items, todo):
        toks = name.split(" ")
        size = 0
        for m in matcher.scan(toks):
            share = (m.end - m.start) / len(toks)
            if share >= MIN_CONTAINED_SHARE:
                found_names.append(m.name)
                found_shares.append(share)
                size += 1
        sizes.append(size)
    stats.rescanned(todo, np.frombuffer(sizes, dtype=np.int64), np.frombuffer(found_names, dtype=np.int64),
                    np.frombuffer(found_shares, dtype=np.float64))
    return stats, todo


def shrunk(prior: Prior, removal: Removal, passages: Sequence[Passage]) -> tuple[Prior, list[str], np.ndarray,
                                                                                 np.ndarray]:
    """``prior`` as it would have been without the deleted rows: with the lexicon names that vanished (no
    passage left), the endpoint names whose first appearance was deleted, and each old lexicon id's new one
    (-1: vanished; one more entry, -1 for -1).

    The mirror of an add. A lexicon name's id is its place in ``build_lexicon``'s
    insertion order: by its first passage, then by its place among that
    passage's names. Names whose first passage was deleted move to their next
    one, where that passage's names are listed again to place them; every
    other name keeps its relative order. Text mentions and contained names
    are renumbered; the passages and endpoint names a vanished name may have
    matched in are scanned again by the caller (``touched``), and so is every
    endpoint name that was a vanished lexicon name.
    """
    old = prior.state
    n_old = len(old.names)
    lk, lr, lw = old.lex
    big = np.iinfo(np.int64).max
    first_before = np.full(n_old, big, dtype=np.int64)
    np.minimum.at(first_before, lk, lr)
    now = removal.rows[lr]
    keep = now >= 0
    lk, lr, lw = lk[keep], now[keep], lw[keep]
    first = np.full(n_old, big, dtype=np.int64)
    np.minimum.at(first, lk, lr)
    alive = first < big
    moved = alive & (removal.rows[np.minimum(first_before, len(removal.rows) - 1)] < 0)
    rank = np.arange(n_old, dtype=np.int64)  # within a passage untouched by the delete: the old order
    at_rows = setops.unique(first[moved])
    holders = np.flatnonzero(alive & setops.isin(first, at_rows))
    placed: dict[int, dict[str, int]] = {}
    for row in at_rows.tolist():  # a passage that is now the first of a moved name: its names' order
        p = passages[row]
        placed[row] = {k: j for j, k in enumerate(build_lexicon([p.title], [p.text]))}
    for i in holders.tolist():
        rank[i] = placed[int(first[i])][old.names[i]]
    order = np.flatnonzero(alive)
    order = order[np.lexsort((rank[order], first[order]))]
    new_id = np.full(n_old + 1, -1, dtype=np.int64)  # the last entry: -1 for -1
    new_id[order] = np.arange(len(order), dtype=np.int64)
    names = [old.names[i] for i in order.tolist()]
    vanished = [old.names[i] for i in np.flatnonzero(~alive).tolist()]
    tr, tn = old.text
    t_now = removal.rows[tr]
    t_name = new_id[tn]
    t_keep = (t_now >= 0) & (t_name >= 0)
    # The vanished names' spans stay in ``longest``: too long a span for a first token only costs lookups.
    state = ResolveState(names, (new_id[lk].astype(np.int32), lr, lw), (t_now[t_keep], t_name[t_keep].astype(np.int32)),
                         old.longest)
    stats = prior.names
    assert stats is not None, "the prior's names' statistics (the caller's)"
    first_at = stats.first.copy()
    has = np.flatnonzero(first_at >= 0)
    t_new = removal.triples[first_at[has] // 2]
    first_at[has] = np.where(t_new >= 0, 2 * t_new + first_at[has] % 2, -1)
    lost = has[t_new < 0]
    first_span = None
    if stats.first_span is not None:  # a span's slot moves with its row
        first_span = stats.first_span.copy()
        has = np.flatnonzero(first_span >= 0)
        row_new = removal.rows[first_span[has] // SPAN_SLOTS]
        first_span[has] = np.where(row_new >= 0, row_new * SPAN_SLOTS + first_span[has] % SPAN_SLOTS, -1)
        lost = setops.union(lost, has[row_new < 0])
    lex = stats.lex.copy()
    named = np.flatnonzero(lex >= 0)
    lex[named] = new_id[lex[named]]
    scanned = stats.scanned.copy()
    scanned[named[lex[named] < 0]] = False  # was a lexicon name, is an endpoint-only name now
    cont_name = new_id[stats.cont_name]
    counts = np.diff(stats.cont_ptr)
    stale = setops.unique(np.repeat(np.arange(len(counts), dtype=np.int64), counts)[cont_name < 0])
    stats = NameStats(first_at, lex, scanned, stats.cont_ptr.copy(), cont_name, np.asarray(stats.cont_share),
                      first_span=first_span)
    empty = np.zeros(0, dtype=np.int64)
    stats.rescanned(stale, np.zeros(len(stale), np.int64), empty, empty.astype(np.float64))  # emptied, then
    stats.scanned[stale] = False  # scanned again
    return Prior(state, len(passages), prior.shards, stats), vanished, lost, new_id
