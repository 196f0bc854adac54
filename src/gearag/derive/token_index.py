"""Token indices: which rows hold every token of a name (the rows an add scans again).

An add that brings new lexicon names must scan again the base passages (and
endpoint names) they may occur in. Each shard keeps, per token, the rows
holding it (:class:`TokenIndex`), so those rows are found by intersecting a
few posting lists instead of scanning the corpus.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from gearag import setops
from gearag.arrays import offsets, row_offsets
from gearag.derive.endpoints import EndpointTable, reuse_or_compute
from gearag.derive.union_vocab import UNION_DIR
from gearag.graph.trie import tokens
from gearag.hashing import stable_hashes
from gearag.store.npy import kept_arrays
from gearag.store.writer import IndexWriter

#: Where a generation keeps the per-shard token indices of texts (``resolve/<shard>/``).
RESOLVE_DIR = "resolve"
INDEX_FILES = ("hashes.npy", "indptr.npy", "rows.npy")


@dataclass(frozen=True)
class TokenQuery:
    """Name keys cut into case-folded tokens and hashed, to look up in many :class:`TokenIndex` es."""

    starts: np.ndarray  #: int64 per name + 1: where its tokens' hashes start (every name has one or more)
    hashes: np.ndarray  #: the tokens' :func:`~gearag.hashing.stable_hashes`, name after name

    @classmethod
    def of(cls, names: Sequence[str]) -> TokenQuery:
        words = [name.split(" ") for name in names]
        starts = offsets([len(ws) for ws in words])
        return cls(starts, stable_hashes([w.casefold() for ws in words for w in ws]))


class TokenIndex:
    """A shard's case-folded text tokens (as the trie scans them) → the passage rows holding them.

    Tokens are kept as their sorted :func:`~gearag.hashing.stable_hashes`
    (no strings to parse or dict to build when a generation reads it back): two
    tokens sharing a hash only make :meth:`holding_any` return more rows, which
    are scanned again to no effect, never fewer.
    """

    def __init__(self, hashes: np.ndarray, indptr: np.ndarray, rows: np.ndarray) -> None:
        self.hashes, self.indptr, self.rows = hashes, indptr, rows

    @classmethod
    def compute(cls, texts: Sequence[str], split: Callable[[str], list[str]] = tokens) -> TokenIndex:
        """The index of ``texts`` cut into tokens by ``split`` (default: as the trie scans running text)."""
        ids: dict[str, int] = {}
        tok_ids, row_ids = array("q"), array("q")  # flat: two arrays per text cost ~1.5 GB over 6.7M names
        for row, text in enumerate(texts):
            found = {ids.setdefault(t.casefold(), len(ids)) for t in split(text)}
            tok_ids.extend(found)
            row_ids.extend(repeat(row, len(found)))
        hashes = stable_hashes(ids)
        by_hash = np.argsort(hashes, kind="stable")
        rank = np.empty(len(ids), dtype=np.int64)
        rank[by_hash] = np.arange(len(ids))
        toks = rank[np.frombuffer(tok_ids, dtype=np.int64)] if len(tok_ids) else np.zeros(0, np.int64)
        rows = np.frombuffer(row_ids, dtype=np.int64) if len(row_ids) else np.zeros(0, np.int64)
        order = np.lexsort((rows, toks))
        indptr = row_offsets(toks, len(ids))
        return cls(hashes[by_hash], indptr, rows[order].astype(np.int32))

    @classmethod
    def merged(cls, parts: Sequence[tuple[TokenIndex, np.ndarray]]) -> TokenIndex:
        """One index of several indices' rows, each with its rows' row in the merged one (-1: left out): every
        hash's rows joined and sorted, each once; a hash whose rows were all left out dropped. What
        :meth:`compute` gives over the merged rows' texts, save that tokens sharing a hash share an entry."""
        # Filled in place, rows as int32 (as stored): no list of per-part copies joined again (a compact's at a
        # million passages holds ~60M postings of its texts and names).
        maps = [np.asarray(to_row).astype(np.int32) for _, to_row in parts]
        kept = [m[np.asarray(index.rows)] >= 0 for (index, _), m in zip(parts, maps, strict=True)]
        h = np.empty(sum(int(k.sum()) for k in kept), dtype=np.asarray(parts[0][0].hashes).dtype if parts else np.int64)
        r = np.empty(len(h), dtype=np.int32)
        at = 0
        for (index, _), m, k in zip(parts, maps, kept, strict=True):
            n = int(k.sum())
            h[at: at + n] = np.repeat(np.asarray(index.hashes), np.diff(np.asarray(index.indptr)))[k]
            r[at: at + n] = m[np.asarray(index.rows)[k]]
            at += n
        del maps, kept
        order = np.lexsort((r, h))
        h, r = h[order], r[order]
        del order
        fresh = np.ones(len(h), dtype=bool)
        fresh[1:] = (h[1:] != h[:-1]) | (r[1:] != r[:-1])  # a row twice under one hash: once
        h, r = h[fresh], r[fresh]
        starts = np.flatnonzero(np.concatenate([[True], h[1:] != h[:-1]])) if len(h) else np.zeros(0, np.int64)
        return cls(h[starts], np.append(starts, len(h)).astype(np.int64), r)

    def holding_any(self, names: Sequence[str] | TokenQuery) -> np.ndarray:
        """Rows holding every token of at least one of ``names`` (name keys, or a :class:`TokenQuery` of them,
        hashed once for many indices), each once or more: every token looked up at once, then the rows of
        each name whose tokens all occur intersected, its rarest token's first (each token's rows are sorted:
        the rows left are looked up in the next token's by bisection, never sorted with them)."""
        query = names if isinstance(names, TokenQuery) else TokenQuery.of(names)
        if not len(query.hashes):
            return np.zeros(0, np.int32)
        lo = np.searchsorted(self.hashes, query.hashes, side="left")
        hi = np.searchsorted(self.hashes, query.hashes, side="right")
        # Names with a token no row has are passed over at once (most names, in most indices).
        held = np.minimum.reduceat((hi > lo).astype(np.int8), query.starts[:-1]) > 0
        indptr = self.indptr
        parts = []
        for name in np.flatnonzero(held).tolist():
            span = slice(int(query.starts[name]), int(query.starts[name + 1]))
            first, last = indptr[lo[span]], indptr[hi[span]]
            found = None
            for at in np.argsort(last - first, kind="stable").tolist():  # the rarest token first
                rows = self.rows[int(first[at]) : int(last[at])]
                if hi[span][at] - lo[span][at] > 1:  # tokens sharing a hash: their rows merged
                    rows = setops.unique(rows)
                if found is None:
                    found = rows
                else:
                    pos = np.minimum(np.searchsorted(rows, found), len(rows) - 1)
                    found = found[rows[pos] == found]
                if not len(found):
                    break
            if found is not None and len(found):
                parts.append(found)
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)

    def write(self, w: IndexWriter, rel: str) -> None:
        for name, values in zip(INDEX_FILES, (self.hashes, self.indptr, self.rows), strict=True):
            w.write_array(f"{rel}/{name}", values)

    @classmethod
    def read(cls, directory: Path, n_rows: int) -> TokenIndex | None:
        arrays = kept_arrays(directory, *INDEX_FILES)
        if arrays is None:
            return None
        hashes, indptr, rows = arrays
        if (len(indptr) != len(hashes) + 1 or int(indptr[-1]) != len(rows)
                or (len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n_rows))):
            return None
        return cls(hashes, indptr, rows)


def shard_token_index(previous: Path | None, shard: str, texts: Sequence[str], w: IndexWriter) -> TokenIndex:
    """Shard ``shard``'s token index in the generation being written: hard-linked from ``previous``, else computed."""
    return reuse_or_compute(previous, f"{RESOLVE_DIR}/{shard}", INDEX_FILES, lambda d: TokenIndex.read(d, len(texts)),
                            lambda: TokenIndex.compute(texts), TokenIndex.write, w)


def shard_name_index(previous: Path | None, shard: str, table: EndpointTable, w: IndexWriter) -> TokenIndex:
    """The token index of shard ``shard``'s endpoint names (name keys: tokens joined by spaces), as above; a
    reused one does not read the table's names. Reused only beside the table it was made from (a table computed
    again, say with its NER spans, holds other names)."""
    return reuse_or_compute(previous if table.stored else None, f"{UNION_DIR}/name_tokens/{shard}", INDEX_FILES,
                            lambda d: TokenIndex.read(d, table.id_bound("names")),
                            lambda: TokenIndex.compute(table.names, lambda k: k.split(" ")), TokenIndex.write, w)
