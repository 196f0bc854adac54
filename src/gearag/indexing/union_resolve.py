"""The union's entity resolution, extended by an add instead of recomputed (issue 14).

:func:`gearag.graph.resolve.resolve_corpus` over the union scans every
passage's text for every title-derived name, so a from-scratch resolution per
``gearag add`` grew with the corpus. Its parts depend on the rest of the
corpus in a few known ways only, which this module uses:

* the *lexicon* (title, base, head and alias names, :func:`build_lexicon`) is
  a per-passage function; an add appends its passages' entries (rows after
  every earlier row, so name ids and insertion order are those of a build);
* a passage's *text mentions* (the token trie's leftmost-longest scan) change
  only when a name new to the lexicon occurs in it: only passages that hold
  every token of some new name are scanned again (each shard keeps a
  token → passages index, ``resolve/<shard>/``), with the new passages;
* the *endpoint* names come from the shards' endpoint tables
  (:mod:`gearag.indexing.union_graph`); endpoint entity ids (first
  appearance, after the lexicon's) and the about weights (normalised over a
  name's passages; endpoints through the names they contain) are re-derived
  over the whole union — integer and per-name work, not per-passage text.

The generation stores what the next add needs (``resolve/``: the lexicon's
entries and the text mentions). Without it (the first add after a
conversion or an older gearag), after a delete or a compact, everything is
scanned: the same code with every passage "new". The result is the
:class:`~gearag.graph.resolve.Resolution` ``resolve_corpus`` returns for the
union, array for array (tested).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gearag.errors import GearagError
from gearag.graph.resolve import MIN_CONTAINED_SHARE, Resolution, _incidence, build_lexicon
from gearag.graph.trie import TokenTrie, tokens
from gearag.indexing.union_graph import EndpointTable, reuse_or_compute
from gearag.model import Passage
from gearag.store.collection import load_array
from gearag.store.writer import IndexWriter

RESOLVE_DIR = "resolve"
STATE_FILES = ("names.json", "lex_names.npy", "lex_rows.npy", "lex_weights.npy", "text_rows.npy", "text_names.npy")
INDEX_FILES = ("tokens.json", "indptr.npy", "rows.npy")


class TokenIndex:
    """A shard's case-folded text tokens (as the trie scans them) → the passage rows holding them."""

    def __init__(self, vocab: list[str], indptr: np.ndarray, rows: np.ndarray) -> None:
        self.lookup = {t: i for i, t in enumerate(vocab)}
        self.vocab, self.indptr, self.rows = vocab, indptr, rows

    @classmethod
    def compute(cls, texts: Sequence[str]) -> TokenIndex:
        ids: dict[str, int] = {}
        tok_parts, row_parts = [], []
        for row, text in enumerate(texts):
            found = {ids.setdefault(t.casefold(), len(ids)) for t in tokens(text)}
            tok_parts.append(np.fromiter(found, dtype=np.int64, count=len(found)))
            row_parts.append(np.full(len(found), row, dtype=np.int64))
        toks = np.concatenate(tok_parts) if tok_parts else np.zeros(0, np.int64)
        rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
        order = np.lexsort((rows, toks))
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(toks, minlength=len(ids)), out=indptr[1:])
        return cls(list(ids), indptr, rows[order].astype(np.int32))

    def holding(self, words: list[str]) -> np.ndarray:
        """Rows whose text has every one of ``words`` (case-folded tokens)."""
        found = None
        for w in words:
            i = self.lookup.get(w.casefold())
            if i is None:
                return np.zeros(0, np.int32)
            rows = self.rows[self.indptr[i] : self.indptr[i + 1]]
            found = rows if found is None else np.intersect1d(found, rows, assume_unique=True)
            if not len(found):
                break
        return found if found is not None else np.zeros(0, np.int32)

    def write(self, w: IndexWriter, rel: str) -> None:
        w.write_json(f"{rel}/tokens.json", self.vocab)
        w.write_array(f"{rel}/indptr.npy", self.indptr)
        w.write_array(f"{rel}/rows.npy", self.rows)

    @classmethod
    def read(cls, directory: Path, n_rows: int) -> TokenIndex | None:
        try:
            vocab = json.loads((directory / "tokens.json").read_text(encoding="utf-8"))
            indptr = np.asarray(load_array(directory, "indptr.npy"))
            rows = np.asarray(load_array(directory, "rows.npy"))
        except (OSError, ValueError, GearagError):
            return None
        if (not isinstance(vocab, list) or len(indptr) != len(vocab) + 1 or int(indptr[-1]) != len(rows)
                or (len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n_rows))):
            return None
        return cls(vocab, indptr, rows)


def shard_token_index(previous: Path | None, shard: str, texts: Sequence[str], w: IndexWriter) -> TokenIndex:
    """Shard ``shard``'s token index in the generation being written: hard-linked from ``previous``, else computed."""
    return reuse_or_compute(previous, f"{RESOLVE_DIR}/{shard}", INDEX_FILES, lambda d: TokenIndex.read(d, len(texts)),
                            lambda: TokenIndex.compute(texts), TokenIndex.write, w)


class ResolveState:
    """What a generation keeps for the next add: the lexicon's entries and the text mentions."""

    def __init__(self, names: list[str], lex: tuple[np.ndarray, np.ndarray, np.ndarray],
                 text: tuple[np.ndarray, np.ndarray]) -> None:
        self.names = names  #: lexicon names in id order
        self.lex = lex  #: (name id, passage row, tier weight) per entry, in insertion order
        self.text = text  #: (passage row, name id) per text mention

    def write(self, w: IndexWriter) -> None:
        w.write_json(f"{RESOLVE_DIR}/names.json", self.names)
        for name, array in zip(STATE_FILES[1:], (*self.lex, *self.text), strict=True):
            w.write_array(f"{RESOLVE_DIR}/{name}", array)

    @classmethod
    def read(cls, directory: Path, n_passages: int) -> ResolveState | None:
        try:
            names = json.loads((directory / RESOLVE_DIR / "names.json").read_text(encoding="utf-8"))
            arrays = [np.asarray(load_array(directory, f"{RESOLVE_DIR}/{f}")) for f in STATE_FILES[1:]]
        except (OSError, ValueError, GearagError):
            return None
        lk, lr, lw, tr, tn = arrays
        if (not isinstance(names, list) or not len(lk) == len(lr) == len(lw) or len(tr) != len(tn)
                or any(len(a) and (int(a.min()) < 0 or int(a.max()) >= n) for a, n in
                       ((lk, len(names)), (tn, len(names)), (lr, n_passages), (tr, n_passages)))):
            return None
        return cls(names, (lk, lr, lw), (tr, tn))


def resolve_union(passages: Sequence[Passage], tables: Sequence[EndpointTable], triple_keep: Sequence[np.ndarray],
                  owner: np.ndarray, prior: ResolveState | None, new_from: int,
                  indices: Sequence[tuple[TokenIndex, np.ndarray]]) -> tuple[Resolution, ResolveState]:
    """``resolve_corpus`` of the union, reusing ``prior`` (the state of its first ``new_from`` passages).

    ``indices``: per earlier shard, its token index and shard row → union row
    map (-1: deleted); only needed with ``prior``.
    """
    n_passages = len(passages)
    if prior is None:
        new_from = 0
    # -- the lexicon: the prior's entries, then the new passages' ------------------------------
    names = list(prior.names) if prior else []
    ids = {k: i for i, k in enumerate(names)}
    n_prior_names = len(names)
    lk = [prior.lex[0]] if prior else []
    lr = [prior.lex[1]] if prior else []
    lw = [prior.lex[2]] if prior else []
    fresh = passages[new_from:]
    added = build_lexicon([p.title for p in fresh], [p.text for p in fresh])
    keys_new, rows_new, weights_new = [], [], []
    for key, cands in added.items():
        i = ids.get(key)
        if i is None:
            i = ids[key] = len(names)
            names.append(key)
        for row, weight in cands.items():
            keys_new.append(i)
            rows_new.append(row + new_from)
            weights_new.append(weight)
    lk.append(np.asarray(keys_new, dtype=np.int32))
    lr.append(np.asarray(rows_new, dtype=np.int64))
    lw.append(np.asarray(weights_new, dtype=np.float64))
    lex_k, lex_r, lex_w = np.concatenate(lk), np.concatenate(lr), np.concatenate(lw)
    n_names = len(names)
    # Per name: its passages in insertion (= row) order, and their total weight.
    order = np.argsort(lex_k, kind="stable")
    by_name_rows, by_name_w = lex_r[order], lex_w[order]
    name_ptr = np.zeros(n_names + 1, dtype=np.int64)
    np.cumsum(np.bincount(lex_k, minlength=n_names), out=name_ptr[1:])
    totals = np.bincount(lex_k, weights=lex_w, minlength=n_names)  # sums of tier weights: exact in any order
    trie = TokenTrie()
    for i, k in enumerate(names):
        trie.add(k.split(" "), i)
    about_rows: list[np.ndarray] = [np.repeat(np.arange(n_names, dtype=np.int64), np.diff(name_ptr))]
    about_cols: list[np.ndarray] = [by_name_rows]
    about_vals: list[np.ndarray] = [by_name_w / np.repeat(totals, np.diff(name_ptr))]
    # -- endpoints: entity ids in first appearance (subject, object, next triple), after the names ---------
    vocab: dict[str, int] = {}
    parts = []
    for table, keep in zip(tables, triple_keep, strict=True):
        remap = np.fromiter((vocab.setdefault(k, len(vocab)) for k in table.names), dtype=np.int64,
                            count=len(table.names))
        local = table.name_ends[keep].astype(np.int64)
        parts.append(np.where(local >= 0, remap[np.maximum(local, 0)] if len(remap) else -1, -1))
    ends_key = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
    seq = ends_key.ravel()  # row-major: t0 subject, t0 object, t1 subject, ...
    valid = np.flatnonzero(seq >= 0)
    uniq, first = np.unique(seq[valid], return_index=True)
    vocab_list = list(vocab)
    entity = np.full(len(vocab) + 1, -1, dtype=np.int64)
    keys = list(names)
    c_rows: list[int] = []
    c_cols: list[int] = []
    c_vals: list[float] = []
    for k in uniq[np.argsort(first, kind="stable")].tolist():
        key = vocab_list[k]
        eid = ids.get(key)
        if eid is None:
            eid = ids[key] = len(keys)
            keys.append(key)
            toks = key.split(" ")
            for m in trie.scan(toks):
                share = (m.end - m.start) / len(toks)
                if share < MIN_CONTAINED_SHARE:
                    continue
                s, e = int(name_ptr[m.name]), int(name_ptr[m.name + 1])
                total = float(sum(by_name_w[s:e].tolist()))
                for row, w in zip(by_name_rows[s:e].tolist(), by_name_w[s:e].tolist(), strict=True):
                    c_rows.append(eid)
                    c_cols.append(row)
                    c_vals.append(share * w / total)
        entity[k] = eid
    about_rows.append(np.asarray(c_rows, dtype=np.int64))
    about_cols.append(np.asarray(c_cols, dtype=np.int64))
    about_vals.append(np.asarray(c_vals, dtype=np.float64))
    ends = entity[np.where(ends_key >= 0, ends_key, len(vocab))].astype(np.int32)
    # -- text mentions: kept where no new name can occur, scanned again where one may ---------------
    rescan: set[int] = set(range(new_from, n_passages))
    if prior is not None and n_names > n_prior_names:
        for index, rows in indices:
            for name in names[n_prior_names:]:
                hit = rows[index.holding(name.split(" "))]
                rescan.update(hit[hit >= 0].tolist())
    t_rows: list[np.ndarray] = []
    t_names: list[np.ndarray] = []
    if prior is not None:
        kept = ~np.isin(prior.text[0], np.fromiter(rescan, dtype=np.int64, count=len(rescan)))
        t_rows.append(prior.text[0][kept])
        t_names.append(prior.text[1][kept])
    scanned_rows: list[int] = []
    scanned_names: list[int] = []
    if n_names:
        for row in sorted(rescan):
            for m in trie.scan(tokens(passages[row].text), require_capital=True):
                scanned_rows.append(row)
                scanned_names.append(m.name)
    t_rows.append(np.asarray(scanned_rows, dtype=np.int64))
    t_names.append(np.asarray(scanned_names, dtype=np.int32))
    text_rows, text_names = np.concatenate(t_rows).astype(np.int64), np.concatenate(t_names).astype(np.int32)
    # -- the matrices, as resolve_corpus assembles them -------------------------------------------------
    from scipy import sparse

    n_keys = len(keys)
    about = sparse.csr_matrix(
        (np.concatenate(about_vals).astype(np.float32),
         (np.concatenate(about_rows), np.concatenate(about_cols))), shape=(n_keys, n_passages))
    about.sum_duplicates()
    owner2 = np.repeat(np.asarray(owner, dtype=np.int64), 2)
    flat = ends.ravel().astype(np.int64)
    linked = flat >= 0
    mentions = _incidence(np.concatenate([owner2[linked], text_rows]),
                          np.concatenate([flat[linked], text_names.astype(np.int64)]), (n_passages, n_keys))
    state = ResolveState(names, (lex_k, lex_r, lex_w), (text_rows, text_names))
    return Resolution(keys, n_names, about, mentions, ends, None), state
