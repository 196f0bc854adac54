"""The union's resolution extended by an add equals resolve_corpus over the union (gearag add, issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.derive.endpoints import EndpointTable, UnionTriples
from gearag.derive.token_index import TokenIndex
from gearag.derive.union_resolve import Prior, Removal, ResolveInputs, resolve_union
from gearag.derive.union_vocab import UnionVocab
from gearag.graph.resolve import Resolution
from gearag.model import Passage
from gearag.text import is_named
from oracles import resolve_corpus

BASE = [
    Passage("b0", "Beta", "Beta is a town. The Zed Alpha band played in Beta in 1990."),
    Passage("b1", "Gamma Ray (album)", "Gamma Ray is an album by Zed Alpha, recorded in Beta."),
    Passage("b2", "Delta", "Delta was founded near Gamma Ray and Omega Point."),
]
ADDED = [
    Passage("a0", "Zed Alpha", "Zed Alpha is a band from Beta."),  # a new name the base texts mention
    Passage("a1", "Beta (film)", "Beta is a 2001 film set in Delta."),  # a second page for an old name
    Passage("a2", "Omega Point", "Omega Point is a cape."),  # named in a base text only, in no triple
]


def _triples(passages: list[Passage], offset: int) -> tuple[list[str], list[str], list[int]]:
    subjects, objects, owner = [], [], []
    for i, p in enumerate(passages):
        for obj in ("Zed Alpha Band", "Zed Alpha", "Beta", "the 1990 tour"):
            if obj.split()[-1] in p.text or obj in p.text:
                subjects.append(p.title)
                objects.append(obj)
                owner.append(i + offset)
    return subjects, objects, owner


def _equal(a: Resolution, b: Resolution) -> None:
    assert a.keys == b.keys and a.n_names == b.n_names
    np.testing.assert_array_equal(a.triple_ends, b.triple_ends)
    for name in ("about", "mentions"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and abs(x - y).sum() == 0, name
        np.testing.assert_array_equal(x.data, y.data)  # float32 weights, bit for bit
    assert a.about_terms is not None and b.about_terms is not None  # the terms, in the same order
    for part, values in a.about_terms._asdict().items():
        np.testing.assert_array_equal(values, getattr(b.about_terms, part), err_msg=part)


def test_an_add_rescans_only_what_new_names_touch_and_equals_a_resolution_of_the_union() -> None:
    s0, o0, w0 = _triples(BASE, 0)
    s1, o1, w1 = _triples(ADDED, len(BASE))
    t0, t1 = EndpointTable.compute(s0, o0), EndpointTable.compute(s1, o1)
    keep0, keep1 = np.ones(len(s0), bool), np.ones(len(s1), bool)
    base_res, state, stats, _ = resolve_union(ResolveInputs(BASE, UnionTriples([t0], [keep0], np.asarray(w0)),
                                                 UnionVocab.extend(None, [t0.names])))
    _equal(base_res, resolve_corpus([p.title for p in BASE], [p.text for p in BASE], s0, o0, w0, is_named))

    union = BASE + ADDED
    index = (TokenIndex.compute([p.text for p in BASE]), np.arange(len(BASE)))
    names = TokenIndex.compute(t0.names, lambda k: k.split(" "))
    expected = resolve_corpus([p.title for p in union], [p.text for p in union], s0 + s1, o0 + o1, w0 + w1,
                              is_named)
    assert "zed alpha" in expected.keys[: expected.n_names]  # a title now, an endpoint before
    for names_prior in (None, stats):  # lexicon and text mentions reused; endpoint names too, or resolved again
        vocab = UnionVocab.extend(None, [t0.names, t1.names])
        prior = Prior(state, len(BASE), 1, names_prior)
        live = UnionTriples([t0, t1], [keep0, keep1], np.asarray(w0 + w1))
        grown, _, _, _ = resolve_union(ResolveInputs(union, live, vocab, prior, [index], [names]))
        _equal(grown, expected)
    # Without the token index the base passage that names "Omega Point" keeps its old (stale) mentions.
    stale, _, _, _ = resolve_union(ResolveInputs(union, UnionTriples([t0, t1], [keep0, keep1], np.asarray(w0 + w1)),
                                   UnionVocab.extend(None, [t0.names, t1.names]), Prior(state, len(BASE), 1, None)))
    assert abs(stale.mentions - expected.mentions).sum() > 0


def test_an_endpoint_name_holding_a_new_title_is_scanned_again() -> None:
    """"Zed Alpha Band" contains no title in the base; after "Zed Alpha" is added it is about that page."""
    s0, o0, w0 = ["Beta", "Delta"], ["Zed Alpha Band", "Omega Point Lighthouse"], [0, 2]
    s1, o1, w1 = ["Zed Alpha"], ["Beta"], [3]
    t0, t1 = EndpointTable.compute(s0, o0), EndpointTable.compute(s1, o1)
    keep0, keep1 = np.ones(len(s0), bool), np.ones(len(s1), bool)
    _, state, stats, _ = resolve_union(ResolveInputs(BASE, UnionTriples([t0], [keep0], np.asarray(w0)),
                                          UnionVocab.extend(None, [t0.names])))
    union = BASE + ADDED
    expected = resolve_corpus([p.title for p in union], [p.text for p in union], s0 + s1, o0 + o1, w0 + w1,
                              is_named)
    band = expected.keys.index("zed alpha band")
    assert expected.about[band].nnz  # contained "zed alpha", a new title
    names = TokenIndex.compute(t0.names, lambda k: k.split(" "))
    index = (TokenIndex.compute([p.text for p in BASE]), np.arange(len(BASE)))
    grown, _, _, _ = resolve_union(ResolveInputs(union, UnionTriples([t0, t1], [keep0, keep1], np.asarray(w0 + w1)),
                                   UnionVocab.extend(None, [t0.names, t1.names]), Prior(state, len(BASE), 1, stats),
                                   [index], [names]))
    _equal(grown, expected)
    vocab = UnionVocab.extend(None, [t0.names, t1.names])
    # Without the names' token index, the old name keeps its old (empty) containment: the index is what finds it.
    empty = TokenIndex(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int32))
    live = UnionTriples([t0, t1], [keep0, keep1], np.asarray(w0 + w1))
    blind, _, _, _ = resolve_union(ResolveInputs(union, live, vocab, Prior(state, len(BASE), 1, stats), [index],
                                                    [empty]))
    assert blind.about[blind.keys.index("zed alpha band")].nnz == 0


CORPUS = [
    Passage("p0", "Zed Alpha", "Zed Alpha is a band from Beta."),
    Passage("p1", "Beta", "Beta is a town. The Zed Alpha band played in Beta in 1990."),
    Passage("p2", "Gamma Ray (album)", "Gamma Ray is an album by Zed Alpha, recorded in Beta."),
    Passage("p3", "Beta (film)", "Beta is a 2001 film set in Delta."),
    Passage("p4", "Delta", "Delta was founded near Gamma Ray and Omega Point."),
    Passage("p5", "Omega Point", "Omega Point is a cape near Zed."),
    Passage("p6", "Zed", "Zed is a letter. Zed Alpha Band fans say so."),
]
TRIPLES = [("Zed Alpha", "Delta", 0), ("Zed Alpha Band", "Beta", 2), ("Gamma Ray", "Zed Alpha", 4),
           ("Beta", "Zed Alpha Band", 1), ("Omega Point Lighthouse", "Zed", 5), ("Delta", "Gamma Ray", 3)]


@pytest.mark.parametrize("gone", [[0], [1], [0, 1], [1, 2], [0, 3, 6], [5], [2, 4]])
def test_a_delete_renumbers_and_rescans_only_what_gone_names_touch_and_equals_a_resolution_of_the_rest(
        gone: list[int]) -> None:
    """The mirror of an add: names whose first page went move to their next one (in that page's order),
    names with no page left vanish, and what they matched in (texts, endpoint names) is scanned again."""
    subjects, objects, owner = (list(x) for x in zip(*TRIPLES, strict=True))
    table = EndpointTable.compute(subjects, objects)
    vocab = UnionVocab.extend(None, [table.names])
    every = np.ones(len(subjects), bool)
    live = UnionTriples([table], [every], np.asarray(owner))
    _, state, stats, _ = resolve_union(ResolveInputs(CORPUS, live, vocab))
    keep_rows = np.ones(len(CORPUS), bool)
    keep_rows[gone] = False
    rows = np.where(keep_rows, np.cumsum(keep_rows) - 1, -1)
    keep_t = keep_rows[np.asarray(owner)]
    triples = np.where(keep_t, np.cumsum(keep_t) - 1, -1)
    rest = [p for p, k in zip(CORPUS, keep_rows, strict=True) if k]
    live = [t for t, k in zip(TRIPLES, keep_t, strict=True) if k]
    expected = resolve_corpus([p.title for p in rest], [p.text for p in rest], [t[0] for t in live],
                              [t[1] for t in live], [int(rows[t[2]]) for t in live], is_named)
    index = (TokenIndex.compute([p.text for p in CORPUS]), rows)
    names = TokenIndex.compute(table.names, lambda k: k.split(" "))
    prior = Prior(state, len(rest), 1, stats, Removal(rows, triples))
    live = UnionTriples([table], [keep_t], rows[np.asarray(owner)][keep_t])
    shrunk, _, _, _ = resolve_union(ResolveInputs(rest, live, vocab, prior, [index], [names]))
    _equal(shrunk, expected)


def test_the_state_keeps_the_first_token_spans_and_a_damaged_table_is_computed_again(tmp_path) -> None:
    from gearag.derive.union_resolve import LONGEST, RESOLVE_DIR, ResolveState
    from gearag.store.writer import IndexWriter

    s0, o0, w0 = _triples(BASE, 0)
    t0 = EndpointTable.compute(s0, o0)
    _, state, _, _ = resolve_union(ResolveInputs(BASE, UnionTriples([t0], [np.ones(len(s0), bool)], np.asarray(w0)),
                                   UnionVocab.extend(None, [t0.names])))
    assert state.longest and state.longest["gamma"] == 3  # "gamma ray album"
    with IndexWriter(tmp_path / "g") as w:
        state.write(w)
        w.commit({"kind": "test"})
    read = ResolveState.read(tmp_path / "g", len(BASE))
    assert read is not None and read.longest == state.longest
    for damaged in ('{"gamma": "2"}', '["gamma"]', '{"gamma": 0}', "{"):
        (tmp_path / "g" / RESOLVE_DIR / LONGEST).write_text(damaged)
        read = ResolveState.read(tmp_path / "g", len(BASE))
        assert read is not None and read.longest is None and read.names == state.names
