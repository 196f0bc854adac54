"""Retrieval methods by name: what ``gearag retrieve --method`` runs for one question.

A method is built from the registry (:mod:`gearag.registry`) with its typed
config and bound to one index; calling it with a question and ``k`` gives a
:class:`~gearag.results.Result`. The CLI, the demo, the benchmarks and the
service all go through :func:`make_method` (usually via :mod:`gearag.api`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from gearag.errors import ConfigError
from gearag.options import build_config
from gearag.registry import REGISTRY
from gearag.results import Result
from gearag.store.interface import IndexStore

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class Method(Protocol):
    """A retrieval method bound to an index: the top ``k`` passages for a question."""

    def __call__(self, question: str, k: int) -> Result: ...


def method_names() -> list[str]:
    return REGISTRY.names("method")


def method_config(name: str, options: Mapping[str, Any] | None = None) -> DataclassInstance:
    """The typed config of method ``name`` from user options (an instance of the frozen config dataclass the
    registry names for it); errors name the option and the method."""
    entry = REGISTRY.entry("method", name)
    cls = entry.config_class()
    if cls is None:
        raise ConfigError(f"method {entry.name!r} has no config class; register one")
    return build_config(cls, options, what=f"method {entry.name!r}")


def make_method(
    index: IndexStore, name: str, config: Any = None, /, *, llm_roles: object | None = None, **options: Any
) -> Method:
    """The method ``name`` bound to ``index``.

    Pass a ready config object, or options by keyword (``beam_width=5``)
    which are checked and turned into the method's config. ``llm_roles``
    injects ready LLM roles into methods that use an engine (tests, the API).
    """
    entry = REGISTRY.entry("method", name)
    if config is None:
        config = method_config(name, options)
    elif options:
        raise TypeError("pass either a config or options, not both")
    factory = entry.load()
    if llm_roles is not None:
        return factory(index, config, llm_roles=llm_roles)
    return factory(index, config)
