"""``gear`` as a retrieval method: the agent over an index with the offline or an LLM engine."""

from __future__ import annotations

from collections.abc import Callable

from gearag.agent.config import AgentConfig
from gearag.agent.evidence import evidence_first
from gearag.agent.loop import GearAgent
from gearag.engine import make_engine
from gearag.llm.usage import usage_scope
from gearag.model import Reasoning
from gearag.results import RANK, Result, rank_scores
from gearag.store.interface import IndexStore
from gearag.store.rows import rows_at
from gearag.trace import AgentTrace, StepTrace


class GearMethod:
    """Runs the agent for each question, then (optionally) answers from the top passages."""

    def __init__(self, index: IndexStore, config: AgentConfig, llm_roles: object | None = None) -> None:
        self.index = index
        self.config = config
        self.agent = GearAgent(index, make_engine(index, config.engine, llm_roles), config)

    def __call__(self, question: str, k: int, on_step: Callable[[StepTrace], None] | None = None) -> Result:
        """The top ``k`` passages (and an answer); ``on_step`` sees each agent step as it finishes (streaming)."""
        with usage_scope() as scope:  # this question's tokens (GEAR Fig. 4), however many run at once
            out = self._run(question, k, on_step)
            if self.agent.engine.ledger is not None and isinstance(out.trace, AgentTrace):
                scope.stamp(out.trace)  # answer generation included
            return out

    def _run(self, question: str, k: int, on_step: Callable[[StepTrace], None] | None) -> Result:
        engine = self.agent.engine
        run = self.agent.run(question, k, on_step)
        trace = run.trace()
        out = Result(run.passages, trace, evidence=run.evidence, score_kind=RANK)
        if self.config.answer:
            rows = [h.idx for h in run.passages[: self.config.qa_passages]]
            answer = engine.answerer.answer(question, rows_at(self.index.passages, rows), run.memory, rows)
            out.answer = answer.text
            trace.answer_label = answer.label
            trace.evidence = answer.evidence
            # The passages the answer rests on (the answerer's evidence may go beyond the reasoning's). They go
            # first when the reasoner answered. A guess's (the best candidate for a question the reasoner could
            # not answer) stay where they rank, or take the last places if the ranking lacks them: moving them up
            # cost MuSiQue R@2.
            said = Reasoning(True, evidence=answer.evidence, facts=run.reasoning.facts if run.reasoning else [])
            out.evidence = self.agent.evidence(question, said, run.memory, rows)
            answered = run.reasoning is not None and run.reasoning.answerable
            ranked = [h.idx for h in run.passages]
            if self.config.evidence_first and answered:
                order = evidence_first(ranked, out.evidence)[:k]
            else:
                missing = [r for r in out.evidence if r not in set(ranked)][:k]
                order = ranked[: k - len(missing)] + missing
            if order != ranked:
                out.passages = rank_scores(order)
                if run.steps:  # the last step's ranking is the output (recall by iteration)
                    run.steps[-1].ranking = [p.id for p in rows_at(self.index.passages, order)]
        out.evidence = [r for r in out.evidence if r in {h.idx for h in out.passages}]
        return out
