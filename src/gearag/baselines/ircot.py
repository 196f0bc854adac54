"""IRCoT (Trivedi et al., 2023) and HippoRAG w/ IRCoT as retrieval methods: ``ircot``, ``hipporag-ircot``.

The loop (as HippoRAG's IRCoT driver runs it, ``src/ircot_hipporag.py``):

1. retrieve ``per_step`` passages for the question;
2. until ``max_steps`` retrievals: write ONE more reasoning sentence from the
   question, the best ``per_step`` passages so far and the sentences so far;
   stop if it states the answer ("So the answer is:"); otherwise retrieve
   ``per_step`` passages with that sentence as the query;
3. merge: a passage keeps its best score over the steps and the pool is
   sorted by it (option ``merge=order``: first-retrieved first).

With ``--engine openai`` the sentence comes from the model
(:data:`~gearag.llm.prompts.IRCOT_THOUGHT`, one demonstration, our words).

Offline there is no model to reason, so the "thought" is a fact picked from
the passages shown at that step, and we say so in the trace
(``engine: offline``): among the triples of those passages not used before,
the one closest to the question by embedding whose object is a name not
already in the question or earlier thoughts (a bridge to the next hop;
any unused triple if none is). The sentence is ``"subject predicate
object."`` and the next query is that sentence (``offline_query=thought``,
IRCoT's choice) or the question followed by it. Offline runs never state an
answer, so they stop at ``max_steps`` or when no unused triple is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gearag import deadline as call_deadline
from gearag.baselines.config import HippoRAG2Config, HippoRAGConfig, HippoRAGIRCoTConfig, IRCoTConfig
from gearag.baselines.hipporag_method import HippoRAG, HippoRAG2
from gearag.baselines.llm import baseline_roles
from gearag.baselines.phrases import normalise_phrase
from gearag.embed import index_embedder
from gearag.llm.fallback import played_call
from gearag.llm.parse.baselines import ANSWER_MARK
from gearag.llm.usage import TokenMeter, usage_scope
from gearag.model import Hit
from gearag.results import Result
from gearag.retrieve import make_retriever
from gearag.retrieve.base import top_k
from gearag.store.interface import IndexStore
from gearag.text import is_named
from gearag.trace import IRCoTStep, IRCoTTrace

#: Passage ids kept per step in the trace: enough for R@15 by iteration (Figure 2).
TRACE_RANKING = 15

#: One retrieval step: hits for a query, and the retriever's trace (or None).
StepRetriever = Callable[[str, int], tuple[list[Hit], dict[str, Any] | None]]


class IRCoTLoop:
    """The interleaved retrieve / reason loop over any step retriever."""

    def __init__(self, index: IndexStore, config: IRCoTConfig | HippoRAGIRCoTConfig, retrieve: StepRetriever,
                 retriever_name: str, roles: Any) -> None:
        self.index = index
        self.config = config
        self.retrieve = retrieve
        self.retriever_name = retriever_name
        self.roles = roles
        self.meter = TokenMeter(roles.llm.ledger if roles is not None else None)
        self.engine = "offline" if roles is None else config.engine.engine

    # -- merging -------------------------------------------------------------------------
    def _ranked(self, best: dict[int, float], first: dict[int, int]) -> list[Hit]:
        if self.config.merge == "order":
            n = len(first)
            return [Hit(row, float(n - pos)) for row, pos in sorted(first.items(), key=lambda x: x[1])]
        return [Hit(row, best[row]) for row in sorted(best, key=lambda r: (-best[r], first[r]))]

    # -- thoughts ------------------------------------------------------------------------
    def _offline_thought(self, question: str, shown: list[Hit], used: set[int], thoughts: list[str]) -> str:
        t = self.index.triples
        ids = [i for h in shown for i in self.index.passage_triples(h.idx) if i not in used]
        if not ids:
            return ""
        q = np.asarray(index_embedder(self.index).encode([question])[0], dtype=np.float32)
        vectors = self.index.collection("triples").vectors
        sims = np.asarray(vectors[np.asarray(ids)] @ q, dtype=np.float64)
        known = normalise_phrase(" ".join([question, *thoughts]))
        bridges = [n for n, i in enumerate(ids)
                   if is_named(t.objects[i]) and normalise_phrase(t.objects[i]) not in known]
        pool = bridges or list(range(len(ids)))
        best = max(pool, key=lambda n: (sims[n], -n))
        used.add(ids[best])
        i = ids[best]
        return f"{t.subjects[i]} {t.predicates[i]} {t.objects[i]}."

    def _thought(self, question: str, shown: list[Hit], used: set[int], thoughts: list[str]) -> str:
        if self.roles is None:
            return self._offline_thought(question, shown, used, thoughts)
        passages = [self.index.passages[h.idx] for h in shown]
        roles = self.roles
        offline = (lambda: self._offline_thought(question, shown, used, thoughts)) if self.config.engine.llm_fallback \
            else None
        return played_call("ircot", lambda: str(roles.ircot_thought(passages, question, thoughts)),
                           lambda thought: bool(thought.strip()) and roles.last_ok(), offline)

    def _next_query(self, question: str, thought: str) -> str:
        if self.roles is None and self.config.offline_query == "question+thought":
            return f"{question} {thought}"
        return thought

    # -- the loop ------------------------------------------------------------------------
    def __call__(self, question: str, k: int) -> Result:
        with usage_scope() as scope:  # this question's tokens only, however many run at once
            out = self._run(question, k)
            if self.roles is not None and isinstance(out.trace, IRCoTTrace):
                scope.stamp(out.trace)
            return out

    def _run(self, question: str, k: int) -> Result:
        best: dict[int, float] = {}
        first: dict[int, int] = {}
        steps: list[IRCoTStep] = []
        thoughts: list[str] = []
        used: set[int] = set()
        answered = False
        query = question
        ranked: list[Hit] = []
        for n in range(1, self.config.max_steps + 1):
            call_deadline.check()  # a service request past its limit stops here (gearag.deadline)
            t0 = time.perf_counter()
            before = self.meter.snapshot()
            hits, retrieval = self.retrieve(query, self.config.per_step)
            new = []
            for h in hits:
                if h.idx not in first:
                    first[h.idx] = len(first)
                    new.append(self.index.passages[h.idx].title)
                best[h.idx] = max(best.get(h.idx, -np.inf), h.score)
            ranked = self._ranked(best, first)
            step = IRCoTStep(n, query, new, ranking=[self.index.passages[h.idx].id for h in ranked[:TRACE_RANKING]],
                             retrieval=retrieval)
            steps.append(step)
            stop = n == self.config.max_steps
            if not stop:
                thought = self._thought(question, ranked[: self.config.per_step], used, thoughts).strip()
                step.thought = thought
                if not thought:
                    stop = True
                else:
                    thoughts.append(thought)
                    if ANSWER_MARK.search(thought):
                        answered, stop = True, True
                    query = self._next_query(question, thought)
            step.tokens_in, step.tokens_out = TokenMeter.totals(self.meter.since(before))
            step.seconds = time.perf_counter() - t0
            if stop:
                break
        return Result(ranked[:k], IRCoTTrace(self.retriever_name, steps, self.engine, answered))


def IRCoT(index: IndexStore, config: IRCoTConfig, llm_roles: object | None = None) -> IRCoTLoop:  # noqa: N802
    """``ircot``: IRCoT over a base retriever (BM25 by default)."""
    retriever = make_retriever(index, config.base, "passages")

    def retrieve(query: str, k: int) -> tuple[list[Hit], dict[str, Any] | None]:
        return retriever.retrieve(query, k), None

    return IRCoTLoop(index, config, retrieve, config.base, baseline_roles(config.engine, llm_roles))


def HippoRAGIRCoT(index: IndexStore, config: HippoRAGIRCoTConfig,  # noqa: N802
                  llm_roles: object | None = None) -> IRCoTLoop:
    """``hipporag-ircot``: IRCoT with HippoRAG (v1 by default) retrieving at every step; one LLM ledger."""
    roles = baseline_roles(config.engine, llm_roles)
    method: HippoRAG | HippoRAG2
    if config.variant == "hipporag":
        method = HippoRAG(index, HippoRAGConfig(damping=config.damping, graph=config.graph, engine=config.engine),
                          llm_roles=roles)
    else:
        method = HippoRAG2(index, HippoRAG2Config(damping=config.damping, graph=config.graph, engine=config.engine),
                           llm_roles=roles)

    def retrieve(query: str, k: int) -> tuple[list[Hit], dict[str, Any] | None]:
        scores, trace = method.scores(query)
        return top_k(scores, k), trace.to_dict()

    return IRCoTLoop(index, config, retrieve, config.variant, roles)
