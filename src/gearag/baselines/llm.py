"""The LLM side of the baselines: roles when the ``openai`` engine is chosen, and token metering."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


class TokenMeter:
    """Tokens used by role between two points of a run (the ledger of one LLM)."""

    def __init__(self, roles: LLMRoles | None) -> None:
        self.ledger: Any = roles.llm.ledger if roles is not None else None

    def snapshot(self) -> dict[str, tuple[int, int]]:
        if self.ledger is None:
            return {}
        return {r: (st.prompt_tokens, st.completion_tokens) for r, st in self.ledger.by_role().items()}

    def since(self, before: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
        """``{role: {"prompt", "completion"}}`` used since ``before`` (roles that used none left out)."""
        out = {}
        for role, (p, c) in self.snapshot().items():
            p0, c0 = before.get(role, (0, 0))
            if p - p0 or c - c0:
                out[role] = {"prompt": p - p0, "completion": c - c0}
        return out

    @staticmethod
    def totals(used: dict[str, dict[str, int]]) -> tuple[int, int]:
        return sum(u["prompt"] for u in used.values()), sum(u["completion"] for u in used.values())
