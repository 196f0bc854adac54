"""The resolve state a build keeps for its first add reads back, and a damaged part of it is computed again."""

from __future__ import annotations

import numpy as np

from gearag.derive.delta_resolve import resolve_delta
from gearag.derive.endpoints import EndpointTable, UnionTriples
from gearag.derive.union_resolve import Prior, ResolveInputs
from gearag.derive.union_vocab import UnionVocab
from gearag.graph.prepared import empty_prepared
from gearag.model import Passage
from prepared_oracle import Resolution

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


def test_the_state_keeps_the_first_token_spans_and_a_damaged_table_is_computed_again(tmp_path) -> None:
    from gearag.derive.union_resolve import LONGEST, RESOLVE_DIR, ResolveState
    from gearag.store.writer import IndexWriter

    s0, o0, w0 = _triples(BASE, 0)
    t0 = EndpointTable.compute(s0, o0)
    resolved = resolve_delta(ResolveInputs(BASE, UnionTriples([t0], [np.ones(len(s0), bool)], np.asarray(w0)),
                                           UnionVocab.extend(None, [t0.names]), Prior.nothing()), empty_prepared([]))
    assert resolved is not None
    state = resolved.state()  # a build's (an add onto nothing)
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
