"""The union's triple graph and key statistics: a delete takes its triples away instead of counting again."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.config import GraphConfig
from gearag.derive.union_graph import EndpointTable, Removal, TripleInputs, UnionTriples, union_triple_graph
from gearag.derive.union_vocab import UnionVocab

# (subject, object, passage): "Hub" is in most passages (the hub cut), "Rare" first appears in passage 0.
TRIPLES = [("Rare", "Hub", 0), ("Alpha", "Hub", 1), ("Hub", "Beta", 2), ("Rare", "Alpha", 3), ("Beta", "Hub", 4),
           ("Gamma", "Rare", 5), ("Hub", "Gamma", 6), ("Alpha", "Beta", 7), ("Hub", "Delta", 8)]
CONFIG = GraphConfig(max_entity_share=0.4)


def _graph(triples: list[tuple[str, str, int]], n_passages: int, **kw):  # type: ignore[no-untyped-def]
    table = EndpointTable.compute([t[0] for t in triples], [t[1] for t in triples])
    vocab = UnionVocab.extend(None, [table.keys])
    keep = kw.pop("keep", np.ones(len(triples), bool))
    owner = kw.pop("owner", np.asarray([t[2] for t in triples]))
    inputs = TripleInputs(UnionTriples([table], [keep], owner), n_passages, vocab, **kw)
    return union_triple_graph(CONFIG, inputs), table, vocab


@pytest.mark.parametrize("gone", [[0], [0, 3], [1, 2, 4], [8], [0, 1, 2, 3]])
def test_deleting_passages_gives_the_stats_and_graph_of_what_remains(gone: list[int]) -> None:
    (_, before), _, _ = _graph(TRIPLES, 9)
    alive = np.ones(9, bool)
    alive[gone] = False
    rows = np.where(alive, np.cumsum(alive) - 1, -1)
    keep = np.asarray([alive[t[2]] for t in TRIPLES])
    triples = np.where(keep, np.cumsum(keep) - 1, -1)
    removal = Removal(rows, triples, (~keep,), np.asarray([t[2] for t, k in zip(TRIPLES, keep, strict=True)
                                                           if not k], dtype=np.int64))
    owner = rows[np.asarray([t[2] for t in TRIPLES])][keep]
    (graph, stats), _, vocab = _graph(TRIPLES, int(alive.sum()), keep=keep, owner=owner, prior=before, counted=1,
                                      removal=removal)
    rest = [(s, o, int(rows[p])) for s, o, p in TRIPLES if alive[p]]
    (want_graph, want), _, want_vocab = _graph(rest, int(alive.sum()))
    at = {k: i for i, k in enumerate(want_vocab.items)}  # the rest's own table numbers its keys itself
    for i, key in enumerate(vocab.items):
        j = at.get(key)
        expected = (want.first[j].tolist(), int(want.passages[j])) if j is not None else ([-1, -1], 0)
        assert (stats.first[i].tolist(), int(stats.passages[i])) == expected, key
    assert stats.passages.sum() == want.passages.sum() and stats.passages.sum() > 0
    assert graph.entities == want_graph.entities
    for part in ("head", "tail", "indptr", "indices"):
        np.testing.assert_array_equal(getattr(graph, part), getattr(want_graph, part))


def test_the_endpoint_memo_is_bounded_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.derive import union_graph

    subjects = [f"Name {i % 7}" for i in range(50)] + ["the river", "Name 1", "x"]
    objects = [f"Place {i % 5}" for i in range(50)] + ["Name 2", "", "Place 3"]
    whole = EndpointTable.compute(subjects, objects)
    monkeypatch.setattr(union_graph, "SEEN_SURFACES", 3)  # forgets every few surfaces
    small = EndpointTable.compute(subjects, objects)
    assert small.keys == whole.keys and small.names == whole.names
    for part in ("ends", "named", "name_ends"):
        np.testing.assert_array_equal(getattr(small, part), getattr(whole, part))
