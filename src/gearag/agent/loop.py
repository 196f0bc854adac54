"""The GEAR agent loop (§5, Fig. 1; the project page's pseudocode).

Per step ``n`` with query ``q(n)`` (``q(1) = q``):

1. base retrieval of ``chunks`` passages for ``q(n)`` (App. B.2: 10);
2. SyncGE: read them (with the gist memory from step 2 on), tripleLink,
   diverse triple beam search scored against ``q(n)``, and
   ``C_q(n) = RRF(expanded, base)`` (§4, Eq. 1–3);
3. gist memory: read ``C_q(n)`` with ``q`` and ``G(n-1)`` and append the
   proximal triples (Eq. 4–5);
4. ``reason(G(n), q)`` (Eq. 6); stop when answerable or at ``max_steps``;
   otherwise ``q(n+1) = rewrite(G(n), q, r(n))`` (Eq. 7).

One addition: the loop also stops when the rewriter returns the current
query again, since that step would retrieve the same passages.

Afterwards each gist triple is passage-linked (Eq. 8, 10) and the result is
``RRF(C_t1, …, C_t|G|, C_q(1), …, C_q(n))`` (Eq. 9).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gearag.agent.config import AgentConfig
from gearag.engine import Engine
from gearag.expand.expansion import GraphExpander
from gearag.expand.link import PassageLinker, TripleLinker
from gearag.model import Fact, Hit, Reasoning
from gearag.retrieve import make_retriever
from gearag.retrieve.fusion import rrf
from gearag.store.index import Index
from gearag.trace import AgentTrace, StepTrace


@dataclass
class AgentResult:
    passages: list[Hit]
    steps: list[StepTrace]
    memory: list[Fact]
    reasoning: Reasoning | None

    def trace(self) -> AgentTrace:
        return AgentTrace(self.steps, [list(t.as_tuple()) for t in self.memory],
                          self.reasoning.text if self.reasoning is not None else None)


def _tokens(ledger: object | None) -> tuple[int, int]:
    if ledger is None:
        return 0, 0
    total = ledger.snapshot()  # type: ignore[attr-defined]
    return int(total.prompt_tokens), int(total.completion_tokens)


class GearAgent:
    """Multi-step retrieval with gist memory over one index and one engine."""

    def __init__(self, index: Index, engine: Engine, config: AgentConfig = AgentConfig()) -> None:
        self.index = index
        self.engine = engine
        self.config = config
        exp = config.expansion
        self.rrf_k = exp.retriever.rrf_k
        self.base = make_retriever(index, exp.base, config=exp.retriever)
        self.triple_linker = TripleLinker(index, exp.link, config=exp.retriever)
        self.expander = GraphExpander(index, exp.beam, exp.scoring)
        self.passage_linker = PassageLinker(index, exp.base, exp.retriever)

    def step_passages(self, query: str, question: str, memory: list[Fact]) -> tuple[list[int], dict[str, Any]]:
        """SyncGE for one step: ``C_q(n)`` and what the step's reader and beams found."""
        base_rows = [h.idx for h in self.base.retrieve(query, self.config.chunks)]
        proximal = self.engine.reader.read(question, base_rows, memory)
        initial = self.triple_linker.link(proximal)
        expansion = self.expander.expand(query, initial)
        fused = [p for p, _ in rrf([expansion.passages, base_rows], k=self.rrf_k)]
        return fused, {"proximal": proximal, "paths": self.expander.describe(expansion.beams)}

    def run(self, question: str, k: int = 15, on_step: Callable[[StepTrace], None] | None = None) -> AgentResult:
        """Run the loop for ``question``; ``on_step`` (if given) sees each step's trace as soon as it finishes."""
        memory: list[Fact] = []
        per_step: list[list[int]] = []
        steps: list[StepTrace] = []
        query = question
        reasoning: Reasoning | None = None
        linked: list[list[int]] = []
        final: list[tuple[int, float]] = []
        for n in range(1, self.config.max_steps + 1):
            started = time.perf_counter()
            before = _tokens(self.engine.ledger)
            rows, found = self.step_passages(query, question, memory)
            per_step.append(rows)
            gist = self.engine.gist.read(question, rows[: self.config.chunks], memory)
            known = {t.as_tuple() for t in memory}
            added = [t for t in gist if t.as_tuple() not in known]
            memory.extend(added)
            reasoning = self.engine.reasoner.reason(question, memory)
            next_query = None
            if not reasoning.answerable and n < self.config.max_steps:
                next_query = self.engine.rewriter.rewrite(question, memory, reasoning)
            after = _tokens(self.engine.ledger)
            # Eq. 8–10 for the memory so far: passageLink new gist triples, fuse with every step.
            linked.extend([h.idx for h in self.passage_linker.link(t, self.config.link_k)] for t in added)
            final = rrf(linked + per_step, k=self.rrf_k)
            steps.append(
                StepTrace(
                    step=n,
                    query=query,
                    proximal=[list(t.as_tuple()) for t in found["proximal"]],
                    paths=found["paths"],
                    gist_added=[list(t.as_tuple()) for t in added],
                    reasoning={"answerable": reasoning.answerable, "text": reasoning.text,
                               "answer": reasoning.answer, "next_query": next_query},
                    passages=[self.index.passages[r].title for r in rows[: self.config.chunks]],
                    tokens_in=after[0] - before[0],
                    tokens_out=after[1] - before[1],
                    seconds=round(time.perf_counter() - started, 4),
                    rows=rows,
                    ranking=[self.index.passages[i].id for i, _ in final[:k]],
                )
            )
            if on_step is not None:
                on_step(steps[-1])
            if reasoning.answerable or next_query is None:
                break
            if next_query.strip().casefold() == query.strip().casefold():
                break  # the rewriter has nothing new to ask; another step would repeat this one
            query = next_query
        return AgentResult([Hit(i, s) for i, s in final[:k]], steps, memory, reasoning)
