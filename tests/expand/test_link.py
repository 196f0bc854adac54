"""tripleLink (GEAR Eq. 2) and passageLink (Eq. 10) on a small hand-made index."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from gearag.config import IndexConfig
from gearag.embed import index_embedder
from gearag.expand.link import PassageLinker, TripleLinker
from gearag.model import Fact, Passage
from gearag.retrieve import make_retriever
from gearag.retrieve.config import RetrieverConfig
from gearag.store.index import Index

#: (title, text, the triples the fixed extractor gives for it). Triple ids follow this order.
PASSAGES = [
    ("Aretha Franklin", "Aretha Franklin was an American singer who died in Detroit.",
     [("Aretha Franklin", "died in", "Detroit"), ("Aretha Franklin", "occupation", "singer")]),         # t0, t1
    ("Detroit", "Detroit is the largest city in Michigan.",
     [("Detroit", "located in", "Michigan")]),                                                          # t2
    ("Jerry Wexler", "Jerry Wexler produced records for Aretha Franklin at Atlantic Records.",
     [("Jerry Wexler", "produced records for", "Aretha Franklin"),
      ("Jerry Wexler", "worked at", "Atlantic Records")]),                                               # t3, t4
    ("Atlantic Records", "Atlantic Records is a record label founded in New York.",
     [("Atlantic Records", "founded in", "New York")]),                                                 # t5
    ("Soul music", "Soul music singers often recorded in Detroit and Memphis.",
     [("Soul music", "associated with", "Memphis")]),                                                   # t6
    ("Michigan", "Michigan is a state in the Great Lakes region.",
     [("Michigan", "is a", "state")]),                                                                  # t7
]


class FixedExtractor:
    """Gives each passage exactly the triples listed in :data:`PASSAGES`."""

    key = "fixed-link-v1"

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[tuple[str, str, str]]]:
        triples = {title: t for title, _, t in PASSAGES}
        for p in passages:
            yield triples[p.title]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    from gearag.indexing import build_index

    passages = [Passage(f"h{i}", title, text) for i, (title, text, _) in enumerate(PASSAGES)]
    out = tmp_path_factory.mktemp("link") / "index"
    return build_index(passages, out, IndexConfig.of(extractor="fixed"), extractor=FixedExtractor())


def test_fixture_layout(index: Index) -> None:
    assert [index.triples[i].as_tuple() for i in range(len(index.triples))] == [
        t for _, _, triples in PASSAGES for t in triples
    ]
    assert index.triples.passage.tolist() == [0, 0, 1, 2, 2, 3, 4, 5]


# --------------------------------------------------------------------------- tripleLink


def test_free_text_triple_links_to_its_nearest_index_triple(index: Index) -> None:
    linker = TripleLinker(index)
    died = Fact("Aretha Franklin", "died in", "Detroit")
    produced = Fact("Wexler", "produced records for", "Aretha")
    assert linker.link([died]) == [0]
    assert linker.link([produced]) == [3]
    # Top-1 of BM25 over the triple index, computed independently.
    bm25 = make_retriever(index, "bm25", "triples")
    for t in (died, produced):
        assert linker.link([t]) == [int(np.argmax(bm25.scores(t.text)))]


def test_dense_triple_link_is_the_most_similar_triple(index: Index) -> None:
    linker = TripleLinker(index, "dense")
    t = Fact("Atlantic Records", "was founded in", "New York City")
    qvec = index_embedder(index).encode([t.text])[0]
    expected = int(np.argmax(np.asarray(index.collection("triples").vectors) @ qvec))
    assert linker.link([t]) == [expected]
    assert expected == 5


def test_triple_with_source_links_to_itself(index: Index) -> None:
    linker = TripleLinker(index)
    # The text would link to t0, but the triple already is index triple 4.
    t = Fact("Aretha Franklin", "died in", "Detroit", source=4)
    assert linker.link([t]) == [4]


def test_links_are_unique_in_first_seen_order(index: Index) -> None:
    linker = TripleLinker(index)
    proximal = [
        Fact("Wexler", "produced records for", "Aretha"),  # → 3
        Fact("Soul music", "associated with", "Memphis", source=6),  # → 6
        Fact("Aretha Franklin", "died in", "Detroit"),  # → 0
        Fact("Aretha Franklin", "died in", "Detroit"),  # duplicate
        Fact("x", "y", "z", source=3),  # duplicate of the first link
    ]
    assert linker.link(proximal) == [3, 6, 0]
    assert linker.link([]) == []


def test_top_n_links_several_triples_per_proximal_triple(index: Index) -> None:
    t = Fact("Aretha Franklin", "died in", "Detroit")
    top2 = [h.idx for h in make_retriever(index, "bm25", "triples").retrieve(t.text, 2)]
    assert TripleLinker(index, top=2).link([t]) == top2
    assert len(top2) == 2 and top2[0] == 0


# --------------------------------------------------------------------------- passageLink (Eq. 10)


def _hand_rrf(rankings: list[list[int]], k: int) -> list[tuple[int, float]]:
    """Σ 1/(k + rank), 1-based ranks, ties by first appearance; written out independently of gearag."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    first = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], first[kv[0]]))


def _sides(index: Index, text: str, k: int) -> tuple[list[int], list[int]]:
    """h_k(t, C) and the passages of h_k(t, T), first occurrence kept."""
    from_c = [h.idx for h in make_retriever(index, "bm25", "passages").retrieve(text, k)]
    owner = index.triples.passage
    from_t: list[int] = []
    for h in make_retriever(index, "bm25", "triples").retrieve(text, k):
        row = int(owner[h.idx])
        if row not in from_t:
            from_t.append(row)
    return from_c, from_t


def test_passage_link_fuses_passage_and_triple_rankings(index: Index) -> None:
    t = Fact("singer", "recorded", "Detroit")
    from_c, from_t = _sides(index, t.text, 4)
    # Passage side: "Soul music ... recorded in Detroit" first; triple side: (Aretha Franklin; occupation;
    # singer) in passage 0, (Detroit; located in; Michigan) in 1, t4 "... Atlantic Records" in 2, then t0
    # (passage 0 again, counted once).
    assert from_c == [4, 0, 1, 3]
    assert from_t == [0, 1, 2]
    # RRF (k=60): 0: 1/62+1/61, 1: 1/63+1/62, 4: 1/61, 2: 1/63, 3: 1/64 → 0, 1, 4, 2 (3 is cut at k=4).
    hits = PassageLinker(index).link(t, 4)
    assert [h.idx for h in hits] == [0, 1, 4, 2]
    expected = _hand_rrf([from_c, from_t], 60)[:4]
    assert [h.idx for h in hits] == [key for key, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected])
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)


@pytest.mark.parametrize(
    "triple",
    [("Aretha Franklin", "recorded", "Detroit"), ("record label", "in", "New York"), ("Michigan", "is a", "state")],
)
@pytest.mark.parametrize("k", [1, 3, 6])
def test_passage_link_matches_hand_fusion(index: Index, triple: tuple[str, str, str], k: int) -> None:
    t = Fact(*triple)
    from_c, from_t = _sides(index, t.text, k)
    expected = _hand_rrf([from_c, from_t], 60)[:k]
    hits = PassageLinker(index).link(t, k)
    assert [(h.idx, pytest.approx(h.score)) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
    assert len(hits) <= k


def test_passage_link_uses_its_rrf_constant(index: Index) -> None:
    t = Fact("singer", "recorded", "Detroit")
    from_c, from_t = _sides(index, t.text, 4)
    hits = PassageLinker(index, config=RetrieverConfig(rrf_k=1)).link(t, 4)
    expected = _hand_rrf([from_c, from_t], 1)[:4]
    assert [h.idx for h in hits] == [key for key, _ in expected]
    # k=1: 0: 1/3+1/2, 1: 1/4+1/3, 4: 1/2, 2: 1/4.
    assert [h.idx for h in hits] == [0, 1, 4, 2]
    assert [h.score for h in hits] == pytest.approx([1 / 3 + 1 / 2, 1 / 4 + 1 / 3, 1 / 2, 1 / 4])
