"""Retrieval methods by name: what ``gearag retrieve --method`` runs for one question.

A method maps a question to ranked passage rows plus an optional trace.
This module is the single registry the CLI, the benchmarks and the server
use; graph expansion and the agent register their methods here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gearag.errors import ConfigError
from gearag.model import Hit
from gearag.retrieve import BASE_METHODS, make_retriever
from gearag.store.index import Index


@dataclass
class MethodResult:
    """Ranked passages (rows of ``index.passages``) and whatever the method wants to show."""

    passages: list[Hit]
    trace: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None


Method = Callable[[str, int], MethodResult]
MethodFactory = Callable[[Index, dict[str, Any]], Method]
_REGISTRY: dict[str, MethodFactory] = {}


def positive_int(options: dict[str, Any], name: str, default: int) -> int:
    """An integer option ≥ 1 (``None`` or absent means ``default``); anything else is a ConfigError."""
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name.replace('_', '-')} must be an integer, got {value!r}") from None
    if number < 1 or number != value and not isinstance(value, str):
        raise ConfigError(f"{name.replace('_', '-')} must be a whole number of at least 1, got {value!r}")
    return number


def register_method(name: str, factory: MethodFactory) -> None:
    _REGISTRY[name] = factory


def _base_factory(method: str) -> MethodFactory:
    def factory(index: Index, options: dict[str, Any]) -> Method:
        retriever = make_retriever(index, method, "passages", rrf_k=options.get("rrf_k", 60))

        def run(question: str, k: int) -> MethodResult:
            return MethodResult(retriever.retrieve(question, k))

        return run

    return factory


for _name in BASE_METHODS:
    register_method(_name, _base_factory(_name))


def method_names() -> list[str]:
    _load_plugins()
    return list(_REGISTRY)


def make_method(index: Index, name: str, **options: Any) -> Method:
    """The method ``name`` bound to ``index``; ``options`` are method-specific."""
    _load_plugins()
    if name not in _REGISTRY:
        raise ConfigError(f"unknown method {name!r} (choose from {', '.join(_REGISTRY)})")
    return _REGISTRY[name](index, options)


def _load_plugins() -> None:
    """Import modules that register further methods (graph expansion, the agent)."""
    import importlib

    for module in ("gearag.expand.methods", "gearag.agent.methods"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
