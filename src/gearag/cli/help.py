"""How ``gearag COMMAND --help`` is printed: plain text, option names whole, options in panels, every default.

typer's rich help did three things wrong for gearag's commands:

* it read every help text as rich markup, so ``{title: [sentences]}`` printed
  as ``{title: }`` and a ``[default: …]`` had to be escaped wherever one was
  written — one missed escape loses text silently;
* a panel wider than the terminal shrank all its columns alike, so at 80
  columns option names were cut (``--entity-synon…``, ``--no-chain-age…``);
* an option without a default value showed none, with nothing to say what
  its absence means.

So every command prints its help here (:class:`HelpCommand`). Help texts and
docstrings are plain text, never markup: brackets print as written. Option
names and types never wrap or shrink; only the help column does, folding a
word longer than it. Options are grouped in the panels their declarations
name (``rich_help_panel``; config options get theirs from the config
dataclass that declares them, :func:`gearag.cli.common.with_config_options`).
An option's default is printed after its help, as its ``show_default`` says
it (a text) or from its value; a switch that is off unless given shows none.
``gearag --help`` (the command list) stays typer's, with each command's
one-line summary escaped for its markup.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument, TyperCommand

ARGUMENTS = "Arguments"
OPTIONS = "Options"

_TYPE_NAMES = {"integer": "INT", "integer range": "INT", "float": "FLOAT", "float range": "FLOAT", "text": "TEXT",
               "path": "PATH", "boolean": "BOOL"}


def paragraphs(help_text: str | None) -> list[str]:
    """A help text's paragraphs (split at blank lines; lines within one joined), up to a ``\\f`` line."""
    text = inspect.cleandoc(help_text or "").partition("\f")[0]
    return [" ".join(line.strip() for line in part.splitlines()) for part in text.split("\n\n") if part.strip()]


def _is_switch(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False))


def type_label(param: Any) -> str:
    """The short type of a parameter's value (``INT>=1``, ``PATH``); a metavar as declared; none for a switch."""
    if _is_switch(param):
        return ""
    metavar = getattr(param, "metavar", None)
    if metavar:
        return str(metavar)
    ptype = getattr(param, "type", None)
    name = str(getattr(ptype, "name", "") or "")
    label = _TYPE_NAMES.get(name, name.upper()) if name else _annotation_label(param)
    low = getattr(param, "min", None) if getattr(param, "min", None) is not None else getattr(ptype, "min", None)
    high = getattr(param, "max", None) if getattr(param, "max", None) is not None else getattr(ptype, "max", None)
    if low is not None:
        label += f">={low}"
    if high is not None:
        label += f"<={high}"
    return label


def _annotation_label(param: Any) -> str:
    """The type label from the parameter's annotation (typer versions that make the click type late)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    inner = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    kind = inner[0]
    if isinstance(kind, type) and issubclass(kind, PurePath):
        return "PATH"
    return {int: "INT", float: "FLOAT", str: "TEXT", bool: "BOOL"}.get(kind, "")


def default_text(param: Any) -> str | None:
    """The default a parameter's help states: its ``show_default`` text, else its value where it has one and
    shows it (a ``--x/--no-x`` flag: the flag that is on; a plain switch, off unless given, states none)."""
    show = getattr(param, "show_default", None)
    if isinstance(show, str):
        return show or None
    default = getattr(param, "default", None)
    if getattr(param, "required", False) or not show or default is None or callable(default):
        return None
    if _is_switch(param):
        secondary = getattr(param, "secondary_opts", None)
        if not secondary:
            return None
        return str(param.opts[0] if default else secondary[0])
    if isinstance(default, (list, tuple)):
        return ", ".join(map(str, default))
    return str(default)


def _names(param: Any) -> Text:
    if isinstance(param, TyperArgument):
        return Text(_argument_name(param), style="bold cyan")
    text = Text(", ".join(param.opts), style="bold cyan")
    if getattr(param, "secondary_opts", None):
        text.append("\n" + ", ".join(param.secondary_opts), style="bold magenta")
    return text


def _argument_name(param: Any) -> str:
    return str(getattr(param, "metavar", None) or (param.name or "").upper())


def _help_cell(param: Any) -> Text:
    text = Text(" ".join(paragraphs(getattr(param, "help", None))), overflow="fold")
    default = default_text(param)
    if default:
        text.append(f" [default: {default}]", style="dim")
    if getattr(param, "required", False):
        text.append(" [required]", style="dim red")
    return text


def _table(params: Iterable[Any]) -> Table:
    table = Table(box=None, show_header=False, expand=True, padding=(0, 1), pad_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="yellow")
    table.add_column(ratio=1, overflow="fold")
    for param in params:
        table.add_row(_names(param), type_label(param), _help_cell(param))
    return table


def panels(command: Any, ctx: Any) -> list[tuple[str, list[Any]]]:
    """The command's visible parameters by panel: arguments, the command's own options, then each named panel
    in the order its first option comes."""
    grouped: dict[str, list[Any]] = {ARGUMENTS: [], OPTIONS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        default = ARGUMENTS if isinstance(param, TyperArgument) else OPTIONS
        grouped.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(param)
    return [(title, params) for title, params in grouped.items() if params]


def usage(command: Any, ctx: Any) -> str:
    """``gearag retrieve [OPTIONS] INDEX_DIR QUESTIONS``: the command path, then its arguments' names."""
    pieces = [ctx.command_path, "[OPTIONS]"]
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument) and not getattr(param, "hidden", False):
            name = _argument_name(param) + ("..." if param.nargs == -1 else "")
            pieces.append(name if param.required else f"[{name}]")
    return " ".join(pieces)


def print_help(command: Any, ctx: Any, console: Console | None = None) -> None:
    """Print ``command``'s help: usage, its docstring's paragraphs, then one panel per group of parameters."""
    console = console or Console(emoji=False, highlight=False)
    console.print(Padding(Text.assemble(("Usage: ", "yellow"), (usage(command, ctx), "bold")), (1, 1, 0, 1)))
    paras = paragraphs(command.help)
    if paras:
        blocks: list[Text] = [Text(paras[0])]
        for para in paras[1:]:
            blocks += [Text(""), Text(para, style="dim")]
        console.print(Padding(Group(*blocks), (1, 1, 1, 1)))
    else:
        console.print()
    for title, params in panels(command, ctx):
        console.print(Panel(_table(params), title=title, title_align="left", border_style="dim"))


class HelpCommand(TyperCommand):
    """A typer command whose ``--help`` is :func:`print_help`'s, and whose summary in ``gearag --help`` is its
    docstring's first paragraph with markup escaped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help and not self.short_help:
            first = paragraphs(self.help)
            self.short_help = escape(first[0]) if first else None

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)


__all__ = ["ARGUMENTS", "OPTIONS", "HelpCommand", "default_text", "panels", "paragraphs", "print_help",
           "type_label", "usage"]
