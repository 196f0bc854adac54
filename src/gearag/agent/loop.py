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

The loop also stops when the rewriter returns the current query again,
since that step would retrieve the same passages — unless the step added
facts to the gist memory while the offline chain agent is on (a bridge is
still being resolved; ``chain_agent``) — and, with a per-question time budget
(``AgentConfig.time_budget``), once the question's wall time has
passed it: no new step or model call starts (the first step's retrieval always
runs), and the output is ranked from the memory so far. The trace says why the
loop stopped (``AgentTrace.stopped``: :data:`gearag.trace.STOP_REASONS`).

The output ranking (``AgentConfig.final``): ``rrf`` is Eq. 9 as printed —
each gist triple passage-linked (Eq. 8, 10) and
``RRF(C_t1, …, C_t|G|, C_q(1), …, C_q(n))``; ``ppr`` (default; not in the
paper) ranks by Personalized PageRank over the passage-aware graph seeded
with the question's entities, the gist memory (at ``AgentConfig.memory_weight`` of the
question's entities, together with the facts the reasoner's answer rests on
beyond the memory) and the first step's base passages. A memory fact seeds
through its index triple: its ``source``, or for a fact a model wrote its
tripleLink (Eq. 2; :mod:`gearag.agent.memory`, which says why passageLink is
not used there).
Inside each step, ``ExpansionConfig.graph`` chooses PPR (default), Algorithm 1's
beams (as printed) or both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gearag import deadline as call_deadline
from gearag.agent.config import AgentConfig
from gearag.agent.evidence import (
    evidence_facts,
    evidence_first,
    evidence_rows,
    named_first,
    passage_facts,
)
from gearag.agent.memory import MemoryLinks
from gearag.agent.slots import connected
from gearag.derive.graph_for import passage_graph_for
from gearag.engine import Engine
from gearag.expand.expansion import GraphExpander
from gearag.expand.link import PassageLinker, TripleLinker
from gearag.llm.usage import TokenMeter, usage_scope
from gearag.model import Fact, Hit, Reasoning
from gearag.results import rank_scores
from gearag.retrieve.fusion import rrf
from gearag.retrieve.pool import base_retriever
from gearag.store.interface import IndexStore
from gearag.store.rows import rows_at
from gearag.trace import AgentTrace, StepTrace, StopReason


@dataclass
class AgentResult:
    passages: list[Hit]
    steps: list[StepTrace]
    memory: list[Fact]
    reasoning: Reasoning | None
    #: Passage rows the last reasoning's evidence came from when it answered (first in ``passages`` with
    #: ``AgentConfig.evidence_first``).
    evidence: list[int] = field(default_factory=list)
    #: Why the loop stopped (:data:`gearag.trace.STOP_REASONS`).
    stopped: StopReason | None = None

    def trace(self) -> AgentTrace:
        return AgentTrace(self.steps, [list(t.as_tuple()) for t in self.memory],
                          self.reasoning.text if self.reasoning is not None else None, stopped=self.stopped)


class TimeBudget:
    """The per-question time budget (``AgentConfig.time_budget``): spent once ``seconds`` of wall time have passed
    since the question started; ``None`` never is. :attr:`hit` records that it stopped something."""

    def __init__(self, seconds: float | None, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started = clock() if seconds is not None else 0.0
        self.hit = False

    def spent(self) -> bool:
        """Whether the budget is spent (asked before each step and each model call: True means do not start it)."""
        if self.seconds is None:
            return False
        if self.clock() - self.started >= self.seconds:
            self.hit = True
        return self.hit


class GearAgent:
    """Multi-step retrieval with gist memory over one index and one engine."""

    def __init__(self, index: IndexStore, engine: Engine, config: AgentConfig = AgentConfig()) -> None:
        self.index = index
        self.engine = engine
        self.config = config
        exp = config.expansion
        self.rrf_k = exp.retriever.rrf_k
        self.base = base_retriever(index, exp.base, exp.retriever)  # passages, or a pool's nodes' sources
        self.triple_linker = TripleLinker(index, exp.link, config=exp.retriever)
        self.expander = GraphExpander(index, exp.beam, exp.scoring)
        self.chain = config.engine.chain_agent
        self.graph = passage_graph_for(index, exp.passage_graph) if exp.graph != "beams" else None
        #: Whether the output ranking is PPR's (``AgentConfig.final``): Eq. 9's passageLink lists are then not
        #: read, so no gist triple is linked (two BM25 searches each: ~a quarter of a GEAR query at 1M passages).
        self.ranks_by_ppr = config.final == "ppr" and self.graph is not None
        self.passage_linker = None if self.ranks_by_ppr else PassageLinker(index, exp.base, exp.retriever)
        #: The wall clock of the time budget (``AgentConfig.time_budget``); tests may replace it.
        self.clock: Callable[[], float] = time.monotonic

    def step_passages(
        self, query: str, question: str, memory: list[Fact], n_base: list[Hit] | None = None,
        links: MemoryLinks | None = None, read: bool = True,
    ) -> tuple[list[int], dict[str, Any]]:
        """SyncGE for one step: ``C_q(n)`` and what the step's reader and beams found.

        ``links``: the question's memory links (:mod:`gearag.agent.memory`); ``read``: False skips the reader
        (the time budget is spent), and the step ranks from its base passages and the memory.
        """
        links = links or MemoryLinks(self.triple_linker)
        base_hits = self.base.retrieve(query, self.config.chunks)
        base_rows = [h.idx for h in base_hits]
        proximal = self.engine.reader.read(question, base_rows, memory) if read else []
        initial = self.triple_linker.link(proximal)
        mode = self.config.expansion.graph
        rankings: list[list[int]] = []
        paths: list[str] = []
        if self.graph is not None:
            known = links.triples(memory)  # the memory's index triples: sources, or a model's facts' tripleLink
            seeds = list(dict.fromkeys([*initial, *known]))
            rankings.append(self.graph.rank(query, [(h.idx, h.score) for h in base_hits], seeds,
                                            max(15, self.config.chunks)))
        if mode != "ppr":
            expansion = self.expander.expand(query, initial)
            rankings.extend([expansion.passages, base_rows] if mode == "beams" else [expansion.passages])
            paths = self.expander.describe(expansion.beams)
        else:
            rankings = [list(dict.fromkeys([*rankings[0], *base_rows]))]
        fused = [p for p, _ in rrf(rankings, k=self.rrf_k)]
        if n_base is not None:
            n_base.extend(base_hits)
        return fused, {"proximal": proximal, "paths": paths}

    def final_ppr(
        self, question: str, memory: list[Fact], base: list[Hit], per_step: list[list[int]], k: int,
        links: MemoryLinks | None = None,
    ) -> list[int]:
        """The output ranking's rows by PPR (see ``AgentConfig.final``); the steps' passages fill the tail.

        Each memory fact (after the ``memory_seeds`` filter) seeds through its index triple: its ``source``, or
        for a fact a model wrote (``source`` None) its tripleLink, the top-1 index triple of Eq. 2
        (:mod:`gearag.agent.memory`; ``links`` keeps the question's links). Sourced facts seed as before.
        """
        if self.config.memory_seeds == "connected":
            memory = connected(question, memory)
        seeds = (links or MemoryLinks(self.triple_linker)).triples(memory)
        # The gist memory is already a selection: its facts seed alike (not by reading order).
        ranked = self.graph.rank(question, [(h.idx, h.score) for h in base], seeds, k,  # type: ignore[union-attr]
                                 ranked=not self.chain, proximal_weight=self.config.memory_weight)
        tail = [p for p, _ in rrf(per_step, k=self.rrf_k) if p not in set(ranked)]
        return [*ranked, *tail]

    def output(self, question: str, reasoning: Reasoning, memory: list[Fact], first_base: list[Hit],
               per_step: list[list[int]], linked: list[list[int]], k: int, links: MemoryLinks | None = None
               ) -> list[int]:
        """The output ranking's rows after a step, as ``AgentConfig.final`` ranks them.

        ``rrf`` is Eq. 9: ``linked`` holds passageLink (Eq. 8, 10) of every gist triple, with a source or
        without, fused with every step's ``C_q(n)``.
        """
        if self.ranks_by_ppr:
            # The answer's evidence read beyond the memory (a comparison's two branches) seeds too.
            extra = ([t for t in reasoning.facts if t.as_tuple() not in {m.as_tuple() for m in memory}]
                     if self.config.seed_evidence else [])
            order = self.final_ppr(question, [*memory, *extra], first_base, per_step, k, links)
        else:
            order = [p for p, _ in rrf(linked + per_step, k=self.rrf_k)]
        return order

    def evidence(self, question: str, reasoning: Reasoning, memory: list[Fact], read: Sequence[int] = ()
                 ) -> list[int]:
        """The passage rows ``reasoning``'s evidence facts were read from (:mod:`gearag.agent.evidence`), those
        of facts about what the question names first; ``read``: passages whose triples may hold evidence beyond
        the memory (what the answerer read)."""
        known = [*memory, *reasoning.facts]
        facts = evidence_facts(reasoning.evidence, known)
        if len(facts) < len(set(reasoning.evidence)) and read:
            facts = evidence_facts(reasoning.evidence, [*known, *passage_facts(self.index, read)])
        return evidence_rows(self.index, named_first(question, facts))

    def run(self, question: str, k: int = 15, on_step: Callable[[StepTrace], None] | None = None) -> AgentResult:
        """Run the loop for ``question``; ``on_step`` (if given) sees each step's trace as soon as it finishes.

        With ``AgentConfig.time_budget`` set, each step after the first and each model call (reader, gist
        constructor, reasoner, rewriter) starts only while the budget lasts; a call under way is not cut (that is
        the service's hard deadline, :mod:`gearag.deadline`). A step whose calls were skipped still ranks, from
        the memory so far, and the result's ``stopped`` is ``time_budget``.
        """
        budget = TimeBudget(self.config.time_budget, self.clock)
        links = MemoryLinks(self.triple_linker)  # this question's tripleLink of model-written memory facts
        stopped: StopReason | None = None
        memory: list[Fact] = []
        per_step: list[list[int]] = []
        steps: list[StepTrace] = []
        query = question
        reasoning: Reasoning | None = None
        linked: list[list[int]] = []
        final: list[Hit] = []
        evidence: list[int] = []
        last_evidence: list[str] = []
        outputs: list[list[int]] = []  # the output ranking after each step that moved the evidence chain
        first_base: list[Hit] = []
        for n in range(1, self.config.max_steps + 1):
            call_deadline.check()  # a service request past its limit stops here (gearag.deadline)
            if n > 1 and budget.spent():
                stopped = "time_budget"
                break  # no new step: answer from the memory so far
            started = time.perf_counter()
            with usage_scope() as step_usage:  # this step's tokens and fallbacks (within the question's)
                rows, found = self.step_passages(query, question, memory, first_base if n == 1 else None, links,
                                                 read=not budget.spent())
                per_step.append(rows)
                gist = [] if budget.spent() else self.engine.gist.read(question, rows[: self.config.chunks], memory)
                known = {t.as_tuple() for t in memory}
                added = [t for t in gist if t.as_tuple() not in known]
                memory.extend(added)
                if budget.spent():
                    reasoning = Reasoning(False, f"The time budget of {budget.seconds:g} s was spent before reasoning.")
                else:
                    reasoning = self.engine.reasoner.reason(question, memory)
                next_query = None
                if not reasoning.answerable and n < self.config.max_steps and not budget.spent():
                    next_query = self.engine.rewriter.rewrite(question, memory, reasoning)
            if self.passage_linker is not None:  # Eq. 8–10 for the memory so far: passageLink new gist triples
                linked.extend([h.idx for h in self.passage_linker.link(t, self.config.link_k)] for t in added)
            # A step that leaves the reasoner's evidence chain as it was learned nothing toward the answer:
            # its ranking joins no fusion and the output stays as it was (``AgentConfig.step_fusion``).
            moved = not reasoning.evidence or reasoning.evidence != last_evidence or not outputs
            last_evidence = list(reasoning.evidence)
            if moved:
                outputs.append(self.output(question, reasoning, memory, first_base, per_step, linked, k, links))
            fusing = self.ranks_by_ppr and self.config.step_fusion
            order = [p for p, _ in rrf(outputs, k=self.rrf_k)] if fusing else outputs[-1]
            evidence = self.evidence(question, reasoning, memory) if reasoning.answerable else []
            final = rank_scores((evidence_first(order, evidence) if self.config.evidence_first else order)[:k])
            tokens_in, tokens_out = TokenMeter.totals(step_usage.tokens())
            steps.append(
                StepTrace(
                    step=n,
                    query=query,
                    proximal=[list(t.as_tuple()) for t in found["proximal"]],
                    paths=found["paths"],
                    gist_added=[list(t.as_tuple()) for t in added],
                    reasoning={"answerable": reasoning.answerable, "text": reasoning.text,
                               "answer": reasoning.answer, "next_query": next_query},
                    passages=[p.title for p in rows_at(self.index.passages, rows[: self.config.chunks])],
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    fallbacks=step_usage.fallbacks() or None,
                    seconds=round(time.perf_counter() - started, 4),
                    rows=rows,
                    ranking=[p.id for p in rows_at(self.index.passages, [h.idx for h in final[:k]])],
                )
            )
            if on_step is not None:
                on_step(steps[-1])
            if reasoning.answerable:
                stopped = "answerable"
                break
            if next_query is None:
                stopped = "time_budget" if budget.hit else "max_steps"
                break
            if next_query.strip().casefold() == query.strip().casefold() and not (self.chain and added):
                stopped = "same_query"
                break  # the rewriter has nothing new to ask; another step would repeat this one
            query = next_query
        return AgentResult(final[:k], steps, memory, reasoning, evidence, stopped)
