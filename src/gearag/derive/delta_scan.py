"""The text matches and lexicon a delta add kept for the next delta add over the same base (docs/delta.md, "The
resolution"): that add scans only its own passages and the rows a name gained since may occur in. Tested equal to
scanning everything again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.derive.text_mentions import rows_holding, scanned_again
from gearag.derive.token_index import TokenIndex
from gearag.derive.union_resolve import GrownLexicon, LexiconSince
from gearag.errors import GearagError
from gearag.graph.trie import NameLookup
from gearag.model import Passage
from gearag.store.collection import load_array
from gearag.store.writer import IndexWriter

#: Where a delta generation keeps its :class:`TextScan`.
SCAN_DIR = "resolve/delta_scan"
_FILES = ("again.npy", "match_rows.npy", "match_names.npy", "lexicon_names.npy", "lexicon_rows.npy",
          "lexicon_weights.npy")


class TextScan(NamedTuple):
    """The text matches a delta add found over its base, and the lexicon it grew (docs/delta.md, "The resolution")."""

    base_names: int  #: lexicon names the base had
    names: int  #: lexicon names the scan matched (the base's, then those new since it)
    passages: int  #: passage rows then (the base's, then those since it: every one of those scanned)
    again: np.ndarray  #: int64, ascending: the base rows scanned again (holding a name new since the base)
    match_rows: np.ndarray  #: int64 per match: its row (a base row in ``again``, or a row since the base)
    match_names: np.ndarray  #: int64 per match: the lexicon name matched
    new_names: list[str]  #: the lexicon names new since the base (``names - base_names`` of them)
    entries: tuple[np.ndarray, np.ndarray, np.ndarray]  #: the lexicon entries of the passages since the base

    def lexicon(self, base_names: int, new_from: int, n_passages: int) -> LexiconSince | None:
        """The lexicon since the base (for :func:`~gearag.derive.union_resolve.grown_lexicon`), if it is of a
        base of ``base_names`` names whose passages end at ``new_from``, and of no more than ``n_passages``."""
        ok = (self.base_names == base_names and new_from <= self.passages <= n_passages
              and len(self.new_names) == self.names - self.base_names)
        return LexiconSince(self.new_names, self.entries, self.passages) if ok else None

    def write(self, w: IndexWriter) -> None:
        arrays = (self.again, self.match_rows, self.match_names, *self.entries)
        for name, values in zip(_FILES, arrays, strict=True):
            w.write_array(f"{SCAN_DIR}/{name}", values)
        w.write_json(f"{SCAN_DIR}/new_names.json", self.new_names)
        w.write_json(f"{SCAN_DIR}/scan.json", {"base_names": self.base_names, "names": self.names,
                                               "passages": self.passages})

    @classmethod
    def read(cls, directory: Path | None) -> TextScan | None:
        """The scan a delta generation at ``directory`` kept; None when it kept none or it does not hold."""
        if directory is None or not (directory / SCAN_DIR / "scan.json").is_file():
            return None
        try:
            from gearag.data.jsonio import load_json

            meta = load_json(directory / SCAN_DIR / "scan.json")
            again, rows, found, keys, key_rows, weights = (np.asarray(load_array(directory, f"{SCAN_DIR}/{f}"))
                                                           for f in _FILES)
            new_names = load_json(directory / SCAN_DIR / "new_names.json")
            base_names, names, passages = (int(meta[k]) for k in ("base_names", "names", "passages"))
        except (OSError, ValueError, KeyError, TypeError, GearagError):
            return None
        if (again.ndim != 1 or rows.ndim != 1 or rows.shape != found.shape or keys.ndim != 1
                or keys.shape != key_rows.shape or keys.shape != weights.shape or not isinstance(new_names, list)):
            return None
        return cls(base_names, names, passages, again.astype(np.int64), rows.astype(np.int64), found.astype(np.int64),
                   new_names, (keys.astype(np.int32), key_rows.astype(np.int64), weights.astype(np.float64)))


def scan_texts(passages: Sequence[Passage], new_from: int, indices: Sequence[tuple[TokenIndex, np.ndarray]],
               lexicon: GrownLexicon, matcher: NameLookup, previous: TextScan | None = None) -> TextScan:
    """The text matches of every passage since the base (rows ``new_from`` on) and of the base rows holding
    every token of a lexicon name new since it (``lexicon``: grown over the passages since the base), found
    with ``matcher``; through ``previous`` (the last delta add's over the same base) where it holds: only the
    rows since it and the rows holding a name gained since it are scanned. ``indices``: every shard's token
    index and row map."""
    names, n_base_names = lexicon.names, lexicon.n_prior
    n = len(passages)
    if previous is not None and not (previous.base_names == n_base_names and n_base_names <= previous.names
                                     <= len(names) and new_from <= previous.passages <= n):
        previous = None
    # Scanned: the rows read before (the base's; through ``previous``, the rows it read) holding every token of a
    # name new since, and the rows after them.
    names_from, rows_from = (previous.names, previous.passages) if previous is not None else (n_base_names, new_from)
    gained = list(names[names_from:])
    holding = {r for r in rows_holding(indices, gained) if r < rows_from} if gained and rows_from else set()
    again = setops.union(previous.again if previous is not None else np.zeros(0, np.int64),
                         np.asarray([r for r in holding if r < new_from], dtype=np.int64))
    old = (previous.match_rows, previous.match_names) if previous is not None else None
    found_rows, found_names = scanned_again(passages, old, holding | set(range(rows_from, n)), matcher)
    return TextScan(n_base_names, len(names), n, again, found_rows.astype(np.int64), found_names.astype(np.int64),
                    names[n_base_names:], lexicon.added)
