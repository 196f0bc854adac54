"""The title-mention baseline: BM25 plus the pages whose titles the top passages mention.

``titlelink``: BM25 top ``depth`` (10) passages, plus every passage whose
title occurs verbatim in the text of the top ``sources`` (5) of them,
fused by RRF (k = 60, Cormack et al. 2009). It needs no model and no graph,
which is why every benchmark table carries it: a gain that this heuristic
matches is not progress.

"Verbatim" is implemented as a case-sensitive match of the title's tokens
on token boundaries (punctuation ignored: "Akron, Ohio" matches
"Akron Ohio"), with a :class:`~gearag.graph.trie.TokenTrie` over all titles
built once per index; each passage's mentions are computed once and cached.
A passage never links to itself; a title shared by several passages links
to all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gearag.graph.trie import TokenTrie, tokens
from gearag.options import QUESTION, setting, upto
from gearag.results import RANK, Result, rank_scores
from gearag.retrieve import make_retriever
from gearag.retrieve.fusion import RRF_K, rrf
from gearag.trace import LinkTrace

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore


@dataclass(frozen=True)
class TitleLinkConfig:
    """The title-mention baseline's settings; the defaults are the baseline as docs/methods.md defines it."""

    #: BM25 passages retrieved.
    depth: int = setting(10, "Titlelink: BM25 passages retrieved.", name="titlelink_depth", min=1, request=upto(100))
    #: Top passages whose text is scanned for titles.
    sources: int = setting(5, "Titlelink: top passages scanned for other passages' titles.", name="titlelink_sources",
                           min=1, request=upto(50))
    rrf_k: int = setting(RRF_K, "RRF constant for every fusion step.", min=1, request=QUESTION)


class TitleMentions:
    """Passage → passages whose title its text mentions (lazy, cached per passage)."""

    def __init__(self, titles: list[str], texts: list[str]) -> None:
        self.texts = texts
        self.trie = TokenTrie(case_sensitive=True)
        self.rows_of: list[list[int]] = []
        ids: dict[tuple[str, ...], int] = {}
        for row, title in enumerate(titles):
            toks = tuple(tokens(title or ""))
            if not toks:
                continue
            if toks not in ids:
                ids[toks] = len(self.rows_of)
                self.rows_of.append([])
                self.trie.add(list(toks), ids[toks])
            self.rows_of[ids[toks]].append(row)
        self._cache: dict[int, list[int]] = {}

    def links(self, row: int) -> list[int]:
        if row not in self._cache:
            out: dict[int, None] = {}
            for m in self.trie.scan(tokens(self.texts[row])):
                for target in self.rows_of[m.name]:
                    if target != row:
                        out.setdefault(target, None)
            self._cache[row] = list(out)
        return self._cache[row]


def title_mentions_for(index: IndexStore) -> TitleMentions:
    """The index's title matcher, built once."""
    return index.cached(
        "title_mentions", lambda: TitleMentions([p.title for p in index.passages], [p.text for p in index.passages])
    )


class TitleLinkRetriever:
    """BM25 top ``depth``, plus every passage whose title occurs in the top ``sources`` passages, fused by RRF."""

    def __init__(self, index: IndexStore, config: TitleLinkConfig) -> None:
        self.index = index
        self.config = config
        self.bm25 = make_retriever(index, "bm25", "passages")
        self.mentions = title_mentions_for(index)

    def __call__(self, question: str, k: int) -> Result:
        base = [h.idx for h in self.bm25.retrieve(question, self.config.depth)]
        linked: dict[int, None] = {}
        for row in base[: self.config.sources]:
            for target in self.mentions.links(row):
                linked.setdefault(target, None)
        fused = rrf([base, list(linked)], k=self.config.rrf_k)
        return Result(rank_scores([i for i, _ in fused[:k]]),  # reciprocal-rank sums: the order is the result
                      LinkTrace([self.index.passages[r].title for r in list(linked)[:k]]), score_kind=RANK)
