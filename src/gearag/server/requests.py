"""What a request may set: the service's trust boundary for method options.

A client of ``gearag serve`` chooses the method and its question-time ranking
options, each within its request bound; the operator chooses everything else
(the engine, the LLM endpoint, model and key, word-list files, the options
that shape the graphs the index builds and caches). The split is not a list
kept here: it is the ``request=`` marker on each config field
(:func:`gearag.options.check_request`), so a new field is operator-only until
someone marks it, and a request naming it gets a 400 before any work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gearag.engine import check_engine_options
from gearag.errors import ConfigError
from gearag.options import OptionSpec, build_config, check_request, option_specs
from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def _method_class(name: str) -> type:
    entry = REGISTRY.entry("method", name)
    cls = entry.config_class()
    if cls is None:
        raise ConfigError(f"method {entry.name!r} has no config class; register one")
    return cls


def operator_specs() -> dict[str, OptionSpec]:
    """Every method option a request may not set (first occurrence of each name): ``gearag serve``'s flags."""
    out: dict[str, OptionSpec] = {}
    for name in REGISTRY.names("method"):
        for option, spec in option_specs(_method_class(name)).items():
            if spec.request is None:
                out.setdefault(option, spec)
    return out


def _applying(cls: type, operator: Mapping[str, Any]) -> dict[str, Any]:
    """The operator's options that ``cls`` takes (``--word-lists`` means nothing to bm25)."""
    specs = option_specs(cls)
    return {k: v for k, v in operator.items() if k in specs}


def check_operator_options(operator: Mapping[str, Any]) -> None:
    """A one-line error for an operator option that is unknown, a request's option, a bad value for any method
    that takes it, a word-list file that does not load, or an LLM engine without a model — at start, not at the
    first request (whose client could then read the operator's paths and endpoints in the error)."""
    specs = operator_specs()
    for name in operator:
        if name not in specs:
            raise ConfigError(f"--{name.replace('_', '-')}: not an option gearag serve sets for its methods")
    for method in REGISTRY.names("method"):
        cls = _method_class(method)
        build_config(cls, _applying(cls, operator), what=f"method {method!r}")
    engine = operator.get("engine") or "offline"
    check_engine_options(engine, operator.get("llm_base_url"), operator.get("llm_model"), operator.get("llm_gguf"))
    if engine != "offline":
        from gearag.engine import EngineConfig, llm_settings
        from gearag.llm.config import LLMConfig

        settings = llm_settings(EngineConfig(engine, operator.get("llm_base_url"), operator.get("llm_model"),
                                             operator.get("llm_gguf")))
        LLMConfig.from_env(**settings, cache_path=False)  # no model, no such GGUF file: the start fails
    if operator.get("word_lists"):
        from gearag.words import word_lists_for

        word_lists_for(operator["word_lists"])


def request_config(method: str, options: Mapping[str, Any], operator: Mapping[str, Any]) -> DataclassInstance:
    """The typed config of ``method`` for one request: the request's ``options`` checked against the allow-list
    (a :class:`~gearag.options.RequestOptionError` naming the key otherwise), over the operator's options. An
    instance of the frozen config dataclass the registry names for ``method`` (which one depends on it)."""
    entry = REGISTRY.entry("method", method)  # an unknown method: the registry's one-line error
    cls = _method_class(entry.name)
    check_request(cls, options, what=f"method {entry.name!r}")
    return build_config(cls, {**_applying(cls, operator), **options}, what=f"method {entry.name!r}")
