"""``gearag COMMAND --help``: brackets print as written, option names are never cut at 80 columns,
options sit in panels derived from the config tree with every default stated, and ``add`` lists what it takes."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer

from gearag.cli import app
from gearag.cli.common import SHARED_PANEL, _method_options, panel_label, shown_default
from gearag.cli.help import default_text
from gearag.config import IndexConfig
from gearag.options import option_specs

COMMANDS = [c.name or c.callback.__name__ for c in app.registered_commands]  # type: ignore[union-attr]


def _command(name: str) -> Any:
    group = typer.main.get_command(app)
    ctx = group.make_context("gearag", [name], resilient_parsing=True)
    return group.get_command(ctx, name), ctx


def _visible(name: str) -> list[Any]:
    command, ctx = _command(name)
    sub = command.make_context(name, [], parent=ctx, resilient_parsing=True)
    return [p for p in command.get_params(sub) if not getattr(p, "hidden", False)]


def _flat(text: str) -> str:
    """The words of a help text, box lines and wrapping left out."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def _panels(text: str) -> list[str]:
    return re.findall(r"^╭─ (.+?) ─", text, flags=re.M)


@pytest.fixture
def help_of(cli, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")

    def run(name: str) -> str:
        result = cli(name, "--help")
        assert result.code == 0, result.stderr
        return result.stdout

    return run


def test_every_command_prints_every_option_name_whole_within_80_columns(help_of) -> None:  # type: ignore[no-untyped-def]
    assert {"index", "add", "retrieve", "ask", "serve"} <= set(COMMANDS)
    for name in COMMANDS:
        text = help_of(name)
        assert "…" not in text, name
        assert max(len(line) for line in text.splitlines()) <= 80, name
        for param in _visible(name):
            for flag in [*param.opts, *getattr(param, "secondary_opts", [])]:
                shown = flag.upper() if not flag.startswith("-") else flag
                assert re.search(rf"(?<![\w-]){re.escape(shown)}(?![\w-])", text), (name, flag)


def test_help_texts_are_plain_text_not_markup(help_of) -> None:  # type: ignore[no-untyped-def]
    assert "{title: [sentences]}" in _flat(help_of("index"))  # typer's markup mode ate "[sentences]"
    added = help_of("add")
    assert "[default: the index's own]" in _flat(added)
    for name in COMMANDS:
        assert "\\[" not in help_of(name), name


def test_retrieve_and_ask_group_options_by_the_config_class_that_declares_them(help_of) -> None:  # type: ignore[no-untyped-def]
    specs, panels = _method_options()
    for name in ("retrieve", "ask"):
        text = help_of(name)
        shown = _panels(text)
        assert shown[:2] == ["Arguments", "Options"]
        for title in ("Beam: naivege, syncge, gear", "Passage graph: naivege, syncge, gear", "gear", "hipporag2",
                      SHARED_PANEL, "Lance search"):
            assert title in shown, (name, title, shown)
    # One rule: an option's panel is the dataclass that declares it (methods named), or the shared one.
    assert panels["beam_width"] == "Beam: naivege, syncge, gear"
    assert panels["chunks"] == "gear" and panels["fact_top_k"] == "hipporag2"
    assert panels["engine"] == SHARED_PANEL  # the agent's engine config and the other methods' both declare it
    for key, spec in specs.items():
        if panels[key] != SHARED_PANEL:
            assert panels[key].startswith(panel_label(spec.owner) or "") or ":" not in panels[key], key
    assert panel_label(IndexConfig) == "Index" and panel_label(type("BM25Config", (), {})) == "BM25"


def test_every_option_states_its_default(help_of) -> None:  # type: ignore[no-untyped-def]
    text = help_of("retrieve")
    assert "[default: beams (naivege); ppr (syncge, gear)]" in _flat(text)  # --graph
    assert "0.05 (hipporag2)" in _flat(text)  # --passage-weight, defaulted per method
    for name in ("retrieve", "ask", "index", "serve"):
        for param in _visible(name):
            switch = getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", None)
            if switch or param.required or param.name == "help":
                continue  # off unless given; or nothing to default
            assert default_text(param) or "default" in (param.help or "").lower(), (name, param.name)
    # A config option whose default is None says what None means, or shows "none" (the help should say).
    for spec in option_specs(IndexConfig).values():
        assert shown_default(spec) is not None


def test_add_lists_only_the_options_it_takes(help_of) -> None:  # type: ignore[no-untyped-def]
    text = help_of("add")
    for flag in ("--extractor", "--keep-duplicates", "--max-passage-chars", "--generation", "--llm-model"):
        assert flag in text, flag
    for flag in ("--sirerag", "--raptor", "--tree-levels", "--synonyms", "--embedder", "--bm25-k1", "--ray"):
        assert not re.search(rf"{flag}(?![\w-])", text), flag
    assert _panels(text) == ["Arguments", "Options", "Extract", "Delta"]


def test_gearag_help_lists_every_command_with_its_summary(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("--help")
    assert result.code == 0
    for name in COMMANDS:
        assert re.search(rf"^│ {name} ", result.stdout, flags=re.M), name
    assert "(--update); every command" in _flat(result.stdout)  # one paragraph, not two broken lines
