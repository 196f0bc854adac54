"""Typed configs as options: one definition of every setting, its default, help and bounds.

A config is a frozen dataclass whose fields carry :func:`option` metadata
(help text, lower bound, choices, the option name when it differs from the
field name). Nested config dataclasses are flattened: ``BeamConfig.width``
inside ``ExpansionConfig.beam`` is the option ``beam_width``. The same
option name may appear at several places in one tree (``rrf_k`` sets every
fusion step); one value sets them all.

:func:`build_config` turns user options (CLI flags, JSON bodies, keyword
arguments) into a config, rejecting unknown or non-applicable names and
bad values with a one-line :class:`~gearag.errors.ConfigError`.
:func:`check_request` is the service's allow-list: a request to ``gearag serve``
may set only the options whose field is marked ``request=`` (question-time
ranking options, each within its request bound); everything else — the engine,
an endpoint, a model, a file, anything that shapes what is built or cached —
is the operator's (``gearag serve`` flags), and unmarked is operator-only.
:func:`option_specs` lists the options of a config class for the CLI;
:func:`changed_options` names those a config sets away from their defaults.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from gearag.errors import ConfigError
from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


@dataclass(frozen=True)
class Request:
    """The marker of an option a service request may set: any valid value up to ``max`` (None: no bound
    beyond the option's own). Options without it are set by the operator only (:func:`check_request`)."""

    #: The largest value a request may ask for: options that scale a request's work (beam width, steps,
    #: depths) are bounded so that no request can take the server's time or memory.
    max: float | None = None


#: A question-time ranking option a request may set to any valid value (weights, switches, choices).
QUESTION = Request()


def upto(bound: float) -> Request:
    """A question-time option that scales a request's work: a request may set it up to ``bound``."""
    return Request(max=bound)


def option(
    help: str,
    *,
    name: str | None = None,
    min: float | None = None,
    choices: tuple[str, ...] | str | None = None,
    positive: bool = False,
    request: Request | None = None,
) -> dict[str, Any]:
    """Metadata for a config field (``field(default=..., metadata=option(...))``).

    ``choices`` is a tuple of allowed strings, or a registry kind (``"retriever"``,
    ``"engine"``) whose names are allowed. ``positive`` requires a value > 0.
    ``request`` (:data:`QUESTION` or :func:`upto`) lets a request to the service set the option; without it
    only the operator can (a file, an endpoint, an engine, what the index's graphs are built from).
    """
    return {"gearag": {"help": help, "name": name, "min": min, "choices": choices, "positive": positive,
                       "request": request}}


V = TypeVar("V")


@typing.overload
def setting(default: type[V], help: str, **kwargs: Any) -> V: ...


@typing.overload
def setting(default: V, help: str, **kwargs: Any) -> V: ...


def setting(default: Any, help: str, **kwargs: Any) -> Any:
    """A config field with a default and :func:`option` metadata (``factory`` defaults for dataclasses).

    Like :func:`dataclasses.field`, it returns a :class:`dataclasses.Field` that type checkers see as the
    field's value (the default, or an instance of the dataclass given as its factory), so
    ``exact: bool = setting(False, ...)`` checks the default against the field's type."""
    meta = option(help, **kwargs)
    if is_dataclass(default) and isinstance(default, type):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class OptionSpec:
    """One user-facing option of a config tree."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None
    choices: tuple[str, ...] | str | None
    positive: bool
    optional: bool
    #: Whether (and how far) a service request may set it; None: the operator only.
    request: Request | None = None
    #: The config dataclass that declares the field (``--help`` groups options by it: :mod:`gearag.cli.help`).
    owner: builtins.type | None = None
    #: The default as ``--help`` states it where it is not one value (None: ``default`` says it), e.g. a
    #: default that differs by method, or "the index's own" for ``gearag add``.
    shown_default: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def allowed(self) -> tuple[str, ...] | None:
        if isinstance(self.choices, str):
            return tuple(REGISTRY.names(self.choices))
        return self.choices


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _base_type(hint: Any) -> tuple[type, bool]:
    """The scalar type of a hint and whether ``None`` is allowed (``int | None`` → (int, True))."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return inner[0], len(inner) < len(args)
    return hint, False


def _walk(
    cls: type, instance: Any, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], dataclasses.Field[Any], Any, Any]]:
    """Leaf fields of a config tree: (path of field names, field, type hint, default value).

    :func:`_owners` gives the dataclass that declares each leaf.

    Defaults are read from ``instance`` (the parent's default), so a method
    whose config defaults a nested setting differently (NaiveGE's beams)
    shows and uses its own default.
    """
    hints = _hints(cls)
    for f in fields(cls):
        hint = hints[f.name]
        value = getattr(instance, f.name)
        if isinstance(hint, type) and is_dataclass(hint):
            yield from _walk(hint, value, (*prefix, f.name))
        else:
            yield (*prefix, f.name), f, hint, value


def option_specs(cls: type) -> dict[str, OptionSpec]:
    """The options of config class ``cls`` (flattened, first occurrence of each name wins)."""
    out: dict[str, OptionSpec] = {}
    owners = _owners(cls)
    for path, f, hint, default in _walk(cls, cls()):
        meta = f.metadata.get("gearag")
        if meta is None:
            continue  # internal field, not a user option
        name = meta["name"] or f.name
        if name in out:
            continue
        typ, optional = _base_type(hint)
        out[name] = OptionSpec(name, typ, default, meta["help"], meta["min"], meta["choices"], meta["positive"],
                               optional, meta.get("request"), owners[path[:-1]])
    return out


def _owners(cls: type, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], type]:
    """The dataclass at each path of field names of config tree ``cls`` (``()``: ``cls`` itself)."""
    out: dict[tuple[str, ...], type] = {prefix: cls}
    hints = _hints(cls)
    for f in fields(cls):
        hint = hints[f.name]
        if isinstance(hint, type) and is_dataclass(hint):
            out.update(_owners(hint, (*prefix, f.name)))
    return out


def changed_options(config: DataclassInstance) -> dict[str, Any]:
    """The options of ``config`` whose values differ from its class's defaults (option name → value)."""
    cls = type(config)
    out: dict[str, Any] = {}
    for (_path, f, _hint, value), (_, _, _, default) in zip(_walk(cls, config), _walk(cls, cls()), strict=True):
        meta = f.metadata.get("gearag")
        if meta is not None and value != default:
            out.setdefault(meta["name"] or f.name, value)
    return out


def _coerce(spec: OptionSpec, value: Any) -> Any:
    """Check and convert one option value; a ConfigError names the option."""
    flag = spec.flag
    if value is None:
        if spec.optional:
            return None
        raise ConfigError(f"{flag} needs a value")
    if spec.type is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{flag} must be true or false, got {value!r}")
    if spec.type is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ConfigError(f"{flag} must be a whole number, got {value!r}")
        try:
            number: float = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{flag} must be an integer, got {value!r}") from None
    elif spec.type is float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{flag} must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ConfigError(f"{flag} must be a finite number, got {value!r}")
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{flag} must be a string, got {value!r}")
        allowed = spec.allowed()
        if allowed is not None and value not in allowed:
            if isinstance(spec.choices, str):
                REGISTRY.entry(spec.choices, value)  # accepts aliases, raises the registry's error otherwise
                return value
            raise ConfigError(f"{flag}: unknown value {value!r} (choose from {', '.join(allowed)})")
        return value
    if spec.min is not None and number < spec.min:
        raise ConfigError(f"{flag} must be at least {spec.min:g}, got {value!r}")
    if spec.positive and number <= 0:
        raise ConfigError(f"{flag} must be positive, got {value!r}")
    return number


def build_config(cls: type[C], options: Mapping[str, Any] | None = None, *, what: str = "",
                 base: C | None = None) -> C:
    """An instance of config ``cls`` from user options (``None`` values mean "the default", or ``base``'s value).

    Unknown option names are an error naming the option (and ``what``, e.g.
    the method, it does not apply to).
    """
    given = {k: v for k, v in (options or {}).items() if v is not None}
    specs = option_specs(cls)
    unknown = [k for k in given if k not in specs]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        target = f" to {what}" if what else ""
        raise ConfigError(f"option {flags} does not apply{target} (its options: "
                          f"{', '.join(s.flag for s in specs.values()) or 'none'})")
    values = {name: _coerce(specs[name], value) for name, value in given.items()}
    return _instantiate(cls, values, base)


class RequestOptionError(ConfigError):
    """An option a request may not set, or not to that value (the service answers 400 naming the key)."""


def check_request(cls: type, options: Mapping[str, Any], *, what: str = "", key: str = "options") -> None:
    """Refuse, before any work, a request's ``options`` for config ``cls`` that name an option the operator
    sets (no :class:`Request` marker), an unknown one, or a value over its request bound.

    Errors name the request key (``options.llm_base_url``), not a CLI flag.
    """
    specs = option_specs(cls)
    target = f" for {what}" if what else ""
    for name, value in options.items():
        spec = specs.get(name)
        if spec is None:
            known = ", ".join(n for n, s in specs.items() if s.request is not None) or "none"
            raise RequestOptionError(f"{key}.{name}: unknown option{target} (a request may set: {known})")
        if spec.request is None:
            raise RequestOptionError(f"{key}.{name}: set by the server operator, not by a request")
        try:
            value = _coerce(spec, value)
        except ConfigError as exc:  # the same checks as the CLI's, named as the request names the option
            raise RequestOptionError(str(exc).replace(spec.flag, f"{key}.{name}", 1)) from None
        bound = spec.request.max
        if bound is not None and value is not None and value > bound:
            raise RequestOptionError(f"{key}.{name}: {value!r} is over the service's limit of {bound:g}")


def _instantiate(cls: type[C], values: Mapping[str, Any], base: Any = None) -> C:
    """``base`` (default ``cls()``) with the given option values set at every place they name."""
    base = cls() if base is None else base
    hints = _hints(cls)
    changes: dict[str, Any] = {}
    for f in fields(cls):
        hint = hints[f.name]
        if isinstance(hint, type) and is_dataclass(hint):
            changes[f.name] = _instantiate(hint, values, getattr(base, f.name))
            continue
        meta = f.metadata.get("gearag")
        name = (meta or {}).get("name") or f.name
        if meta is not None and name in values:
            changes[f.name] = values[name]
    return replace(base, **changes)


