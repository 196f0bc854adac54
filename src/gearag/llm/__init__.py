"""The LLM layer: an OpenAI-compatible client with cache, retries and token accounting,
the papers' prompts, robust reply parsers and the roles built on them.

Typical use::

    from gearag.llm import LLMClient, LLMConfig, LLMRoles

    llm = LLMClient(LLMConfig.from_env(model="gpt-4o-mini"))
    roles = LLMRoles(llm)
    facts = roles.read(passages, "Who ...?", question_id="q1")
    print(llm.ledger.summary())

See docs/llm.md for pointing gearag at OpenAI, vLLM, Ollama or llama.cpp.
"""

from typing import Any

from gearag.llm.base import LLM, Completion, as_messages, ordered_map
from gearag.llm.cache import ResponseCache, cache_key
from gearag.llm.client import LLMClient
from gearag.llm.config import LLMConfig, default_cache_path
from gearag.llm.fake import FakeLLM
from gearag.llm.parse import (
    Entity,
    Parsed,
    ParseStats,
    Proposition,
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
from gearag.llm.roles import LLMRoles, Role, format_passages, format_triples
from gearag.llm.usage import Price, Stats, Usage, UsageLedger, load_prices

__all__ = [
    "DEFAULT_PROMPTS", "LLM", "Completion", "Entity", "FakeLLM", "LLMClient", "LLMConfig", "LLMRoles",
    "ParseStats", "Parsed", "Price", "Prompt", "PromptSet", "Proposition", "ResponseCache", "Role", "Stats",
    "TripleExtraction", "Usage", "UsageLedger", "as_messages", "cache_key", "default_cache_path",
    "format_passages", "format_triples", "load_prices", "make_llm", "ordered_map", "parse_answer",
    "parse_entities", "parse_facts", "parse_next_question", "parse_propositions", "parse_reasoning",
    "parse_text", "parse_triples",
]


def make_llm(**overrides: Any) -> LLMClient:
    """An :class:`LLMClient` from the environment plus overrides (``None`` values ignored).

    ``llm_roles`` in :mod:`gearag.expand.llm_reader` calls
    ``make_llm(base_url=options["llm_base_url"], model=options["llm_model"])``.
    """
    return LLMClient(LLMConfig.from_env(**overrides))
