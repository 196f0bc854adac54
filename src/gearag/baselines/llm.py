"""The LLM side of the baselines: roles when the ``openai`` engine is chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gearag.engine import EngineConfig, check_engine_options
from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from gearag.llm.roles import LLMRoles


def baseline_roles(config: EngineConfig, injected: object | None = None) -> LLMRoles | None:
    """LLM roles for the ``openai`` and ``local`` engines (``injected`` ones when given: tests, the API); None
    offline."""
    name = REGISTRY.entry("engine", config.engine).name
    check_engine_options(name, config.llm_base_url, config.llm_model, config.llm_gguf)
    if name == "offline":
        return None
    if injected is not None:
        return injected  # type: ignore[return-value]
    from gearag.expand.llm_reader import llm_roles

    return llm_roles(config)
