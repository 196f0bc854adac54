"""The ``hipporag`` (v1) and ``hipporag2`` methods: Personalized PageRank over the HippoRAG graphs.

v1 (HippoRAG, Gutiérrez et al. 2024, §3.2):
  query entities (spaCy NER on the question offline; the model's NER with
  ``--engine openai``) → each linked to its most similar phrase node by
  embedding → seed weight ``1/|P_i|`` (node specificity) → PPR with damping
  0.5 over the phrase graph → passage score = Σ over the passage's triples of
  the PPR probability of their phrases (the passage×phrase count matrix),
  min-max normalised. No entity: the published code gives every passage the
  same score; we rank by dense retrieval (option ``fallback``).

v2 (HippoRAG 2, Gutiérrez et al. 2025, §3):
  score every triple against the whole query by embedding, min-max normalise,
  keep the top 5 distinct facts → the LLM recognition filter with
  ``--engine openai`` (none offline) → phrase seeds = fact score ÷ passages
  containing the phrase, averaged over the facts naming it, top 5 kept →
  every passage seeded with its min-max dense score × 0.05 → PPR (0.5) over
  phrases and passages → passages ranked by their own probability. Nothing
  linked or nothing survived the filter: dense retrieval.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from gearag.baselines.config import HippoRAG2Config, HippoRAGConfig
from gearag.baselines.hipporag import HippoGraph, hippo_graph
from gearag.baselines.llm import baseline_roles
from gearag.baselines.phrases import normalise_phrase
from gearag.embed import index_embedder
from gearag.llm.fallback import played_call
from gearag.llm.usage import usage_scope
from gearag.model import Fact
from gearag.results import Result
from gearag.retrieve.base import top_k
from gearag.store.interface import IndexStore
from gearag.trace import HippoRAGTrace

#: Cosines this close to an entity's best are a tie (float32 dot products of unit vectors).
_TIE = 1e-6
#: Tied phrase nodes compared by text, the first by id: a year's digit permutations are at most 24. More ties than
#: this mean a vector that tells no node from another, and comparing them all would be a Python loop over the table.
_MOST_TIED = 256

#: Phrase seeds listed in a trace.
TRACE_SEEDS = 10


def min_max(scores: np.ndarray) -> np.ndarray:
    """Scores scaled to [0, 1] (all equal → all 1, as HippoRAG 2's ``min_max_normalize`` guards)."""
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 0:
        return np.ones_like(scores, dtype=np.float64)
    return (scores - lo) / (hi - lo)


#: spaCy entity labels that are not names (LinearRAG drops ordinals and cardinals likewise):
#: "first" or "two" would link to the most generic phrase nodes.
NOT_NAMES = frozenset({"ORDINAL", "CARDINAL", "PERCENT", "QUANTITY", "MONEY"})


def query_entities_offline(question: str, mode: str) -> list[str]:
    """Named entities of the question from spaCy's NER (``ner+nouns``: plus its noun chunks)."""
    from gearag.extract.spacy import load_nlp

    doc = load_nlp()(question)
    names = [e.text for e in doc.ents if e.label_ not in NOT_NAMES]
    if mode == "ner+nouns":
        names += [c.text for c in doc.noun_chunks if c.root.pos_ in ("PROPN", "NOUN")]
    return list(dict.fromkeys(n.strip() for n in names if n.strip()))


class _Base:
    """What both versions share: the graph, the dense scores, the LLM roles and their accounting."""

    variant = ""

    def __init__(self, index: IndexStore, config: HippoRAGConfig | HippoRAG2Config, llm_roles: object | None) -> None:
        self.index = index
        self.config = config
        self.roles = baseline_roles(config.engine, llm_roles)
        self.graph: HippoGraph = hippo_graph(index, config.graph)
        self.graph.operator(self.variant)

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(index_embedder(self.index).encode([text])[0], dtype=np.float32)

    def dense_scores(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(self.index.collection("passages").vectors @ q, dtype=np.float64)

    def scores(self, question: str) -> tuple[np.ndarray, HippoRAGTrace]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, question: str, k: int) -> Result:
        with usage_scope() as scope:  # this question's tokens only, however many run at once
            t0 = time.perf_counter()
            scores, trace = self.scores(question)
            trace.seconds = time.perf_counter() - t0
            if self.roles is not None:
                scope.stamp(trace)
        return Result(top_k(scores, k), trace)

    @property
    def falls_back(self) -> bool:
        """Whether an unusable reply is played offline (``EngineConfig.llm_fallback``, gearag.llm.fallback)."""
        return bool(self.config.engine.llm_fallback)


class HippoRAG(_Base):
    """HippoRAG v1 as a retrieval method (registered as ``hipporag``)."""

    variant = "v1"

    def __init__(self, index: IndexStore, config: HippoRAGConfig, llm_roles: object | None = None) -> None:
        super().__init__(index, config, llm_roles)
        self.config: HippoRAGConfig = config

    def entities(self, question: str) -> list[str]:
        if self.roles is not None:
            roles = self.roles
            return played_call("ner", lambda: roles.query_entities(question),
                               lambda names: bool(names) and roles.last_ok(),
                               (lambda: query_entities_offline(question, self.config.query_entities))
                               if self.falls_back else None)
        return query_entities_offline(question, self.config.query_entities)

    def link(self, entities: list[str]) -> list[tuple[str, int, float]]:
        """Each entity's most similar phrase node: ``(entity, phrase id, cosine)``.

        A phrase node that is the entity itself (normalised) is its most similar under any encoder (cosine 1),
        and is linked whatever else ties with it: a static embedder such as wordllama averages token vectors,
        so a year's digit permutations (1952, 1925, 1592) share one vector, and the first of them in the
        index would win. Other ties go to the first phrase in text order, so that a link does not depend on
        the order the passages were indexed in."""
        entities = [e for e in entities if normalise_phrase(e)]
        if not entities or self.graph.n_phrases == 0:
            return []
        # Entities are normalised like the phrase nodes before embedding (HippoRAG links processed phrases).
        keys = [normalise_phrase(e) for e in entities]
        vecs = np.asarray(index_embedder(self.index).encode(keys), dtype=np.float32)
        sims = vecs @ self.graph.vectors.T
        phrases = self.graph.table.phrases
        links = []
        for i, (entity, key) in enumerate(zip(entities, keys, strict=True)):
            # The nodes tied at the best cosine, the entity's own among them (a NaN cosine ties none: argmax's).
            tied = np.flatnonzero(sims[i] >= sims[i].max() - _TIE)[:_MOST_TIED].tolist() or [int(sims[i].argmax())]
            best = next((j for j in tied if phrases[j] == key), None)
            if best is None:
                best = min(tied, key=phrases.__getitem__)
            links.append((entity, best, float(sims[i, best])))
        return links

    def scores(self, question: str) -> tuple[np.ndarray, HippoRAGTrace]:
        g = self.graph
        links = self.link(self.entities(question))
        trace = HippoRAGTrace("v1", linked=[[e, g.table.phrases[p], round(s, 4)] for e, p, s in links])
        if not links:
            trace.fallback = f"no query entity: {self.config.fallback}"
            if self.config.fallback == "dense":
                return self.dense_scores(self.encode(question)), trace
            return np.zeros(g.n_passages), trace
        seeds = np.zeros(g.n_phrases)
        for _, p, _ in links:
            seeds[p] = g.specificity[p] if self.config.node_specificity else 1.0
        trace.seeds = _seed_list(g, seeds)
        probs = g.operator("v1").run(seeds, damping=self.config.damping)
        passage = np.asarray(g.table.passage_phrase @ probs, dtype=np.float64)
        return min_max(passage), trace


class HippoRAG2(_Base):
    """HippoRAG 2 as a retrieval method (registered as ``hipporag2``)."""

    variant = "v2"

    def __init__(self, index: IndexStore, config: HippoRAG2Config, llm_roles: object | None = None) -> None:
        super().__init__(index, config, llm_roles)
        self.config: HippoRAG2Config = config
        self.fact_vectors = index.collection("triples").vectors

    def top_facts(self, q: np.ndarray) -> list[tuple[int, float]]:
        """The ``fact_top_k`` best distinct triples for the query: ``(triple id, min-max score)``."""
        t = self.index.triples
        if len(t) == 0:
            return []
        scores = min_max(np.asarray(self.fact_vectors @ q, dtype=np.float64))
        depth = min(len(scores), max(50, 10 * self.config.fact_top_k))
        cand = np.argpartition(-scores, depth - 1)[:depth]
        cand = cand[np.lexsort((cand, -scores[cand]))]
        seen: set[tuple[int, int, str]] = set()
        out: list[tuple[int, float]] = []
        g = self.graph.table
        for i in cand:
            key = (int(g.subject[i]), int(g.object[i]), t.predicates[i].casefold().strip())
            if key in seen:
                continue
            seen.add(key)
            out.append((int(i), float(scores[i])))
            if len(out) == self.config.fact_top_k:
                break
        return out

    def recognise(self, question: str, facts: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The LLM filter: keep the candidates the model copies back (matched case/space-insensitively)."""
        if self.roles is None or not self.config.recognition_filter or not facts:
            return facts
        t = self.index.triples
        cands = [Fact(t.subjects[i], t.predicates[i], t.objects[i], i) for i, _ in facts]
        roles = self.roles

        def ask() -> list[tuple[int, float]]:
            kept = {_key(f) for f in roles.filter_facts(question, cands)}
            return [(i, s) for (i, s), f in zip(facts, cands, strict=True) if _key(f) in kept]

        # A reply that parsed into no structure is the offline engine's (no filter); "none helps" is a reply.
        return played_call("filter", ask, lambda _: roles.last_ok(), (lambda: facts) if self.falls_back else None)

    def scores(self, question: str) -> tuple[np.ndarray, HippoRAGTrace]:
        g = self.graph
        t = self.index.triples
        q = self.encode(question)
        dense = self.dense_scores(q)
        candidates = self.top_facts(q)
        facts = self.recognise(question, candidates)
        trace = HippoRAGTrace("v2", facts=[[t.subjects[i], t.predicates[i], t.objects[i], round(s, 4)]
                                            for i, s in facts])
        total = np.zeros(g.n_phrases)
        count = np.zeros(g.n_phrases)
        for i, score in facts:
            for p in {int(g.table.subject[i]), int(g.table.object[i])}:
                if p < 0:
                    continue
                n = g.passages_per_phrase[p]
                total[p] += score / n if n > 0 else score
                count[p] += 1
        phrase = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
        if np.count_nonzero(phrase) > self.config.fact_top_k:
            cut = np.argsort(-phrase, kind="stable")[self.config.fact_top_k:]
            phrase[cut] = 0.0
        if not phrase.any():
            trace.fallback = "no fact linked: dense" if not candidates else "no fact survived the filter: dense"
            return dense, trace
        trace.seeds = _seed_list(g, phrase)
        seeds = np.concatenate([phrase, min_max(dense) * self.config.passage_weight])
        probs = g.operator("v2").run(seeds, damping=self.config.damping)
        return np.asarray(probs[g.n_phrases:], dtype=np.float64), trace


def _key(fact: Fact) -> tuple[str, ...]:
    return tuple(" ".join(x.casefold().split()) for x in fact)


def _seed_list(g: HippoGraph, seeds: np.ndarray) -> list[list[Any]]:
    order = np.argsort(-seeds, kind="stable")[:TRACE_SEEDS]
    return [[g.table.phrases[i], round(float(seeds[i]), 6)] for i in order if seeds[i] > 0]
