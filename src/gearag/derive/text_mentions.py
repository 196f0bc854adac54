"""Which lexicon names a union's passage texts mention, found again only where a new or vanished lexicon name may
match (:func:`rows_holding`, :func:`scanned_again`), and triple ends as mentions; used by an add's and a delete's
resolution (docs/delta.md, "The resolution").
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

from gearag import setops
from gearag.arrays import ascending
from gearag.derive.token_index import TokenIndex, TokenQuery
from gearag.graph.trie import NameLookup, tokens
from gearag.model import Passage


def rows_holding(indices: Sequence[tuple[TokenIndex, np.ndarray]], touched: list[str]) -> set[int]:
    """The union rows (per shard: its token index and shard row → union row map, -1: deleted) whose text holds
    every token of one of the ``touched`` names: where a new or vanished lexicon name may match."""
    found: set[int] = set()
    query = TokenQuery.of(touched)
    for index, rows in indices:
        hit = rows[index.holding_any(query)]
        found.update(hit[hit >= 0].tolist())
    return found


def scanned_again(passages: Sequence[Passage], old: tuple[np.ndarray, np.ndarray] | None, rescan: set[int],
                  matcher: NameLookup) -> tuple[np.ndarray, np.ndarray]:
    """``old``'s text mentions (rows and names; None: none) outside the rows ``rescan``, and those rows' found
    again with ``matcher`` (the lexicon names written as names in their texts): (passage row, lexicon id) per
    mention, in row order (the rows scanned again are merged in; an older gearag's state is sorted once), so
    the mention matrix need not sort them."""
    found_rows, found_names = array("q"), array("q")
    if matcher.size:
        for row in sorted(rescan):
            for m in matcher.scan(tokens(passages[row].text), require_capital=True):
                found_rows.append(row)
                found_names.append(m.name)
    scanned = np.frombuffer(found_rows, dtype=np.int64), np.frombuffer(found_names, dtype=np.int64)
    if old is None:
        return scanned
    kept = ~setops.isin(old[0], np.fromiter(rescan, dtype=np.int64, count=len(rescan)))
    return merged_mentions(old[0][kept], old[1][kept], *scanned)


def merged_mentions(a_rows: np.ndarray, a_cols: np.ndarray, b_rows: np.ndarray,
            b_cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two lists of (row, column) entries as one in row order, the second's after the first's in a row: merged
    when both lists are in row order, else sorted stably."""
    if not (ascending(a_rows) and ascending(b_rows)):
        rows, cols = np.concatenate([a_rows, b_rows]), np.concatenate([a_cols, b_cols])
        order = np.argsort(rows, kind="stable")
        return rows[order], cols[order]
    at = np.searchsorted(a_rows, b_rows, side="right") + np.arange(len(b_rows))
    from_b = np.zeros(len(a_rows) + len(b_rows), dtype=bool)
    from_b[at] = True
    rows = np.empty(len(from_b), dtype=np.result_type(a_rows, b_rows))
    cols = np.empty(len(from_b), dtype=np.result_type(a_cols, b_cols))
    rows[at], cols[at] = b_rows, b_cols
    rows[~from_b], cols[~from_b] = a_rows, a_cols
    return rows, cols


def end_mentions(owner: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """Triples' linked ends as mentions in their passages (``owner``: each triple's; ``ends``: (T, 2) entity
    ids, -1: none), in triple order, subject first: ``passage * n + entity`` per mention, int64."""
    flat = ends.ravel()
    linked = flat >= 0
    return np.repeat(np.asarray(owner, dtype=np.int64), 2)[linked] * n + flat[linked].astype(np.int64)
