"""``gear`` as a retrieval method: the agent over an index with the offline or an LLM engine."""

from __future__ import annotations

from collections.abc import Callable

from gearag.agent.config import AgentConfig
from gearag.agent.loop import GearAgent
from gearag.engine import make_engine
from gearag.llm.usage import TokenMeter, usage_scope
from gearag.results import Result
from gearag.store.index import Index
from gearag.store.rows import rows_at
from gearag.trace import StepTrace


class GearMethod:
    """Runs the agent for each question, then (optionally) answers from the top passages."""

    def __init__(self, index: Index, config: AgentConfig, llm_roles: object | None = None) -> None:
        self.index = index
        self.config = config
        self.agent = GearAgent(index, make_engine(index, config.engine, llm_roles), config)

    def __call__(self, question: str, k: int, on_step: Callable[[StepTrace], None] | None = None) -> Result:
        """The top ``k`` passages (and an answer); ``on_step`` sees each agent step as it finishes (streaming)."""
        with usage_scope():  # this question's tokens only, however many run at once
            return self._run(question, k, on_step)

    def _run(self, question: str, k: int, on_step: Callable[[StepTrace], None] | None) -> Result:
        engine = self.agent.engine
        meter = TokenMeter(engine.ledger)
        before = meter.snapshot()
        run = self.agent.run(question, k, on_step)
        trace = run.trace()
        out = Result(run.passages, trace)
        if self.config.answer:
            rows = [h.idx for h in run.passages[: self.config.qa_passages]]
            answer = engine.answerer.answer(question, rows_at(self.index.passages, rows), run.memory, rows)
            out.answer = answer.text
            trace.answer_label = answer.label
            trace.evidence = answer.evidence
        if engine.ledger is not None:
            # Tokens this question used, by role (GEAR Fig. 4), answer generation included.
            trace.tokens_by_role = meter.since(before)
        return out
