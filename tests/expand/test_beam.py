"""Diverse triple beam search (GEAR Algorithm 1) on a hand-built graph with hand-computed scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gearag.expand.beam import (
    BeamConfig,
    PathScorer,
    diverse_beam_search,
    flatten_breadth_first,
)

# Single-triple scores score(q, [t]).
START = {0: 0.9, 1: 0.8, 2: 0.1}
# Extension scores score(q, [.., last] ∘ t), here depending only on (last, t).
EXTEND = {(0, 1): 5.0, (0, 3): 0.9, (0, 4): 0.85, (0, 5): 0.2, (1, 3): 0.6, (1, 6): 0.4}
NEIGHBOURS = {0: [1, 3, 4, 5], 1: [3, 6], 2: [], 3: [], 4: [], 5: [], 6: []}


class TableScorer(PathScorer):
    def __init__(self) -> None:
        self.extended: list[tuple[tuple[int, ...], list[int]]] = []

    def start(self, triples: np.ndarray) -> np.ndarray:
        return np.array([START[int(t)] for t in triples])

    def extend(self, path: tuple[int, ...], candidates: np.ndarray) -> np.ndarray:
        self.extended.append((path, [int(c) for c in candidates]))
        return np.array([EXTEND[(path[-1], int(c))] for c in candidates])


def neighbours(t: int) -> np.ndarray:
    return np.array(NEIGHBOURS[t], dtype=np.int64)


def run(**config: object):
    config.setdefault("scope", "all")  # Algorithm 1 as printed
    return diverse_beam_search([0, 1, 2], TableScorer(), neighbours, BeamConfig(**config))


def test_first_step_keeps_top_b_single_triples():
    beams = run(width=2, length=1)
    assert [b.path for b in beams] == [(0,), (1,)]
    assert [b.score for b in beams] == pytest.approx([0.9, 0.8])


def test_standard_beam_search_keeps_same_prefix():
    beams = run(width=2, length=2, gamma=4, diversity=False)
    # [0,3]: 0.9+0.9 = 1.8; [0,4]: 0.9+0.85 = 1.75 beat [1,3]: 0.8+0.6 = 1.4.
    assert [b.path for b in beams] == [(0, 3), (0, 4)]
    assert [b.score for b in beams] == pytest.approx([1.8, 1.75])


def test_diversity_weight_promotes_another_beam():
    beams = run(width=2, length=2, gamma=4, diversity=True)
    # Rank 1 within beam 0 is weighted exp(-1/4): 1.75 * 0.7788 = 1.363 < 1.4.
    assert [b.path for b in beams] == [(0, 3), (1, 3)]
    assert [b.score for b in beams] == pytest.approx([1.8, 1.4])


def test_weight_is_capped_at_gamma():
    scorer = TableScorer()
    beams = diverse_beam_search([0], scorer, neighbours, BeamConfig(width=5, length=2, gamma=1, scope="all"))
    # Triple 1 is not in B0 here, so beam 0's candidates sorted by score are 1, 3, 4, 5 with
    # weights 1, e^-1, e^-1, e^-1 (min(n, γ) caps at γ = 1).
    by_path = {b.path: b.score for b in beams}
    assert by_path[(0, 1)] == pytest.approx(5.9)
    assert by_path[(0, 3)] == pytest.approx(1.8 * math.exp(-1))
    assert by_path[(0, 4)] == pytest.approx(1.75 * math.exp(-1))
    assert by_path[(0, 5)] == pytest.approx(1.1 * math.exp(-1))


def test_triples_already_in_a_beam_are_not_revisited():
    scorer = TableScorer()
    diverse_beam_search([0, 1, 2], scorer, neighbours, BeamConfig(width=2, length=2, scope="all"))
    # Triple 1 is in B0, so it is never offered as an extension of beam [0] despite its score of 5.
    offered = {c for _, cands in scorer.extended for c in cands}
    assert 1 not in offered
    assert offered == {3, 4, 5, 6}


def test_neighbour_cap_keeps_best_scored_candidates():
    beams = run(width=2, length=2, neighbours=1, diversity=False)
    assert [b.path for b in beams] == [(0, 3), (1, 3)]


def test_default_gamma_is_twice_the_width():
    assert BeamConfig(width=10).effective_gamma == 20
    assert BeamConfig(width=10, gamma=3).effective_gamma == 3


def test_unextendable_beams_fall_back_to_previous_step():
    beams = diverse_beam_search([2], TableScorer(), neighbours, BeamConfig(width=2, length=3, scope="all"))
    assert [b.path for b in beams] == [(2,)]


def test_empty_start_gives_no_beams():
    assert diverse_beam_search([], TableScorer(), neighbours, BeamConfig(scope="all")) == []


def test_flatten_is_breadth_first_and_unique():
    beams = run(width=2, length=2, gamma=4, diversity=True)
    assert flatten_breadth_first(beams) == [0, 1, 3]


# Triple → passage: 0, 3 and 4 share passage 0; the rest have their own.
OWNER = np.array([0, 1, 2, 0, 0, 3, 4])


def test_cross_passage_scope_only_extends_into_new_passages():
    scorer = TableScorer()
    beams = diverse_beam_search(
        [0, 1, 2], scorer, neighbours, BeamConfig(width=2, length=2, scope="cross-passage"), owner=OWNER
    )
    offered = {c for _, cands in scorer.extended for c in cands}
    # 3 and 4 live in passage 0, already on path [0]; from [1] (passage 1) triple 3 is a new passage.
    assert (0, 3) not in [b.path for b in beams] and (0, 4) not in [b.path for b in beams]
    assert offered == {5, 3, 6}
    assert [b.path for b in beams] == [(1, 3), (0, 5)]


def test_cross_passage_scope_needs_the_owner_map():
    with pytest.raises(ValueError):
        diverse_beam_search([0], TableScorer(), neighbours, BeamConfig(scope="cross-passage"))
