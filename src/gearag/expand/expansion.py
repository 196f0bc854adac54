"""Graph expansion: beams from initial triples, mapped back to passages (GEAR §4.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gearag.expand.beam import Beam, BeamConfig, diverse_beam_search, flatten_breadth_first
from gearag.expand.scoring import make_path_scorer
from gearag.store.interface import IndexStore


@dataclass
class ExpansionResult:
    """Final beams, their triples flattened breadth-first, and the unique passages they map to."""

    beams: list[Beam]
    triples: list[int]
    passages: list[int]


class GraphExpander:
    """Runs diverse triple beam search over an index's triple graph."""

    def __init__(self, index: IndexStore, config: BeamConfig = BeamConfig(), scoring: str = "exact") -> None:
        self.index = index
        self.config = config
        self.scoring = scoring

    def expand(self, query: str, initial: Sequence[int]) -> ExpansionResult:
        if not len(initial):
            return ExpansionResult([], [], [])
        scorer = make_path_scorer(self.index, query, self.scoring)
        beams = diverse_beam_search(
            initial, scorer, self.index.graph.neighbours, self.config, owner=self.index.triples.passage
        )
        triples = flatten_breadth_first(beams)
        owner = self.index.triples.passage
        passages = list(dict.fromkeys(int(owner[t]) for t in triples))
        return ExpansionResult(beams, triples, passages)

    def describe(self, beams: Sequence[Beam], limit: int = 10) -> list[str]:
        """Human-readable beams: ``(s, p, o) → (s, p, o)  [score]``."""
        lines = []
        for beam in list(beams)[:limit]:
            parts = [f"({self.index.triples.subjects[t]}; {self.index.triples.predicates[t]}; "
                     f"{self.index.triples.objects[t]})" for t in beam.path]
            lines.append(" → ".join(parts) + f"  [{beam.score:.3f}]")
        return lines


def triples_of_passages(index: IndexStore, rows: Sequence[int]) -> np.ndarray:
    """All triple ids of the given passages, in passage order (NaiveGE's initial triples)."""
    ranges = [np.arange(r.start, r.stop) for r in (index.passage_triples(p) for p in rows)]
    return np.concatenate(ranges) if ranges else np.zeros(0, dtype=np.int64)
