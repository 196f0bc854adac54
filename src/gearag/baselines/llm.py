"""The LLM side of the baselines: roles when the ``openai`` engine is chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gearag.engine import EngineConfig
from gearag.errors import ConfigError
from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from gearag.llm.roles import LLMRoles


def baseline_roles(config: EngineConfig, injected: object | None = None) -> LLMRoles | None:
    """LLM roles for the ``openai`` engine (``injected`` ones when given: tests, the API); None offline."""
    name = REGISTRY.entry("engine", config.engine).name
    if name == "offline":
        if config.llm_base_url or config.llm_model:
            raise ConfigError("--llm-base-url and --llm-model apply only to --engine openai")
        return None
    if injected is not None:
        return injected  # type: ignore[return-value]
    from gearag.expand.llm_reader import llm_roles

    return llm_roles(config)
