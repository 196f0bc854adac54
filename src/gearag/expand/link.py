"""tripleLink (GEAR §4.1, Eq. 2) and passageLink (§5.4, Eq. 8; App. B.2, Eq. 10)."""

from __future__ import annotations

from collections.abc import Sequence

from gearag.model import Fact, Hit
from gearag.retrieve import make_retriever
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.fusion import rrf
from gearag.store.collection import PASSAGES, TRIPLES
from gearag.store.interface import IndexStore


class TripleLinker:
    """Maps each proximal triple to its most similar index triple: ``h^1_base(t', T)``.

    The paper uses the top-1 (``top``); a proximal triple that already is an
    index triple (``source`` set, as from the offline reader) links to itself.
    """

    def __init__(self, index: IndexStore, method: str = "bm25", top: int = 1,
                 config: RetrieverConfig | None = None) -> None:
        self.retriever = make_retriever(index, method, TRIPLES, config)
        self.top = top

    def link(self, proximal: Sequence[Fact]) -> list[int]:
        out: dict[int, None] = {}
        for t in proximal:
            if t.source is not None:
                out.setdefault(t.source, None)
                continue
            for hit in self.retriever.retrieve(t.text, self.top):
                out.setdefault(hit.idx, None)
        return list(out)


class PassageLinker:
    """``passageLink(t, k) = RRF(h^k(t, C), h^k(t, T))``: passages for a triple from both indices (Eq. 10).

    Triple hits are mapped to their passages (first occurrence kept) before fusion.
    """

    def __init__(self, index: IndexStore, method: str = "bm25", config: RetrieverConfig | None = None) -> None:
        config = config or RetrieverConfig()
        self.index = index
        self.passages = make_retriever(index, method, PASSAGES, config)
        self.triples = make_retriever(index, method, TRIPLES, config)
        self.rrf_k = config.rrf_k

    def link(self, triple: Fact, k: int) -> list[Hit]:
        from_c = [h.idx for h in self.passages.retrieve(triple.text, k)]
        owner = self.index.triples.passage
        from_t = list(dict.fromkeys(int(owner[h.idx]) for h in self.triples.retrieve(triple.text, k)))
        return [Hit(i, s) for i, s in rrf([from_c, from_t], k=self.rrf_k)[:k]]
