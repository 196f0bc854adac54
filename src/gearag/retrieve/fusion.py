"""Reciprocal rank fusion (Cormack et al., SIGIR 2009), used throughout GEAR.

GEAR fuses expanded and base passages (§4.2, Eq. 3), hybrid BM25 + dense
(§6.1), passage- and triple-side results in passageLink (App. B.2, Eq. 10),
and every step's passages with the gist-linked ones (§5.4, Eq. 9), all with
RRF: ``score(d) = Σ_r 1 / (k + rank_r(d))`` with 1-based ranks, ``k = 60``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

#: The constant from Cormack et al.; GEAR does not change it.
RRF_K = 60


def rrf(
    rankings: Iterable[Sequence[K]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """Fuse ranked lists of keys, best first.

    Duplicates inside one list count once, at their best rank. Ties are
    broken by first appearance across the lists in the order given, so the
    output is deterministic.
    """
    scores: dict[K, float] = {}
    for r, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[r]
        seen: set[K] = set()
        rank = 0
        for key in ranking:
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            scores[key] = scores.get(key, 0.0) + w / (k + rank)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
