"""Diverse triple beam search — GEAR §4.2, Algorithm 1.

Beams are paths of triple ids with cumulative scores. Step 0 scores every
initial triple alone and keeps the top ``b``. Each further step extends
every beam with the neighbours of its last triple (triples sharing a head
or tail entity) that are not already in any beam of the previous step; a
candidate's score is the beam's score plus ``score(q, path ∘ t)``. Within a
beam, candidates are sorted by score and the ``n``-th (0-based) is weighted
by ``exp(-min(n, γ) / γ)``, which makes the top ``b`` beams of the step
less likely to share a prefix. ``diversity=False`` drops the weight
(standard beam search, the ablation of Table 4).

Two choices the paper leaves open, made explicit here:

* ``neighbours`` caps the candidates considered per beam (paper: 100,
  App. B.2); when a triple has more neighbours, the best-scored are kept.
* ``scope`` (extension, default ``cross-passage``) restricts extensions to
  triples of passages not yet on the path; ``all`` is Algorithm 1 as printed.
* If no beam can be extended at a step (no unvisited neighbours anywhere),
  the previous step's beams are returned instead of an empty list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gearag import setops
from gearag.options import QUESTION, setting, upto

SCOPES = ("all", "cross-passage")


@dataclass(frozen=True)
class BeamConfig:
    """Beam search settings; defaults are GEAR's (App. B.2)."""

    #: Beam width ``b``.
    width: int = setting(10, "Beam width b (GEAR: 10).", name="beam_width", min=1, request=upto(50))
    #: Maximum path length ``l`` in triples.
    length: int = setting(2, "Maximum path length l in triples (GEAR: 2).", name="beam_length", min=1, request=upto(4))
    #: Candidate neighbours considered per beam and step.
    neighbours: int = setting(100, "Neighbours considered per beam and step (GEAR: 100).", min=1, request=upto(1000))
    #: Diversity hyper-parameter ``γ``; ``None`` means ``2 × width`` (the paper's setting).
    gamma: float | None = setting(None, "Diversity γ (default 2 × beam width).", positive=True, request=QUESTION)
    #: Apply the per-beam rank weight ``exp(-min(n, γ)/γ)``; off = standard beam search.
    diversity: bool = setting(True, "Diverse beam search; --no-diversity is standard beam search (Table 4).",
                              request=QUESTION)
    #: Which neighbours may extend a path: ``all`` (Algorithm 1 as printed:
    #: any triple sharing an entity) or ``cross-passage`` (only triples from
    #: passages not yet on the path). Most neighbours of a triple are its own
    #: passage's triples about the same subject; a step to one of them scores
    #: well but can never reach a new passage, so ``cross-passage`` (our
    #: default, measured in docs/benchmarks-log.md) spends every step on a hop.
    scope: str = setting("cross-passage", "Beam neighbours: cross-passage | all (Algorithm 1 as printed).",
                         choices=SCOPES, request=QUESTION)

    @property
    def effective_gamma(self) -> float:
        return float(self.gamma) if self.gamma else float(2 * self.width)


@dataclass(frozen=True)
class Beam:
    score: float
    path: tuple[int, ...]


class PathScorer:
    """``score(q, path)`` for GEAR's beam search: cosine of query and path embeddings."""

    def start(self, triples: np.ndarray) -> np.ndarray:
        """Scores of single-triple paths ``[t]`` for each ``t`` in ``triples``."""
        raise NotImplementedError

    def extend(self, path: tuple[int, ...], candidates: np.ndarray) -> np.ndarray:
        """Scores of ``path ∘ t`` for each candidate ``t``."""
        raise NotImplementedError


def diverse_beam_search(
    initial: Sequence[int],
    scorer: PathScorer,
    neighbours: Callable[[int], np.ndarray],
    config: BeamConfig = BeamConfig(),
    owner: np.ndarray | None = None,
) -> list[Beam]:
    """Run Algorithm 1 from ``initial`` triples; returns the final beams, best first.

    ``owner`` maps triple ids to passage rows; it is required for
    ``scope="cross-passage"``.
    """
    cross = config.scope == "cross-passage"
    if cross and owner is None:
        raise ValueError("cross-passage scope needs the triple → passage map")
    init = np.asarray(list(dict.fromkeys(int(t) for t in initial)), dtype=np.int64)
    if init.size == 0:
        return []
    start_scores = scorer.start(init)
    beams = _top([Beam(float(s), (int(t),)) for s, t in zip(start_scores, init, strict=True)], config.width)
    gamma = config.effective_gamma
    for _ in range(1, config.length):
        visited = np.fromiter({t for b in beams for t in b.path}, dtype=np.int64)
        candidates: list[Beam] = []
        for beam in beams:
            nbrs = np.asarray(neighbours(beam.path[-1]), dtype=np.int64)
            if nbrs.size:
                nbrs = nbrs[~setops.isin(nbrs, visited)]
            if cross and owner is not None and nbrs.size:
                nbrs = nbrs[~setops.isin(owner[nbrs], owner[list(beam.path)])]
            if nbrs.size == 0:
                continue
            scores = beam.score + scorer.extend(beam.path, nbrs)
            # Sort by score (ties: lower triple id), keep the best `neighbours`.
            order = np.lexsort((nbrs, -scores))[: config.neighbours]
            for n, j in enumerate(order):
                weight = math.exp(-min(n, gamma) / gamma) if config.diversity else 1.0
                candidates.append(Beam(float(scores[j]) * weight, (*beam.path, int(nbrs[j]))))
        if not candidates:
            break
        beams = _top(candidates, config.width)
    return beams


def _top(beams: list[Beam], b: int) -> list[Beam]:
    """Top ``b`` beams by score; ties keep insertion order (stable sort)."""
    return sorted(beams, key=lambda beam: -beam.score)[:b]


def flatten_breadth_first(beams: Sequence[Beam]) -> list[int]:
    """Triples of the beams in breadth-first order (position 0 of every beam, then 1, ...), unique."""
    out: dict[int, None] = {}
    depth = max((len(b.path) for b in beams), default=0)
    for pos in range(depth):
        for beam in beams:
            if pos < len(beam.path):
                out.setdefault(beam.path[pos], None)
    return list(out)
