"""Readers: from retrieved passages to proximal triples (GEAR §4.1, Eq. 1; §5.1, Eq. 4).

A reader looks at the base passages ``C'_q`` for a question (and, in the
agent, the gist memory so far) and returns *proximal triples*: facts that
help answer the question. SyncGE links them to index triples (tripleLink)
and expands the graph from there.

* :class:`OfflineReader` — no model. It ranks the triples of the retrieved
  passages by how much they bear on the question, fusing three rankings with
  RRF: lexical (BM25 of the question over those triples), semantic (cosine
  with the question), and the retrieval rank of the triple's passage, with a
  boost for triples that mention a question entity and can bridge to
  another passage. Its triples are index triples, so tripleLink maps each
  to itself.
* The LLM reader (:mod:`gearag.expand.llm_reader`) prompts a model with the
  paper's reader prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gearag import setops
from gearag.embed import index_embedder
from gearag.engine import Reader as Reader
from gearag.model import Fact
from gearag.question_analysis import analyse, matches_type
from gearag.retrieve.bm25 import bm25_scores
from gearag.retrieve.fusion import rrf
from gearag.store.collection import TRIPLES
from gearag.store.interface import IndexStore
from gearag.store.rows import rows_at
from gearag.text import is_named, normalise_entity
from gearag.words import DEFAULT_WORDS, WordLists


@dataclass(frozen=True)
class OfflineReaderConfig:
    """Settings of the model-free reader."""

    #: Proximal triples returned per read (GEAR's beam width, so that all
    #: survive the beam search's first top-b cut).
    max_triples: int = 10
    #: Triples considered per passage (the first ones a passage yields).
    per_passage: int = 64


def _mentions(question_norm: str, entity_norm: str) -> bool:
    """Whether a normalised entity occurs in the normalised question on word boundaries."""
    if not entity_norm or len(entity_norm) < 3:
        return False
    return f" {entity_norm} " in f" {question_norm} "


class OfflineReader:
    """Model-free reader: picks the retrieved passages' triples that bear on the question."""

    def __init__(self, index: IndexStore, config: OfflineReaderConfig = OfflineReaderConfig(),
                 words: WordLists = DEFAULT_WORDS) -> None:
        self.index = index
        self.config = config
        #: The English word lists the question analysis uses (the agent's ``--word-lists``).
        self.words = words

    def candidates(self, passages: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Triple ids of the passages and the retrieval rank of each triple's passage."""
        ids: list[int] = []
        ranks: list[int] = []
        for rank, row in enumerate(passages):
            r = self.index.passage_triples(row)
            stop = min(r.stop, r.start + self.config.per_passage)
            ids.extend(range(r.start, stop))
            ranks.extend([rank] * (stop - r.start))
        return np.asarray(ids, dtype=np.int64), np.asarray(ranks, dtype=np.int64)

    def rank_triples(
        self, question: str, passages: Sequence[int], memory: Sequence[Fact] = ()
    ) -> list[int]:
        """Candidate triples of ``passages`` ranked by relevance to the question.

        With a gist memory, the memory's entities join the query and triples
        that share an entity with the memory form a fifth ranking: reading
        "with the memory so far" (Eq. 4) favours facts that continue a chain.
        """
        ids, ranks = self.candidates(passages)
        if ids.size == 0:
            return []
        bridge = list(dict.fromkeys(e for t in memory for e in (t.subject, t.object)))
        query = " ".join([question, *bridge]).strip()
        triples = self.index.collection(TRIPLES)
        lexical = bm25_scores(triples, query, ids)
        qvec = index_embedder(self.index).encode([query])[0]
        dense = np.asarray(triples.rows_vectors(ids) @ qvec)
        qnorm = normalise_entity(query)
        graph = self.index.graph
        heads, tails = graph.head[ids], graph.tail[ids]

        answer_type = analyse(question, self.words).answer_type
        # Read in one go per column (one take each on a Lance index, not one per candidate).
        objects = rows_at(self.index.triples.objects, ids)
        ends = setops.unique(np.concatenate([heads, tails]))
        ends = ends[ends >= 0]
        name = dict(zip(ends.tolist(), rows_at(graph.entities, ends), strict=True))
        # Useful facts: the far end is a bridge (a named entity) or a value of the asked type.
        useful = np.array([is_named(o) or matches_type(o, answer_type) for o in objects])
        mention = np.array([h >= 0 and _mentions(qnorm, name[h]) for h in heads.tolist()]) | np.array(
            [t >= 0 and _mentions(qnorm, name[t]) for t in tails.tolist()])
        order_lex = ids[np.lexsort((ranks, -lexical))]
        order_dense = ids[np.lexsort((ranks, -dense))]
        order_rank = ids[np.lexsort((-dense, ranks))]
        order_mention = ids[np.lexsort((-dense, ranks, ~mention))]
        order_useful = ids[np.lexsort((-dense, ranks, ~useful))]
        rankings = [order_lex.tolist(), order_dense.tolist(), order_rank.tolist(), order_mention.tolist(),
                    order_useful.tolist()]
        if memory:
            known = {normalise_entity(e) for e in bridge}
            linked = np.array([(h >= 0 and name[h] in known) or (t >= 0 and name[t] in known)
                               for h, t in zip(heads.tolist(), tails.tolist(), strict=True)])
            rankings.append(ids[np.lexsort((-dense, ranks, ~linked))].tolist())
        fused = rrf(rankings)
        return [int(t) for t, _ in fused]

    def read(
        self, question: str, passages: Sequence[int], memory: Sequence[Fact] = ()
    ) -> list[Fact]:
        known = {m.source for m in memory if m.source is not None}
        ranked = [t for t in self.rank_triples(question, passages, memory) if t not in known]
        return self.index.triples.facts(ranked[: self.config.max_triples])
