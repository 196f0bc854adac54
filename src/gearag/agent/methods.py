"""``gear`` as a retrieval method: the agent over an index, with the offline or an LLM engine."""

from __future__ import annotations

from typing import Any

from gearag.agent.loop import AgentConfig, GearAgent
from gearag.agent.roles import Engine
from gearag.errors import ConfigError
from gearag.expand.methods import expansion_config
from gearag.methods import MethodResult, positive_int, register_method
from gearag.store.index import Index

#: Passages the answerer reads (the paper's QA setup uses the top 5, Table 3).
QA_PASSAGES = 5


def make_engine(index: Index, options: dict[str, Any]) -> Engine:
    engine = options.get("engine") or "offline"
    if engine == "offline":
        from gearag.agent.offline import offline_engine

        return offline_engine(index, chain=bool(options.get("chain_agent", True)))
    if engine in ("openai", "llm"):
        from gearag.agent.llm_engine import llm_engine

        return llm_engine(index, options)
    raise ConfigError(f"unknown engine {engine!r} (choose from offline, openai)")


def agent_config(options: dict[str, Any]) -> AgentConfig:
    return AgentConfig(
        max_steps=positive_int(options, "max_steps", AgentConfig.max_steps),
        chunks=positive_int(options, "chunks", AgentConfig.chunks),
        link_k=positive_int(options, "link_k", AgentConfig.link_k),
        expansion=expansion_config({**options, "base_k": None}),
        rrf_k=positive_int(options, "rrf_k", 60),
        final=options.get("final") or AgentConfig.final,
    )


def _gear(index: Index, options: dict[str, Any]):
    config = agent_config(options)
    if options.get("chain_agent") is not None:
        from dataclasses import replace

        config = replace(config, chain=bool(options["chain_agent"]))
    agent = GearAgent(index, make_engine(index, options), config)
    answer = bool(options.get("answer", True))

    ledger = agent.engine.ledger

    def run(question: str, k: int) -> MethodResult:
        before = ledger.by_role() if ledger is not None else {}
        result = agent.run(question, k)
        trace = result.trace()
        if result.reasoning is not None:
            trace["reasoning"] = result.reasoning.text
        out = MethodResult(result.passages, trace)
        if answer:
            top = [index.passages[h.idx] for h in result.passages[:QA_PASSAGES]]
            ans = agent.engine.answerer.answer(question, top, result.memory)
            out.answer = ans.text
            trace["answer_label"] = ans.label
            trace["evidence"] = ans.evidence
        if ledger is not None:
            # Tokens this question used, by role (GEAR Fig. 4), answer generation included.
            trace["tokens_by_role"] = {
                role: {"prompt": st.prompt_tokens - before.get(role, type(st)()).prompt_tokens,
                       "completion": st.completion_tokens - before.get(role, type(st)()).completion_tokens}
                for role, st in ledger.by_role().items()
            }
        return out

    return run


register_method("gear", _gear)
