"""The LLM layer: an OpenAI-compatible engine with cache, retries and token accounting,
the papers' prompts, robust reply parsers and the roles built on them.

Typical use::

    from gearag.llm import LLMConfig, OpenAIEngine, LLMRoles

    llm = OpenAIEngine(LLMConfig.from_env(model="gpt-4o-mini"))
    roles = LLMRoles(llm)
    triples = roles.read(passages, "Who ...?", question_id="q1")
    print(llm.ledger.summary())

See docs/llm.md for pointing gearag at OpenAI, vLLM, Ollama or llama.cpp.
"""

from gearag.llm.cache import ResponseCache, cache_key
from gearag.llm.config import LLMConfig, default_cache_path
from gearag.llm.engine import LLM, Completion, OpenAIEngine, as_messages, ordered_map
from gearag.llm.fake import FakeLLM
from gearag.llm.parsing import (
    Entity,
    Parsed,
    ParseStats,
    Proposition,
    Reasoning,
    TripleExtraction,
    parse_answer,
    parse_entities,
    parse_facts,
    parse_next_question,
    parse_propositions,
    parse_reasoning,
    parse_text,
    parse_triples,
)
from gearag.llm.prompts import DEFAULT_PROMPTS, Prompt, PromptSet
from gearag.llm.roles import LLMRoles, format_passages, format_triples
from gearag.llm.usage import Price, Stats, Usage, UsageLedger, load_prices

__all__ = [
    "DEFAULT_PROMPTS", "LLM", "Completion", "Entity", "FakeLLM", "LLMConfig", "LLMRoles", "OpenAIEngine",
    "ParseStats", "Parsed", "Price", "Prompt", "PromptSet", "Proposition", "Reasoning", "ResponseCache",
    "Stats", "TripleExtraction", "Usage", "UsageLedger", "as_messages", "cache_key", "default_cache_path",
    "format_passages", "format_triples", "load_prices", "make_llm", "ordered_map", "parse_answer",
    "parse_entities", "parse_facts", "parse_next_question", "parse_propositions", "parse_reasoning",
    "parse_text", "parse_triples",
]


def make_llm(**overrides: object) -> OpenAIEngine:
    """An :class:`OpenAIEngine` from the environment plus overrides (``None`` values ignored).

    The CLI calls ``make_llm(base_url=opts.llm_base_url, model=opts.llm_model)``.
    """
    return OpenAIEngine(LLMConfig.from_env(**overrides))
