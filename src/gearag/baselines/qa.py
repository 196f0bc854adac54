"""Answering from a single-step method's top results: SiReRAG's QA protocol (§5).

SiReRAG evaluates every indexing method the same way (§5, implementation
details): retrieve the top 20 candidates of the method's pool by the query,
give them to GPT-4o with one instruction ("answer this question in as fewer
number of words as possible") and score the answer by EM and F1. Here the
base methods (``bm25``, ``dense``, ``hybrid``) do that when ``answer`` is on:

* ``--engine openai``: the ``sirerag_answer`` prompt over the top
  ``qa_passages`` results as they were retrieved — summaries, aggregates and
  passages alike (a passage shows its title) — one LLM call per question
  through the project's LLM layer (response cache, retries, bounded
  concurrency, the usage ledger);
* ``--engine offline``: the offline engine's extracted answer (the one GEAR's
  offline agent gives), from the passages the top results cover, in rank
  order: the offline gist reader picks facts of those passages, the offline
  answerer extracts the best supported candidate. No language model.

The answer lands in the run row's ``answer`` (so ``gearag eval`` reports
EM/F1) and a :class:`~gearag.trace.QATrace` says how it was made.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gearag.agent.config import AgentEngineConfig
from gearag.llm.usage import usage_scope
from gearag.model import Hit, Passage
from gearag.options import QUESTION, setting, upto
from gearag.retrieve.config import RetrieverConfig
from gearag.store.collection import PASSAGES
from gearag.trace import QATrace

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore

#: Candidates SiReRAG's answerer reads (§5: "we select top 20 candidates ... for all methods").
SIRERAG_QA_CANDIDATES = 20


@dataclass(frozen=True)
class BaseMethodConfig:
    """A base retriever over passages or a pool, optionally answering from its top results."""

    retrieval: RetrieverConfig = setting(RetrieverConfig, "")
    #: Off for the base methods (they retrieve); on, they answer as in SiReRAG §5.
    answer: bool = setting(False, "Also answer from the top results (gear and the agents: on; bm25/dense/hybrid:"
                                  " off, and on they follow SiReRAG §5's QA protocol).", request=QUESTION)
    #: SiReRAG §5 reads the top 20 candidates (GEAR's agent reads 5 passages, Table 3).
    qa_passages: int = setting(SIRERAG_QA_CANDIDATES, "Results the answerer reads (gear: 5 passages, GEAR Table 3;"
                                                      " bm25/dense/hybrid: 20 pool nodes, SiReRAG §5).", min=1,
                               request=upto(50))
    engine: AgentEngineConfig = setting(AgentEngineConfig, "")


def hit_passage(index: IndexStore, hit: Hit) -> Passage:
    """A retrieved result as the answerer sees it: the passage, or a pool node's text without a title."""
    if hit.collection == PASSAGES:
        return index.passages[hit.idx]
    coll = index.collection(hit.collection)
    sources = coll.sources(hit.idx)
    record = coll.record(hit.idx) if coll.spec.records else {"text": coll.texts()[hit.idx]}
    if record.get("kind") == "chunk" and len(sources) == 1:
        return index.passages[sources[0]]
    return Passage(f"{coll.name}:{hit.idx}", "", str(record["text"]))


def source_rows(index: IndexStore, hits: Sequence[Hit], limit: int) -> list[int]:
    """Passage rows the hits cover, in rank order, each once, at most ``limit``."""
    rows: list[int] = []
    seen: set[int] = set()
    for hit in hits:
        covered = [hit.idx] if hit.collection == PASSAGES else index.collection(hit.collection).sources(hit.idx)
        for row in covered:
            if row not in seen:
                seen.add(row)
                rows.append(int(row))
                if len(rows) >= limit:
                    return rows
    return rows


class PoolAnswerer:
    """Writes the answer of one question from a base method's top results (see the module docstring)."""

    def __init__(self, index: IndexStore, config: BaseMethodConfig, llm_roles: object | None = None) -> None:
        from gearag.engine import make_engine

        self.index = index
        self.config = config
        self.engine_name = config.engine.engine
        self.roles: Any = None
        self.engine: Any = None
        if self.engine_name == "offline":
            self.engine = make_engine(index, config.engine)
        else:
            if llm_roles is None:
                from gearag.expand.llm_reader import llm_roles as make_roles

                llm_roles = make_roles(config.engine)
            self.roles = llm_roles

    def answer(self, question: str, hits: Sequence[Hit]) -> tuple[str, QATrace]:
        start = time.perf_counter()
        top = list(hits[: self.config.qa_passages])
        trace = QATrace(engine=self.engine_name, read=len(top))
        if self.roles is not None:
            with usage_scope() as scope:  # this answer's tokens only, however many run at once
                text = self.roles.concise_answer([hit_passage(self.index, h) for h in top], question)
            scope.stamp(trace)
            trace.answer_label = "answer"
        else:
            rows = source_rows(self.index, top, self.config.qa_passages)
            memory = self.engine.gist.read(question, rows)
            answer = self.engine.answerer.answer(question, [self.index.passages[r] for r in rows], memory, rows)
            text = answer.text
            trace.answer_label = answer.label
            trace.evidence = list(answer.evidence)
        trace.seconds = round(time.perf_counter() - start, 4)
        return text, trace
