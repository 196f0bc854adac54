"""Typed traces: what a retrieval method did for one question, for people, run files and the service.

Every trace serialises with :meth:`to_dict`, which carries ``version``
(:data:`TRACE_VERSION`, bumped when a field changes meaning) and ``kind``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

#: Version of the serialised trace layout.
TRACE_VERSION = 1

#: Why the GEAR agent's loop stopped (§5; :mod:`gearag.agent.loop`).
StopReason = Literal["answerable", "max_steps", "same_query", "time_budget"]
#: The reasons in words: the reasoner found the memory answers the question (Eq. 6); the last step
#: (``max_steps``) ran; the rewriter asked the query just asked again (Eq. 7), so another step would repeat it;
#: the per-question time budget was spent (``AgentConfig.time_budget``) and the agent answered from the memory
#: it had, starting no further step or model call.
STOP_REASONS: tuple[StopReason, ...] = ("answerable", "max_steps", "same_query", "time_budget")


@dataclass
class ExpansionTrace:
    """One round of graph expansion (NaiveGE / SyncGE, GEAR §4)."""

    #: Readable beams, best first: ``(s; p; o) → (s; p; o)  [score]``.
    paths: list[str]
    #: Titles of the passages the beams reach, in beam order.
    expanded_passages: list[str]
    #: The reader's proximal triples (SyncGE only; NaiveGE starts from every triple).
    proximal: list[list[str]] | None = None
    #: Titles of the passages PPR over the passage graph ranks first (``graph`` = ppr | both).
    ppr_passages: list[str] | None = None
    seconds: float = 0.0
    #: SyncGE with an LLM engine: its reader's tokens and fallbacks (:mod:`gearag.llm.fallback`); None offline.
    tokens_by_role: dict[str, dict[str, int]] | None = None
    fallbacks: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": TRACE_VERSION, "kind": "expansion"}
        if self.proximal is not None:
            out["proximal"] = self.proximal
        out.update(paths=self.paths, expanded_passages=self.expanded_passages)
        if self.ppr_passages is not None:
            out["ppr_passages"] = self.ppr_passages
        out["seconds"] = self.seconds
        if self.tokens_by_role is not None:
            out["tokens_by_role"] = self.tokens_by_role
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


@dataclass
class LinkTrace:
    """A one-step method that adds linked passages to a base ranking (the title-mention baseline)."""

    #: Titles of the passages linked from the base passages, in link order.
    linked: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"version": TRACE_VERSION, "kind": "links", "linked": self.linked}


@dataclass
class StepTrace:
    """What one iteration of the agent did (GEAR §5)."""

    step: int
    query: str
    proximal: list[list[str]]
    paths: list[str]
    gist_added: list[list[str]]
    reasoning: dict[str, Any]
    passages: list[str]
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    #: Passage rows of C_q(n), best first (not serialised).
    rows: list[int] = field(default_factory=list, repr=False)
    #: The agent's output had it stopped after this step (Eq. 9 over steps 1..n),
    #: for per-iteration recall (the paper's Figure 2).
    ranking: list[str] = field(default_factory=list)
    #: LLM engines: this step's replies per role and how many the offline engine played (the service streams
    #: it with each step; :mod:`gearag.llm.fallback`); None when no model replied.
    fallbacks: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step, "query": self.query, "proximal": self.proximal, "paths": self.paths,
            "gist_added": self.gist_added, "reasoning": self.reasoning, "passages": self.passages,
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "seconds": self.seconds,
            "ranking": self.ranking,
        }
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


@dataclass
class AgentTrace:
    """The agent's run: its steps, the gist memory, and how it answered."""

    steps: list[StepTrace]
    gist_memory: list[list[str]]
    #: The last reasoning text (the answer, or why the memory does not answer yet).
    reasoning: str | None = None
    #: How the answer is presented (an LLM answer or the offline engine's extracted candidate).
    answer_label: str | None = None
    evidence: list[str] = field(default_factory=list)
    #: Tokens this question used, by role (GEAR Fig. 4); None for the offline engine.
    tokens_by_role: dict[str, dict[str, int]] | None = None
    #: Why the loop stopped (:data:`STOP_REASONS`); None for a trace made without the loop.
    stopped: StopReason | None = None
    #: LLM engines: replies per role and how many the offline engine replaced (:mod:`gearag.llm.fallback`).
    fallbacks: dict[str, dict[str, int]] | None = None

    @property
    def iterations(self) -> int:
        return len(self.steps)

    @property
    def paths(self) -> list[str]:
        """The last step's beams (what a person reading the result wants to see first)."""
        return self.steps[-1].paths if self.steps else []

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": TRACE_VERSION, "kind": "agent",
            "steps": [s.to_dict() for s in self.steps],
            "gist_memory": self.gist_memory,
            "iterations": self.iterations,
        }
        if self.stopped is not None:
            out["stopped"] = self.stopped
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.answer_label is not None:
            out["answer_label"] = self.answer_label
            out["evidence"] = self.evidence
        if self.tokens_by_role is not None:
            out["tokens_by_role"] = self.tokens_by_role
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


@dataclass
class HippoRAGTrace:
    """How HippoRAG (v1 or 2) seeded its Personalized PageRank for one query."""

    variant: str
    #: v1: query entities and the phrase node each links to, with the cosine: ``[entity, phrase, cosine]``.
    linked: list[list[Any]] = field(default_factory=list)
    #: v2: the facts linked to the query (after the recognition filter), ``[s, p, o, score]``.
    facts: list[list[Any]] = field(default_factory=list)
    #: Phrase seeds, heaviest first: ``[phrase, weight]``.
    seeds: list[list[Any]] = field(default_factory=list)
    #: Why PPR did not run (``"no query entity"``, ``"no fact survived the filter"``) and what ranked instead.
    fallback: str | None = None
    tokens_by_role: dict[str, dict[str, int]] | None = None
    seconds: float = 0.0
    #: LLM engines: replies per role and how many the offline engine played (:mod:`gearag.llm.fallback`).
    fallbacks: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": TRACE_VERSION, "kind": "hipporag", "variant": self.variant,
                               "linked": self.linked, "facts": self.facts, "seeds": self.seeds,
                               "fallback": self.fallback, "seconds": self.seconds}
        if self.tokens_by_role is not None:
            out["tokens_by_role"] = self.tokens_by_role
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


@dataclass
class IRCoTStep:
    """One IRCoT step: retrieve with ``query``, then (unless it is the last) write the next thought."""

    step: int
    query: str
    #: Titles of passages this step added to the accumulated set.
    new_passages: list[str]
    #: The reasoning sentence written over the passages so far ("" on the last step).
    thought: str = ""
    #: Passage ids of the output had the loop stopped after this step (for Figure 2).
    ranking: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    #: The retriever's own trace for this step (HippoRAG w/ IRCoT), if any.
    retrieval: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"step": self.step, "query": self.query, "new_passages": self.new_passages,
               "thought": self.thought, "ranking": self.ranking, "tokens_in": self.tokens_in,
               "tokens_out": self.tokens_out, "seconds": self.seconds}
        if self.retrieval is not None:
            out["retrieval"] = self.retrieval
        return out


@dataclass
class IRCoTTrace:
    """IRCoT's run: its steps, and whether a thought stated the answer."""

    retriever: str
    steps: list[IRCoTStep]
    #: The engine that wrote the thoughts (``offline``: triples picked from the passages, see ircot.py).
    engine: str = "offline"
    answered: bool = False
    tokens_by_role: dict[str, dict[str, int]] | None = None
    #: LLM engines: replies per role and how many the offline engine played (:mod:`gearag.llm.fallback`).
    fallbacks: dict[str, dict[str, int]] | None = None

    @property
    def iterations(self) -> int:
        return len(self.steps)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": TRACE_VERSION, "kind": "ircot", "retriever": self.retriever,
                               "engine": self.engine, "steps": [s.to_dict() for s in self.steps],
                               "iterations": self.iterations, "answered": self.answered}
        if self.tokens_by_role is not None:
            out["tokens_by_role"] = self.tokens_by_role
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


@dataclass
class QATrace:
    """A single-step method that also answered from its top results (SiReRAG §5's QA protocol)."""

    #: ``offline`` (the extracted candidate) or ``openai`` (an LLM answer).
    engine: str
    #: How many of the top results (pool nodes or passages) the answerer read.
    read: int
    answer_label: str | None = None
    #: The offline engine's supporting facts; empty for an LLM answer.
    evidence: list[str] = field(default_factory=list)
    tokens_by_role: dict[str, dict[str, int]] | None = None
    seconds: float = 0.0
    #: LLM engines: replies per role and how many the offline engine played (:mod:`gearag.llm.fallback`).
    fallbacks: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": TRACE_VERSION, "kind": "qa", "engine": self.engine, "read": self.read,
                               "answer_label": self.answer_label, "evidence": self.evidence,
                               "seconds": self.seconds}
        if self.tokens_by_role is not None:
            out["tokens_by_role"] = self.tokens_by_role
        if self.fallbacks is not None:
            out["fallbacks"] = self.fallbacks
        return out


Trace = ExpansionTrace | AgentTrace | LinkTrace | HippoRAGTrace | IRCoTTrace | QATrace
